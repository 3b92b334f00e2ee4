package dns

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// EtcHostsPath is where the managed hosts file is mounted in containers.
const EtcHostsPath = "/etc/hosts"

// Headers of the managed hosts file. Tools (and the upstream e2e tests)
// recognise a kubelet-managed file by the first.
const (
	ManagedHostsHeader            = "# Kubernetes-managed hosts file.\n"
	ManagedHostsHeaderHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
)

// maxHostnameLen is the longest hostname (the kernel's nodename holds 64
// bytes with the terminating NUL); maxFQDNLen the longest FQDN used as
// hostname.
const (
	maxHostnameLen = 63
	maxFQDNLen     = 64
)

// Hostname returns the pod's hostname and domain: spec.hostname or the pod
// name (cut to 63 characters, without a trailing '-' or '.'), and, when
// spec.subdomain is set, <subdomain>.<namespace>.svc.<clusterDomain>.
// spec.hostnameOverride (HostnameOverride, GA in 1.37), a DNS subdomain,
// replaces both: it is the hostname (cut the same way) and there is no
// domain, so hostname -f gives it too.
func Hostname(pod *v1.Pod, clusterDomain string) (string, string, error) {
	if o := pod.Spec.HostnameOverride; o != nil {
		if errs := validation.IsDNS1123Subdomain(*o); len(errs) > 0 {
			return "", "", fmt.Errorf("pod HostnameOverride %q is not a valid DNS subdomain: %s", *o, strings.Join(errs, ";"))
		}
		h, err := cutHostname(pod.Name, *o)
		return h, "", err
	}
	hostname := pod.Name
	if pod.Spec.Hostname != "" {
		if errs := validation.IsDNS1123Label(pod.Spec.Hostname); len(errs) > 0 {
			return "", "", fmt.Errorf("pod Hostname %q is not a valid DNS label: %s", pod.Spec.Hostname, strings.Join(errs, ";"))
		}
		hostname = pod.Spec.Hostname
	}
	hostname, err := cutHostname(pod.Name, hostname)
	if err != nil {
		return "", "", err
	}
	domain := ""
	if pod.Spec.Subdomain != "" {
		if errs := validation.IsDNS1123Label(pod.Spec.Subdomain); len(errs) > 0 {
			return "", "", fmt.Errorf("pod Subdomain %q is not a valid DNS label: %s", pod.Spec.Subdomain, strings.Join(errs, ";"))
		}
		domain = fmt.Sprintf("%s.%s.svc.%s", pod.Spec.Subdomain, pod.Namespace, clusterDomain)
	}
	return hostname, domain, nil
}

// cutHostname cuts hostname to 63 characters without a trailing '-' or
// '.'; an error when nothing is left.
func cutHostname(podName, hostname string) (string, error) {
	if len(hostname) <= maxHostnameLen {
		return hostname, nil
	}
	cut := strings.TrimRight(hostname[:maxHostnameLen], "-.")
	if cut == "" {
		return "", fmt.Errorf("hostname for pod %q was invalid: %q", podName, hostname)
	}
	return cut, nil
}

// KernelHostname is the hostname the sandbox's UTS namespace gets: the
// short hostname, or hostname.domain with setHostnameAsFQDN (an error when
// that is longer than 64 characters). Host-network pods keep the node's
// hostname: the result is "" for them.
func KernelHostname(pod *v1.Pod, clusterDomain string) (string, error) {
	if pod.Spec.HostNetwork {
		return "", nil
	}
	h, d, err := Hostname(pod, clusterDomain)
	if err != nil {
		return "", err
	}
	if d != "" && pod.Spec.SetHostnameAsFQDN != nil && *pod.Spec.SetHostnameAsFQDN {
		fqdn := h + "." + d
		if len(fqdn) > maxFQDNLen {
			return "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)", fqdn, maxFQDNLen, len(fqdn))
		}
		return fqdn, nil
	}
	return h, nil
}

// ManagedHosts is the hosts file of a pod on the pod network: localhost
// entries, one line per pod IP naming the pod (its FQDN first when it has
// a domain), then the hostAliases.
func ManagedHosts(podIPs []string, hostname, domain string, aliases []v1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString(ManagedHostsHeader)
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range podIPs {
		if domain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	b.Write(aliasEntries(aliases))
	return b.Bytes()
}

// HostNetworkHosts is the hosts file of a host-network pod: the node's own
// file, then the hostAliases.
func HostNetworkHosts(node []byte, aliases []v1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString(ManagedHostsHeaderHostNetwork)
	b.Write(node)
	b.Write(aliasEntries(aliases))
	return b.Bytes()
}

func aliasEntries(aliases []v1.HostAlias) []byte {
	if len(aliases) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range aliases {
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return b.Bytes()
}

// MountsHosts reports whether a container gets the managed hosts file: not
// when it mounts something at /etc/hosts itself, and (on the pod network)
// only once the pod has an IP.
func MountsHosts(pod *v1.Pod, c *v1.Container, podIPs []string) bool {
	if !pod.Spec.HostNetwork && len(podIPs) == 0 {
		return false
	}
	for _, m := range c.VolumeMounts {
		if filepath.Clean(m.MountPath) == EtcHostsPath {
			return false
		}
	}
	return true
}

// HostsFilePath is where a pod's hosts file lives on the node:
// <podDir>/etc-hosts, as upstream.
func HostsFilePath(podDir string) string { return filepath.Join(podDir, "etc-hosts") }

// WriteHostsFile writes the pod's hosts file (mode 0644) and returns its
// path. nodeHosts is the node's /etc/hosts path, read for host-network
// pods.
func WriteHostsFile(podDir string, pod *v1.Pod, podIPs []string, clusterDomain, nodeHosts string) (string, error) {
	var content []byte
	if pod.Spec.HostNetwork {
		node, err := os.ReadFile(nodeHosts)
		if err != nil {
			return "", fmt.Errorf("reading the node's hosts file: %w", err)
		}
		content = HostNetworkHosts(node, pod.Spec.HostAliases)
	} else {
		h, d, err := Hostname(pod, clusterDomain)
		if err != nil {
			return "", err
		}
		content = ManagedHosts(podIPs, h, d, pod.Spec.HostAliases)
	}
	if err := os.MkdirAll(podDir, 0o750); err != nil {
		return "", err
	}
	// Written in place, as upstream: containers already running have the
	// file bind-mounted and see the same inode.
	p := HostsFilePath(podDir)
	if err := os.WriteFile(p, content, 0o644); err != nil {
		return "", err
	}
	return p, os.Chmod(p, 0o644)
}
