package kubelet

// The node's plugin surface (pkg/plugins): one registration manager for
// every plugin that registers through a socket in
// <root-dir>/plugins_registry, and a handler per kind of plugin behind it.
// CSI drivers (pkg/plugins/csi) are the kind it has now.

import (
	"path/filepath"

	"k8s.io/client-go/kubernetes"

	"github.com/gokubelet/kubelet/pkg/plugins/csi"
	"github.com/gokubelet/kubelet/pkg/plugins/registration"
	"github.com/gokubelet/kubelet/pkg/runnable"
)

// nodePlugins are the registration manager and the handlers behind it.
type nodePlugins struct {
	manager *registration.Manager
	csi     *csi.Drivers
}

// newPlugins builds the node's plugin surface; client acts as the node
// (nil in standalone mode: drivers register on the node only).
func newPlugins(rootDir, nodeName string, client kubernetes.Interface) *nodePlugins {
	drivers := csi.New(csi.Options{NodeName: nodeName, Client: client})
	return &nodePlugins{
		csi: drivers,
		manager: &registration.Manager{
			Dir:      filepath.Join(rootDir, registration.DirName),
			Handlers: map[string]registration.Handler{csi.PluginType: drivers},
		},
	}
}

// addTo runs the CSINode's creation and the registration manager.
func (p *nodePlugins) addTo(st *runnable.Stage) {
	st.Add("csinode", p.csi)
	st.Add("plugin-registration", p.manager)
}
