package kuberuntime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PodLogDir is the directory of a pod's container logs:
// <podLogsDir>/<namespace>_<name>_<uid>.
func PodLogDir(podLogsDir, namespace, name, uid string) string {
	return filepath.Join(podLogsDir, namespace+"_"+name+"_"+uid)
}

// podHostname is the hostname a pod's sandbox gets: spec.hostname, else the
// pod name cut to 63 characters without a trailing '-' or '.'; host-network
// pods keep the node's name.
func (m *Manager) podHostname(pod *v1.Pod) string {
	if pod.Spec.HostNetwork {
		if m.opts.NodeName != "" {
			return m.opts.NodeName
		}
		h, _ := os.Hostname()
		return h
	}
	h := pod.Name
	if pod.Spec.Hostname != "" {
		h = pod.Spec.Hostname
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h
}

func namespaceOptions(pod *v1.Pod) *runtimeapi.NamespaceOption {
	no := &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_POD,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
		Ipc:     runtimeapi.NamespaceMode_POD,
	}
	if pod.Spec.HostNetwork {
		no.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostPID {
		no.Pid = runtimeapi.NamespaceMode_NODE
	} else if pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace {
		no.Pid = runtimeapi.NamespaceMode_POD
	}
	if pod.Spec.HostIPC {
		no.Ipc = runtimeapi.NamespaceMode_NODE
	}
	return no
}

func (m *Manager) seccomp(p *v1.SeccompProfile) *runtimeapi.SecurityProfile {
	if p == nil {
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
	}
	switch p.Type {
	case v1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	case v1.SeccompProfileTypeLocalhost:
		ref := ""
		if p.LocalhostProfile != nil {
			ref = filepath.Join(m.opts.RootDir, "seccomp", *p.LocalhostProfile)
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: ref}
	default:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
	}
}

// SandboxConfig builds the CRI sandbox configuration for pod and creates
// its log directory.
func (m *Manager) SandboxConfig(pod *v1.Pod, attempt uint32) (*runtimeapi.PodSandboxConfig, error) {
	logDir := PodLogDir(m.opts.PodLogsDir, pod.Namespace, pod.Name, string(pod.UID))
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating pod log directory: %w", err)
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt,
		},
		Hostname:     m.podHostname(pod),
		LogDirectory: logDir,
		Labels:       sandboxLabels(pod),
		Annotations:  sandboxAnnotations(pod),
	}
	host, err := readHostDNS(m.opts.ResolvConf)
	if err != nil && pod.Spec.DNSPolicy != v1.DNSNone {
		return nil, err
	}
	cfg.DnsConfig = DNSConfig(pod, host, m.opts.ClusterDNS, m.opts.ClusterDomain)

	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			cfg.PortMappings = append(cfg.PortMappings, &runtimeapi.PortMapping{
				Protocol:      protocol(p.Protocol),
				ContainerPort: p.ContainerPort,
				HostPort:      p.HostPort,
				HostIp:        p.HostIP,
			})
		}
	}

	sc := &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: namespaceOptions(pod)}
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.RunAsUser != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
		}
		if psc.RunAsGroup != nil {
			sc.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
		}
		sc.SupplementalGroups = append(sc.SupplementalGroups, psc.SupplementalGroups...)
		if psc.FSGroup != nil {
			sc.SupplementalGroups = append(sc.SupplementalGroups, *psc.FSGroup)
		}
		sc.Seccomp = m.seccomp(psc.SeccompProfile)
	} else {
		sc.Seccomp = m.seccomp(nil)
	}
	for _, c := range append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
			sc.Privileged = true
		}
	}
	linux := &runtimeapi.LinuxPodSandboxConfig{
		CgroupParent:    m.cgroupParent(pod),
		SecurityContext: sc,
	}
	if psc := pod.Spec.SecurityContext; psc != nil && len(psc.Sysctls) > 0 {
		linux.Sysctls = map[string]string{}
		for _, s := range psc.Sysctls {
			linux.Sysctls[s.Name] = s.Value
		}
	}
	cfg.Linux = linux
	return cfg, nil
}

func protocol(p v1.Protocol) runtimeapi.Protocol {
	switch p {
	case v1.ProtocolUDP:
		return runtimeapi.Protocol_UDP
	case v1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP
	default:
		return runtimeapi.Protocol_TCP
	}
}

// createSandbox runs a new sandbox for pod and returns its ID, config and
// pod IPs.
func (m *Manager) createSandbox(ctx context.Context, pod *v1.Pod, attempt uint32) (string, *runtimeapi.PodSandboxConfig, []string, error) {
	cfg, err := m.SandboxConfig(pod, attempt)
	if err != nil {
		return "", nil, nil, err
	}
	id, err := m.runtime.RunPodSandbox(ctx, cfg, "")
	if err != nil {
		return "", cfg, nil, err
	}
	var ips []string
	if resp, err := m.runtime.PodSandboxStatus(ctx, id, false); err == nil {
		if ip := resp.GetStatus().GetNetwork().GetIp(); ip != "" && !pod.Spec.HostNetwork {
			ips = append(ips, ip)
			for _, a := range resp.GetStatus().GetNetwork().GetAdditionalIps() {
				ips = append(ips, a.GetIp())
			}
		}
	}
	return id, cfg, ips, nil
}
