package server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/tools/remotecommand"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
)

func TestCallerLimiter(t *testing.T) {
	type step struct {
		acquire bool // else release
		caller  string
		want    bool
	}
	for _, tc := range []struct {
		name  string
		max   int
		steps []step
	}{
		{name: "no bound", max: 0, steps: []step{{true, "a", true}, {true, "a", true}, {true, "a", true}}},
		{name: "bound per caller", max: 2, steps: []step{
			{true, "a", true}, {true, "a", true}, {true, "a", false},
			{true, "b", true}, {true, "b", true}, {true, "b", false},
		}},
		{name: "a released slot is free again", max: 1, steps: []step{
			{true, "a", true}, {true, "a", false}, {false, "a", true}, {true, "a", true}, {true, "a", false},
		}},
		{name: "anonymous callers share one name", max: 1, steps: []step{{true, "", true}, {true, "", false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newCallerLimiter(tc.max)
			for i, s := range tc.steps {
				if !s.acquire {
					l.release(s.caller)
					continue
				}
				if got := l.acquire(s.caller); got != s.want {
					t.Fatalf("step %d: acquire(%q) = %v, want %v", i, s.caller, got, s.want)
				}
			}
		})
	}
	l := newCallerLimiter(1)
	l.acquire("a")
	l.release("a")
	if len(l.open) != 0 {
		t.Errorf("a caller with nothing open is still counted: %v", l.open)
	}
}

// blockingLogs serves logs that last until release is closed.
type blockingLogs struct {
	fakeContainers
	started chan struct{}
	release chan struct{}
}

func (b *blockingLogs) ContainerLogs(ctx context.Context, _ *v1.Pod, _ string, _ *v1.PodLogOptions) (LogWriter, error) {
	return func(ctx context.Context, stdout, _ io.Writer) error {
		b.started <- struct{}{}
		select {
		case <-b.release:
		case <-ctx.Done():
		}
		_, err := io.WriteString(stdout, "done\n")
		return err
	}, nil
}

// asHeaderUser builds the handler with the caller named by the X-User
// header, everything allowed.
func asHeaderUser(t *testing.T, cfg Config) http.Handler {
	t.Helper()
	cfg.Auth = &Auth{
		Authenticator: authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
			return &authenticator.Response{User: &user.DefaultInfo{Name: r.Header.Get("X-User")}}, true, nil
		}),
		Authorizer: authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
			return authorizer.DecisionAllow, "", nil
		}),
	}
	h, err := NewHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestLogRequestsBeyondTheCallersLimitAre429(t *testing.T) {
	bl := &blockingLogs{started: make(chan struct{}, 4), release: make(chan struct{})}
	h := asHeaderUser(t, Config{Pods: lookupOf(&fakeSource{}, testPod()), Containers: bl, DebuggingHandlers: true, Streams: StreamLimits{PerCaller: 2}})
	as := func(u, path string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", path, nil)
		r.Header.Set("X-User", u)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	done := make(chan int, 2)
	for i := 0; i < 2; i++ {
		go func() { done <- as("alice", "/containerLogs/ns/web/main?follow=true").Code }()
		<-bl.started
	}
	rec := as("alice", "/containerLogs/ns/web/main")
	if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), `user "alice" already has 2 open`) || rec.Header().Get("Retry-After") == "" {
		t.Errorf("third request of alice: %d %q %v", rec.Code, rec.Body.String(), rec.Header())
	}
	// Exec counts against the same bound (refused before the runtime is
	// asked).
	if rec := as("alice", "/exec/ns/web/main?command=ls&output=1"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("exec of alice over the limit: %d %q", rec.Code, rec.Body.String())
	}
	// Another caller is not affected, and other endpoints are not bound.
	go func() { done <- as("bob", "/containerLogs/ns/web/main").Code }()
	<-bl.started
	if rec := as("alice", "/pods"); rec.Code != http.StatusOK {
		t.Errorf("/pods of alice: %d", rec.Code)
	}
	close(bl.release)
	for i := 0; i < 3; i++ {
		if code := <-done; code != http.StatusOK {
			t.Errorf("a request within the limit: %d", code)
		}
	}
	// Ended requests give their slots back.
	bl.release = make(chan struct{})
	close(bl.release)
	go func() { <-bl.started }()
	if rec := as("alice", "/containerLogs/ns/web/main"); rec.Code != http.StatusOK {
		t.Errorf("after the others ended: %d %q", rec.Code, rec.Body.String())
	}
}

func TestIdleStreamIsClosedAfterStreamingConnectionIdleTimeout(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	ours, peer := net.Pipe()
	defer peer.Close()
	c := newIdleConn(ours, time.Minute, clk)
	waiting := func() { eventually.True(t, "the idle watch waits on its timer", clk.HasWaiters) }
	waiting()
	clk.Step(40 * time.Second)
	// Traffic 40 s in: the minute starts again.
	go peer.Write([]byte("x"))
	buf := make([]byte, 1)
	if _, err := c.Read(buf); err != nil {
		t.Fatal(err)
	}
	clk.Step(30 * time.Second) // 70 s since start, 30 s idle
	waiting()
	peer.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	if _, err := peer.Read(buf); !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err) {
		t.Fatalf("the stream was closed after 30 s idle: %v", err)
	}
	clk.Step(30 * time.Second) // 60 s idle
	eventually.True(t, "the idle stream is closed", func() bool {
		peer.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		_, err := peer.Read(buf)
		return err == io.EOF || errors.Is(err, io.ErrClosedPipe)
	})
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// An exec session waiting for input that never comes is ended by the
// kubelet once streamingConnectionIdleTimeout passes without traffic.
func TestIdleExecSessionIsEnded(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	cfg := streamingAPIWith(t, Config{Streams: StreamLimits{IdleTimeout: 5 * time.Minute}, Clock: clk})
	u, _ := url.Parse(cfg.Host + "/exec/ns/web/main?command=cat&input=1&output=1")
	ex, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
	if err != nil {
		t.Fatal(err)
	}
	stdin, _ := io.Pipe() // never written
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	out := &lockedBuf{}
	go func() { done <- ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: out}) }()
	eventually.True(t, "the session runs", func() bool { return strings.Contains(out.String(), "exec in web/main: cat") })
	eventually.True(t, "the proxied stream watches its idle time", clk.HasWaiters)
	select {
	case err := <-done:
		t.Fatalf("the session ended before it was idle: %v", err)
	default:
	}
	clk.Step(5 * time.Minute)
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the idle session was not ended")
	}
}

type lockedBuf struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}
