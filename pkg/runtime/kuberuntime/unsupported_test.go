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
	if err := unsupportedFields(plain); err != nil {
		t.Errorf("plain pod: %v", err)
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
		"hostname override": {func(p *v1.Pod) { p.Spec.HostnameOverride = ptr.To("x") }, "spec.hostnameOverride"},
		"bind mount options": {func(p *v1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "v", MountPath: "/v"}, {Name: "w", MountPath: "/w", BindMountOptions: []string{"noexec"}}}
		}, "spec.containers[0].volumeMounts[1].bindMountOptions"},
	} {
		p := plain.DeepCopy()
		tc.mutate(p)
		err := unsupportedFields(p)
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
