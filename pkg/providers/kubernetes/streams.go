package kubernetes

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"

	"github.com/gokubelet/kubelet/pkg/errdefs"
	"github.com/gokubelet/kubelet/pkg/provider"
)

// GetContainerLogs streams the target container's log.
func (p *Provider) GetContainerLogs(ctx context.Context, namespace, name, container string, opts v1.PodLogOptions) (io.ReadCloser, error) {
	tp, _, err := p.targetPod(namespace, name)
	if err != nil {
		return nil, err
	}
	opts.Container = container
	rc, err := p.target.CoreV1().Pods(tp.Namespace).GetLogs(tp.Name, &opts).Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("logs of target pod %s/%s: %w", tp.Namespace, tp.Name, errdefs.FromAPI(err))
	}
	return rc, nil
}

// RunInContainer runs cmd in the target container (its exit code comes
// back as client-go's exec.CodeExitError).
func (p *Provider) RunInContainer(ctx context.Context, namespace, name, container string, cmd []string, a provider.AttachIO) error {
	tp, _, err := p.targetPod(namespace, name)
	if err != nil {
		return err
	}
	req := p.target.CoreV1().RESTClient().Post().Resource("pods").Namespace(tp.Namespace).Name(tp.Name).SubResource("exec").
		VersionedParams(&v1.PodExecOptions{Container: container, Command: cmd, Stdin: a.Stdin != nil, Stdout: a.Stdout != nil,
			Stderr: a.Stderr != nil && !a.TTY, TTY: a.TTY}, scheme.ParameterCodec)
	return p.stream(ctx, req.URL().String(), a)
}

// AttachToContainer attaches to the target container.
func (p *Provider) AttachToContainer(ctx context.Context, namespace, name, container string, a provider.AttachIO) error {
	tp, _, err := p.targetPod(namespace, name)
	if err != nil {
		return err
	}
	req := p.target.CoreV1().RESTClient().Post().Resource("pods").Namespace(tp.Namespace).Name(tp.Name).SubResource("attach").
		VersionedParams(&v1.PodAttachOptions{Container: container, Stdin: a.Stdin != nil, Stdout: a.Stdout != nil,
			Stderr: a.Stderr != nil && !a.TTY, TTY: a.TTY}, scheme.ParameterCodec)
	return p.stream(ctx, req.URL().String(), a)
}

// stream runs an exec or attach session against the target's API server
// (WebSocket, falling back to SPDY), then closes the output streams.
func (p *Provider) stream(ctx context.Context, rawURL string, a provider.AttachIO) error {
	defer func() {
		if a.Stdout != nil {
			_ = a.Stdout.Close()
		}
		if a.Stderr != nil {
			_ = a.Stderr.Close()
		}
	}()
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	spdyExec, err := remotecommand.NewSPDYExecutor(p.targetREST, "POST", u)
	if err != nil {
		return fmt.Errorf("exec towards the target: %w", err)
	}
	exec := spdyExec
	if ws, err := remotecommand.NewWebSocketExecutor(p.targetREST, "GET", rawURL); err == nil {
		if fb, err := remotecommand.NewFallbackExecutor(ws, spdyExec, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		}); err == nil {
			exec = fb
		}
	}
	opts := remotecommand.StreamOptions{Stdin: a.Stdin, Tty: a.TTY}
	if a.Stdout != nil {
		opts.Stdout = a.Stdout
	}
	if a.Stderr != nil && !a.TTY {
		opts.Stderr = a.Stderr
	}
	if a.Resize != nil {
		opts.TerminalSizeQueue = sizeQueue(a.Resize)
	}
	return exec.StreamWithContext(ctx, opts)
}

type sizeQueue <-chan remotecommand.TerminalSize

func (q sizeQueue) Next() *remotecommand.TerminalSize {
	s, ok := <-q
	if !ok {
		return nil
	}
	return &s
}

// PortForward forwards stream to the target pod's port over one SPDY
// connection to the target's API server.
func (p *Provider) PortForward(ctx context.Context, namespace, name string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	tp, _, err := p.targetPod(namespace, name)
	if err != nil {
		return err
	}
	transport, upgrader, err := spdy.RoundTripperFor(p.targetREST)
	if err != nil {
		return fmt.Errorf("port-forward towards the target: %w", err)
	}
	req := p.target.CoreV1().RESTClient().Post().Resource("pods").Namespace(tp.Namespace).Name(tp.Name).SubResource("portforward")
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", req.URL())
	conn, proto, err := dialer.Dial(portforward.PortForwardProtocolV1Name)
	if err != nil {
		return fmt.Errorf("port-forward to target pod %s/%s: %w", tp.Namespace, tp.Name, errdefs.Retryable(err))
	}
	defer conn.Close()
	if proto != portforward.PortForwardProtocolV1Name {
		return fmt.Errorf("port-forward: the target answered protocol %q", proto)
	}
	headers := http.Header{}
	headers.Set(v1.StreamType, v1.StreamTypeError)
	headers.Set(v1.PortHeader, strconv.Itoa(int(port)))
	headers.Set(v1.PortForwardRequestIDHeader, "0")
	errStream, err := conn.CreateStream(headers)
	if err != nil {
		return fmt.Errorf("port-forward: error stream: %w", err)
	}
	_ = errStream.Close() // nothing to send on it
	remoteErr := make(chan error, 1)
	go func() {
		msg, err := io.ReadAll(errStream)
		switch {
		case err != nil:
			remoteErr <- err
		case len(msg) > 0:
			remoteErr <- fmt.Errorf("port-forward to %s/%s port %d: %s", tp.Namespace, tp.Name, port, msg)
		default:
			remoteErr <- nil
		}
	}()
	headers.Set(v1.StreamType, v1.StreamTypeData)
	data, err := conn.CreateStream(headers)
	if err != nil {
		return fmt.Errorf("port-forward: data stream: %w", err)
	}
	toRemote := make(chan struct{})
	go func() {
		_, _ = io.Copy(data, stream)
		_ = data.Close()
		close(toRemote)
	}()
	fromRemote := make(chan struct{})
	go func() {
		_, _ = io.Copy(stream, data)
		close(fromRemote)
	}()
	select {
	case <-fromRemote:
	case <-ctx.Done():
	case err := <-remoteErr:
		if err != nil {
			return err
		}
		<-fromRemote
	}
	return nil
}
