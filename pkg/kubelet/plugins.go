package kubelet

// The node's plugin surface (pkg/plugins): one registration manager for
// every plugin that registers through a socket in
// <root-dir>/plugins_registry, and a handler per kind of plugin behind it.
// CSI drivers (pkg/plugins/csi) are the kind it has now. Beside it, the
// pod-resources API (pkg/podresources) that monitoring agents read.

import (
	"path/filepath"

	"k8s.io/client-go/kubernetes"

	"github.com/gokubelet/kubelet/pkg/plugins/csi"
	"github.com/gokubelet/kubelet/pkg/plugins/registration"
	"github.com/gokubelet/kubelet/pkg/podresources"
	"github.com/gokubelet/kubelet/pkg/runnable"
)

// nodePlugins are the registration manager and the handlers behind it,
// and the pod-resources API.
type nodePlugins struct {
	manager      *registration.Manager
	csi          *csi.Drivers
	podResources *podresources.Server
}

// newPlugins builds the node's plugin surface; client acts as the node
// (nil in standalone mode: drivers register on the node only); pods are
// the node's pods, for the pod-resources API.
func newPlugins(rootDir, nodeName string, client kubernetes.Interface, pods podresources.Pods) *nodePlugins {
	drivers := csi.New(csi.Options{NodeName: nodeName, Client: client})
	return &nodePlugins{
		csi:          drivers,
		podResources: podresources.New(rootDir, pods, podresources.Assignments{}),
		manager: &registration.Manager{
			Dir:      filepath.Join(rootDir, registration.DirName),
			Handlers: map[string]registration.Handler{csi.PluginType: drivers},
		},
	}
}

// addTo runs the CSINode's creation, the registration manager and the
// pod-resources API.
func (p *nodePlugins) addTo(st *runnable.Stage) {
	st.Add("csinode", p.csi)
	st.Add("plugin-registration", p.manager)
	st.Add("pod-resources", p.podResources)
}
