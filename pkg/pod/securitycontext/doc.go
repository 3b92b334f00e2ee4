// Package securitycontext maps a pod's and its containers' security
// settings to the CRI, as the upstream kubelet does: the effective
// security context (container fields over pod fields), users and groups,
// capabilities, privileged mode, read-only root, no_new_privs, /proc
// masking, seccomp and AppArmor profiles, host namespaces, sysctls; and
// the runAsNonRoot check against the image's user.
//
// Every function is pure; the caller supplies host facts (the seccomp
// profile root, the default masked paths) in Options.
package securitycontext
