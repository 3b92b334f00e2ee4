package admission

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func sysctlPod(hostNet, hostIPC bool, names ...string) *v1.Pod {
	p := &v1.Pod{Spec: v1.PodSpec{HostNetwork: hostNet, HostIPC: hostIPC, SecurityContext: &v1.PodSecurityContext{}}}
	for _, n := range names {
		p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, v1.Sysctl{Name: n, Value: "1"})
	}
	return p
}

func TestSysctlAllowlist(t *testing.T) {
	w, err := NewSysctlAllowlist([]string{"kernel.msg*", "net.core.somaxconn"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pod     *v1.Pod
		wantMsg string
	}{
		{sysctlPod(false, false), ""},
		{sysctlPod(false, false, "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range"), ""},
		{sysctlPod(false, false, "kernel/shm_rmid_forced"), ""}, // slash separators
		{sysctlPod(false, false, "kernel.msgmax", "net.core.somaxconn"), ""},
		{sysctlPod(false, false, "kernel.sem"), `forbidden sysctl: "kernel.sem" not allowlisted`},
		{sysctlPod(true, false, "net.ipv4.ip_local_port_range"), `"net.ipv4.ip_local_port_range" not allowed with host Net enabled`},
		{sysctlPod(false, true, "kernel.msgmax"), `not allowed with host IPC enabled`},
		{sysctlPod(true, false, "kernel.shm_rmid_forced"), ""},
	} {
		r := w.Sysctls(tc.pod)
		if tc.wantMsg == "" {
			if !r.Admit {
				t.Errorf("%v rejected: %s", tc.pod.Spec.SecurityContext.Sysctls, r.Message)
			}
			continue
		}
		if r.Admit || r.Reason != ReasonSysctlForbidden || !strings.Contains(r.Message, tc.wantMsg) {
			t.Errorf("%v: %+v, want %q", tc.pod.Spec.SecurityContext.Sysctls, r, tc.wantMsg)
		}
	}
	for _, bad := range []string{"kernel.modprobe", "Foo.Bar", "net.*.x"} {
		if _, err := NewSysctlAllowlist([]string{bad}); err == nil {
			t.Errorf("pattern %q accepted", bad)
		}
	}
	safeOnly, _ := NewSysctlAllowlist(nil)
	if r := safeOnly.Sysctls(sysctlPod(false, false, "kernel.msgmax")); r.Admit {
		t.Errorf("unsafe sysctl admitted without allowedUnsafeSysctls")
	}
}

func TestAppArmorAdmission(t *testing.T) {
	p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	if r := AppArmor(p, "AppArmor is not enabled on the host"); !r.Admit {
		t.Errorf("pod without AppArmor rejected: %+v", r)
	}
	p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}}
	r := AppArmor(p, "AppArmor is not enabled on the host")
	if r.Admit || r.Reason != ReasonAppArmor || r.Message != "Cannot enforce AppArmor: AppArmor is not enabled on the host" {
		t.Errorf("%+v", r)
	}
	if r := AppArmor(p, ""); !r.Admit {
		t.Errorf("rejected on a host with AppArmor: %+v", r)
	}
	p.Spec.Containers[0].SecurityContext.AppArmorProfile = &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}
	if r := AppArmor(p, "no"); !r.Admit {
		t.Errorf("Unconfined needs no AppArmor: %+v", r)
	}
}

func TestSupplementalGroupsPolicyAdmission(t *testing.T) {
	strict := &v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{SupplementalGroupsPolicy: ptr.To(v1.SupplementalGroupsPolicyStrict)}}}
	merge := &v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{SupplementalGroupsPolicy: ptr.To(v1.SupplementalGroupsPolicyMerge)}}}
	node := &v1.Node{}
	if r := SupplementalGroupsPolicy(strict, node); r.Admit || r.Reason != ReasonSupplementalGroupsPolicyNotSupported || r.Message != "SupplementalGroupsPolicy=Strict is not supported in this node" {
		t.Errorf("%+v", r)
	}
	if r := SupplementalGroupsPolicy(merge, node); !r.Admit {
		t.Errorf("Merge rejected")
	}
	node.Status.Features = &v1.NodeFeatures{SupplementalGroupsPolicy: ptr.To(true)}
	if r := SupplementalGroupsPolicy(strict, node); !r.Admit {
		t.Errorf("Strict rejected on a node that supports it")
	}
	if r := Security(strict, &v1.Node{}, nil, ""); r.Reason != ReasonSupplementalGroupsPolicyNotSupported {
		t.Errorf("Security: %+v", r)
	}
}
