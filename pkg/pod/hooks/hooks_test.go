package hooks

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/metrics/metricstest"
)

var testPod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}

func TestExecHook(t *testing.T) {
	var gotID string
	var gotCmd []string
	var gotTimeout time.Duration
	code := 0
	exec := func(_ context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int, error) {
		gotID, gotCmd, gotTimeout = id, cmd, timeout
		return []byte("out"), []byte("err"), code, nil
	}
	r := NewRunner(exec, nil, "kube-lifecycle/test")
	c := &v1.Container{Name: "c"}
	h := &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "echo hi"}}}
	if msg, err := r.Run(context.Background(), testPod, c, "cid", "", h, 5*time.Second); err != nil || msg != "" {
		t.Fatalf("success: %q %v", msg, err)
	}
	if gotID != "cid" || len(gotCmd) != 3 || gotTimeout != 5*time.Second {
		t.Errorf("exec got %s %v %v", gotID, gotCmd, gotTimeout)
	}
	code = 3
	msg, err := r.Run(context.Background(), testPod, c, "cid", "", h, 0)
	if err == nil || !strings.Contains(msg, `Exec lifecycle hook ([sh -c echo hi]) for Container "c" in Pod "p_ns(u)" failed`) || !strings.Contains(msg, "outerr") {
		t.Errorf("failure: %q %v", msg, err)
	}
}

func TestHTTPHook(t *testing.T) {
	var mu sync.Mutex
	var seen []*http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		seen = append(seen, req)
		mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError) // the status is not looked at
	}))
	defer srv.Close()
	host, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	rec := record.NewFakeRecorder(10)
	r := NewRunner(nil, rec, "kube-lifecycle/test")
	c := &v1.Container{Name: "c", Ports: []v1.ContainerPort{{Name: "web", ContainerPort: int32(port)}}}

	h := &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/echo?msg=poststart", Port: intstr.FromString("web"),
		HTTPHeaders: []v1.HTTPHeader{{Name: "X-Test", Value: "1"}}}}
	if msg, err := r.Run(context.Background(), testPod, c, "cid", host, h, 0); err != nil {
		t.Fatalf("%s %v", msg, err)
	}
	mu.Lock()
	got := seen[0]
	mu.Unlock()
	if got.URL.Path != "/echo" || got.URL.Query().Get("msg") != "poststart" || got.Header.Get("X-Test") != "1" || got.Header.Get("User-Agent") != "kube-lifecycle/test" {
		t.Errorf("request %v %v", got.URL, got.Header)
	}

	// protocol HTTP2 is ignored by hooks (the request is HTTP/1.1 and
	// succeeds), with a warning naming it; HTTP1 says nothing.
	for _, proto := range []v1.HTTPProtocol{v1.HTTPProtocolHTTP2, v1.HTTPProtocolHTTP1} {
		h = &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/p", Port: intstr.FromString("web"), Protocol: ptr.To(proto)}}
		if msg, err := r.Run(context.Background(), testPod, c, "cid", host, h, 0); err != nil {
			t.Fatalf("protocol %s: %s %v", proto, msg, err)
		}
		mu.Lock()
		last := seen[len(seen)-1]
		mu.Unlock()
		if last.Proto != "HTTP/1.1" {
			t.Errorf("protocol %s: the hook spoke %s", proto, last.Proto)
		}
		select {
		case e := <-rec.Events:
			if proto != v1.HTTPProtocolHTTP2 || !strings.Contains(e, EventProtocolIgnored) || !strings.Contains(e, "asks for protocol HTTP2") {
				t.Errorf("protocol %s: event %q", proto, e)
			}
		default:
			if proto == v1.HTTPProtocolHTTP2 {
				t.Errorf("protocol %s: no warning", proto)
			}
		}
	}

	// HTTPS to a plain HTTP server falls back to HTTP with an event, and
	// is counted.
	reg := metrics.NewKubeletRegistry(metrics.KubeletOptions{})
	fallbacks := func() float64 {
		return metricstest.ScrapeRegistry(t, reg).Sum("kubelet_lifecycle_handler_http_fallbacks_total", nil)
	}
	before := fallbacks()
	h = &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Scheme: v1.URISchemeHTTPS, Host: host, Path: "/x", Port: intstr.FromInt32(int32(port))}}
	if msg, err := r.Run(context.Background(), testPod, c, "cid", "", h, 0); err != nil {
		t.Fatalf("fallback: %s %v", msg, err)
	}
	if d := fallbacks() - before; d != 1 {
		t.Errorf("kubelet_lifecycle_handler_http_fallbacks_total grew by %v, want 1", d)
	}
	select {
	case e := <-rec.Events:
		if !strings.Contains(e, EventLifecycleHTTPFallback) {
			t.Errorf("event %q", e)
		}
	default:
		t.Errorf("no fallback event")
	}

	// A refused connection fails the hook.
	srv.Close()
	h = &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/prestop", Port: intstr.FromInt32(int32(port))}}
	msg, err := r.Run(context.Background(), testPod, c, "cid", host, h, 0)
	if err == nil || !strings.HasPrefix(msg, `HTTP lifecycle hook (/prestop) for Container "c" in Pod "p_ns(u)" failed - error:`) {
		t.Errorf("refused: %q %v", msg, err)
	}
	// No host and no pod IP.
	if _, err := r.Run(context.Background(), testPod, c, "cid", "", h, 0); err == nil {
		t.Errorf("a hook without a host succeeded")
	}
	// An unknown named port.
	h.HTTPGet.Port = intstr.FromString("nope")
	if _, err := r.Run(context.Background(), testPod, c, "cid", host, h, 0); err == nil || !strings.Contains(err.Error(), "couldn't find port") {
		t.Errorf("unknown port: %v", err)
	}
}

func TestSleepHook(t *testing.T) {
	reg := metrics.NewKubeletRegistry(metrics.KubeletOptions{})
	early := func() float64 {
		return metricstest.ScrapeRegistry(t, reg).Sum("kubelet_sleep_action_terminated_early_total", nil)
	}
	before := early()
	r := NewRunner(nil, nil, "")
	c := &v1.Container{Name: "c"}
	if _, err := r.Run(context.Background(), testPod, c, "cid", "", &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 0}}, 0); err != nil {
		t.Errorf("zero sleep: %v", err)
	}
	if d := early() - before; d != 0 {
		t.Errorf("a finished sleep counted as cut short: %v", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx, testPod, c, "cid", "", &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 3600}}, 0)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "container terminated before sleep hook finished") {
			t.Errorf("cancelled sleep: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled sleep hook did not return")
	}
	if d := early() - before; d != 1 {
		t.Errorf("kubelet_sleep_action_terminated_early_total grew by %v, want 1", d)
	}
	if _, err := r.Run(context.Background(), testPod, c, "cid", "", &v1.LifecycleHandler{}, 0); err == nil {
		t.Errorf("empty handler accepted")
	}
}

// A tcpSocket lifecycle handler is kept in the API for compatibility only;
// it fails as an invalid handler (as upstream), it is never taken as done.
func TestTCPSocketHookIsRefused(t *testing.T) {
	r := NewRunner(nil, nil, "")
	h := &v1.LifecycleHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(80)}}
	msg, err := r.Run(context.Background(), testPod, &v1.Container{Name: "c"}, "cid", "", h, 0)
	if err == nil || !strings.HasPrefix(err.Error(), RefusedInvalidHandler+": ") || !strings.HasPrefix(msg, "Cannot run handler: invalid handler: ") {
		t.Errorf("tcpSocket hook: %q %v", msg, err)
	}
}
