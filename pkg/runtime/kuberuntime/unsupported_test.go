package kuberuntime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestUnsupportedFields(t *testing.T) {
	plain := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "i"}}}}
	if err := unsupportedFields(plain, false); err != nil {
		t.Errorf("plain pod: %v", err)
	}
	// Implemented: a container's own restart policy and Restart rules, and
	// hostnameOverride.
	implemented := plain.DeepCopy()
	implemented.Spec.HostnameOverride = ptr.To("x")
	implemented.Spec.Containers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyNever)
	implemented.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	if err := unsupportedFields(implemented, false); err != nil {
		t.Errorf("restart rules and hostnameOverride: %v", err)
	}
	for name, tc := range map[string]struct {
		mutate func(p *v1.Pod)
		want   string
	}{
		"pod claims":       {func(p *v1.Pod) { p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu"}} }, "spec.resourceClaims"},
		"container claims": {func(p *v1.Pod) { p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}} }, "spec.containers[0].resources.claims"},
		"stop signal": {func(p *v1.Pod) {
			p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{StopSignal: ptr.To(v1.SIGUSR1)}
		}, "spec.containers[0].lifecycle.stopSignal"},
		"restart all containers": {func(p *v1.Pod) {
			p.Spec.Containers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyNever)
			p.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{
				{Action: v1.ContainerRestartRuleActionRestart, ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{1}}},
				{Action: v1.ContainerRestartRuleActionRestartAllContainers, ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}},
			}
		}, "spec.containers[0].restartPolicyRules[1].action RestartAllContainers"},
		"bind mount options": {func(p *v1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "v", MountPath: "/v"}, {Name: "w", MountPath: "/w", BindMountOptions: []string{"noexec"}}}
		}, "spec.containers[0].volumeMounts[1].bindMountOptions"},
	} {
		p := plain.DeepCopy()
		tc.mutate(p)
		err := unsupportedFields(p, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", name, err, tc.want)
		}
	}
}

func TestRestartCountFromLogs(t *testing.T) {
	dir := t.TempDir()
	if n := restartCountFromLogs(filepath.Join(dir, "missing")); n != 0 {
		t.Errorf("no directory: %d", n)
	}
	for _, f := range []string{"0.log", "3.log", "2.log", "7.log.20260101-000000", "x.log"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if n := restartCountFromLogs(dir); n != 4 {
		t.Errorf("got %d, want 4 (after 3.log; rotated and other files ignored)", n)
	}
}
