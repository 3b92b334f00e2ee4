package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/gokubelet/kubelet/pkg/pod/dns"
	"github.com/gokubelet/kubelet/pkg/pod/securitycontext"
	"github.com/gokubelet/kubelet/pkg/runtime/startgate"
)

// PodLogDir is the directory of a pod's container logs:
// <podLogsDir>/<namespace>_<name>_<uid>.
func PodLogDir(podLogsDir, namespace, name, uid string) string {
	return filepath.Join(podLogsDir, namespace+"_"+name+"_"+uid)
}

// SandboxConfig builds the CRI sandbox configuration for pod and creates
// its log directory. It does no API or CRI call; see sandboxConfig.
func (m *Manager) SandboxConfig(pod *v1.Pod, attempt uint32) (*runtimeapi.PodSandboxConfig, error) {
	cfg, _, err := m.sandboxConfig(pod, attempt)
	return cfg, err
}

// sandboxConfig builds the sandbox configuration: identity, hostname
// (hostname, subdomain, setHostnameAsFQDN), DNS, host ports, cgroup
// parent, security context and sysctls. It returns the DNS warnings to
// report when the sandbox is created. An error is a pod spec this node
// cannot run as asked.
func (m *Manager) sandboxConfig(pod *v1.Pod, attempt uint32) (*runtimeapi.PodSandboxConfig, []dns.Warning, error) {
	if err := unsupportedFields(pod, m.opts.PrepareResources != nil); err != nil {
		return nil, nil, err
	}
	logDir := PodLogDir(m.opts.PodLogsDir, pod.Namespace, pod.Name, string(pod.UID))
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("creating pod log directory: %w", err)
	}
	hostname, err := dns.KernelHostname(pod, m.opts.ClusterDomain)
	if err != nil {
		return nil, nil, err
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt,
		},
		Hostname:     hostname,
		LogDirectory: logDir,
		Labels:       sandboxLabels(pod),
		Annotations:  sandboxAnnotations(pod),
	}
	dnsCfg, warns, err := m.dnsConfig(pod)
	if err != nil {
		return nil, nil, err
	}
	cfg.DnsConfig = dnsCfg

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

	sc, sysctls, err := securitycontext.Sandbox(pod)
	if err != nil {
		return nil, nil, err
	}
	cfg.Linux = &runtimeapi.LinuxPodSandboxConfig{
		CgroupParent:    m.cgroupParent(pod),
		SecurityContext: sc,
		Sysctls:         sysctls,
	}
	return cfg, warns, nil
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

// sandboxConfigError is a pod spec this node cannot run as asked (an
// unsupported field, a missing RuntimeClass): every container of the pod
// waits with its message.
type sandboxConfigError struct{ err error }

func (e sandboxConfigError) Error() string { return e.err.Error() }
func (e sandboxConfigError) Unwrap() error { return e.err }

// prepareResourcesError is a pod whose resources (DRA claims) could not be
// prepared yet: it waits, and is retried.
type prepareResourcesError struct{ err error }

func (e prepareResourcesError) Error() string {
	return "Failed to prepare dynamic resources: " + e.err.Error()
}
func (e prepareResourcesError) Unwrap() error { return e.err }

// runtimeHandler resolves the pod's RuntimeClass to its CRI handler ("" for
// none); only pods naming a RuntimeClass cost a lookup.
func (m *Manager) runtimeHandler(ctx context.Context, pod *v1.Pod) (string, error) {
	if pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName == "" {
		return "", nil
	}
	name := *pod.Spec.RuntimeClassName
	if m.opts.PodSpec.RuntimeHandler == nil {
		return "", fmt.Errorf("RuntimeClass %q cannot be looked up: this kubelet has no API server connection", name)
	}
	return m.opts.PodSpec.RuntimeHandler(ctx, name)
}

// createSandbox runs a new sandbox for pod and returns its ID, config and
// pod IPs. Configuration problems come back as sandboxConfigError.
func (m *Manager) createSandbox(ctx context.Context, pod *v1.Pod, attempt uint32) (string, *runtimeapi.PodSandboxConfig, []string, error) {
	cfg, warns, err := m.sandboxConfig(pod, attempt)
	if err != nil {
		return "", nil, nil, sandboxConfigError{err}
	}
	if m.opts.PrepareResources != nil {
		if err := m.opts.PrepareResources(ctx, pod); err != nil {
			return "", nil, nil, prepareResourcesError{err}
		}
	}
	handler, err := m.runtimeHandler(ctx, pod)
	if err != nil {
		return "", nil, nil, sandboxConfigError{err}
	}
	if securitycontext.UserNamespaceRequested(pod) {
		// This kubelet does not allocate user namespace mappings yet: a
		// sandbox without them would run in the node's user namespace, so
		// the pod is refused even when the runtime could do it.
		ok, err := m.SupportsUserNamespaces(ctx, handler)
		msg := RefusedUserNamespacesNotImplemented
		switch {
		case (err != nil || !ok) && handler != "":
			msg = fmt.Sprintf(RefusedUserNamespacesHandler, handler)
		case err != nil || !ok:
			msg = RefusedUserNamespacesRuntime
		}
		if err != nil {
			msg += ": " + err.Error()
		}
		return "", nil, nil, sandboxConfigError{errors.New(msg)}
	}
	m.reportDNSWarnings(ctx, pod, warns)
	release, err := m.opts.StartGate.Acquire(ctx, startKey(pod))
	if err != nil {
		return "", cfg, nil, fmt.Errorf("waiting for the runtime to take the sandbox: %w", err)
	}
	id, err := m.runtime.RunPodSandbox(ctx, cfg, handler)
	release()
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

// startKey is a pod's place in the start gate's order.
func startKey(pod *v1.Pod) startgate.Key {
	return startgate.Key{Created: pod.CreationTimestamp.Time, UID: pod.UID}
}
