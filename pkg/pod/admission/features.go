package admission

import (
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// ReasonPodLevelResourcesNotSupported is upstream's reason for a pod with
// pod-level resources on a node whose PodLevelResources gate is off.
const ReasonPodLevelResourcesNotSupported = "PodLevelResourcesNotSupported"

// PodLevelResourcesOff is the admission check of a node with the
// PodLevelResources feature gate off: a pod that sets pod-level resources
// (spec.resources with cpu, memory or hugepages) is refused, as upstream.
func PodLevelResourcesOff(pod *v1.Pod) Result {
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		return Result{Reason: ReasonPodLevelResourcesNotSupported, Message: "PodLevelResources feature gate is disabled"}
	}
	return Result{Admit: true}
}
