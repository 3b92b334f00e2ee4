package prober

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Probe defaults, as the API server fills them; a static pod from a file
// may come without them.
const (
	defaultPeriod           = 10 * time.Second
	defaultTimeout          = 1 * time.Second
	defaultSuccessThreshold = 1
	defaultFailureThreshold = 3
)

// target is what one probe run needs to know about its container.
type target struct {
	pod         *v1.Pod
	container   *v1.Container
	containerID string
	// host is the pod IP (or the node's for a host-network pod).
	host string
}

// outcome is one probe run.
type outcome struct {
	result Result
	output string
	// warning: a success with something to say (a redirect not followed).
	warning bool
}

// runProbe runs p once against t. An error means the probe could not be
// run; the result is then Unknown and is not counted.
func (m *Manager) runProbe(ctx context.Context, p *v1.Probe, t target) (outcome, error) {
	timeout := secondsOr(p.TimeoutSeconds, defaultTimeout)
	switch {
	case p.Exec != nil:
		r, out, err := probeExec(ctx, m.opts.Exec, t.containerID, p.Exec.Command, timeout)
		return outcome{result: r, output: out}, err
	case p.HTTPGet != nil:
		port, err := resolvePort(p.HTTPGet.Port, t.container)
		if err != nil {
			return outcome{}, err
		}
		req, err := httpRequest(ctx, p.HTTPGet, t.host, port, m.opts.UserAgent)
		if err != nil {
			return outcome{}, err
		}
		client := m.http
		if m.h2c != nil && p.HTTPGet.Protocol != nil && *p.HTTPGet.Protocol == v1.HTTPProtocolHTTP2 {
			client = m.h2c
		}
		o := probeHTTP(client, req, timeout)
		return outcome{result: o.result, output: o.output, warning: o.warning}, nil
	case p.TCPSocket != nil:
		port, err := resolvePort(p.TCPSocket.Port, t.container)
		if err != nil {
			return outcome{}, err
		}
		host := p.TCPSocket.Host
		if host == "" {
			host = t.host
		}
		if host == "" {
			return outcome{}, errors.New("no host to probe: the pod has no IP yet")
		}
		r, out, err := probeTCP(ctx, net.JoinHostPort(host, strconv.Itoa(port)), timeout)
		return outcome{result: r, output: out}, err
	case p.GRPC != nil:
		if t.host == "" {
			return outcome{}, errors.New("no host to probe: the pod has no IP yet")
		}
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		addr := net.JoinHostPort(t.host, strconv.Itoa(int(p.GRPC.Port)))
		tls := m.opts.GRPCTLS && p.GRPC.Mode != nil && *p.GRPC.Mode == v1.GRPCProbeModeTLS
		r, out, err := probeGRPC(ctx, addr, service, tls, timeout, m.opts.UserAgent)
		return outcome{result: r, output: out}, err
	}
	return outcome{}, errors.New("probe has no handler (exec, httpGet, tcpSocket or grpc)")
}

// resolvePort turns a probe port (a number, or the name of a container
// port) into a port number.
func resolvePort(port intstr.IntOrString, c *v1.Container) (int, error) {
	n := 0
	if port.Type == intstr.String {
		for _, p := range c.Ports {
			if p.Name == port.StrVal {
				n = int(p.ContainerPort)
				break
			}
		}
		if n == 0 {
			// A number written as a string still names the port.
			if v, err := strconv.Atoi(port.StrVal); err == nil {
				n = v
			} else {
				return 0, fmt.Errorf("container %s has no port named %q", c.Name, port.StrVal)
			}
		}
	} else {
		n = int(port.IntVal)
	}
	if n <= 0 || n > 65535 {
		return 0, fmt.Errorf("invalid port number %d", n)
	}
	return n, nil
}

func secondsOr(s int32, def time.Duration) time.Duration {
	if s <= 0 {
		return def
	}
	return time.Duration(s) * time.Second
}

func thresholdOr(n int32, def int) int {
	if n <= 0 {
		return def
	}
	return int(n)
}
