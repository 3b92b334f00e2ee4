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
//   - a regular init container: a success is final; a failure is retried
//     unless the pod's policy is Never (then the pod fails);
//   - an app container: Always restarts, OnFailure restarts a non-zero
//     exit, Never does not.
func RestartsAfterExit(pod *v1.Pod, c *v1.Container, init bool, exitCode int32) bool {
	if init && IsSidecar(c) {
		return true
	}
	policy := RestartPolicy(pod)
	if init {
		return exitCode != 0 && policy != v1.RestartPolicyNever
	}
	switch policy {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return exitCode != 0
	}
	return true
}

// MayLeaveTerminated reports whether a container shown terminated with
// exitCode may later be shown not terminated: under restartPolicy Always
// any container may run again (a new sandbox re-runs even init containers
// that succeeded); otherwise only one that RestartsAfterExit. The status
// writer refuses any other transition, as upstream does.
func MayLeaveTerminated(pod *v1.Pod, c *v1.Container, init bool, exitCode int32) bool {
	return RestartPolicy(pod) == v1.RestartPolicyAlways || RestartsAfterExit(pod, c, init, exitCode)
}
