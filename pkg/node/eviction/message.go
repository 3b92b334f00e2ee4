package eviction

import (
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Reason is the status reason of an evicted pod and of a pod refused under
// pressure (upstream's).
const Reason = "Evicted"

// Message is upstream's eviction message: the starved resource, the
// threshold and what was available, then each container using more than
// it requests ("The node was low on resource: memory. Threshold quantity:
// 100Mi, available: 52Mi. Container hog was using 300Mi, request is 0,
// has larger consumption of memory. ").
func Message(res v1.ResourceName, pod *v1.Pod, u PodUsage, measured bool, t Threshold, obs Observations) string {
	msg := fmt.Sprintf("The node was low on resource: %v. ", res)
	if o, ok := obs[t.Signal]; ok {
		msg += fmt.Sprintf("Threshold quantity: %v, available: %v. ", quantity(res, t.Value.Amount(o.Capacity)), quantity(res, o.Available))
	}
	if !measured || (res != v1.ResourceMemory && res != v1.ResourceEphemeralStorage) {
		return msg
	}
	cs := append(append([]v1.Container(nil), pod.Spec.Containers...), pod.Spec.InitContainers...)
	names := make([]string, 0, len(u.Containers))
	for n := range u.Containers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		cu := u.Containers[name]
		for _, c := range cs {
			if c.Name != name {
				continue
			}
			req := c.Resources.Requests[res]
			used := cu.Memory
			if res == v1.ResourceEphemeralStorage {
				used = cu.Rootfs + cu.Logs
			}
			if used > req.Value() {
				msg += fmt.Sprintf("Container %s was using %s, request is %s, has larger consumption of %v. ",
					name, resource.NewQuantity(used, resource.BinarySI), req.String(), res)
			}
			break
		}
	}
	return msg
}

// quantity formats an amount in the resource's usual unit.
func quantity(res v1.ResourceName, v int64) *resource.Quantity {
	if res == v1.ResourceMemory || res == v1.ResourceEphemeralStorage {
		return resource.NewQuantity(v, resource.BinarySI)
	}
	return resource.NewQuantity(v, resource.DecimalSI)
}

// ConditionMessage is the message of a pod refused under pressure: "The
// node had condition: [MemoryPressure]. ".
func ConditionMessage(conds []v1.NodeConditionType) string {
	return fmt.Sprintf("The node had condition: %v. ", conds)
}
