package podstatus

import (
	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// MarkTerminated applies what the kubelet knows once it has finished
// terminating a pod (Options.Terminal): no container of it runs any more,
// whatever the last observation says.
//   - When the pod had initialized, every app container that is not
//     terminated becomes terminated with ContainerStatusUnknown (exit 137):
//     its real exit is not known, so it counts as a failure.
//   - Init containers up to the last one that shows any sign of having
//     started become terminated the same way; later ones, which never ran,
//     stay waiting.
//   - A non-static pod whose phase is not terminal yet becomes Failed.
//     (Upstream leaves static pods out; so does this.)
func MarkTerminated(pod *v1.Pod, s *v1.PodStatus) {
	markContainersTerminated(pod, s)
	if !IsTerminal(s.Phase) && !podspec.IsStatic(pod) {
		s.Phase = v1.PodFailed
	}
}

func markContainersTerminated(pod *v1.Pod, s *v1.PodStatus) {
	unknown := func() v1.ContainerState {
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			ExitCode: exitCodeUnknown,
			Reason:   ReasonStatusUnknown,
			Message:  msgLostOnTerminate,
		}}
	}
	if initializedBefore(pod, s) {
		for i := range s.ContainerStatuses {
			if s.ContainerStatuses[i].State.Terminated == nil {
				s.ContainerStatuses[i].State = unknown()
			}
		}
	}
	last := -1
	for i, st := range s.InitContainerStatuses {
		if st.State.Running != nil || st.State.Terminated != nil || st.LastTerminationState.Terminated != nil {
			last = i
		}
	}
	for i := 0; i <= last; i++ {
		if s.InitContainerStatuses[i].State.Terminated == nil {
			s.InitContainerStatuses[i].State = unknown()
		}
	}
	for i := range s.EphemeralContainerStatuses {
		if s.EphemeralContainerStatuses[i].State.Running != nil {
			s.EphemeralContainerStatuses[i].State = unknown()
		}
	}
}

// MaxPodTerminationMessageBytes is what all of a pod's termination
// messages may take in its status (upstream's 12 KiB); each container gets
// an equal share.
const MaxPodTerminationMessageBytes = 12 << 10

// CapTerminationMessages cuts each container's termination messages to
// its share of MaxPodTerminationMessageBytes, as upstream does before
// writing a status.
func CapTerminationMessages(pod *v1.Pod, s *v1.PodStatus) {
	n := len(pod.Spec.Containers) + len(pod.Spec.InitContainers) + len(pod.Spec.EphemeralContainers)
	share := MaxPodTerminationMessageBytes
	if n > 0 {
		share /= n
	}
	cut := func(st *v1.ContainerState) {
		if st.Terminated != nil && len(st.Terminated.Message) > share {
			st.Terminated.Message = st.Terminated.Message[:share]
		}
	}
	for _, list := range [][]v1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses, s.EphemeralContainerStatuses} {
		for i := range list {
			cut(&list[i].State)
			cut(&list[i].LastTerminationState)
		}
	}
}

// initializedBefore reports, from API statuses, whether the pod got past
// initialization: no init containers, an app container ran, or the last
// init container completed.
func initializedBefore(pod *v1.Pod, s *v1.PodStatus) bool {
	if len(pod.Spec.InitContainers) == 0 {
		return true
	}
	if anyAppContainerRan(&pod.Spec, s.ContainerStatuses) {
		return true
	}
	last := podspec.FindStatus(s.InitContainerStatuses, pod.Spec.InitContainers[len(pod.Spec.InitContainers)-1].Name)
	return last != nil && last.State.Terminated != nil && last.State.Terminated.ExitCode == 0
}
