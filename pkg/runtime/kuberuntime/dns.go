package kuberuntime

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/pod/dns"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/runtime/images"
)

// dnsConfig returns the sandbox's resolver configuration (dns.PodDNS) and
// what to warn about. The host's resolver file is read for every policy
// but None (ClusterFirst appends its search domains); one that cannot be
// read fails the sandbox.
func (m *Manager) dnsConfig(pod *v1.Pod) (*runtimeapi.DNSConfig, []dns.Warning, error) {
	host := dns.Host{}
	if dns.Policy(pod) != v1.DNSNone && m.opts.ResolvConf != "" {
		h, err := dns.ReadResolvConf(m.opts.ResolvConf)
		if err != nil {
			return nil, nil, err
		}
		host = h
	}
	cfg, warns := dns.PodDNS(pod, host, dns.Config{
		ClusterDNS: m.opts.ClusterDNS, ClusterDomain: m.opts.ClusterDomain,
		ResolverConfig: m.opts.ResolvConf, NodeIPs: m.opts.PodSpec.HostIPs,
	})
	return cfg, warns, nil
}

// reportDNSWarnings records DNS warnings as events (on the pod, and on the
// node for a missing cluster DNS) and logs them.
func (m *Manager) reportDNSWarnings(ctx context.Context, pod *v1.Pod, warns []dns.Warning) {
	for _, w := range warns {
		klog.FromContext(ctx).Info("Pod DNS configuration limited", "pod", klog.KObj(pod), "reason", w.Reason, "message", w.Message)
		msg := w.Message
		if w.Node {
			msg = "pod: \"" + podspec.Format(pod) + "\". " + w.Message
			if m.opts.NodeName != "" {
				node := &v1.ObjectReference{Kind: "Node", Name: m.opts.NodeName, UID: types.UID(m.opts.NodeName)}
				m.opts.Recorder.Event(node, v1.EventTypeWarning, w.Reason, w.Message)
			}
		}
		m.opts.Recorder.Event(images.ContainerRef(pod, nil), v1.EventTypeWarning, w.Reason, msg)
	}
}
