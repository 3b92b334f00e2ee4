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
	// Container-level restartPolicy and rules (ContainerRestartRules).
	never := v1.ContainerRestartPolicyNever
	onFailure := v1.ContainerRestartPolicyOnFailure
	always := v1.ContainerRestartPolicyAlways
	rule := func(op v1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) v1.ContainerRestartRule {
		return v1.ContainerRestartRule{Action: v1.ContainerRestartRuleActionRestart, ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes}}
	}
	levels := []struct {
		name     string
		policy   v1.RestartPolicy
		c        v1.Container
		init     bool
		exitCode int32
		restarts bool
	}{
		{"container Always over pod Never", v1.RestartPolicyNever, v1.Container{RestartPolicy: &always}, false, 0, true},
		{"container Never over pod Always", v1.RestartPolicyAlways, v1.Container{RestartPolicy: &never}, false, 1, false},
		{"container OnFailure, success", v1.RestartPolicyAlways, v1.Container{RestartPolicy: &onFailure}, false, 0, false},
		{"container OnFailure, failure", v1.RestartPolicyNever, v1.Container{RestartPolicy: &onFailure}, false, 3, true},
		{"rule In matches", v1.RestartPolicyNever, v1.Container{RestartPolicy: &never, RestartPolicyRules: []v1.ContainerRestartRule{rule(v1.ContainerRestartRuleOnExitCodesOpIn, 42)}}, false, 42, true},
		{"rule In misses, container Never", v1.RestartPolicyNever, v1.Container{RestartPolicy: &never, RestartPolicyRules: []v1.ContainerRestartRule{rule(v1.ContainerRestartRuleOnExitCodesOpIn, 42)}}, false, 1, false},
		{"rule NotIn matches", v1.RestartPolicyNever, v1.Container{RestartPolicy: &never, RestartPolicyRules: []v1.ContainerRestartRule{rule(v1.ContainerRestartRuleOnExitCodesOpNotIn, 0)}}, false, 7, true},
		{"rule NotIn misses", v1.RestartPolicyNever, v1.Container{RestartPolicy: &never, RestartPolicyRules: []v1.ContainerRestartRule{rule(v1.ContainerRestartRuleOnExitCodesOpNotIn, 0)}}, false, 0, false},
		{"rule without exit codes matches nothing", v1.RestartPolicyNever, v1.Container{RestartPolicy: &never, RestartPolicyRules: []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart}}}, false, 1, false},
		{"init container OnFailure over pod Never", v1.RestartPolicyNever, v1.Container{RestartPolicy: &onFailure}, true, 1, true},
		{"init container Never over pod Always", v1.RestartPolicyAlways, v1.Container{RestartPolicy: &never}, true, 1, false},
		{"init success is final even with a NotIn rule", v1.RestartPolicyNever, v1.Container{RestartPolicy: &never, RestartPolicyRules: []v1.ContainerRestartRule{rule(v1.ContainerRestartRuleOnExitCodesOpNotIn, 1)}}, true, 0, false},
	}
	for _, tt := range levels {
		pod := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: tt.policy}}
		if got := RestartsAfterExit(pod, &tt.c, tt.init, tt.exitCode); got != tt.restarts {
			t.Errorf("%s: RestartsAfterExit = %v, want %v", tt.name, got, tt.restarts)
		}
	}
	// After a kill (no exit code): the container's own policy, else the pod's.
	if RestartsAfterKill(&v1.Pod{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways}}, &v1.Container{RestartPolicy: &never}) {
		t.Errorf("RestartsAfterKill: container Never under pod Always restarts")
	}
	if !RestartsAfterKill(&v1.Pod{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever}}, &v1.Container{RestartPolicy: &onFailure}) {
		t.Errorf("RestartsAfterKill: container OnFailure under pod Never does not restart")
	}
	if RestartsAfterKill(&v1.Pod{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever}}, &v1.Container{}) {
		t.Errorf("RestartsAfterKill: pod Never restarts")
	}
	// A success stays done in a new sandbox under OnFailure, the container's or the pod's.
	if !RunsOnce(&v1.Pod{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways}}, &v1.Container{RestartPolicy: &onFailure}) ||
		RunsOnce(&v1.Pod{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyOnFailure}}, &v1.Container{RestartPolicy: &always}) ||
		!RunsOnce(&v1.Pod{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyOnFailure}}, &v1.Container{}) {
		t.Errorf("RunsOnce wrong")
	}
	if IsSidecar(regular) || !IsSidecar(sidecar) {
		t.Errorf("IsSidecar wrong")
	}
}
