package admission

import (
	"net"

	v1 "k8s.io/api/core/v1"
)

// hostPort is one host port a pod binds, normalised: protocol TCP when
// empty, address 0.0.0.0 when empty or unspecified (also "::").
type hostPort struct {
	ip       string
	protocol v1.Protocol
	port     int32
}

const bindAll = "0.0.0.0"

// hostPorts lists the host ports of the pod's app containers and sidecars
// (restartable init containers, which keep running beside them). Ports
// without a host port bind nothing on the node.
func hostPorts(pod *v1.Pod) []hostPort {
	var out []hostPort
	add := func(c *v1.Container) {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			hp := hostPort{ip: p.HostIP, protocol: p.Protocol, port: p.HostPort}
			if hp.protocol == "" {
				hp.protocol = v1.ProtocolTCP
			}
			if ip := net.ParseIP(hp.ip); hp.ip == "" || (ip != nil && ip.IsUnspecified()) {
				hp.ip = bindAll
			}
			out = append(out, hp)
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	return out
}

// conflicts: same protocol and port, and the same address or either one
// binding all addresses.
func (a hostPort) conflicts(b hostPort) bool {
	return a.port == b.port && a.protocol == b.protocol &&
		(a.ip == b.ip || a.ip == bindAll || b.ip == bindAll)
}

// portsConflict reports whether a host port of pod is taken by another.
func portsConflict(pod *v1.Pod, others []*v1.Pod) bool {
	want := hostPorts(pod)
	if len(want) == 0 {
		return false
	}
	for _, o := range others {
		for _, used := range hostPorts(o) {
			for _, w := range want {
				if w.conflicts(used) {
					return true
				}
			}
		}
	}
	return false
}
