package admission

import (
	"fmt"
	"strings"

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

// ReasonContainerRestartRulesNotSupported is the reason for a pod that
// gives a container its own restart policy or rules on a node whose
// ContainerRestartRules gate is off.
const ReasonContainerRestartRulesNotSupported = "ContainerRestartRulesNotSupported"

// ContainerRestartRulesOff is the admission check of a node with the
// ContainerRestartRules feature gate off: a pod in which an app container
// or a regular init container sets restartPolicy, or any container sets
// restartPolicyRules, is refused with the fields named. (A sidecar's
// restartPolicy Always is SidecarContainers, GA, and stays.) Upstream
// ignores the fields with the gate off; refusing keeps the pod from running
// under a policy it did not ask for.
func ContainerRestartRulesOff(pod *v1.Pod) Result {
	var fields []string
	for i, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy != v1.ContainerRestartPolicyAlways {
			fields = append(fields, fmt.Sprintf("spec.initContainers[%d].restartPolicy", i))
		}
		if len(c.RestartPolicyRules) > 0 {
			fields = append(fields, fmt.Sprintf("spec.initContainers[%d].restartPolicyRules", i))
		}
	}
	for i, c := range pod.Spec.Containers {
		if c.RestartPolicy != nil {
			fields = append(fields, fmt.Sprintf("spec.containers[%d].restartPolicy", i))
		}
		if len(c.RestartPolicyRules) > 0 {
			fields = append(fields, fmt.Sprintf("spec.containers[%d].restartPolicyRules", i))
		}
	}
	if len(fields) == 0 {
		return Result{Admit: true}
	}
	return Result{Reason: ReasonContainerRestartRulesNotSupported,
		Message: "ContainerRestartRules feature gate is disabled: " + strings.Join(fields, ", ")}
}
