package cri

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/runtime/logs"
	"github.com/gokubelet/kubelet/pkg/server"
)

// StreamingRuntime is what the kubelet API's container endpoints (logs,
// exec, attach, port-forward, run) need of a CRI runtime
// (kuberuntime.Manager implements it).
type StreamingRuntime interface {
	// FindContainer returns the newest instance of a pod's container, or
	// the one before it with previous; container.ErrContainerNotFound
	// when there is none.
	FindContainer(ctx context.Context, uid types.UID, name, namespace, containerName string, previous bool) (container.Status, error)
	ContainerLogPath(ctx context.Context, containerID, podNamespace, podName string, podUID types.UID) (string, error)
	ContainerRunning(ctx context.Context, containerID string) bool
	GetExec(ctx context.Context, containerID string, cmd []string, o container.StreamOptions) (*url.URL, error)
	GetAttach(ctx context.Context, containerID string, o container.StreamOptions) (*url.URL, error)
	GetPortForward(ctx context.Context, sandboxID string, ports []int32) (*url.URL, error)
	ReadySandboxID(ctx context.Context, uid types.UID, name, namespace string) (string, error)
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ([]byte, []byte, error)
}

// Containers serves the kubelet API's container endpoints (it implements
// server.Containers) from the runtime: the CRI log files, and the
// runtime's streaming server for exec, attach and port-forward.
type Containers struct {
	rt StreamingRuntime
	// now is the clock of sinceSeconds.
	now func() time.Time
}

// NewContainers returns the container endpoints over rt; a nil rt answers
// every request with codes.Unimplemented.
func NewContainers(rt StreamingRuntime) *Containers {
	return &Containers{rt: rt, now: time.Now}
}

var _ server.Containers = (*Containers)(nil)

func (c *Containers) runtime() (StreamingRuntime, error) {
	if c.rt == nil {
		return nil, status.Error(codes.Unimplemented, "the container runtime does not support streaming")
	}
	return c.rt, nil
}

// running finds the pod's running instance of a container.
func (c *Containers) running(ctx context.Context, pod *v1.Pod, name string) (StreamingRuntime, string, error) {
	rt, err := c.runtime()
	if err != nil {
		return nil, "", err
	}
	st, err := rt.FindContainer(ctx, pod.UID, pod.Name, pod.Namespace, name, false)
	if err != nil || st.State != container.StateRunning {
		return nil, "", status.Errorf(codes.NotFound, "container %q of pod %s is not running", name, podspec.FullName(pod))
	}
	return rt, st.ID, nil
}

// ContainerLogs finds the log of the container's instance (the previous
// one with opts.Previous) and returns its writer.
func (c *Containers) ContainerLogs(ctx context.Context, pod *v1.Pod, name string, opts *v1.PodLogOptions) (server.LogWriter, error) {
	rt, err := c.runtime()
	if err != nil {
		return nil, err
	}
	// These answers are 400s with upstream's words: the API server passes
	// them on to `kubectl logs`.
	st, err := rt.FindContainer(ctx, pod.UID, pod.Name, pod.Namespace, name, opts.Previous)
	if err != nil {
		if !errors.Is(err, container.ErrContainerNotFound) {
			return nil, err
		}
		if opts.Previous {
			return nil, fmt.Errorf("previous terminated container %q in pod %q not found", name, pod.Name)
		}
		return nil, fmt.Errorf("container %q in pod %q is waiting to start", name, pod.Name)
	}
	path, err := rt.ContainerLogPath(ctx, st.ID, pod.Namespace, pod.Name, pod.UID)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("log of container %q in pod %q is not available: %w", name, pod.Name, err)
	}
	o := logs.NewOptions(opts, c.now())
	return func(ctx context.Context, stdout, stderr io.Writer) error {
		alive := func() bool { return rt.ContainerRunning(ctx, st.ID) }
		return logs.Read(ctx, path, o, stdout, stderr, alive)
	}, nil
}

// GetExec prepares an exec session in the running container.
func (c *Containers) GetExec(ctx context.Context, pod *v1.Pod, name string, cmd []string, o server.StreamOptions) (*url.URL, error) {
	rt, id, err := c.running(ctx, pod, name)
	if err != nil {
		return nil, err
	}
	return rt.GetExec(ctx, id, cmd, container.StreamOptions(o))
}

// GetAttach prepares an attach session to the running container.
func (c *Containers) GetAttach(ctx context.Context, pod *v1.Pod, name string, o server.StreamOptions) (*url.URL, error) {
	rt, id, err := c.running(ctx, pod, name)
	if err != nil {
		return nil, err
	}
	return rt.GetAttach(ctx, id, container.StreamOptions(o))
}

// GetPortForward prepares port forwarding into the pod's ready sandbox.
func (c *Containers) GetPortForward(ctx context.Context, pod *v1.Pod, ports []int32) (*url.URL, error) {
	rt, err := c.runtime()
	if err != nil {
		return nil, err
	}
	sb, err := rt.ReadySandboxID(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return nil, status.Error(codes.NotFound, err.Error())
	}
	return rt.GetPortForward(ctx, sb, ports)
}

// RunInContainer runs cmd in the running container and returns its
// stdout followed by its stderr.
func (c *Containers) RunInContainer(ctx context.Context, pod *v1.Pod, name string, cmd []string) ([]byte, error) {
	rt, id, err := c.running(ctx, pod, name)
	if err != nil {
		return nil, err
	}
	stdout, stderr, err := rt.ExecSync(ctx, id, cmd, 0)
	return append(stdout, stderr...), err
}
