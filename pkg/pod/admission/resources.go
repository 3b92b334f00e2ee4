package admission

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// requests is a pod's or a node's amounts in the units the messages use:
// millicores for cpu, bytes for memory and ephemeral-storage, plain
// counts for scalar resources.
type requests struct {
	milliCPU  int64
	memory    int64
	ephemeral int64
	scalar    map[v1.ResourceName]int64
}

func (r *requests) add(list v1.ResourceList) {
	for name, q := range list {
		switch name {
		case v1.ResourceCPU:
			r.milliCPU += q.MilliValue()
		case v1.ResourceMemory:
			r.memory += q.Value()
		case v1.ResourceEphemeralStorage:
			r.ephemeral += q.Value()
		default:
			if isScalarResourceName(name) {
				if r.scalar == nil {
					r.scalar = map[v1.ResourceName]int64{}
				}
				r.scalar[name] += q.Value()
			}
		}
	}
}

// podRequests is the pod's effective request: the larger of the app and
// sidecar containers' sum and the peak of any init container (plus the
// sidecars started before it), pod-level requests where set, plus
// overhead. This is the API's definition (KEP 753 for sidecars), computed
// by component-helpers.
func podRequests(pod *v1.Pod) requests {
	var r requests
	r.add(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
	return r
}

// fitResources compares the pod's requests with allocatable minus what the
// other pods request: pod count first, then cpu, memory,
// ephemeral-storage and scalar resources by name.
func fitResources(pod *v1.Pod, node *v1.Node, others []*v1.Pod) []failure {
	alloc := node.Status.Allocatable
	var capacity requests
	capacity.add(alloc)
	var used requests
	for _, p := range others {
		used.add(resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}))
	}
	want := podRequests(withoutMissingExtendedResources(pod, alloc))

	var out []failure
	if maxPods := alloc.Pods().Value(); int64(len(others))+1 > maxPods {
		out = append(out, insufficient(v1.ResourcePods, 1, int64(len(others)), maxPods))
	}
	if want.milliCPU == 0 && want.memory == 0 && want.ephemeral == 0 && len(want.scalar) == 0 {
		return out
	}
	if want.milliCPU > 0 && want.milliCPU > capacity.milliCPU-used.milliCPU {
		out = append(out, insufficient(v1.ResourceCPU, want.milliCPU, used.milliCPU, capacity.milliCPU))
	}
	if want.memory > 0 && want.memory > capacity.memory-used.memory {
		out = append(out, insufficient(v1.ResourceMemory, want.memory, used.memory, capacity.memory))
	}
	if want.ephemeral > 0 && want.ephemeral > capacity.ephemeral-used.ephemeral {
		out = append(out, insufficient(v1.ResourceEphemeralStorage, want.ephemeral, used.ephemeral, capacity.ephemeral))
	}
	names := make([]v1.ResourceName, 0, len(want.scalar))
	for name := range want.scalar {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	for _, name := range names {
		q := want.scalar[name]
		if q == 0 {
			continue
		}
		if q > capacity.scalar[name]-used.scalar[name] {
			out = append(out, insufficient(name, q, used.scalar[name], capacity.scalar[name]))
		}
	}
	return out
}

func insufficient(name v1.ResourceName, requested, used, capacity int64) failure {
	var reason string
	switch name {
	case v1.ResourceCPU:
		reason = ReasonOutOfCPU
	case v1.ResourceMemory:
		reason = ReasonOutOfMemory
	case v1.ResourceEphemeralStorage:
		reason = ReasonOutOfEphemeral
	case v1.ResourcePods:
		reason = ReasonOutOfPods
	default:
		reason = ReasonInsufficientPrefix + string(name)
	}
	return failure{
		reason: reason,
		message: fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
			name, requested, used, capacity),
		insufficient: true,
		shortage:     Shortage{Resource: name, Amount: requested - (capacity - used)},
	}
}

// withoutMissingExtendedResources drops container requests of extended
// resources the node does not advertise: those are cluster-level or
// DRA-backed and not the kubelet's to count. It returns pod itself when
// nothing is dropped, a copy otherwise.
func withoutMissingExtendedResources(pod *v1.Pod, alloc v1.ResourceList) *v1.Pod {
	missing := func(cs []v1.Container) bool {
		for _, c := range cs {
			for name := range c.Resources.Requests {
				if _, ok := alloc[name]; !ok && podspec.IsExtendedResourceName(name) {
					return true
				}
			}
		}
		return false
	}
	if !missing(pod.Spec.Containers) && !missing(pod.Spec.InitContainers) {
		return pod
	}
	out := pod.DeepCopy()
	for _, cs := range [][]v1.Container{out.Spec.Containers, out.Spec.InitContainers} {
		for i := range cs {
			for name := range cs[i].Resources.Requests {
				if _, ok := alloc[name]; !ok && podspec.IsExtendedResourceName(name) {
					delete(cs[i].Resources.Requests, name)
				}
			}
		}
	}
	return out
}

// isScalarResourceName: what the scheduler counts beyond cpu, memory,
// ephemeral-storage and pods: extended resources, hugepages, other
// kubernetes.io/ prefixed resources and attachable volume limits.
func isScalarResourceName(name v1.ResourceName) bool {
	s := string(name)
	return podspec.IsExtendedResourceName(name) ||
		strings.HasPrefix(s, v1.ResourceHugePagesPrefix) ||
		strings.Contains(s, v1.ResourceDefaultNamespacePrefix) ||
		strings.HasPrefix(s, v1.ResourceAttachableVolumesPrefix)
}
