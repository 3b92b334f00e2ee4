package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
	streamingrc "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// fakeRuntime is the runtime behind a real k8s.io/kubelet streaming
// server, standing in for containerd's.
type fakeRuntime struct{}

func (fakeRuntime) Exec(_ context.Context, id string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, _ <-chan streamingrc.TerminalSize) error {
	fmt.Fprintf(out, "exec in %s: %s tty=%v\n", id, strings.Join(cmd, " "), tty)
	if in != nil && cmd[0] == "cat" {
		b, _ := io.ReadAll(in)
		fmt.Fprintf(out, "stdin: %s\n", b)
	}
	if errw != nil {
		fmt.Fprint(errw, "to stderr\n")
	}
	if cmd[0] == "fail" {
		return utilexec.CodeExitError{Err: errors.New("exit 3"), Code: 3}
	}
	return nil
}

func (fakeRuntime) Attach(_ context.Context, id string, in io.Reader, out, _ io.WriteCloser, tty bool, _ <-chan streamingrc.TerminalSize) error {
	fmt.Fprintf(out, "attached to %s\n", id)
	if in != nil {
		b, _ := io.ReadAll(in)
		fmt.Fprintf(out, "stdin: %s\n", b)
	}
	return nil
}

func (fakeRuntime) PortForward(_ context.Context, sandbox string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	buf := make([]byte, 64)
	n, err := stream.Read(buf)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stream, "%s:%d got %s", sandbox, port, buf[:n])
	return err
}

// streamingContainers prepares sessions on the streaming server.
type streamingContainers struct {
	fakeContainers
	srv streaming.Server
}

func (s *streamingContainers) GetExec(_ context.Context, p *v1.Pod, c string, cmd []string, o StreamOptions) (*url.URL, error) {
	resp, err := s.srv.GetExec(&runtimeapi.ExecRequest{ContainerId: p.Name + "/" + c, Cmd: cmd, Tty: o.TTY, Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr})
	if err != nil {
		return nil, err
	}
	return url.Parse(resp.Url)
}

func (s *streamingContainers) GetAttach(_ context.Context, p *v1.Pod, c string, o StreamOptions) (*url.URL, error) {
	resp, err := s.srv.GetAttach(&runtimeapi.AttachRequest{ContainerId: p.Name + "/" + c, Tty: o.TTY, Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr})
	if err != nil {
		return nil, err
	}
	return url.Parse(resp.Url)
}

func (s *streamingContainers) GetPortForward(_ context.Context, p *v1.Pod, ports []int32) (*url.URL, error) {
	resp, err := s.srv.GetPortForward(&runtimeapi.PortForwardRequest{PodSandboxId: "sandbox-of-" + p.Name, Port: ports})
	if err != nil {
		return nil, err
	}
	return url.Parse(resp.Url)
}

// streamingAPI serves the kubelet API over TLS in front of a streaming
// server and returns a client config for it.
func streamingAPI(t *testing.T) *rest.Config {
	t.Helper()
	return streamingAPIWith(t, Config{})
}

// streamingAPIWith is streamingAPI with cfg's Streams and Clock.
func streamingAPIWith(t *testing.T, extra Config) *rest.Config {
	t.Helper()
	backend := httptest.NewUnstartedServer(nil)
	cfg := streaming.DefaultConfig
	cfg.Addr = backend.Listener.Addr().String()
	cfg.BaseURL = &url.URL{Scheme: "http", Host: cfg.Addr}
	srv, err := streaming.NewServer(cfg, fakeRuntime{})
	if err != nil {
		t.Fatal(err)
	}
	backend.Config.Handler = srv
	backend.Start()
	t.Cleanup(backend.Close)
	h := allowAll(t, Config{Pods: lookupOf(&fakeSource{}, testPod()), Containers: &streamingContainers{srv: srv}, DebuggingHandlers: true, Streams: extra.Streams, Clock: extra.Clock})
	addr := serveTLS(t, TLSOptions{CertDir: t.TempDir()}, h)
	return &rest.Config{Host: "https://" + addr, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
}

func TestExecAndAttachAreProxiedOverSPDYAndWebSockets(t *testing.T) {
	cfg := streamingAPI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	execURL := func(q string) *url.URL {
		u, _ := url.Parse(cfg.Host + "/exec/ns/web/main?" + q)
		return u
	}
	spdyExec := func(u *url.URL) (remotecommand.Executor, error) {
		return remotecommand.NewSPDYExecutor(cfg, "POST", u)
	}
	wsExec := func(protocol string) func(*url.URL) (remotecommand.Executor, error) {
		return func(u *url.URL) (remotecommand.Executor, error) {
			return remotecommand.NewWebSocketExecutorForProtocols(cfg, "GET", u.String(), protocol)
		}
	}
	for name, newExec := range map[string]func(*url.URL) (remotecommand.Executor, error){
		"SPDY":         spdyExec,
		"WebSocket v4": wsExec("v4.channel.k8s.io"),
	} {
		t.Run(name, func(t *testing.T) {
			// Output and an exit code.
			ex, err := newExec(execURL("command=fail&command=now&output=1&error=1"))
			if err != nil {
				t.Fatal(err)
			}
			checkFailNow(t, ctx, ex, "web/main")
		})
	}
	// Stdin needs a protocol that can close it: SPDY (and v5, which the
	// API server translates to SPDY for the kubelet).
	ex, err := spdyExec(execURL("command=cat&input=1&output=1"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader("hello"), Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "exec in web/main: cat tty=false\nstdin: hello\n" {
		t.Errorf("stdin exec: %q", out.String())
	}
	// Attach.
	au, _ := url.Parse(cfg.Host + "/attach/ns/web/main?input=1&output=1")
	ax, err := remotecommand.NewSPDYExecutor(cfg, "POST", au)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := ax.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader("typed"), Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "attached to web/main\nstdin: typed\n" {
		t.Errorf("attach: %q", out.String())
	}
	// Without an upgrade the proxy refuses.
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfgTLS()}}
	resp, err := c.Post(cfg.Host+"/exec/ns/web/main?command=ls&output=1", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode < 400 {
		t.Errorf("exec without an upgrade: %d", resp.StatusCode)
	}
}

func TestPortForwardIsProxiedOverSPDY(t *testing.T) {
	if got := forwardPing(t, streamingAPI(t), "/portForward/ns/web"); got != "sandbox-of-web:8080 got ping" {
		t.Errorf("forwarded: %q", got)
	}
}

// forwardPing forwards a local port to the pod's port 8080 through the
// API at path (SPDY), sends "ping" and returns what comes back.
func forwardPing(t *testing.T, cfg *rest.Config, path string) string {
	t.Helper()
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(cfg.Host + path)
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", u)
	stop, ready := make(chan struct{}), make(chan struct{})
	defer close(stop)
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- pf.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-errc:
		t.Fatal(err)
	case <-time.After(20 * time.Second):
		t.Fatal("port forward not ready")
	}
	ports, err := pf.GetPorts()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0].Local))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	b, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestStreamingRequestsAreChecked(t *testing.T) {
	cfg := streamingAPI(t)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfgTLS()}}
	for path, want := range map[string]int{
		"/exec/ns/web/main?output=1":                  400, // no command
		"/exec/ns/web/main?command=ls":                400, // no stream
		"/exec/ns/nope/main?command=ls&output=1":      404,
		"/exec/ns/web/nope?command=ls&output=1":       404,
		"/exec/ns/web/uid-x/main?command=ls&output=1": 404,
		"/attach/ns/web/nope?output=1":                404,
		"/portForward/ns/nope":                        404,
	} {
		resp, err := c.Post(cfg.Host+path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}

func cfgTLS() *tls.Config { return &tls.Config{InsecureSkipVerify: true} }

// checkFailNow runs ex, an exec of "fail now" with stdout and stderr, and
// checks fakeRuntime's answer for the container id and its exit status 3.
func checkFailNow(t *testing.T, ctx context.Context, ex remotecommand.Executor, id string) {
	t.Helper()
	var out, errb bytes.Buffer
	err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errb})
	var exit utilexec.ExitError
	if !errors.As(err, &exit) || exit.ExitStatus() != 3 {
		t.Errorf("want exit status 3, got %v", err)
	}
	if out.String() != "exec in "+id+": fail now tty=false\n" || errb.String() != "to stderr\n" {
		t.Errorf("stdout %q stderr %q", out.String(), errb.String())
	}
}

// inProcessContainers serves sessions itself (InProcessStreams), as a
// virtual node's provider does: no streaming server, no GetExec.
type inProcessContainers struct{ fakeContainers }

func (inProcessContainers) ExecInContainer(_ context.Context, name, uid, container string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, _ <-chan streamingrc.TerminalSize, _ time.Duration) error {
	return fakeRuntime{}.Exec(context.Background(), name+"/"+uid+"/"+container, cmd, in, out, errw, tty, nil)
}

func (inProcessContainers) AttachContainer(_ context.Context, name, uid, container string, in io.Reader, out, errw io.WriteCloser, tty bool, _ <-chan streamingrc.TerminalSize) error {
	return fakeRuntime{}.Attach(context.Background(), name+"/"+uid+"/"+container, in, out, errw, tty, nil)
}

func (inProcessContainers) PortForward(_ context.Context, name, uid string, port int32, stream io.ReadWriteCloser) error {
	return fakeRuntime{}.PortForward(context.Background(), "in-process "+uid, port, stream)
}

func (inProcessContainers) GetExec(context.Context, *v1.Pod, string, []string, StreamOptions) (*url.URL, error) {
	return nil, errors.New("GetExec called for in-process streams")
}

func (inProcessContainers) GetAttach(context.Context, *v1.Pod, string, StreamOptions) (*url.URL, error) {
	return nil, errors.New("GetAttach called for in-process streams")
}

func (inProcessContainers) GetPortForward(context.Context, *v1.Pod, []int32) (*url.URL, error) {
	return nil, errors.New("GetPortForward called for in-process streams")
}

// A Containers with InProcessStreams serves exec (with its exit code),
// stdin, attach and port-forward on the API's own connection, with the
// pod's UID.
func TestInProcessStreams(t *testing.T) {
	h := allowAll(t, Config{Pods: lookupOf(&fakeSource{}, testPod()), Containers: &inProcessContainers{}, DebuggingHandlers: true})
	addr := serveTLS(t, TLSOptions{CertDir: t.TempDir()}, h)
	cfg := &rest.Config{Host: "https://" + addr, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	u, _ := url.Parse(cfg.Host + "/exec/ns/web/main?command=fail&command=now&output=1&error=1")
	ex, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
	if err != nil {
		t.Fatal(err)
	}
	checkFailNow(t, ctx, ex, "ns/web/uid-1/main")
	var out bytes.Buffer

	u, _ = url.Parse(cfg.Host + "/exec/ns/web/main?command=cat&input=1&output=1")
	if ex, err = remotecommand.NewSPDYExecutor(cfg, "POST", u); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader("hello"), Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "exec in ns/web/uid-1/main: cat tty=false\nstdin: hello\n" {
		t.Errorf("exec with stdin: %q", out.String())
	}

	u, _ = url.Parse(cfg.Host + "/attach/ns/web/main?input=1&output=1")
	if ex, err = remotecommand.NewSPDYExecutor(cfg, "POST", u); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader("typed"), Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "attached to ns/web/uid-1/main\nstdin: typed\n" {
		t.Errorf("attach: %q", out.String())
	}

	if got := forwardPing(t, cfg, "/portForward/ns/web"); got != "in-process uid-1:8080 got ping" {
		t.Errorf("forwarded: %q", got)
	}
}
