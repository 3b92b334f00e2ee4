package podstatus

import (
	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// IsTerminal reports whether the phase is Succeeded or Failed: a pod that
// reached one of them never leaves it.
func IsTerminal(p v1.PodPhase) bool {
	return p == v1.PodSucceeded || p == v1.PodFailed
}

// PhaseFacts are what Phase needs beyond the container statuses.
type PhaseFacts struct {
	// Terminal: the kubelet has decided the pod will not run its containers
	// again (it was deleted or evicted, or ran to completion) and they have
	// stopped. Once all containers are stopped the phase is then Succeeded or
	// Failed from their exit codes whatever the restart policy. Upstream
	// leaves static pods out of this rule, and so does Phase.
	Terminal bool
	// Initialized: the runtime shows that initialization completed once (an
	// app container was created, or the last init container exited 0). It
	// stops sidecars that restart from holding the pod back in Pending.
	Initialized bool
}

// Phase computes the pod phase from the container statuses (as computed by
// ContainerStatuses). The rules, in order:
//
//  1. A regular init container failed and will not be restarted
//     (podspec.RestartsAfterExit): Failed.
//  2. A regular init container has not completed, a sidecar has not started
//     (unless the pod was initialized before), or an app container has never
//     run: Pending.
//  3. Every app container started and one is running (sidecars counted as
//     app containers): Running.
//  4. Nothing running, some stopped: with Terminal (non-static pods),
//     Succeeded if all app containers exited 0, else Failed; otherwise one
//     that will be restarted (podspec.RestartsAfterExit, which weighs the
//     container's own restartPolicy and rules before the pod's) → Running;
//     all exited 0 → Succeeded; else Failed.
//  5. Anything else (a container without a status): Pending.
//
// A container waiting with a previous termination counts as stopped, not as
// never run, and its last exit code decides whether it restarts.
// Terminated sidecars count as neither running nor stopped.
func Phase(pod *v1.Pod, initStatuses, statuses []v1.ContainerStatus, facts PhaseFacts) v1.PodPhase {
	var (
		initPending, sidecarPending, initFailed int
		unknown, running, waiting, stopped, ok  int
		restarting                              int
	)

	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		st := podspec.FindStatus(initStatuses, c.Name)
		if podspec.IsSidecar(c) {
			switch {
			case st == nil:
				unknown++
			case st.State.Running != nil:
				running++
				if st.Started == nil || !*st.Started {
					sidecarPending++
				}
			case st.State.Terminated != nil:
				// Neither running nor stopped: it will be restarted or the
				// pod is going away.
			case st.State.Waiting != nil && st.LastTerminationState.Terminated != nil:
				// Restarting after having run: neither.
			case st.State.Waiting != nil:
				sidecarPending++
				waiting++
			default:
				sidecarPending++
				unknown++
			}
			continue
		}
		switch {
		case st == nil, st.State.Running != nil:
			initPending++
		case st.State.Terminated != nil:
			if code := st.State.Terminated.ExitCode; code != 0 && !podspec.RestartsAfterExit(pod, c, true, code) {
				initFailed++
			}
		case st.State.Waiting != nil && st.LastTerminationState.Terminated != nil:
			if code := st.LastTerminationState.Terminated.ExitCode; code != 0 && !podspec.RestartsAfterExit(pod, c, true, code) {
				initFailed++
			}
		default:
			initPending++
		}
	}

	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		st := podspec.FindStatus(statuses, c.Name)
		switch {
		case st == nil:
			unknown++
		case st.State.Running != nil:
			running++
		case st.State.Terminated != nil:
			stopped++
			if st.State.Terminated.ExitCode == 0 {
				ok++
			}
			if podspec.RestartsAfterExit(pod, c, false, st.State.Terminated.ExitCode) {
				restarting++
			}
		case st.State.Waiting != nil && st.LastTerminationState.Terminated != nil:
			stopped++
			if podspec.RestartsAfterExit(pod, c, false, st.LastTerminationState.Terminated.ExitCode) {
				restarting++
			}
		case st.State.Waiting != nil:
			waiting++
		default:
			unknown++
		}
	}

	if initFailed > 0 {
		return v1.PodFailed
	}
	if initPending > 0 || (sidecarPending > 0 && !facts.Initialized) || waiting > 0 {
		return v1.PodPending
	}
	if unknown > 0 {
		return v1.PodPending
	}
	if running > 0 {
		return v1.PodRunning
	}
	if stopped == 0 {
		return v1.PodPending
	}
	if facts.Terminal && !podspec.IsStatic(pod) {
		if stopped == ok {
			return v1.PodSucceeded
		}
		return v1.PodFailed
	}
	switch {
	case restarting > 0:
		return v1.PodRunning
	case stopped == ok:
		return v1.PodSucceeded
	default:
		return v1.PodFailed
	}
}
