package nodestatus

import (
	"context"
	"net"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gokubelet/kubelet/pkg/node/machineinfo"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// ControllerManagedAttachAnnotation tells the attach/detach controller that
// it, not the kubelet, attaches volumes to this node.
const ControllerManagedAttachAnnotation = "volumes.kubernetes.io/controller-managed-attach-detach"

// Config is what the node is configured to be; it does not change while the
// kubelet runs.
type Config struct {
	// NodeName is metadata.name.
	NodeName string
	// Hostname is the kubernetes.io/hostname label and the Hostname address
	// (--hostname-override, else the machine's hostname).
	Hostname string
	// NodeLabels are --node-labels; check them with ValidateNodeLabels
	// first. They override the default labels.
	NodeLabels map[string]string
	// Taints are --register-with-taints, set at registration only.
	Taints []v1.Taint
	// Unschedulable registers the node cordoned (registerNode with
	// registerSchedulable=false), adding the unschedulable taint.
	Unschedulable bool
	// ProviderID is spec.providerID, set at registration if not empty.
	ProviderID string
	// ControllerAttachDetach sets the controller-managed attach-detach
	// annotation (upstream default: true).
	ControllerAttachDetach bool
	// NodeIPs are --node-ip; when empty the default-route IPv4 of the
	// machine is used.
	NodeIPs []net.IP
	// MaxPods is the pods capacity.
	MaxPods int64
	// KubeletPort is status.daemonEndpoints.kubeletEndpoint.Port.
	KubeletPort int32
	// KubeletVersion is status.nodeInfo.kubeletVersion ("v1.37.2+gokubelet.0.1.0-dev").
	KubeletVersion string
	// KubeReserved, SystemReserved and HardEviction reduce allocatable.
	KubeReserved   v1.ResourceList
	SystemReserved v1.ResourceList
	HardEviction   []Threshold
}

// Readiness is whether pods can run on the node, as the runtime sees it.
type Readiness struct {
	RuntimeReady bool
	NetworkReady bool
	// Errors explain why not ready, one sentence each ("container runtime
	// network not ready: NetworkReady=false reason:NetworkPluginNotReady
	// message:cni plugin not initialized"); they become the Ready
	// condition's message. Any error makes the node NotReady.
	Errors []string
}

// Pressure is what the eviction manager observes.
type Pressure struct {
	Memory bool
	Disk   bool
	PID    bool
}

// Facts is what the node reports about itself at one moment: the host's
// for a real node (see HostFacts), a provider's for a virtual one. The
// Controller and the pure builders take nothing else from the world.
type Facts struct {
	// Capacity of the node (cpu, memory, pods, ephemeral-storage, ...).
	Capacity v1.ResourceList
	// Allocatable, when nil, is Capacity less Config's reservations and
	// hard eviction thresholds.
	Allocatable v1.ResourceList
	// Devices are the device plugins' resources: their capacity (every
	// device) and allocatable (the healthy ones), set over the above.
	Devices DeviceResources
	// Addresses of the node, in order of preference.
	Addresses []v1.NodeAddress
	// NodeInfo of the node. KubeletVersion is Config's; an empty
	// ContainerRuntimeVersion keeps the one already reported.
	NodeInfo v1.NodeSystemInfo
	// Images, when not nil, become status.images (see ContainerImages);
	// nil leaves what is reported as it is (not known yet, or a node that
	// does not report images).
	Images []v1.ContainerImage
	// Labels are the labels the node sets on itself (hostname, os, arch:
	// see DefaultLabels). Config.NodeLabels override them at registration;
	// the os and arch labels are restored if someone changes them.
	Labels map[string]string
	// Readiness and Pressure feed the Ready and pressure conditions.
	Readiness Readiness
	Pressure  Pressure
	// Runtime is what the container runtime supports, for the Node's
	// runtimeHandlers and features; nil when unknown (the last reported
	// stay).
	Runtime *RuntimeFacts
	// VolumesInUse are the attachable volumes the node uses or is about
	// to (status.volumesInUse, the kubelet's own field: the attach/detach
	// controller does not detach them), sorted.
	VolumesInUse []v1.UniqueVolumeName
	// Conditions are further conditions the node reports about itself
	// (a virtual node's provider may have its own), after the four the
	// kubelet owns; conditions of those four types are ignored here.
	Conditions []v1.NodeCondition
}

// DeviceResources are extended resources served by device plugins.
type DeviceResources struct {
	Capacity, Allocatable v1.ResourceList
}

// withExtendedResources adds the device plugins' resources to the status,
// and keeps the extended resources someone else advertised on the Node
// (an administrator's PATCH of status.capacity, as upstream documents):
// the kubelet does not own those, so they stay, allocatable equal to
// capacity as upstream reports them. The status's maps are new ones
// (they may be the facts' own).
func withExtendedResources(st *v1.NodeStatus, previous v1.ResourceList, dev DeviceResources) {
	var kept []v1.ResourceName
	for name := range previous {
		if _, ok := st.Capacity[name]; !ok && podspec.IsExtendedResourceName(name) {
			kept = append(kept, name)
		}
	}
	if len(kept) == 0 && len(dev.Capacity) == 0 && len(dev.Allocatable) == 0 {
		return
	}
	st.Capacity, st.Allocatable = st.Capacity.DeepCopy(), st.Allocatable.DeepCopy()
	if st.Capacity == nil {
		st.Capacity = v1.ResourceList{}
	}
	if st.Allocatable == nil {
		st.Allocatable = v1.ResourceList{}
	}
	for _, name := range kept {
		st.Capacity[name] = previous[name].DeepCopy()
		st.Allocatable[name] = previous[name].DeepCopy()
	}
	for name, q := range dev.Capacity {
		st.Capacity[name] = q.DeepCopy()
	}
	for name, q := range dev.Allocatable {
		st.Allocatable[name] = q.DeepCopy()
	}
}

// DeclaredFeatures is the Node's status.declaredFeatures: the features
// (named by their upstream gates) this kubelet tells the control plane it
// has, so that the API server and scheduler may rely on them. It declares
// none. The field is the kubelet's to write (NodeDeclaredFeatures, GA in
// 1.37), so a list left by the upstream kubelet of a node taken over is
// replaced: left standing, ExtendWebSocketsToKubelet made the API server
// hand exec over websocket v5 to this kubelet, whose runtime's streaming
// server speaks up to v4 (403), and InPlacePodLevelResourcesVerticalScaling
// and RestartAllContainersOnContainerExits promised features this kubelet
// lacks (docs/configuration.md, the gate table).
func DeclaredFeatures() []string { return nil }

// RuntimeFacts are the runtime's handlers and features as the Node reports
// them (status.runtimeHandlers, status.features); nil Features clear the
// field.
type RuntimeFacts struct {
	Handlers []v1.NodeRuntimeHandler
	Features *v1.NodeFeatures
}

// FactsProvider gives a node's facts, at registration and at every status
// check. NodeFacts must not block for long (a status check waits for it);
// when it fails after a first success, the last facts are used.
type FactsProvider interface {
	NodeFacts(ctx context.Context) (Facts, error)
}

// FactsFunc adapts a function to FactsProvider.
type FactsFunc func(ctx context.Context) (Facts, error)

// NodeFacts calls f.
func (f FactsFunc) NodeFacts(ctx context.Context) (Facts, error) { return f(ctx) }

// HostFacts maps the machine's facts to a real node's: capacity from the
// CPUs, memory, the root filesystem and maxPods; the addresses (--node-ip,
// else the default-route IPv4, and the hostname); nodeInfo; the default
// labels. Readiness is left "ready" and Pressure empty for the caller to
// fill from the runtime and the eviction manager.
func HostFacts(cfg *Config, m machineinfo.Info) Facts {
	return Facts{
		Capacity:  Capacity(cfg, m),
		Addresses: Addresses(cfg, m),
		NodeInfo: v1.NodeSystemInfo{
			MachineID:       m.MachineID,
			SystemUUID:      m.SystemUUID,
			BootID:          m.BootID,
			KernelVersion:   m.KernelVersion,
			OSImage:         m.OSImage,
			OperatingSystem: m.OperatingSystem,
			Architecture:    m.Architecture,
		},
		Labels:    DefaultLabels(cfg.Hostname, m.OperatingSystem, m.Architecture),
		Readiness: Readiness{RuntimeReady: true, NetworkReady: true},
	}
}

// NewNode builds the Node to register: name, labels (the facts' and
// --node-labels), annotations and spec, status left empty (fill it with
// SetStatus).
func NewNode(cfg *Config, facts Facts) *v1.Node {
	labels := map[string]string{}
	for k, v := range facts.Labels {
		labels[k] = v
	}
	for k, v := range cfg.NodeLabels {
		labels[k] = v
	}
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: cfg.NodeName, Labels: labels},
		Spec: v1.NodeSpec{
			Unschedulable: cfg.Unschedulable,
			ProviderID:    cfg.ProviderID,
		},
	}
	if cfg.ControllerAttachDetach {
		node.Annotations = map[string]string{ControllerManagedAttachAnnotation: "true"}
	}
	taints := append([]v1.Taint(nil), cfg.Taints...)
	if cfg.Unschedulable && !hasTaint(taints, v1.TaintNodeUnschedulable, v1.TaintEffectNoSchedule) {
		taints = append(taints, v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule})
	}
	if len(taints) > 0 {
		node.Spec.Taints = taints
	}
	return node
}

func hasTaint(taints []v1.Taint, key string, effect v1.TaintEffect) bool {
	for _, t := range taints {
		if t.Key == key && t.Effect == effect {
			return true
		}
	}
	return false
}

// Capacity is the node's capacity from the machine and maxPods: cpu,
// memory, pods, ephemeral-storage and hugepages-<size> for every huge page
// size the kernel supports.
func Capacity(cfg *Config, m machineinfo.Info) v1.ResourceList {
	c := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewQuantity(int64(m.NumCPU), resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(m.MemoryCapacityBytes, resource.BinarySI),
		v1.ResourcePods:   *resource.NewQuantity(cfg.MaxPods, resource.DecimalSI),
	}
	if m.RootFSCapacityBytes > 0 {
		c[v1.ResourceEphemeralStorage] = *resource.NewQuantity(m.RootFSCapacityBytes, resource.BinarySI)
	}
	hugePagesCapacity(c, m.HugePages)
	return c
}

// Addresses are the InternalIP(s) (--node-ip, else the default-route IPv4)
// and the Hostname.
func Addresses(cfg *Config, m machineinfo.Info) []v1.NodeAddress {
	var out []v1.NodeAddress
	ips := cfg.NodeIPs
	if len(ips) == 0 && m.DefaultRouteIPv4 != nil {
		ips = []net.IP{m.DefaultRouteIPv4}
	}
	for _, ip := range ips {
		out = append(out, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip.String()})
	}
	if cfg.Hostname != "" {
		out = append(out, v1.NodeAddress{Type: v1.NodeHostName, Address: cfg.Hostname})
	}
	return out
}

// SetStatus fills node.Status from cfg and the facts as of now.
// Conditions keep their lastTransitionTime unless their status changes;
// lastHeartbeatTime is now on every call. Fields it does not own (volumes,
// config) are left as they are, and so are the images when the facts have
// none, and runtimeHandlers and features while the runtime's are unknown.
func SetStatus(node *v1.Node, cfg *Config, f Facts, now metav1.Time) {
	previous := node.Status.Capacity
	node.Status.Capacity = f.Capacity
	node.Status.Allocatable = f.Allocatable
	if node.Status.Allocatable == nil {
		node.Status.Allocatable = Allocatable(f.Capacity, cfg.KubeReserved, cfg.SystemReserved, cfg.HardEviction)
	}
	withExtendedResources(&node.Status, previous, f.Devices)
	node.Status.Addresses = f.Addresses
	setImages(node, f.Images)
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = cfg.KubeletPort
	runtimeVersion := node.Status.NodeInfo.ContainerRuntimeVersion
	node.Status.NodeInfo = f.NodeInfo
	node.Status.NodeInfo.KubeletVersion = cfg.KubeletVersion
	if node.Status.NodeInfo.ContainerRuntimeVersion == "" {
		node.Status.NodeInfo.ContainerRuntimeVersion = runtimeVersion
	}
	if f.Runtime != nil {
		node.Status.RuntimeHandlers = f.Runtime.Handlers
		node.Status.Features = f.Runtime.Features
	}
	node.Status.DeclaredFeatures = DeclaredFeatures()
	node.Status.VolumesInUse = f.VolumesInUse
	desired := desiredConditions(f.Capacity, f.Readiness, f.Pressure)
	for _, c := range f.Conditions {
		if !isKubeletCondition(c.Type) {
			desired = append(desired, v1.NodeCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
		}
	}
	node.Status.Conditions = Conditions(node.Status.Conditions, desired, now)
}
