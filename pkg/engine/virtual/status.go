package virtual

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/podstatus"
)

// Reasons the engine writes on pods and in events.
const (
	// ReasonCreateFailed: the provider refused or failed to create the pod
	// (container waiting reason while retried; pod reason when Failed).
	ReasonCreateFailed = "ProviderCreateFailed"
	// ReasonUpdateFailed: the provider failed to apply a changed spec.
	ReasonUpdateFailed = "ProviderUpdateFailed"
	// ReasonDeleteFailed: the provider failed to delete the pod (event).
	ReasonDeleteFailed = "ProviderDeleteFailed"
	// ReasonPodLost: the provider no longer runs a pod it had created.
	ReasonPodLost = "ProviderPodLost"
	// ReasonConfigError: the pod's environment cannot be resolved (a
	// missing ConfigMap, Secret or key), as upstream names it.
	ReasonConfigError = "CreateContainerConfigError"
	// reasonCreating is the waiting reason of a container the provider has
	// not reported yet.
	reasonCreating     = "ContainerCreating"
	reasonInitializing = "PodInitializing"
	msgPodLost         = "The pod is no longer known to the provider that ran it"
)

// apiStatus completes a provider's pod status into the status a kubelet
// reports: a phase (Pending when none), a status for every container of
// the spec in spec order (ContainerCreating / PodInitializing for those the
// provider has not reported), the kubelet's conditions (the provider's own
// Initialized, ContainersReady, Ready and ReadyToStartContainers when it
// gives them, computed from the container statuses otherwise, and
// PodScheduled), the QoS class, observed generation, the node's IPs as
// hostIP when the provider gives none, and podIP/podIPs consistent.
// prev is the status written last (for condition transition times). It is
// pure: the same inputs give the same status.
func apiStatus(pod *v1.Pod, provided *v1.PodStatus, prev *v1.PodStatus, hostIPs []string, now time.Time) v1.PodStatus {
	var s v1.PodStatus
	if provided != nil {
		s = *provided.DeepCopy()
	}
	s.ObservedGeneration = pod.Generation
	s.QOSClass = podspec.QOSClass(pod)
	s.NominatedNodeName = pod.Status.NominatedNodeName
	if s.Phase == "" {
		s.Phase = v1.PodPending
	}
	waitApp := reasonCreating
	if len(pod.Spec.InitContainers) > 0 && !initDone(pod, s.InitContainerStatuses) {
		waitApp = reasonInitializing
	}
	s.InitContainerStatuses = align(pod.Spec.InitContainers, s.InitContainerStatuses, reasonCreating)
	s.ContainerStatuses = align(pod.Spec.Containers, s.ContainerStatuses, waitApp)

	givenOwned := map[v1.PodConditionType]v1.PodCondition{}
	for _, c := range s.Conditions {
		if podstatus.IsOwnedCondition(c.Type) {
			givenOwned[c.Type] = c
		}
	}
	var conds []v1.PodCondition
	for _, c := range pod.Status.Conditions {
		if !podstatus.IsOwnedCondition(c.Type) {
			conds = append(conds, c)
		}
	}
	pick := func(t v1.PodConditionType, computed func() v1.PodCondition) v1.PodCondition {
		if c, ok := givenOwned[t]; ok {
			return c
		}
		return computed()
	}
	owned := []v1.PodCondition{
		pick(v1.PodReadyToStartContainers, func() v1.PodCondition { return readyToStart(&s) }),
		pick(v1.PodInitialized, func() v1.PodCondition {
			return podstatus.InitializedCondition(&pod.Spec, s.InitContainerStatuses, s.ContainerStatuses, s.Phase)
		}),
		pick(v1.PodReady, func() v1.PodCondition {
			return podstatus.ReadyCondition(&pod.Spec, conds, s.InitContainerStatuses, s.ContainerStatuses, s.Phase)
		}),
		pick(v1.ContainersReady, func() v1.PodCondition {
			return podstatus.ContainersReadyCondition(&pod.Spec, s.InitContainerStatuses, s.ContainerStatuses, s.Phase)
		}),
		{Type: v1.PodScheduled, Status: v1.ConditionTrue},
	}
	for _, c := range owned {
		c.ObservedGeneration = pod.Generation
		conds = append(conds, c)
	}
	var prevConds []v1.PodCondition
	if prev != nil {
		prevConds = prev.Conditions
	} else {
		prevConds = pod.Status.Conditions
	}
	podstatus.StampTransitions(conds, prevConds, now)
	s.Conditions = conds

	if s.HostIP == "" && len(s.HostIPs) == 0 && len(hostIPs) > 0 {
		s.HostIP = hostIPs[0]
		for _, ip := range hostIPs {
			s.HostIPs = append(s.HostIPs, v1.HostIP{IP: ip})
		}
	}
	if s.PodIP != "" && len(s.PodIPs) == 0 {
		s.PodIPs = []v1.PodIP{{IP: s.PodIP}}
	}
	if s.PodIP == "" && len(s.PodIPs) > 0 {
		s.PodIP = s.PodIPs[0].IP
	}
	if s.StartTime == nil && prev != nil && prev.StartTime != nil {
		s.StartTime = prev.StartTime.DeepCopy()
	}
	return s
}

// align returns one status per spec container, in spec order: the
// provider's (image filled in when missing), or waiting with reason.
// Statuses of containers not in the spec are dropped.
func align(spec []v1.Container, given []v1.ContainerStatus, reason string) []v1.ContainerStatus {
	if len(spec) == 0 {
		return nil
	}
	out := make([]v1.ContainerStatus, 0, len(spec))
	for _, c := range spec {
		if st := podspec.FindStatus(given, c.Name); st != nil {
			cs := *st.DeepCopy()
			if cs.Image == "" {
				cs.Image = c.Image
			}
			if cs.State.Waiting == nil && cs.State.Running == nil && cs.State.Terminated == nil {
				cs.State.Waiting = &v1.ContainerStateWaiting{Reason: reason}
			}
			out = append(out, cs)
			continue
		}
		out = append(out, v1.ContainerStatus{Name: c.Name, Image: c.Image, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}}})
	}
	return out
}

// initDone reports whether every init container completed (or a sidecar
// started), from the provider's statuses.
func initDone(pod *v1.Pod, statuses []v1.ContainerStatus) bool {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		st := podspec.FindStatus(statuses, c.Name)
		if st == nil {
			return false
		}
		if podspec.IsSidecar(c) {
			if st.State.Running == nil && st.State.Terminated == nil {
				return false
			}
			continue
		}
		if st.State.Terminated == nil || st.State.Terminated.ExitCode != 0 {
			return false
		}
	}
	return true
}

// readyToStart is True once the provider shows the pod placed: an IP, or a
// container that started.
func readyToStart(s *v1.PodStatus) v1.PodCondition {
	c := v1.PodCondition{Type: v1.PodReadyToStartContainers, Status: v1.ConditionFalse}
	if s.PodIP != "" || len(s.PodIPs) > 0 {
		c.Status = v1.ConditionTrue
		return c
	}
	for _, list := range [][]v1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses} {
		for _, cs := range list {
			if cs.State.Running != nil || cs.State.Terminated != nil {
				c.Status = v1.ConditionTrue
				return c
			}
		}
	}
	return c
}

// failureStatus is the status of a pod the provider failed to take: with
// terminal, phase Failed with reason and message (the pod will not run);
// otherwise the phase stays (Pending) and every container that is not
// running waits with reason and message, so `kubectl get pods` and
// `kubectl describe` show why.
func failureStatus(pod *v1.Pod, last *v1.PodStatus, reason, message string, terminal bool, hostIPs []string, now time.Time) v1.PodStatus {
	s := apiStatus(pod, last, last, hostIPs, now)
	if terminal {
		if !podstatus.IsTerminal(s.Phase) {
			s.Phase, s.Reason, s.Message = v1.PodFailed, reason, message
		}
	} else {
		for _, list := range [][]v1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses} {
			for i := range list {
				if list[i].State.Running == nil && list[i].State.Terminated == nil {
					list[i].State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason, Message: message}}
				}
			}
		}
	}
	return recomputeConditions(pod, s, last, now)
}

// terminatedStatus is the status of a pod that will not run again (deleted
// and gone from the provider, its grace period over, or lost): no
// container runs, and the phase is terminal (Failed unless it was
// Succeeded already). A reason, when given, is the pod's.
func terminatedStatus(pod *v1.Pod, last *v1.PodStatus, reason, message string, hostIPs []string, now time.Time) v1.PodStatus {
	s := apiStatus(pod, last, last, hostIPs, now)
	podstatus.MarkTerminated(pod, &s)
	for _, list := range [][]v1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses} {
		for i := range list {
			list[i].Ready = false
			if list[i].State.Terminated != nil {
				f := false
				list[i].Started = &f
			}
		}
	}
	if reason != "" && s.Reason == "" {
		s.Reason, s.Message = reason, message
	}
	return recomputeConditions(pod, s, last, now)
}

// recomputeConditions recomputes the kubelet's conditions after the
// engine changed containers or the phase.
func recomputeConditions(pod *v1.Pod, s v1.PodStatus, prev *v1.PodStatus, now time.Time) v1.PodStatus {
	var conds []v1.PodCondition
	for _, c := range s.Conditions {
		if !podstatus.IsOwnedCondition(c.Type) {
			conds = append(conds, c)
		}
	}
	owned := []v1.PodCondition{
		readyToStart(&s),
		podstatus.InitializedCondition(&pod.Spec, s.InitContainerStatuses, s.ContainerStatuses, s.Phase),
		podstatus.ReadyCondition(&pod.Spec, conds, s.InitContainerStatuses, s.ContainerStatuses, s.Phase),
		podstatus.ContainersReadyCondition(&pod.Spec, s.InitContainerStatuses, s.ContainerStatuses, s.Phase),
		{Type: v1.PodScheduled, Status: v1.ConditionTrue},
	}
	if podstatus.IsTerminal(s.Phase) {
		owned[0].Status = v1.ConditionFalse
	}
	for _, c := range owned {
		c.ObservedGeneration = pod.Generation
		conds = append(conds, c)
	}
	var prevConds []v1.PodCondition
	if prev != nil {
		prevConds = prev.Conditions
	}
	podstatus.StampTransitions(conds, prevConds, now)
	s.Conditions = conds
	return s
}

// runsNothing reports whether a provider status shows the pod finished:
// a terminal phase and no container running.
func runsNothing(s *v1.PodStatus) bool {
	if s == nil || !podstatus.IsTerminal(s.Phase) {
		return false
	}
	for _, list := range [][]v1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses} {
		for _, cs := range list {
			if cs.State.Running != nil {
				return false
			}
		}
	}
	return true
}
