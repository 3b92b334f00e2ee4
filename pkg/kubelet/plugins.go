package kubelet

// The node's plugin surface (pkg/plugins): one registration manager for
// every plugin that registers through a socket in
// <root-dir>/plugins_registry, and a handler per kind of plugin behind it:
// CSI drivers (pkg/plugins/csi), DRA drivers (pkg/plugins/dra) and device
// plugins (pkg/plugins/devices, which also serve their own Registration
// socket in /var/lib/kubelet/device-plugins, as the device plugin API
// fixes it).
// Beside them, the pod-resources API (pkg/podresources) that monitoring
// agents read.

import (
	"context"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/gokubelet/kubelet/pkg/engine/cri"
	"github.com/gokubelet/kubelet/pkg/plugins/csi"
	"github.com/gokubelet/kubelet/pkg/plugins/devices"
	"github.com/gokubelet/kubelet/pkg/plugins/dra"
	"github.com/gokubelet/kubelet/pkg/plugins/registration"
	"github.com/gokubelet/kubelet/pkg/podresources"
	"github.com/gokubelet/kubelet/pkg/runnable"
	"github.com/gokubelet/kubelet/pkg/runtime/kuberuntime"
)

// nodePlugins are the registration manager and the handlers behind it,
// and the pod-resources API.
type nodePlugins struct {
	manager      *registration.Manager
	csi          *csi.Drivers
	devices      *devices.Manager
	dra          *dra.Manager
	podResources *podresources.Server
}

// pluginDeps are what the plugins need from the rest of the kubelet.
type pluginDeps struct {
	rootDir, nodeName string
	// client acts as the node (nil in standalone mode: drivers register
	// on the node only).
	client kubernetes.Interface
	// pods are the node's pods, for the pod-resources API.
	pods podresources.Pods
	// devices are the device manager's options: the node's active pods,
	// whether all pod sources are seen, the Node status trigger, events.
	devices devices.Options
	// dra are the DRA manager's (the same pods and sources).
	dra dra.Options
}

// newPlugins builds the node's plugin surface.
func newPlugins(d pluginDeps) *nodePlugins {
	drivers := csi.New(csi.Options{NodeName: d.nodeName, Client: d.client})
	dev := devices.New(d.devices)
	d.dra.RootDir, d.dra.NodeName, d.dra.Client = d.rootDir, d.nodeName, d.client
	claims := dra.New(d.dra)
	return &nodePlugins{
		csi:     drivers,
		devices: dev,
		dra:     claims,
		podResources: podresources.New(d.rootDir, d.pods, podresources.Assignments{
			Devices:            dev.ContainerDevices,
			AllocatableDevices: dev.AllocatableDevices,
			DynamicResources:   claims.DynamicResources,
		}),
		manager: &registration.Manager{
			Dir: filepath.Join(d.rootDir, registration.DirName),
			Handlers: map[string]registration.Handler{
				csi.PluginType:     drivers,
				dra.PluginType:     claims,
				devices.PluginType: dev,
			},
		},
	}
}

// addTo runs the CSINode's creation, the device manager, the registration
// manager and the pod-resources API.
func (p *nodePlugins) addTo(st *runnable.Stage) {
	st.Add("csinode", p.csi)
	st.Add("device-plugins", p.devices)
	st.Add("dra", p.dra)
	st.Add("plugin-registration", p.manager)
	st.Add("pod-resources", p.podResources)
}

// containerOptions hands what a container's device plugins returned, and
// the CDI devices of its DRA claims, to CRI.
func (p *nodePlugins) containerOptions(ctx context.Context, pod *v1.Pod, c *v1.Container) (kuberuntime.ContainerOptions, error) {
	o, err := p.devices.ContainerOptions(ctx, pod, c)
	if err != nil {
		return kuberuntime.ContainerOptions{}, err
	}
	claimed, err := p.dra.CDIDevices(pod, c)
	if err != nil {
		return kuberuntime.ContainerOptions{}, err
	}
	o.CDIDevices = append(o.CDIDevices, claimed...)
	var out kuberuntime.ContainerOptions
	for _, e := range o.Envs {
		out.PluginEnv = append(out.PluginEnv, &runtimeapi.KeyValue{Key: e.Key, Value: []byte(e.Value)})
	}
	for _, m := range o.Mounts {
		out.Mounts = append(out.Mounts, &runtimeapi.Mount{ContainerPath: m.ContainerPath, HostPath: m.HostPath, Readonly: m.ReadOnly})
	}
	for _, d := range o.Devices {
		out.Devices = append(out.Devices, &runtimeapi.Device{ContainerPath: d.ContainerPath, HostPath: d.HostPath, Permissions: d.Permissions})
	}
	for _, name := range o.CDIDevices {
		out.CDIDevices = append(out.CDIDevices, &runtimeapi.CDIDevice{Name: name})
	}
	if len(o.Annotations) > 0 {
		out.Annotations = map[string]string{}
		for _, a := range o.Annotations {
			out.Annotations[a.Key] = a.Value
		}
	}
	return out, nil
}

// runningPodUIDs are the pods the runtime runs (a ready sandbox or a
// running container), for the device manager's start: a kubelet restart
// against a node reboot, which leaves neither.
func runningPodUIDs(ctx context.Context, eng *cri.Engine) (sets.Set[types.UID], error) {
	pods, err := eng.RunningPods(ctx)
	if err != nil {
		return nil, err
	}
	out := sets.New[types.UID]()
	for _, p := range pods {
		out.Insert(p.UID)
	}
	return out, nil
}
