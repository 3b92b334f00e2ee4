package admission

import (
	"fmt"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"

	"github.com/gokubelet/kubelet/pkg/pod/securitycontext"
)

// Reasons of the node-security admission checks (upstream's).
const (
	ReasonSysctlForbidden                      = "SysctlForbidden"
	ReasonAppArmor                             = "AppArmor"
	ReasonSupplementalGroupsPolicyNotSupported = "SupplementalGroupsPolicyNotSupported"
)

// SafeSysctls are the namespaced sysctls every pod may set (upstream's
// list; all are namespaced on kernels from 4.15 on).
var SafeSysctls = []string{
	"kernel.shm_rmid_forced",
	"net.ipv4.ip_local_port_range",
	"net.ipv4.tcp_syncookies",
	"net.ipv4.ping_group_range",
	"net.ipv4.ip_unprivileged_port_start",
	"net.ipv4.ip_local_reserved_ports",
	"net.ipv4.tcp_keepalive_time",
	"net.ipv4.tcp_fin_timeout",
	"net.ipv4.tcp_keepalive_intvl",
	"net.ipv4.tcp_keepalive_probes",
	"net.ipv4.tcp_rmem",
	"net.ipv4.tcp_wmem",
}

// sysctlPattern is a valid allowedUnsafeSysctls entry: a sysctl name with
// '.' or '/' separators, optionally ending in '*'.
var sysctlPattern = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]$`)

// SysctlAllowlist holds the sysctls pods may set: the safe ones plus the
// kubelet's allowedUnsafeSysctls (names, or prefixes ending in '*'), each
// with the namespace it lives in.
type SysctlAllowlist struct {
	names    map[string]utilsysctl.Namespace
	prefixes map[string]utilsysctl.Namespace
}

// NewSysctlAllowlist builds the allowlist from the safe sysctls and the
// unsafe patterns the kubelet allows. A pattern that is invalid or not a
// namespaced sysctl is an error (the kubelet refuses to start).
func NewSysctlAllowlist(unsafe []string) (*SysctlAllowlist, error) {
	w := &SysctlAllowlist{names: map[string]utilsysctl.Namespace{}, prefixes: map[string]utilsysctl.Namespace{}}
	for _, p := range append(append([]string{}, SafeSysctls...), unsafe...) {
		if err := CheckSysctlPattern(p); err != nil {
			return nil, err
		}
		ns, name, prefixed := utilsysctl.GetNamespace(p)
		if prefixed {
			w.prefixes[name] = ns
		} else {
			w.names[name] = ns
		}
	}
	return w, nil
}

// CheckSysctlPattern validates one allowedUnsafeSysctls entry: a valid
// sysctl name or prefix ending in '*', in a namespace a pod can have its
// own of (IPC or network).
func CheckSysctlPattern(p string) error {
	if len(p) > 253 || !sysctlPattern.MatchString(p) {
		return fmt.Errorf("sysctl %q must have at most 253 characters and match regex %s", p, sysctlPattern.String())
	}
	if ns, name, _ := utilsysctl.GetNamespace(p); ns == utilsysctl.UnknownNamespace {
		return fmt.Errorf("the sysctls %q are not known to be namespaced", name)
	}
	return nil
}

func (w *SysctlAllowlist) check(name string, hostNet, hostIPC bool) error {
	name = utilsysctl.NormalizeName(name)
	ns, ok := w.names[name]
	if !ok {
		for p, pns := range w.prefixes {
			if strings.HasPrefix(name, p) {
				ns, ok = pns, true
				break
			}
		}
	}
	if !ok {
		return fmt.Errorf("%q not allowlisted", name)
	}
	if (ns == utilsysctl.IPCNamespace && hostIPC) || (ns == utilsysctl.NetNamespace && hostNet) {
		return fmt.Errorf("%q not allowed with host %s enabled", name, ns)
	}
	return nil
}

// Sysctls admits a pod whose sysctls are all allowlisted and live in a
// namespace the pod does not share with the host.
func (w *SysctlAllowlist) Sysctls(pod *v1.Pod) Result {
	if pod.Spec.SecurityContext == nil {
		return Result{Admit: true}
	}
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		if err := w.check(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC); err != nil {
			return Result{Reason: ReasonSysctlForbidden, Message: fmt.Sprintf("forbidden sysctl: %v", err)}
		}
	}
	return Result{Admit: true}
}

// AppArmor admits a pod that needs no AppArmor enforcement, or one whose
// profiles the host can enforce. hostErr is why the host cannot ("" when
// it can; securitycontext.AppArmorEnabled tells).
func AppArmor(pod *v1.Pod, hostErr string) Result {
	if !securitycontext.UsesAppArmor(pod) {
		return Result{Admit: true}
	}
	if hostErr != "" {
		return Result{Reason: ReasonAppArmor, Message: "Cannot enforce AppArmor: " + hostErr}
	}
	var bad error
	check := func(c *v1.Container) {
		if p := securitycontext.AppArmorProfile(pod, c); p != nil && p.Type == v1.AppArmorProfileTypeLocalhost &&
			(p.LocalhostProfile == nil || strings.TrimSpace(*p.LocalhostProfile) == "") && bad == nil {
			bad = fmt.Errorf("invalid empty AppArmor profile name: %q", p)
		}
	}
	for i := range pod.Spec.InitContainers {
		check(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	if bad != nil {
		return Result{Reason: ReasonAppArmor, Message: "Cannot enforce AppArmor: " + bad.Error()}
	}
	return Result{Admit: true}
}

// SupplementalGroupsPolicy refuses a pod asking for the Strict policy when
// the node does not report support for it (status.features, from the
// runtime); Merge is what every runtime does.
func SupplementalGroupsPolicy(pod *v1.Pod, node *v1.Node) Result {
	psc := pod.Spec.SecurityContext
	if psc == nil || psc.SupplementalGroupsPolicy == nil || *psc.SupplementalGroupsPolicy != v1.SupplementalGroupsPolicyStrict {
		return Result{Admit: true}
	}
	if node != nil && node.Status.Features != nil && node.Status.Features.SupplementalGroupsPolicy != nil && *node.Status.Features.SupplementalGroupsPolicy {
		return Result{Admit: true}
	}
	return Result{Reason: ReasonSupplementalGroupsPolicyNotSupported,
		Message: fmt.Sprintf("SupplementalGroupsPolicy=%s is not supported in this node", v1.SupplementalGroupsPolicyStrict)}
}

// Security runs the node-security checks in upstream's order: sysctls,
// supplementalGroupsPolicy, AppArmor. allow may be nil (safe sysctls
// only).
func Security(pod *v1.Pod, node *v1.Node, allow *SysctlAllowlist, appArmorErr string) Result {
	if allow == nil {
		allow, _ = NewSysctlAllowlist(nil)
	}
	if r := allow.Sysctls(pod); !r.Admit {
		return r
	}
	if r := SupplementalGroupsPolicy(pod, node); !r.Admit {
		return r
	}
	return AppArmor(pod, appArmorErr)
}
