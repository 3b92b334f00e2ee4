package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// StreamLimits bound what one caller of the kubelet API may hold open.
type StreamLimits struct {
	// PerCaller bounds the container log, exec, attach and port-forward
	// requests one authenticated user has in flight at once; beyond it
	// the answer is 429 Too Many Requests. 0 means no bound (upstream
	// has none). Note that requests relayed by the API server
	// (kubectl logs, exec, port-forward) all arrive as the API server's
	// kubelet client, so for them this is a bound for the whole node.
	PerCaller int
	// IdleTimeout closes an exec, attach or port-forward stream that has
	// carried no bytes either way for that long
	// (streamingConnectionIdleTimeout; 0 means never).
	IdleTimeout time.Duration
}

// callerLimiter counts the streams each caller has open.
type callerLimiter struct {
	max  int
	mu   sync.Mutex
	open map[string]int
}

func newCallerLimiter(max int) *callerLimiter {
	return &callerLimiter{max: max, open: map[string]int{}}
}

// acquire takes one of caller's slots; false when it has none left.
func (l *callerLimiter) acquire(caller string) bool {
	if l == nil || l.max <= 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[caller] >= l.max {
		return false
	}
	l.open[caller]++
	return true
}

func (l *callerLimiter) release(caller string) {
	if l == nil || l.max <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[caller]--; l.open[caller] <= 0 {
		delete(l.open, caller)
	}
}

// limitedEndpoints are the requests that hold a caller's slot while they
// last.
var limitedEndpoints = map[endpoint]bool{epContainerLogs: true, epExec: true, epAttach: true, epPortForward: true}

// limit takes a slot of the request's caller for the handler; it answers
// 429 and returns false when the caller has none left.
func (a *api) limit(w http.ResponseWriter, r *http.Request, t target) (release func(), ok bool) {
	if !limitedEndpoints[t.ep] || a.limiter == nil {
		return func() {}, true
	}
	caller := ""
	if u, ok := UserFrom(r.Context()); ok {
		caller = u.GetName()
	}
	if !a.limiter.acquire(caller) {
		klog.V(2).InfoS("Kubelet API caller over its stream limit", "user", caller, "limit", a.limiter.max, "path", r.URL.Path)
		w.Header().Set("Retry-After", "1")
		http.Error(w, fmt.Sprintf("too many concurrent log and stream requests: user %q already has %d open (the kubelet's limit per caller); retry when one has ended", caller, a.limiter.max), http.StatusTooManyRequests)
		return nil, false
	}
	return func() { a.limiter.release(caller) }, true
}

// idleDialer dials the runtime's streaming server with connections that
// close themselves after idle without traffic.
func idleDialer(idle time.Duration, clk clock.Clock) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return newIdleConn(c, idle, clk), nil
	}
}

// idleConn is a connection closed once it has carried no bytes either way
// for timeout.
type idleConn struct {
	net.Conn
	timeout time.Duration
	clk     clock.Clock
	last    atomic.Int64 // clk's UnixNano of the last byte
	done    chan struct{}
	once    sync.Once
}

func newIdleConn(c net.Conn, timeout time.Duration, clk clock.Clock) *idleConn {
	ic := &idleConn{Conn: c, timeout: timeout, clk: clk, done: make(chan struct{})}
	ic.touch()
	go ic.watch()
	return ic
}

func (c *idleConn) touch() { c.last.Store(c.clk.Now().UnixNano()) }

func (c *idleConn) watch() {
	t := c.clk.NewTimer(c.timeout)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C():
		}
		idle := c.clk.Since(time.Unix(0, c.last.Load()))
		if idle >= c.timeout {
			klog.V(2).InfoS("Closing an idle stream (streamingConnectionIdleTimeout)", "remote", c.RemoteAddr().String(), "idle", idle.String(), "timeout", c.timeout.String())
			_ = c.Close()
			return
		}
		t.Reset(c.timeout - idle)
	}
}

func (c *idleConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.touch()
	}
	return n, err
}

func (c *idleConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.touch()
	}
	return n, err
}

func (c *idleConn) Close() error {
	c.once.Do(func() { close(c.done) })
	return c.Conn.Close()
}
