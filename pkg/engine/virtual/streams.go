package virtual

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/remotecommand"
	streamingpf "k8s.io/cri-streaming/pkg/streaming/portforward"
	streamingrc "k8s.io/cri-streaming/pkg/streaming/remotecommand"

	"github.com/gokubelet/kubelet/pkg/errdefs"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/provider"
)

// Streams is what the kubelet API server (pkg/server) serves for the pods
// of a virtual node: container logs, exec, attach, port-forward and run.
// There is no CRI streaming server to redirect to: the server serves the
// client's upgraded connection itself with k8s.io/kubelet's streaming
// helpers and hands the streams to these methods, which find the pod by
// UID among the node's pods and call the provider.
//
//	remotecommand.ServeExec(w, r, streams, podName, uid, container, cmd, opts, idle, creation, protocols)
//	remotecommand.ServeAttach(w, r, streams, podName, uid, container, opts, idle, creation, protocols)
//	portforward.ServePortForward(w, r, streams, podName, uid, pfOpts, idle, creation, protocols)
//	rc, err := streams.ContainerLogs(ctx, pod, container, logOpts)
//
// (remotecommand and portforward being k8s.io/cri-streaming/pkg/streaming/...;
// podName is only used in messages.) Errors are classified: errdefs
// NotFound (no such pod or container), Terminal with provider.ErrUnsupported
// (the provider lacks the capability).
type Streams struct{ e *Engine }

// Streams returns the engine's stream handlers.
func (e *Engine) Streams() *Streams { return &Streams{e: e} }

var (
	_ streamingrc.Executor      = (*Streams)(nil)
	_ streamingrc.Attacher      = (*Streams)(nil)
	_ streamingpf.PortForwarder = (*Streams)(nil)
)

// pod finds the node's pod by UID, and checks the container.
func (s *Streams) pod(uid types.UID, container string) (*v1.Pod, error) {
	p, ok := s.e.core.Pods().Get(uid)
	if !ok {
		return nil, errdefs.NotFound(fmt.Errorf("pod %s is not on node %s", uid, s.e.cfg.NodeName))
	}
	if container != "" {
		if _, _, ok := podspec.FindContainer(p, container); !ok {
			return nil, errdefs.NotFound(fmt.Errorf("container %q not found in pod %s/%s", container, p.Namespace, p.Name))
		}
	}
	return p, nil
}

func (s *Streams) unsupported(what string) error {
	return provider.Unsupported(s.e.cfg.ProviderType, what)
}

// ContainerLogs returns the container's log (kubectl logs).
func (s *Streams) ContainerLogs(ctx context.Context, pod *v1.Pod, container string, opts *v1.PodLogOptions) (io.ReadCloser, error) {
	lp, ok := s.e.prov.(provider.LogsProvider)
	if !ok {
		return nil, s.unsupported("container logs")
	}
	p, err := s.pod(pod.UID, container)
	if err != nil {
		return nil, err
	}
	var o v1.PodLogOptions
	if opts != nil {
		o = *opts.DeepCopy()
	}
	return lp.GetContainerLogs(ctx, p.Namespace, p.Name, container, o)
}

// ExecInContainer runs cmd in the container (kubectl exec). It implements
// k8s.io/cri-streaming/pkg/streaming/remotecommand.Executor; timeout, when
// positive, bounds the command.
func (s *Streams) ExecInContainer(ctx context.Context, _ string, podUID string, container string, cmd []string,
	in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan streamingrc.TerminalSize, timeout time.Duration) error {
	uid := types.UID(podUID)
	ep, ok := s.e.prov.(provider.ExecProvider)
	if !ok {
		return s.unsupported("exec")
	}
	p, err := s.pod(uid, container)
	if err != nil {
		return err
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	return ep.RunInContainer(ctx, p.Namespace, p.Name, container, cmd, provider.AttachIO{Stdin: in, Stdout: out, Stderr: errOut, TTY: tty, Resize: resizes(ctx, resize)})
}

// AttachContainer attaches to the container (kubectl attach). It
// implements k8s.io/cri-streaming/pkg/streaming/remotecommand.Attacher.
func (s *Streams) AttachContainer(ctx context.Context, _ string, podUID string, container string,
	in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan streamingrc.TerminalSize) error {
	uid := types.UID(podUID)
	ap, ok := s.e.prov.(provider.AttachProvider)
	if !ok {
		return s.unsupported("attach")
	}
	p, err := s.pod(uid, container)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	return ap.AttachToContainer(ctx, p.Namespace, p.Name, container, provider.AttachIO{Stdin: in, Stdout: out, Stderr: errOut, TTY: tty, Resize: resizes(ctx, resize)})
}

// PortForward copies between stream and the pod's port (kubectl
// port-forward). It implements
// k8s.io/cri-streaming/pkg/streaming/portforward.PortForwarder.
func (s *Streams) PortForward(ctx context.Context, _ string, podUID string, port int32, stream io.ReadWriteCloser) error {
	uid := types.UID(podUID)
	pp, ok := s.e.prov.(provider.PortForwardProvider)
	if !ok {
		_ = stream.Close()
		return s.unsupported("port forwarding")
	}
	p, err := s.pod(uid, "")
	if err != nil {
		_ = stream.Close()
		return err
	}
	return pp.PortForward(ctx, p.Namespace, p.Name, port, stream)
}

// RunInContainer runs cmd and returns its combined output (the /run
// endpoint).
func (s *Streams) RunInContainer(ctx context.Context, pod *v1.Pod, container string, cmd []string) ([]byte, error) {
	var buf bytes.Buffer
	w := nopWriteCloser{&buf}
	err := s.ExecInContainer(ctx, pod.Name, string(pod.UID), container, cmd, nil, w, w, false, nil, 0)
	return buf.Bytes(), err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// resizes hands the streaming server's terminal sizes to a provider, whose
// API speaks client-go's TerminalSize. The returned channel is closed when
// in is closed or ctx ends (the call returned), so the copier never
// outlives the call. A nil in gives nil: no terminal.
func resizes(ctx context.Context, in <-chan streamingrc.TerminalSize) <-chan remotecommand.TerminalSize {
	if in == nil {
		return nil
	}
	out := make(chan remotecommand.TerminalSize)
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case sz, ok := <-in:
				if !ok {
					return
				}
				select {
				case out <- remotecommand.TerminalSize{Width: sz.Width, Height: sz.Height}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}
