package securitycontext

import (
	"errors"
	"fmt"
	"math"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// Options are the host facts the mapping needs.
type Options struct {
	// SeccompProfileRoot is the directory Localhost seccomp profiles are
	// relative to (<root-dir>/seccomp).
	SeccompProfileRoot string
	// SeccompDefault makes RuntimeDefault the profile of containers that
	// ask for none (seccompDefault in the kubelet configuration).
	SeccompDefault bool
	// MaskedPaths are the paths masked in /proc and /sys for the default
	// procMount; nil means DefaultMaskedPaths.
	MaskedPaths []string
}

// DefaultMaskedPaths are the paths a container with the default procMount
// cannot read (upstream's list; the host may add its CPUs' thermal
// throttle directories, see HostMaskedPaths).
var DefaultMaskedPaths = []string{
	"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
	"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
	"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
}

// DefaultReadonlyPaths are the paths a container with the default
// procMount sees read-only.
var DefaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}

// Effective merges the pod's security context into the container's: a
// field the container sets wins; the pod provides runAsUser, runAsGroup,
// runAsNonRoot, seLinuxOptions and windowsOptions otherwise. The result is
// a new object (never nil).
func Effective(pod *v1.Pod, c *v1.Container) *v1.SecurityContext {
	out := &v1.SecurityContext{}
	if psc := pod.Spec.SecurityContext; psc != nil {
		out.RunAsUser = copyPtr(psc.RunAsUser)
		out.RunAsGroup = copyPtr(psc.RunAsGroup)
		out.RunAsNonRoot = copyPtr(psc.RunAsNonRoot)
		if psc.SELinuxOptions != nil {
			o := *psc.SELinuxOptions
			out.SELinuxOptions = &o
		}
		if psc.WindowsOptions != nil {
			o := *psc.WindowsOptions
			out.WindowsOptions = &o
		}
	}
	csc := c.SecurityContext
	if csc == nil {
		return out
	}
	if csc.SELinuxOptions != nil {
		o := *csc.SELinuxOptions
		out.SELinuxOptions = &o
	}
	if csc.Capabilities != nil {
		caps := *csc.Capabilities
		out.Capabilities = &caps
	}
	if csc.Privileged != nil {
		out.Privileged = copyPtr(csc.Privileged)
	}
	if csc.RunAsUser != nil {
		out.RunAsUser = copyPtr(csc.RunAsUser)
	}
	if csc.RunAsGroup != nil {
		out.RunAsGroup = copyPtr(csc.RunAsGroup)
	}
	if csc.RunAsNonRoot != nil {
		out.RunAsNonRoot = copyPtr(csc.RunAsNonRoot)
	}
	out.ReadOnlyRootFilesystem = copyPtr(csc.ReadOnlyRootFilesystem)
	out.AllowPrivilegeEscalation = copyPtr(csc.AllowPrivilegeEscalation)
	out.ProcMount = copyPtr(csc.ProcMount)
	out.SeccompProfile = csc.SeccompProfile
	out.AppArmorProfile = csc.AppArmorProfile
	return out
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// Namespaces are the pod's namespace modes: the node's network, PID and
// IPC namespaces for hostNetwork, hostPID and hostIPC; one PID namespace
// for the pod with shareProcessNamespace, else one per container; and the
// user namespace mode (the node's unless hostUsers is false; a pod user
// namespace needs mappings the caller must add, see UserNamespaceRequested).
func Namespaces(pod *v1.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_POD,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
		Ipc:     runtimeapi.NamespaceMode_POD,
	}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case pod.Spec.HostPID:
		ns.Pid = runtimeapi.NamespaceMode_NODE
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	if !UserNamespaceRequested(pod) {
		ns.UsernsOptions = &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}
	}
	return ns
}

// UserNamespaceRequested reports whether the pod asks for its own user
// namespace (hostUsers: false).
func UserNamespaceRequested(pod *v1.Pod) bool {
	return pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers
}

// HasPrivileged reports whether any container of the pod (init, app or
// ephemeral) is privileged; the sandbox is then privileged too.
func HasPrivileged(pod *v1.Pod) bool {
	priv := func(sc *v1.SecurityContext) bool { return sc != nil && sc.Privileged != nil && *sc.Privileged }
	for i := range pod.Spec.InitContainers {
		if priv(pod.Spec.InitContainers[i].SecurityContext) {
			return true
		}
	}
	for i := range pod.Spec.Containers {
		if priv(pod.Spec.Containers[i].SecurityContext) {
			return true
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if priv(pod.Spec.EphemeralContainers[i].SecurityContext) {
			return true
		}
	}
	return false
}

// supplementalGroups are fsGroup, then supplementalGroups.
func supplementalGroups(psc *v1.PodSecurityContext) []int64 {
	if psc == nil {
		return nil
	}
	var out []int64
	if psc.FSGroup != nil {
		out = append(out, *psc.FSGroup)
	}
	return append(out, psc.SupplementalGroups...)
}

func groupsPolicy(psc *v1.PodSecurityContext) (runtimeapi.SupplementalGroupsPolicy, error) {
	if psc == nil || psc.SupplementalGroupsPolicy == nil {
		return runtimeapi.SupplementalGroupsPolicy_Merge, nil
	}
	v, ok := runtimeapi.SupplementalGroupsPolicy_value[string(*psc.SupplementalGroupsPolicy)]
	if !ok {
		return 0, fmt.Errorf("unsupported supplementalGroupsPolicy: %s", *psc.SupplementalGroupsPolicy)
	}
	return runtimeapi.SupplementalGroupsPolicy(v), nil
}

// Container returns the CRI security context of container c of pod. Its
// NamespaceOptions are Namespaces(pod); the caller adds a PID target
// (ephemeral containers) and user namespace mappings.
func Container(pod *v1.Pod, c *v1.Container, opts Options) (*runtimeapi.LinuxContainerSecurityContext, error) {
	eff := Effective(pod, c)
	out := &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: Namespaces(pod)}
	if caps := eff.Capabilities; caps != nil {
		out.Capabilities = &runtimeapi.Capability{AddCapabilities: []string{}, DropCapabilities: []string{}}
		for _, a := range caps.Add {
			out.Capabilities.AddCapabilities = append(out.Capabilities.AddCapabilities, string(a))
		}
		for _, d := range caps.Drop {
			out.Capabilities.DropCapabilities = append(out.Capabilities.DropCapabilities, string(d))
		}
	}
	if o := eff.SELinuxOptions; o != nil {
		out.SelinuxOptions = &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
	}
	if eff.RunAsUser != nil {
		out.RunAsUser = &runtimeapi.Int64Value{Value: *eff.RunAsUser}
	}
	if eff.RunAsGroup != nil {
		out.RunAsGroup = &runtimeapi.Int64Value{Value: *eff.RunAsGroup}
	}
	out.Privileged = eff.Privileged != nil && *eff.Privileged
	out.ReadonlyRootfs = eff.ReadOnlyRootFilesystem != nil && *eff.ReadOnlyRootFilesystem
	out.NoNewPrivs = eff.AllowPrivilegeEscalation != nil && !*eff.AllowPrivilegeEscalation
	if eff.ProcMount != nil && *eff.ProcMount == v1.UnmaskedProcMount {
		out.MaskedPaths, out.ReadonlyPaths = []string{}, []string{}
	} else {
		out.MaskedPaths = opts.MaskedPaths
		if out.MaskedPaths == nil {
			out.MaskedPaths = DefaultMaskedPaths
		}
		out.ReadonlyPaths = DefaultReadonlyPaths
	}
	var err error
	if out.Seccomp, err = Seccomp(pod, c, opts); err != nil {
		return nil, err
	}
	if out.Apparmor, out.ApparmorProfile, err = AppArmor(pod, c); err != nil {
		return nil, err
	}
	out.SupplementalGroups = supplementalGroups(pod.Spec.SecurityContext)
	if out.SupplementalGroupsPolicy, err = groupsPolicy(pod.Spec.SecurityContext); err != nil {
		return nil, err
	}
	return out, nil
}

// Sandbox returns the CRI security context of the pod's sandbox and its
// sysctls (names with '/' separators normalised to dots). The sandbox
// always runs the runtime's default seccomp profile, and is privileged
// when any container is.
func Sandbox(pod *v1.Pod) (*runtimeapi.LinuxSandboxSecurityContext, map[string]string, error) {
	out := &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: Namespaces(pod),
		Privileged:       HasPrivileged(pod),
		Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
	}
	psc := pod.Spec.SecurityContext
	sysctls := map[string]string{}
	if psc == nil {
		return out, sysctls, nil
	}
	if psc.RunAsUser != nil {
		out.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
	}
	if psc.RunAsGroup != nil {
		out.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
	}
	out.SupplementalGroups = supplementalGroups(psc)
	var err error
	if out.SupplementalGroupsPolicy, err = groupsPolicy(psc); err != nil {
		return nil, nil, err
	}
	if o := psc.SELinuxOptions; o != nil {
		out.SelinuxOptions = &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
	}
	for _, s := range psc.Sysctls {
		sysctls[utilsysctl.NormalizeName(s.Name)] = s.Value
	}
	return out, sysctls, nil
}

// Seccomp returns the container's seccomp profile: its own, else the
// pod's, else RuntimeDefault with Options.SeccompDefault, else Unconfined.
// A Localhost profile is a file under Options.SeccompProfileRoot; a path
// that would leave that directory is refused.
func Seccomp(pod *v1.Pod, c *v1.Container, opts Options) (*runtimeapi.SecurityProfile, error) {
	var p *v1.SeccompProfile
	if c.SecurityContext != nil && c.SecurityContext.SeccompProfile != nil {
		p = c.SecurityContext.SeccompProfile
	} else if pod.Spec.SecurityContext != nil {
		p = pod.Spec.SecurityContext.SeccompProfile
	}
	if p == nil {
		if opts.SeccompDefault {
			return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
	}
	switch p.Type {
	case v1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	case v1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			return nil, errors.New("localhostProfile must be set if seccompProfile type is Localhost.")
		}
		rel := *p.LocalhostProfile
		if strings.HasPrefix(rel, "/") || hasDotDot(rel) {
			return nil, fmt.Errorf("seccomp localhostProfile %q must be a path relative to %s without '..'", rel, opts.SeccompProfileRoot)
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost,
			LocalhostRef: strings.TrimSuffix(opts.SeccompProfileRoot, "/") + "/" + rel}, nil
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
}

func hasDotDot(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}

// The deprecated AppArmor annotation (still honoured, as upstream).
const (
	appArmorAnnotationPrefix = v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix
)

// AppArmorProfile returns the AppArmor profile container c asks for: its
// own field, else the deprecated per-container pod annotation, else the
// pod's field; nil when none.
func AppArmorProfile(pod *v1.Pod, c *v1.Container) *v1.AppArmorProfile {
	if c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil {
		return c.SecurityContext.AppArmorProfile
	}
	if val, ok := pod.Annotations[appArmorAnnotationPrefix+c.Name]; ok {
		switch {
		case val == v1.DeprecatedAppArmorBetaProfileRuntimeDefault:
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}
		case val == v1.DeprecatedAppArmorBetaProfileNameUnconfined:
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}
		case strings.HasPrefix(val, v1.DeprecatedAppArmorBetaProfileNamePrefix):
			name := strings.TrimPrefix(val, v1.DeprecatedAppArmorBetaProfileNamePrefix)
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
		}
	}
	if pod.Spec.SecurityContext != nil {
		return pod.Spec.SecurityContext.AppArmorProfile
	}
	return nil
}

// AppArmor returns the CRI AppArmor profile of c and the deprecated string
// form older runtimes read; nil and "" when c asks for none.
func AppArmor(pod *v1.Pod, c *v1.Container) (*runtimeapi.SecurityProfile, string, error) {
	p := AppArmorProfile(pod, c)
	if p == nil {
		return nil, "", nil
	}
	switch p.Type {
	case v1.AppArmorProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, v1.DeprecatedAppArmorBetaProfileRuntimeDefault, nil
	case v1.AppArmorProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, v1.DeprecatedAppArmorBetaProfileNameUnconfined, nil
	case v1.AppArmorProfileTypeLocalhost:
		if p.LocalhostProfile == nil || strings.TrimSpace(*p.LocalhostProfile) == "" {
			return nil, "", errors.New("missing localhost apparmor profile name")
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: *p.LocalhostProfile},
			v1.DeprecatedAppArmorBetaProfileNamePrefix + *p.LocalhostProfile, nil
	}
	return nil, "", fmt.Errorf("unknown apparmor profile type: %q", p.Type)
}

// UsesAppArmor reports whether any container of the pod needs AppArmor
// enforcement: a profile other than Unconfined.
func UsesAppArmor(pod *v1.Pod) bool {
	used := false
	visit := func(c *v1.Container) {
		if p := AppArmorProfile(pod, c); p != nil && p.Type != v1.AppArmorProfileTypeUnconfined {
			used = true
		}
	}
	for i := range pod.Spec.InitContainers {
		visit(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		visit(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		c := v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		visit(&c)
	}
	return used
}

// NeedsImageUser reports whether VerifyRunAsNonRoot needs the image's
// user: runAsNonRoot is set and no runAsUser says who runs.
func NeedsImageUser(pod *v1.Pod, c *v1.Container) bool {
	eff := Effective(pod, c)
	return eff.RunAsNonRoot != nil && *eff.RunAsNonRoot && eff.RunAsUser == nil
}

// VerifyRunAsNonRoot refuses to run c when it must not run as root
// (runAsNonRoot) but would: runAsUser 0, or no runAsUser and an image
// whose user is root (uid 0, or no user at all) or a name that cannot be
// checked. uid and username are the image's user (ImageStatus).
func VerifyRunAsNonRoot(pod *v1.Pod, c *v1.Container, uid *int64, username string) error {
	eff := Effective(pod, c)
	if eff.RunAsNonRoot == nil || !*eff.RunAsNonRoot {
		return nil
	}
	if eff.RunAsUser != nil {
		if *eff.RunAsUser == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", podspec.Format(pod), c.Name)
		}
		return nil
	}
	switch {
	case uid == nil && username != "":
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", username, podspec.Format(pod), c.Name)
	case uid == nil || *uid == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podspec.Format(pod), c.Name)
	}
	if errs := validation.IsValidUserID(*uid); len(errs) > 0 {
		return fmt.Errorf("container has runAsNonRoot and image has an invalid user id (%d). (Must be 1-(%d)): %s (pod: %q, container: %s)",
			*uid, math.MaxInt32, strings.Join(errs, "; "), podspec.Format(pod), c.Name)
	}
	return nil
}
