package podspec

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestRestartRule(t *testing.T) {
	regular := &v1.Container{Name: "c"}
	sidecar := &v1.Container{Name: "s", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)}
	tests := []struct {
		policy   v1.RestartPolicy
		c        *v1.Container
		init     bool
		exitCode int32
		restarts bool // RestartsAfterExit
		leaves   bool // MayLeaveTerminated
	}{
		// App containers.
		{"", regular, false, 0, true, true}, // unset means Always
		{v1.RestartPolicyAlways, regular, false, 0, true, true},
		{v1.RestartPolicyAlways, regular, false, 1, true, true},
		{v1.RestartPolicyOnFailure, regular, false, 0, false, false},
		{v1.RestartPolicyOnFailure, regular, false, 1, true, true},
		{v1.RestartPolicyNever, regular, false, 0, false, false},
		{v1.RestartPolicyNever, regular, false, 1, false, false},
		// Regular init containers: success is final; failure retried
		// unless Never. Under Always a new sandbox may re-run them.
		{v1.RestartPolicyAlways, regular, true, 0, false, true},
		{v1.RestartPolicyAlways, regular, true, 1, true, true},
		{v1.RestartPolicyOnFailure, regular, true, 0, false, false},
		{v1.RestartPolicyOnFailure, regular, true, 2, true, true},
		{v1.RestartPolicyNever, regular, true, 1, false, false},
		// Sidecars restart whatever the pod's policy.
		{v1.RestartPolicyNever, sidecar, true, 0, true, true},
		{v1.RestartPolicyOnFailure, sidecar, true, 0, true, true},
	}
	for _, tt := range tests {
		pod := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: tt.policy}}
		if got := RestartsAfterExit(pod, tt.c, tt.init, tt.exitCode); got != tt.restarts {
			t.Errorf("RestartsAfterExit(policy=%q, %s, init=%v, exit=%d) = %v, want %v", tt.policy, tt.c.Name, tt.init, tt.exitCode, got, tt.restarts)
		}
		if got := MayLeaveTerminated(pod, tt.c, tt.init, tt.exitCode); got != tt.leaves {
			t.Errorf("MayLeaveTerminated(policy=%q, %s, init=%v, exit=%d) = %v, want %v", tt.policy, tt.c.Name, tt.init, tt.exitCode, got, tt.leaves)
		}
	}
	if IsSidecar(regular) || !IsSidecar(sidecar) {
		t.Errorf("IsSidecar wrong")
	}
}
