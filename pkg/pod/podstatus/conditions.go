package podstatus

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// Upstream's condition reasons.
const (
	ReasonContainersNotReady       = "ContainersNotReady"
	ReasonContainersNotInitialized = "ContainersNotInitialized"
	ReasonReadinessGatesNotReady   = "ReadinessGatesNotReady"
	ReasonPodCompleted             = "PodCompleted"
	ReasonPodFailed                = "PodFailed"
	ReasonUnknownContainerStatuses = "UnknownContainerStatuses"
)

// OwnedConditions are the condition types the kubelet sets; any other
// condition on the pod (set by the scheduler, controllers, readiness-gate
// writers) is carried over untouched.
var OwnedConditions = []v1.PodConditionType{
	v1.PodReadyToStartContainers,
	v1.PodInitialized,
	v1.ContainersReady,
	v1.PodReady,
	v1.PodScheduled,
	// In-place resize (InPlacePodVerticalScaling, GA since 1.35): the kubelet
	// sets and clears these as upstream does.
	v1.PodResizePending,
	v1.PodResizeInProgress,
}

// IsOwnedCondition reports whether the kubelet sets this condition type.
func IsOwnedCondition(t v1.PodConditionType) bool {
	for _, o := range OwnedConditions {
		if o == t {
			return true
		}
	}
	return false
}

// ReadyToStartContainersCondition is True once the pod has a sandbox the
// kubelet can start containers in: the newest sandbox is ready, it is the
// only ready one, and (without host networking) it has an IP. Otherwise a new
// sandbox is needed and the condition is False.
func ReadyToStartContainersCondition(observed *container.PodStatus) v1.PodCondition {
	c := v1.PodCondition{Type: v1.PodReadyToStartContainers, Status: v1.ConditionFalse}
	sb := observed.ReadySandbox()
	if sb == nil {
		return c
	}
	ready := 0
	for _, s := range observed.Sandboxes {
		if s.State == container.SandboxReady {
			ready++
		}
	}
	if ready != 1 || (!sb.HostNetwork && len(sb.IPs) == 0 && len(observed.IPs) == 0) {
		return c
	}
	c.Status = v1.ConditionTrue
	return c
}

// InitializedCondition is True when every regular init container completed
// (Ready) and every sidecar started; also when an app container has run
// (the pod was initialized before and a sidecar is restarting), and with
// reason PodCompleted when the pod Succeeded. Otherwise False with reason
// ContainersNotInitialized and a message naming the containers.
func InitializedCondition(spec *v1.PodSpec, initStatuses, statuses []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	c := v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
	if len(spec.InitContainers) == 0 {
		return c
	}
	var unknown, incomplete []string
	for i := range spec.InitContainers {
		ic := &spec.InitContainers[i]
		st := podspec.FindStatus(initStatuses, ic.Name)
		switch {
		case st == nil:
			unknown = append(unknown, ic.Name)
		case podspec.IsSidecar(ic):
			if st.Started == nil || !*st.Started {
				incomplete = append(incomplete, ic.Name)
			}
		case !st.Ready:
			incomplete = append(incomplete, ic.Name)
		}
	}
	if phase == v1.PodSucceeded && len(unknown) == 0 {
		c.Reason = ReasonPodCompleted
		return c
	}
	if anyAppContainerRan(spec, statuses) {
		return c
	}
	msg := listMessage(unknown, incomplete, "incomplete")
	if msg == "" {
		return c
	}
	c.Status, c.Reason, c.Message = v1.ConditionFalse, ReasonContainersNotInitialized, msg
	return c
}

// ContainersReadyCondition is True when every app container and sidecar is
// Ready. Otherwise False: reason PodCompleted when the pod Succeeded,
// PodFailed when it Failed, else ContainersNotReady with a message naming the
// containers ("containers with unready status: [a b]").
func ContainersReadyCondition(spec *v1.PodSpec, initStatuses, statuses []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	c := v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse}
	if statuses == nil && len(spec.Containers) > 0 {
		c.Reason = ReasonUnknownContainerStatuses
		return c
	}
	var unknown, unready []string
	check := func(name string, list []v1.ContainerStatus) {
		st := podspec.FindStatus(list, name)
		switch {
		case st == nil:
			unknown = append(unknown, name)
		case !st.Ready:
			unready = append(unready, name)
		}
	}
	for i := range spec.InitContainers {
		if podspec.IsSidecar(&spec.InitContainers[i]) {
			check(spec.InitContainers[i].Name, initStatuses)
		}
	}
	for i := range spec.Containers {
		check(spec.Containers[i].Name, statuses)
	}
	switch {
	case phase == v1.PodSucceeded && len(unknown) == 0:
		c.Reason = ReasonPodCompleted
		return c
	case phase == v1.PodFailed:
		c.Reason = ReasonPodFailed
		return c
	}
	if msg := listMessage(unknown, unready, "unready"); msg != "" {
		c.Reason, c.Message = ReasonContainersNotReady, msg
		return c
	}
	c.Status = v1.ConditionTrue
	return c
}

// ReadyCondition is the pod's Ready condition: as ContainersReady while that
// is not True; then False with reason ReadinessGatesNotReady while a
// readiness gate's condition (looked up in conditions) is missing or not
// True; else True.
func ReadyCondition(spec *v1.PodSpec, conditions []v1.PodCondition, initStatuses, statuses []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	cr := ContainersReadyCondition(spec, initStatuses, statuses, phase)
	c := v1.PodCondition{Type: v1.PodReady, Status: cr.Status, Reason: cr.Reason, Message: cr.Message}
	if cr.Status != v1.ConditionTrue {
		return c
	}
	var msgs []string
	for _, g := range spec.ReadinessGates {
		gc := podspec.FindCondition(conditions, g.ConditionType)
		switch {
		case gc == nil:
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType))
		case gc.Status != v1.ConditionTrue:
			msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", g.ConditionType, gc.Status))
		}
	}
	if len(msgs) > 0 {
		c.Status, c.Reason, c.Message = v1.ConditionFalse, ReasonReadinessGatesNotReady, strings.Join(msgs, ", ")
	}
	return c
}

// NeedsReadinessReconcile reports whether the Ready condition a pod's
// status carries is not the one its readiness gates now give: someone else
// (a load balancer controller, a test) set or changed a gate's condition,
// a status-only change that asks for a sync so Ready follows it, as
// upstream's status manager decides. Pods without gates, or without a
// Ready condition yet, need none.
func NeedsReadinessReconcile(pod *v1.Pod) bool {
	if len(pod.Spec.ReadinessGates) == 0 {
		return false
	}
	cur := podspec.FindCondition(pod.Status.Conditions, v1.PodReady)
	if cur == nil {
		return false
	}
	want := ReadyCondition(&pod.Spec, pod.Status.Conditions, pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.Phase)
	return cur.Status != want.Status || cur.Message != want.Message
}

// anyAppContainerRan reports whether an app container is running, has
// terminated, or waits after a previous run.
func anyAppContainerRan(spec *v1.PodSpec, statuses []v1.ContainerStatus) bool {
	for i := range spec.Containers {
		st := podspec.FindStatus(statuses, spec.Containers[i].Name)
		if st == nil {
			continue
		}
		if st.State.Running != nil || st.State.Terminated != nil || st.LastTerminationState.Terminated != nil {
			return true
		}
	}
	return false
}

// listMessage builds upstream's "containers with unknown status: [a],
// containers with <adjective> status: [b c]".
func listMessage(unknown, bad []string, adjective string) string {
	var parts []string
	if len(unknown) > 0 {
		parts = append(parts, fmt.Sprintf("containers with unknown status: %v", unknown))
	}
	if len(bad) > 0 {
		parts = append(parts, fmt.Sprintf("containers with %s status: %v", adjective, bad))
	}
	return strings.Join(parts, ", ")
}
