package podspec

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// QOSClass returns the pod's quality-of-service class. A class already in the
// pod's status is kept (it is immutable once set); otherwise it is computed by
// ComputeQOSClass.
func QOSClass(pod *v1.Pod) v1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return ComputeQOSClass(pod)
}

// ComputeQOSClass classifies a pod by its CPU and memory requests and limits:
//
//   - BestEffort: no container (init or app) and no pod-level resources
//     request or limit any CPU or memory;
//   - Guaranteed: every container limits both CPU and memory, and for each of
//     them the pod's summed requests equal its summed limits;
//   - Burstable: anything else.
//
// When pod-level resources (spec.resources) are set, they alone decide, as
// upstream does. Zero quantities count as unset. A container that has a limit
// but no request for a resource is treated as requesting its limit, which is
// what API defaulting does; this keeps the answer right for pods that were not
// defaulted (for example static pods read by another component).
func ComputeQOSClass(pod *v1.Pod) v1.PodQOSClass {
	requests := v1.ResourceList{}
	limits := v1.ResourceList{}
	guaranteed := true

	add := func(into v1.ResourceList, name v1.ResourceName, q resource.Quantity) {
		sum := q.DeepCopy()
		if prev, ok := into[name]; ok {
			sum.Add(prev)
		}
		into[name] = sum
	}
	// account adds one set of requests/limits and reports whether both CPU
	// and memory were limited.
	account := func(req, lim v1.ResourceList) bool {
		limited := 0
		for _, name := range qosResources {
			l, hasLim := positive(lim, name)
			r, hasReq := positive(req, name)
			if _, explicit := req[name]; !explicit && hasLim {
				r, hasReq = l, true
			}
			if hasReq {
				add(requests, name, r)
			}
			if hasLim {
				add(limits, name, l)
				limited++
			}
		}
		return limited == len(qosResources)
	}

	if pod.Spec.Resources != nil && (len(pod.Spec.Resources.Requests) > 0 || len(pod.Spec.Resources.Limits) > 0) {
		if !account(pod.Spec.Resources.Requests, pod.Spec.Resources.Limits) {
			guaranteed = false
		}
	} else {
		// Ephemeral containers cannot set resources and do not count.
		for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range list {
				r := &list[i].Resources
				if !account(r.Requests, r.Limits) {
					guaranteed = false
				}
			}
		}
	}

	if len(requests) == 0 && len(limits) == 0 {
		return v1.PodQOSBestEffort
	}
	if guaranteed && len(requests) == len(limits) {
		for name, r := range requests {
			if l, ok := limits[name]; !ok || l.Cmp(r) != 0 {
				guaranteed = false
				break
			}
		}
		if guaranteed {
			return v1.PodQOSGuaranteed
		}
	}
	return v1.PodQOSBurstable
}

// qosResources are the resources that decide the QoS class.
var qosResources = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory}

func positive(list v1.ResourceList, name v1.ResourceName) (resource.Quantity, bool) {
	q, ok := list[name]
	if !ok || q.Sign() <= 0 {
		return resource.Quantity{}, false
	}
	return q, true
}
