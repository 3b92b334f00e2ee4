package podspec

import v1 "k8s.io/api/core/v1"

// RestartPolicy is the pod's restart policy, defaulted as the API server
// does: Always when unset.
func RestartPolicy(pod *v1.Pod) v1.RestartPolicy {
	if pod.Spec.RestartPolicy == "" {
		return v1.RestartPolicyAlways
	}
	return pod.Spec.RestartPolicy
}

// IsSidecar reports whether an init container is a sidecar: restartPolicy
// Always on the container itself. A sidecar keeps running beside the app
// containers instead of running to completion before them, and is
// restarted whenever it exits, whatever the pod's policy.
func IsSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// RestartsAfterExit reports whether the kubelet starts a container again
// after it exited with exitCode, in the same sandbox. init tells that c is
// an init container. The one restart rule:
//
//   - a sidecar: always;
//   - a regular init container: a success is final;
//   - otherwise the container's own restartPolicyRules first (the first
//     rule whose exit codes match decides; action Restart restarts), then
//     the container's own restartPolicy when set, then the pod's: Always
//     restarts, OnFailure restarts a non-zero exit, Never does not
//     (ContainerRestartRules, beta and on by default since 1.35).
//
// The RestartAllContainers action is refused before a pod runs
// (kuberuntime.RefusedRestartAllContainers), so it never reaches here.
func RestartsAfterExit(pod *v1.Pod, c *v1.Container, init bool, exitCode int32) bool {
	if init && IsSidecar(c) {
		return true
	}
	if init && exitCode == 0 {
		return false
	}
	if c.RestartPolicy != nil {
		if r, ok := MatchingRestartRule(c, exitCode); ok && r.Action == v1.ContainerRestartRuleActionRestart {
			return true
		}
		switch *c.RestartPolicy {
		case v1.ContainerRestartPolicyAlways:
			return true
		case v1.ContainerRestartPolicyOnFailure:
			return exitCode != 0
		case v1.ContainerRestartPolicyNever:
			return false
		}
	}
	switch RestartPolicy(pod) {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return exitCode != 0
	}
	return true
}

// MatchingRestartRule returns the first of c's restartPolicyRules whose
// exit codes match exitCode (operator In: one of the values; NotIn: none
// of them). A rule without exit codes or with an unknown operator matches
// nothing.
func MatchingRestartRule(c *v1.Container, exitCode int32) (v1.ContainerRestartRule, bool) {
	for _, r := range c.RestartPolicyRules {
		if r.ExitCodes == nil {
			continue
		}
		in := false
		for _, v := range r.ExitCodes.Values {
			if v == exitCode {
				in = true
				break
			}
		}
		switch r.ExitCodes.Operator {
		case v1.ContainerRestartRuleOnExitCodesOpIn:
			if in {
				return r, true
			}
		case v1.ContainerRestartRuleOnExitCodesOpNotIn:
			if !in {
				return r, true
			}
		}
	}
	return v1.ContainerRestartRule{}, false
}

// RestartsAfterKill reports whether a container the kubelet killed while
// it ran (a failed liveness or startup probe) is started again. There is
// no exit code to match rules against, so only the container's own
// restartPolicy counts when set, else the pod's: anything but Never.
func RestartsAfterKill(pod *v1.Pod, c *v1.Container) bool {
	if c.RestartPolicy != nil {
		return *c.RestartPolicy != v1.ContainerRestartPolicyNever
	}
	return RestartPolicy(pod) != v1.RestartPolicyNever
}

// RunsOnce reports whether an app container that succeeded stays done even
// when the pod gets a new sandbox: its own restartPolicy OnFailure, or no
// policy of its own and the pod's OnFailure. (Under the pod's Never a new
// sandbox starts nothing at all; see kuberuntime's actions.)
func RunsOnce(pod *v1.Pod, c *v1.Container) bool {
	if c.RestartPolicy != nil {
		return *c.RestartPolicy == v1.ContainerRestartPolicyOnFailure
	}
	return RestartPolicy(pod) == v1.RestartPolicyOnFailure
}

// MayLeaveTerminated reports whether a container shown terminated with
// exitCode may later be shown not terminated: under restartPolicy Always
// any container may run again (a new sandbox re-runs even init containers
// that succeeded); otherwise only one that RestartsAfterExit. The status
// writer refuses any other transition, as upstream does.
func MayLeaveTerminated(pod *v1.Pod, c *v1.Container, init bool, exitCode int32) bool {
	return RestartPolicy(pod) == v1.RestartPolicyAlways || RestartsAfterExit(pod, c, init, exitCode)
}
