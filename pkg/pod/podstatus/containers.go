package podstatus

import (
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// Upstream's words for container states the kubelet infers.
const (
	// ReasonContainerCreating: an app container of a pod without init
	// containers has not been created yet.
	ReasonContainerCreating = "ContainerCreating"
	// ReasonPodInitializing: a container of a pod with init containers has
	// not been created yet.
	ReasonPodInitializing = "PodInitializing"
	// ReasonStatusUnknown: the container is gone from the runtime and its
	// exit is not known.
	ReasonStatusUnknown = "ContainerStatusUnknown"
	// ReasonCompleted and ReasonError name an exit when the runtime gave no
	// reason.
	ReasonCompleted = "Completed"
	ReasonError     = "Error"

	msgLostWhileRunning = "The container could not be located when the pod was deleted.  The container used to be Running"
	// msgInitLostAfterInit is upstream's message for a regular init
	// container the runtime no longer has, of a pod whose app containers
	// were created: it must have exited 0.
	msgInitLostAfterInit = "Unable to get init container status from container runtime and pod has been initialized, treat it as exited normally"
	msgLostOnTerminate   = "The container could not be located when the pod was terminated"
	// exitCodeUnknown is what upstream reports for a container whose exit
	// is not known (as if killed by SIGKILL).
	exitCodeUnknown = 137
)

// ProbeKind names a probe whose result decides a container status field.
type ProbeKind int

const (
	// StartupProbe decides Started.
	StartupProbe ProbeKind = iota
	// ReadinessProbe decides Ready.
	ReadinessProbe
)

// ProbeResults looks up the latest result of a probe of one container
// instance. known is false while the probe has produced no result yet.
type ProbeResults func(kind ProbeKind, containerName, containerID string) (success, known bool)

// ContainerStatuses computes the API statuses of one list of containers
// (init containers when init is true, else app containers) and returns them
// in upstream order: init containers in spec order, app containers sorted by
// name. Started and Ready are left unset; SetStartedAndReady fills them.
//
// For each container:
//   - the newest runtime instance gives State (running → startedAt; exited →
//     terminated with exit code, reason, message, times and containerID;
//     created or unknown → waiting with no reason), the one before it gives
//     LastTerminationState, and RestartCount, Image, ImageID, ContainerID come
//     from the newest;
//   - a container with no instance waits with ContainerCreating (or
//     PodInitializing when the pod has init containers), keeping the
//     previous restart count and last state;
//   - a container the runtime no longer has keeps its previous terminated
//     status; if it was running before, it becomes waiting with a last state
//     of ContainerStatusUnknown (exit 137) and, unless the pod is being
//     deleted, one more restart; an instance in unknown state that was
//     running before becomes terminated the same way;
//   - a regular init container the runtime no longer has, with no
//     terminated status before, of a pod with an app container created,
//     is terminated with reason Completed and exit code 0 (upstream's
//     inference: it cannot have failed, or the app containers would not
//     exist), so the pod is not taken back to Pending after a kubelet
//     restart (static pods keep no status to restore);
//   - a container the kubelet will start again (see ShouldRestart) with a
//     reason from the last sync (waiting: ErrImagePull, CrashLoopBackOff, ...)
//     waits with that reason and message, its terminated state moving to
//     LastTerminationState.
func ContainerStatuses(pod *v1.Pod, init bool, observed *container.PodStatus, waiting map[string]container.WaitingReason, previous []v1.ContainerStatus, runtimeType string) []v1.ContainerStatus {
	specs := pod.Spec.Containers
	kind := podspec.App
	if init {
		specs, kind = pod.Spec.InitContainers, podspec.Init
	}
	return containerStatuses(pod, specs, kind, observed, waiting, previous, runtimeType)
}

// EphemeralContainerStatuses computes the statuses of the pod's ephemeral
// containers, in spec order, with the rules of ContainerStatuses; an
// ephemeral container is never restarted, so a waiting reason applies only
// until it first runs.
func EphemeralContainerStatuses(pod *v1.Pod, observed *container.PodStatus, waiting map[string]container.WaitingReason, previous []v1.ContainerStatus, runtimeType string) []v1.ContainerStatus {
	specs := make([]v1.Container, len(pod.Spec.EphemeralContainers))
	for i := range pod.Spec.EphemeralContainers {
		specs[i] = v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
	}
	return containerStatuses(pod, specs, podspec.Ephemeral, observed, waiting, previous, runtimeType)
}

func containerStatuses(pod *v1.Pod, specs []v1.Container, kind podspec.Kind, observed *container.PodStatus, waiting map[string]container.WaitingReason, previous []v1.ContainerStatus, runtimeType string) []v1.ContainerStatus {
	init := kind == podspec.Init
	if len(specs) == 0 {
		return nil
	}
	defaultReason := ReasonContainerCreating
	if len(pod.Spec.InitContainers) > 0 {
		defaultReason = ReasonPodInitializing
	}

	out := make([]v1.ContainerStatus, 0, len(specs))
	for i := range specs {
		spec := &specs[i]
		prev := podspec.FindStatus(previous, spec.Name)
		latest := observed.Latest(spec.Name)

		var st v1.ContainerStatus
		switch {
		case latest != nil:
			st = fromRuntime(latest, prev, runtimeType)
			if before := observed.Previous(spec.Name); before != nil {
				st.LastTerminationState = fromRuntime(before, nil, runtimeType).State
			} else if prev != nil && prev.ContainerID != st.ContainerID {
				// The instance before the newest was removed from the
				// runtime: what the API said last is the best we have.
				if prev.State.Terminated != nil {
					st.LastTerminationState = prev.State
				} else {
					st.LastTerminationState = prev.LastTerminationState
				}
			} else if prev != nil {
				st.LastTerminationState = prev.LastTerminationState
			}
		case prev != nil && prev.State.Terminated != nil:
			st = *prev.DeepCopy()
		default:
			st = v1.ContainerStatus{
				Name:  spec.Name,
				Image: spec.Image,
				State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: defaultReason}},
			}
			if prev != nil {
				st.RestartCount = prev.RestartCount
				st.LastTerminationState = *prev.LastTerminationState.DeepCopy()
				if prev.State.Running != nil && st.LastTerminationState.Terminated == nil {
					// It ran, and vanished: show it stopped, not "never
					// started", or the pod would fall back to Pending.
					st.LastTerminationState = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
						ExitCode: exitCodeUnknown,
						Reason:   ReasonStatusUnknown,
						Message:  msgLostWhileRunning,
					}}
					if pod.DeletionTimestamp == nil {
						st.RestartCount++
					}
				}
			}
		}
		st.Name = spec.Name
		if st.Image == "" {
			st.Image = spec.Image
		}
		inferred := init && latest == nil && st.State.Waiting != nil && !podspec.IsSidecar(spec) && anyAppContainerCreated(pod, observed)
		if inferred {
			st.State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: ReasonCompleted, Message: msgInitLostAfterInit}}
		}

		restarts := ShouldRestart(pod, spec, init, latest)
		if kind == podspec.Ephemeral {
			restarts = pod.DeletionTimestamp == nil && latest == nil
		}
		if r, ok := waiting[spec.Name]; ok && r.Reason != "" && !(init && !podspec.IsSidecar(spec) && exitedOK(latest)) && !inferred && restarts {
			if st.State.Terminated != nil {
				st.LastTerminationState = st.State
			}
			st.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: r.Reason, Message: r.Message}}
		}
		out = append(out, st)
	}
	if kind == podspec.App {
		sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	}
	return out
}

// fromRuntime converts one runtime instance.
func fromRuntime(c *container.Status, prev *v1.ContainerStatus, runtimeType string) v1.ContainerStatus {
	id := ContainerID(runtimeType, c.ID)
	st := v1.ContainerStatus{
		Name:         c.Name,
		RestartCount: int32(c.RestartCount),
		Image:        c.Image,
		ImageID:      c.ImageRef,
		ContainerID:  id,
	}
	if c.User != nil {
		// As upstream: the identity the runtime reports (supplementalGroupsPolicy).
		st.User = &v1.ContainerUser{Linux: &v1.LinuxContainerUser{UID: c.User.UID, GID: c.User.GID, SupplementalGroups: c.User.SupplementalGroups}}
	}
	switch {
	case c.State == container.StateRunning:
		st.State.Running = &v1.ContainerStateRunning{StartedAt: timeOrZero(c.StartedAt)}
	case c.State == container.StateExited:
		reason := c.Reason
		if reason == "" {
			reason = ReasonCompleted
			if c.ExitCode != 0 {
				reason = ReasonError
			}
		}
		st.State.Terminated = &v1.ContainerStateTerminated{
			ExitCode:    c.ExitCode,
			Reason:      reason,
			Message:     c.Message,
			StartedAt:   timeOrZero(c.StartedAt),
			FinishedAt:  timeOrZero(c.FinishedAt),
			ContainerID: id,
		}
	case c.State == container.StateUnknown && prev != nil && prev.State.Running != nil:
		// It was running and the runtime lost track of it: it ran and
		// ended, which is not the same as never having run (a Never pod
		// must not run it twice).
		st.State.Terminated = &v1.ContainerStateTerminated{
			ExitCode: exitCodeUnknown,
			Reason:   ReasonStatusUnknown,
			Message:  msgLostOnTerminate,
		}
		st.RestartCount = prev.RestartCount + 1
	default:
		// Created but not started, or unknown: waiting to run.
		st.State.Waiting = &v1.ContainerStateWaiting{}
	}
	return st
}

// ContainerID formats a runtime container ID the way the API shows it:
// "<runtime>://<id>" (containerd when runtimeType is empty).
func ContainerID(runtimeType, id string) string {
	if id == "" {
		return ""
	}
	if runtimeType == "" {
		runtimeType = "containerd"
	}
	return runtimeType + "://" + id
}

func timeOrZero(t time.Time) metav1.Time {
	if t.IsZero() {
		return metav1.Time{}
	}
	return metav1.NewTime(t)
}

// anyAppContainerCreated reports whether the runtime has an instance of
// one of the pod's app containers that was created, runs or exited: the
// pod got past its init containers.
func anyAppContainerCreated(pod *v1.Pod, observed *container.PodStatus) bool {
	for i := range pod.Spec.Containers {
		if c := observed.Latest(pod.Spec.Containers[i].Name); c != nil {
			switch c.State {
			case container.StateCreated, container.StateRunning, container.StateExited:
				return true
			}
		}
	}
	return false
}

func exitedOK(c *container.Status) bool {
	return c != nil && c.State == container.StateExited && c.ExitCode == 0
}

// ShouldRestart reports whether the kubelet will (re)start the container in a
// later sync, given its newest runtime instance (nil if none): never once the
// pod is being deleted; always when it never ran, or was only created, or its
// state is unknown; never while it runs; else as podspec.RestartsAfterExit
// decides from its exit code.
func ShouldRestart(pod *v1.Pod, spec *v1.Container, init bool, latest *container.Status) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	if latest == nil {
		return true
	}
	switch latest.State {
	case container.StateRunning:
		return false
	case container.StateCreated, container.StateUnknown:
		return true
	}
	return podspec.RestartsAfterExit(pod, spec, init, latest.ExitCode)
}
