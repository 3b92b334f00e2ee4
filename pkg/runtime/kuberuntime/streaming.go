package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// ErrNoSandbox is returned when a pod has no ready sandbox to forward ports
// into.
var ErrNoSandbox = errors.New("pod has no ready sandbox")

// FindContainer returns the newest instance of the named container of a
// pod, or with previous the instance that ran before it (what
// `kubectl logs --previous` shows).
func (m *Manager) FindContainer(ctx context.Context, uid types.UID, name, namespace, containerName string, previous bool) (container.Status, error) {
	ps, err := m.GetPodStatus(ctx, uid, name, namespace)
	if err != nil {
		return container.Status{}, err
	}
	var c *container.Status
	if previous {
		c = ps.Previous(containerName)
	} else {
		c = ps.Latest(containerName)
	}
	if c == nil {
		what := "container"
		if previous {
			what = "previous terminated container"
		}
		return container.Status{}, fmt.Errorf("%w: %s %q in pod %s/%s", container.ErrContainerNotFound, what, containerName, namespace, name)
	}
	return *c, nil
}

// ContainerLogPath returns the absolute path of a container instance's log
// file as the runtime reports it. A relative path (allowed by CRI) is taken
// relative to the pod's log directory.
func (m *Manager) ContainerLogPath(ctx context.Context, containerID string, podNamespace, podName string, podUID types.UID) (string, error) {
	resp, err := m.runtime.ContainerStatus(ctx, containerID, false)
	if err != nil {
		return "", err
	}
	p := resp.GetStatus().GetLogPath()
	if p == "" {
		return "", fmt.Errorf("the runtime reports no log path for container %s", containerID)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(PodLogDir(m.opts.PodLogsDir, podNamespace, podName, string(podUID)), p)
	}
	return p, nil
}

// ContainerRunning reports whether a container instance is running.
func (m *Manager) ContainerRunning(ctx context.Context, containerID string) bool {
	resp, err := m.runtime.ContainerStatus(ctx, containerID, false)
	return err == nil && resp.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING
}

// GetExec asks the runtime to prepare an exec session in a container and
// returns the URL of its streaming server that serves it.
func (m *Manager) GetExec(ctx context.Context, containerID string, cmd []string, o container.StreamOptions) (*url.URL, error) {
	resp, err := m.runtime.Exec(ctx, &runtimeapi.ExecRequest{
		ContainerId: containerID, Cmd: cmd, Tty: o.TTY, Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr,
	})
	if err != nil {
		return nil, err
	}
	return url.Parse(resp.GetUrl())
}

// GetAttach is GetExec for attaching to the container's main process.
func (m *Manager) GetAttach(ctx context.Context, containerID string, o container.StreamOptions) (*url.URL, error) {
	resp, err := m.runtime.Attach(ctx, &runtimeapi.AttachRequest{
		ContainerId: containerID, Tty: o.TTY, Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr,
	})
	if err != nil {
		return nil, err
	}
	return url.Parse(resp.GetUrl())
}

// GetPortForward asks the runtime to prepare port forwarding into a pod's
// sandbox (ports may be empty: the client names them per stream).
func (m *Manager) GetPortForward(ctx context.Context, sandboxID string, ports []int32) (*url.URL, error) {
	resp, err := m.runtime.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: sandboxID, Port: ports})
	if err != nil {
		return nil, err
	}
	return url.Parse(resp.GetUrl())
}

// ReadySandboxID returns the pod's ready sandbox.
func (m *Manager) ReadySandboxID(ctx context.Context, uid types.UID, name, namespace string) (string, error) {
	ps, err := m.GetPodStatus(ctx, uid, name, namespace)
	if err != nil {
		return "", err
	}
	sb := ps.ReadySandbox()
	if sb == nil {
		return "", fmt.Errorf("%w: %s/%s", ErrNoSandbox, namespace, name)
	}
	return sb.ID, nil
}

// ExecSync runs cmd in a container and returns its stdout and stderr; a
// non-zero exit is an error carrying the exit code (k8s.io/utils/exec's
// ExitError).
func (m *Manager) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, err error) {
	return m.runtime.ExecSync(ctx, containerID, cmd, timeout)
}
