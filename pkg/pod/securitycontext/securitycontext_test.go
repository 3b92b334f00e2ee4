package securitycontext

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

func pod(psc *v1.PodSecurityContext, csc *v1.SecurityContext) (*v1.Pod, *v1.Container) {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: v1.PodSpec{SecurityContext: psc, Containers: []v1.Container{{Name: "c", SecurityContext: csc}}}}
	return p, &p.Spec.Containers[0]
}

var opts = Options{SeccompProfileRoot: "/var/lib/kubelet/seccomp"}

func TestContainerMapping(t *testing.T) {
	tests := []struct {
		name  string
		psc   *v1.PodSecurityContext
		csc   *v1.SecurityContext
		opts  Options
		check func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext)
	}{
		{"nothing set", nil, nil, opts, func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
			if sc.RunAsUser != nil || sc.RunAsGroup != nil || sc.Privileged || sc.ReadonlyRootfs || sc.NoNewPrivs || sc.Capabilities != nil {
				t.Errorf("defaults: %+v", sc)
			}
			if sc.Seccomp.ProfileType != runtimeapi.SecurityProfile_Unconfined || sc.Apparmor != nil {
				t.Errorf("profiles: seccomp %v apparmor %v", sc.Seccomp, sc.Apparmor)
			}
			if !reflect.DeepEqual(sc.MaskedPaths, DefaultMaskedPaths) || !reflect.DeepEqual(sc.ReadonlyPaths, DefaultReadonlyPaths) {
				t.Errorf("masked %v readonly %v", sc.MaskedPaths, sc.ReadonlyPaths)
			}
			ns := sc.NamespaceOptions
			if ns.Network != runtimeapi.NamespaceMode_POD || ns.Pid != runtimeapi.NamespaceMode_CONTAINER || ns.Ipc != runtimeapi.NamespaceMode_POD || ns.UsernsOptions.GetMode() != runtimeapi.NamespaceMode_NODE {
				t.Errorf("namespaces %+v", ns)
			}
		}},
		{"pod users and groups, container overrides user", &v1.PodSecurityContext{
			RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](3000), FSGroup: ptr.To[int64](2000),
			SupplementalGroups: []int64{4000, 5000},
		}, &v1.SecurityContext{RunAsUser: ptr.To[int64](1001)}, opts, func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
			if sc.RunAsUser.GetValue() != 1001 || sc.RunAsGroup.GetValue() != 3000 {
				t.Errorf("user %v group %v", sc.RunAsUser, sc.RunAsGroup)
			}
			if !reflect.DeepEqual(sc.SupplementalGroups, []int64{2000, 4000, 5000}) {
				t.Errorf("supplemental groups %v (fsGroup first)", sc.SupplementalGroups)
			}
			if sc.SupplementalGroupsPolicy != runtimeapi.SupplementalGroupsPolicy_Merge {
				t.Errorf("policy %v", sc.SupplementalGroupsPolicy)
			}
		}},
		{"strict groups policy", &v1.PodSecurityContext{SupplementalGroupsPolicy: ptr.To(v1.SupplementalGroupsPolicyStrict)}, nil, opts, func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
			if sc.SupplementalGroupsPolicy != runtimeapi.SupplementalGroupsPolicy_Strict {
				t.Errorf("policy %v", sc.SupplementalGroupsPolicy)
			}
		}},
		{"privileged, caps, read-only root, no new privs", nil, &v1.SecurityContext{
			Privileged: ptr.To(true), ReadOnlyRootFilesystem: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
			Capabilities: &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN", "SYS_TIME"}, Drop: []v1.Capability{"ALL"}},
		}, opts, func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
			if !sc.Privileged || !sc.ReadonlyRootfs || !sc.NoNewPrivs {
				t.Errorf("flags %+v", sc)
			}
			if !reflect.DeepEqual(sc.Capabilities.AddCapabilities, []string{"NET_ADMIN", "SYS_TIME"}) || !reflect.DeepEqual(sc.Capabilities.DropCapabilities, []string{"ALL"}) {
				t.Errorf("caps %+v", sc.Capabilities)
			}
		}},
		{"allowPrivilegeEscalation true leaves no_new_privs off", nil, &v1.SecurityContext{AllowPrivilegeEscalation: ptr.To(true)}, opts, func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
			if sc.NoNewPrivs {
				t.Errorf("no_new_privs set")
			}
		}},
		{"unmasked procMount", nil, &v1.SecurityContext{ProcMount: ptr.To(v1.UnmaskedProcMount)}, opts, func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
			if sc.MaskedPaths == nil || len(sc.MaskedPaths) != 0 || len(sc.ReadonlyPaths) != 0 {
				t.Errorf("unmasked must send empty (not nil) lists: %v %v", sc.MaskedPaths, sc.ReadonlyPaths)
			}
		}},
		{"host masked paths from options", nil, nil, Options{MaskedPaths: []string{"/x"}}, func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
			if !reflect.DeepEqual(sc.MaskedPaths, []string{"/x"}) {
				t.Errorf("masked %v", sc.MaskedPaths)
			}
		}},
		{"pod seccomp RuntimeDefault", &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}}, nil, opts, func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
			if sc.Seccomp.ProfileType != runtimeapi.SecurityProfile_RuntimeDefault {
				t.Errorf("seccomp %v", sc.Seccomp)
			}
		}},
		{"container seccomp Localhost over pod's", &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}},
			&v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("profiles/audit.json")}}, opts,
			func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.Seccomp.ProfileType != runtimeapi.SecurityProfile_Localhost || sc.Seccomp.LocalhostRef != "/var/lib/kubelet/seccomp/profiles/audit.json" {
					t.Errorf("seccomp %v", sc.Seccomp)
				}
			}},
		{"seccompDefault", nil, nil, Options{SeccompDefault: true}, func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
			if sc.Seccomp.ProfileType != runtimeapi.SecurityProfile_RuntimeDefault {
				t.Errorf("seccomp %v", sc.Seccomp)
			}
		}},
		{"container Unconfined beats seccompDefault", nil, &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}}, Options{SeccompDefault: true}, func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
			if sc.Seccomp.ProfileType != runtimeapi.SecurityProfile_Unconfined {
				t.Errorf("seccomp %v", sc.Seccomp)
			}
		}},
		{"apparmor", &v1.PodSecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}},
			&v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("k8s-deny-write")}}, opts,
			func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.Apparmor.GetProfileType() != runtimeapi.SecurityProfile_Localhost || sc.Apparmor.GetLocalhostRef() != "k8s-deny-write" || sc.ApparmorProfile != "localhost/k8s-deny-write" {
					t.Errorf("apparmor %v %q", sc.Apparmor, sc.ApparmorProfile)
				}
			}},
		{"selinux", &v1.PodSecurityContext{SELinuxOptions: &v1.SELinuxOptions{Level: "s0:c1"}}, nil, opts, func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
			if sc.SelinuxOptions.GetLevel() != "s0:c1" {
				t.Errorf("selinux %v", sc.SelinuxOptions)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, c := pod(tc.psc, tc.csc)
			sc, err := Container(p, c, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, sc)
		})
	}
	p, c := pod(nil, &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("../../etc/x")}})
	if _, err := Container(p, c, opts); err == nil {
		t.Errorf("a seccomp profile path leaving the profile root was accepted")
	}
	p, c = pod(nil, &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost}})
	if _, err := Container(p, c, opts); err == nil {
		t.Errorf("Localhost without a profile was accepted")
	}
}

func TestNamespaces(t *testing.T) {
	for _, tc := range []struct {
		spec          v1.PodSpec
		net, pid, ipc runtimeapi.NamespaceMode
		userns        bool
	}{
		{v1.PodSpec{}, runtimeapi.NamespaceMode_POD, runtimeapi.NamespaceMode_CONTAINER, runtimeapi.NamespaceMode_POD, false},
		{v1.PodSpec{HostNetwork: true, HostPID: true, HostIPC: true}, runtimeapi.NamespaceMode_NODE, runtimeapi.NamespaceMode_NODE, runtimeapi.NamespaceMode_NODE, false},
		{v1.PodSpec{ShareProcessNamespace: ptr.To(true)}, runtimeapi.NamespaceMode_POD, runtimeapi.NamespaceMode_POD, runtimeapi.NamespaceMode_POD, false},
		{v1.PodSpec{HostUsers: ptr.To(false)}, runtimeapi.NamespaceMode_POD, runtimeapi.NamespaceMode_CONTAINER, runtimeapi.NamespaceMode_POD, true},
	} {
		ns := Namespaces(&v1.Pod{Spec: tc.spec})
		if ns.Network != tc.net || ns.Pid != tc.pid || ns.Ipc != tc.ipc || (ns.UsernsOptions == nil) != tc.userns || UserNamespaceRequested(&v1.Pod{Spec: tc.spec}) != tc.userns {
			t.Errorf("%+v: %+v", tc.spec, ns)
		}
	}
}

func TestSandbox(t *testing.T) {
	p, _ := pod(&v1.PodSecurityContext{
		RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000), SupplementalGroups: []int64{3000},
		Sysctls: []v1.Sysctl{{Name: "kernel/shm_rmid_forced", Value: "1"}, {Name: "net.ipv4.ip_local_port_range", Value: "1024 65000"}},
	}, nil)
	p.Spec.InitContainers = []v1.Container{{Name: "i", SecurityContext: &v1.SecurityContext{Privileged: ptr.To(true)}}}
	sc, sysctls, err := Sandbox(p)
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Privileged || sc.RunAsUser.GetValue() != 1000 || !reflect.DeepEqual(sc.SupplementalGroups, []int64{2000, 3000}) || sc.Seccomp.ProfileType != runtimeapi.SecurityProfile_RuntimeDefault {
		t.Errorf("sandbox %+v", sc)
	}
	if !reflect.DeepEqual(sysctls, map[string]string{"kernel.shm_rmid_forced": "1", "net.ipv4.ip_local_port_range": "1024 65000"}) {
		t.Errorf("sysctls %v", sysctls)
	}
	p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "e", SecurityContext: &v1.SecurityContext{Privileged: ptr.To(true)}}}}
	p.Spec.InitContainers = nil
	if !HasPrivileged(p) {
		t.Errorf("a privileged ephemeral container must make the sandbox privileged")
	}
}

func TestAppArmorProfile(t *testing.T) {
	p, c := pod(nil, nil)
	if AppArmorProfile(p, c) != nil || UsesAppArmor(p) {
		t.Errorf("no profile expected")
	}
	p.Annotations = map[string]string{v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": "localhost/foo"}
	if got := AppArmorProfile(p, c); got == nil || got.Type != v1.AppArmorProfileTypeLocalhost || *got.LocalhostProfile != "foo" || !UsesAppArmor(p) {
		t.Errorf("annotation: %+v", got)
	}
	p.Annotations[v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+"c"] = "unconfined"
	if UsesAppArmor(p) {
		t.Errorf("unconfined needs no AppArmor")
	}
}

func TestVerifyRunAsNonRoot(t *testing.T) {
	uid := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name      string
		psc       *v1.PodSecurityContext
		csc       *v1.SecurityContext
		imageUID  *int64
		imageUsr  string
		wantErr   string
		needImage bool
	}{
		{"not asked", nil, nil, uid(0), "", "", false},
		{"root image refused", &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}, nil, uid(0), "", "container has runAsNonRoot and image will run as root", true},
		{"image without user is root", &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}, nil, nil, "", "image will run as root", true},
		{"non-root image", &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}, nil, uid(1234), "", "", true},
		{"named image user cannot be checked", nil, &v1.SecurityContext{RunAsNonRoot: ptr.To(true)}, nil, "nobody", "non-numeric user (nobody)", true},
		{"runAsUser decides", &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}, &v1.SecurityContext{RunAsUser: ptr.To[int64](1000)}, uid(0), "", "", false},
		{"runAsUser 0 refused", &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](0)}, nil, uid(1), "", "runAsUser breaks non-root policy", false},
		{"container turns it off", &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}, &v1.SecurityContext{RunAsNonRoot: ptr.To(false)}, uid(0), "", "", false},
	} {
		p, c := pod(tc.psc, tc.csc)
		err := VerifyRunAsNonRoot(p, c, tc.imageUID, tc.imageUsr)
		if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.wantErr)
		}
		if got := NeedsImageUser(p, c); got != tc.needImage {
			t.Errorf("%s: NeedsImageUser = %v", tc.name, got)
		}
	}
}
