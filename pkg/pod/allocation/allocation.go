// Package allocation is the kubelet's side of in-place pod resize (the
// pods/resize subresource, InPlacePodVerticalScaling, GA since 1.35): it
// keeps, per container, the resources the kubelet allocated
// (admitted) and those it actuated (applied to the running container), both
// checkpointed under the root directory so a restarted kubelet keeps them,
// and decides each resize as upstream does:
//
//   - a pod whose spec resources equal its allocation has nothing pending;
//   - a resize asking for more CPU or memory than the node's allocatable is
//     Infeasible ("Node didn't have enough capacity: ...");
//   - one that does not fit beside the other pods' allocations now is
//     Deferred (admission's message) and retried on every sync of the pod
//     and whenever pods leave;
//   - otherwise the new resources are allocated, and the pod stays
//     PodResizeInProgress until every running container's actuated
//     resources match its allocation (then a ResizeCompleted event).
//
// The runtime applies an allocation through CRI UpdateContainerResources
// (resizePolicy NotRequired) or by restarting the container
// (RestartContainer), and the pod's cgroup through the cgroup manager.
package allocation

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/gokubelet/kubelet/pkg/pod/admission"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// Checkpoint file names under the root directory. They are this
// kubelet's own: upstream's allocated_pods_state and actuated_pods_state
// carry a checksum over upstream's in-memory types, and the upstream
// kubelet refuses to start (panics) on one it cannot verify, so a takeover
// back to upstream must find its files as it left them (docs/takeover.md).
const (
	AllocatedFile = "gokubelet_allocated_pods.json"
	ActuatedFile  = "gokubelet_actuated_pods.json"
)

// Manager keeps allocations and actuations.
type Manager struct {
	allocated *Store
	actuated  *Store
}

// New opens (or starts) the checkpoints in dir ("" keeps them in memory).
func New(dir string) (*Manager, error) {
	path := func(f string) string {
		if dir == "" {
			return ""
		}
		return dir + "/" + f
	}
	al, err := OpenStore(path(AllocatedFile))
	if err != nil {
		return nil, err
	}
	ac, err := OpenStore(path(ActuatedFile))
	if err != nil {
		return nil, err
	}
	return &Manager{allocated: al, actuated: ac}, nil
}

// resizable are the containers whose resources can change in place: app
// containers and sidecars (init containers that keep running).
func resizable(pod *v1.Pod) []*v1.Container {
	var out []*v1.Container
	for i := range pod.Spec.InitContainers {
		if podspec.IsSidecar(&pod.Spec.InitContainers[i]) {
			out = append(out, &pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// fromPod is the pod's resources by resizable container.
func fromPod(pod *v1.Pod) map[string]v1.ResourceRequirements {
	out := map[string]v1.ResourceRequirements{}
	for _, c := range resizable(pod) {
		out[c.Name] = *c.Resources.DeepCopy()
	}
	return out
}

// Admitted records an admitted pod's resources as its allocation, unless
// it already has one (a restarted kubelet keeps what it allocated).
func (m *Manager) Admitted(pod *v1.Pod) error {
	if m.allocated.Has(pod.UID) {
		return nil
	}
	return m.allocated.SetPod(pod.UID, fromPod(pod))
}

// Allocated returns the pod with its allocated resources in place of the
// spec's (pod itself when they agree or nothing was allocated).
func (m *Manager) Allocated(pod *v1.Pod) *v1.Pod {
	var out *v1.Pod
	m.allocated.read(pod.UID, func(alloc map[string]v1.ResourceRequirements) {
		// The store's own map, read under its lock: WithResources copies
		// what it takes from it and leaves it untouched.
		out = WithResources(pod, alloc)
	})
	if out == nil {
		return pod
	}
	return out
}

// WithResources returns pod with the given resources for the named
// containers (a copy when anything differs).
func WithResources(pod *v1.Pod, rs map[string]v1.ResourceRequirements) *v1.Pod {
	out := pod
	for _, c := range resizable(pod) {
		r, ok := rs[c.Name]
		if !ok || equality.Semantic.DeepEqual(c.Resources, r) {
			continue
		}
		if out == pod {
			out = pod.DeepCopy()
		}
		for _, cs := range [][]v1.Container{out.Spec.InitContainers, out.Spec.Containers} {
			for i := range cs {
				if cs[i].Name == c.Name {
					cs[i].Resources = *r.DeepCopy()
				}
			}
		}
	}
	return out
}

// Actuated returns what was last applied to the container.
func (m *Manager) Actuated(uid types.UID, name string) (v1.ResourceRequirements, bool) {
	return m.actuated.Get(uid, name)
}

// SetActuated records what was applied to the container.
func (m *Manager) SetActuated(uid types.UID, name string, r v1.ResourceRequirements) error {
	return m.actuated.Set(uid, name, r)
}

// RemoveOrphans forgets pods keep does not claim.
func (m *Manager) RemoveOrphans(keep func(types.UID) bool) error {
	if err := m.allocated.RemoveOrphans(keep); err != nil {
		return err
	}
	return m.actuated.RemoveOrphans(keep)
}

// Decision is the outcome of looking at a pod's resize.
type Decision struct {
	// Allocate: the spec's resources become the allocation.
	Allocate bool
	// PendingReason (Deferred or Infeasible) and PendingMessage say why a
	// resize waits; empty when nothing is pending.
	PendingReason  string
	PendingMessage string
	// Preempt, on an allocated resize of a critical pod, are the
	// shortages other pods must be preempted to cover (as at admission:
	// admission.Preemption chooses them); the allocation stands only if
	// they can be.
	Preempt []admission.Shortage
}

// Decide looks at a pod whose spec may ask for other resources than its
// allocation: allocated is the pod with its allocation, others the other
// active pods with theirs, node the Node admission decides against.
// A critical pod's resize that needs room is allocated with the shortages
// to preempt, as upstream does, unless schedulerPreempts (the gate
// InPlacePodVerticalScalingSchedulerPreemption: the scheduler owns
// preemption for resizes), when it is deferred like any other.
func Decide(desired, allocated *v1.Pod, others []*v1.Pod, node *v1.Node, schedulerPreempts bool) Decision {
	if equality.Semantic.DeepEqual(fromPod(desired), fromPod(allocated)) {
		return Decision{}
	}
	if node == nil {
		return Decision{PendingReason: v1.PodReasonDeferred, PendingMessage: "Kubelet cannot get node info."}
	}
	if res := admission.Input(desired); !res.Admit {
		// Quantities a cgroup cannot hold would wrap around below.
		return Decision{PendingReason: v1.PodReasonInfeasible, PendingMessage: res.Message}
	}
	alloc := node.Status.Allocatable
	req := resourcehelper.PodRequests(podspec.WithDefaultedRequests(desired), resourcehelper.PodResourcesOptions{})
	if memReq, memCap := req.Memory().Value(), alloc.Memory().Value(); memReq > memCap {
		return Decision{PendingReason: v1.PodReasonInfeasible, PendingMessage: fmt.Sprintf("Node didn't have enough capacity: memory, requested: %d, capacity: %d", memReq, memCap)}
	}
	if cpuReq, cpuCap := req.Cpu().MilliValue(), alloc.Cpu().MilliValue(); cpuReq > cpuCap {
		return Decision{PendingReason: v1.PodReasonInfeasible, PendingMessage: fmt.Sprintf("Node didn't have enough capacity: cpu, requested: %d, capacity: %d", cpuReq, cpuCap)}
	}
	res := admission.Admit(desired, node, others)
	if !res.Admit || (len(res.Preempt) > 0 && schedulerPreempts) {
		return Decision{PendingReason: v1.PodReasonDeferred, PendingMessage: res.Message}
	}
	return Decision{Allocate: true, Preempt: res.Preempt}
}

// Allocate records the desired pod's resources as its allocation.
func (m *Manager) Allocate(desired *v1.Pod) error {
	return m.allocated.SetPod(desired.UID, fromPod(desired))
}

// CompletionMessage is upstream's ResizeCompleted event message: "Pod
// resize completed: {"containers":[{"name":..,"resources":..}]}".
func CompletionMessage(allocated *v1.Pod) string {
	type alloc struct {
		Name      string                  `json:"name"`
		Resources v1.ResourceRequirements `json:"resources,omitempty"`
	}
	var sum struct {
		InitContainers []alloc `json:"initContainers,omitempty"`
		Containers     []alloc `json:"containers,omitempty"`
	}
	for _, c := range allocated.Spec.InitContainers {
		sum.InitContainers = append(sum.InitContainers, alloc{c.Name, c.Resources})
	}
	for _, c := range allocated.Spec.Containers {
		sum.Containers = append(sum.Containers, alloc{c.Name, c.Resources})
	}
	b, err := json.Marshal(sum)
	if err != nil {
		return "Pod resize completed"
	}
	return "Pod resize completed: " + string(b)
}

// SameResources compares what a resize can change of two containers'
// resources: CPU request and limit, memory request and limit.
func SameResources(a, b v1.ResourceRequirements) bool {
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		if !a.Requests[name].Equal(b.Requests[name]) || !a.Limits[name].Equal(b.Limits[name]) {
			return false
		}
	}
	return true
}
