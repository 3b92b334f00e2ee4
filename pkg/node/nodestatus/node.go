package nodestatus

import (
	"net"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gokubelet/kubelet/pkg/node/machineinfo"
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
	// KubeletVersion is status.nodeInfo.kubeletVersion ("v1.34.4").
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

// Inputs is a snapshot of what the status is computed from.
type Inputs struct {
	Machine machineinfo.Info
	// RuntimeVersion is "<runtime type>://<version>" ("containerd://1.6.20").
	RuntimeVersion string
	Readiness      Readiness
	Pressure       Pressure
}

// NewNode builds the Node to register: name, labels, annotations and spec,
// status left empty (fill it with SetStatus).
func NewNode(cfg *Config, machine machineinfo.Info) *v1.Node {
	labels := DefaultLabels(cfg.Hostname, machine.OperatingSystem, machine.Architecture)
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

// Capacity is the node's capacity from the machine and maxPods.
func Capacity(cfg *Config, m machineinfo.Info) v1.ResourceList {
	c := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewQuantity(int64(m.NumCPU), resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(m.MemoryCapacityBytes, resource.BinarySI),
		v1.ResourcePods:   *resource.NewQuantity(cfg.MaxPods, resource.DecimalSI),
	}
	if m.RootFSCapacityBytes > 0 {
		c[v1.ResourceEphemeralStorage] = *resource.NewQuantity(m.RootFSCapacityBytes, resource.BinarySI)
	}
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

// SetStatus fills node.Status from cfg and in as of now. Conditions keep
// their lastTransitionTime unless their status changes; lastHeartbeatTime is
// now on every call. Fields it does not own (images, volumes, config) are
// left as they are.
func SetStatus(node *v1.Node, cfg *Config, in Inputs, now metav1.Time) {
	m := in.Machine
	capacity := Capacity(cfg, m)
	node.Status.Capacity = capacity
	node.Status.Allocatable = Allocatable(capacity, cfg.KubeReserved, cfg.SystemReserved, cfg.HardEviction)
	node.Status.Addresses = Addresses(cfg, m)
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = cfg.KubeletPort
	node.Status.NodeInfo.MachineID = m.MachineID
	node.Status.NodeInfo.SystemUUID = m.SystemUUID
	node.Status.NodeInfo.BootID = m.BootID
	node.Status.NodeInfo.KernelVersion = m.KernelVersion
	node.Status.NodeInfo.OSImage = m.OSImage
	node.Status.NodeInfo.OperatingSystem = m.OperatingSystem
	node.Status.NodeInfo.Architecture = m.Architecture
	node.Status.NodeInfo.KubeletVersion = cfg.KubeletVersion
	if in.RuntimeVersion != "" {
		node.Status.NodeInfo.ContainerRuntimeVersion = in.RuntimeVersion
	}
	node.Status.Conditions = Conditions(node.Status.Conditions, desiredConditions(capacity, in), now)
}
