package prober

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
	"github.com/gokubelet/kubelet/pkg/pod/podstatus"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

func recvUID(t *testing.T, m *Manager) types.UID {
	t.Helper()
	select {
	case uid := <-m.Updates():
		return uid
	case <-time.After(5 * time.Second):
		t.Fatalf("no update")
	}
	return ""
}

// Workers run on their own goroutines and timers: each probe kind at its
// own period, a result change wakes the kubelet through Updates.
func TestWorkersTickAtTheirOwnPeriods(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	m := NewManager(Options{Clock: clk, Recorder: record.NewFakeRecorder(100)})
	defer m.Stop()
	s := newScript()
	m.run = s.run
	always := v1.ContainerRestartPolicyAlways
	pod := podWith(v1.Container{Name: "app", ReadinessProbe: probe(3, 0, 0, 0), LivenessProbe: probe(7, 0, 0, 1)})
	pod.Spec.InitContainers = []v1.Container{{Name: "proxy", RestartPolicy: &always, ReadinessProbe: probe(5, 0, 0, 0)}}
	s.set("app", Readiness, Success, "")
	s.set("app", Liveness, Success, "")
	s.set("proxy", Readiness, Success, "")
	st := &container.PodStatus{UID: pod.UID, IPs: []string{"10.0.0.5"}, Containers: []container.Status{
		{ID: "c1", Name: "app", State: container.StateRunning, StartedAt: t0},
		{ID: "p1", Name: "proxy", State: container.StateRunning, StartedAt: t0},
	}}
	m.UpdatePod(pod, st)

	// First probes at once; two ready results change, one pod to resync.
	if uid := recvUID(t, m); uid != pod.UID {
		t.Fatalf("update for %q", uid)
	}
	eventually.True(t, "three timers", func() bool { return clk.Waiters() == 3 })
	for _, tick := range []struct {
		step             time.Duration
		ready, live, prx int
	}{
		{3 * time.Second, 2, 1, 1}, // t=3
		{2 * time.Second, 2, 1, 2}, // t=5
		{1 * time.Second, 3, 1, 2}, // t=6
		{1 * time.Second, 3, 2, 2}, // t=7
	} {
		clk.Step(tick.step)
		eventually.True(t, fmt.Sprintf("probes at %v", clk.Since(t0)), func() bool {
			return s.count("app", Readiness) == tick.ready && s.count("app", Liveness) == tick.live && s.count("proxy", Readiness) == tick.prx && clk.Waiters() == 3
		})
	}
	if ok, _ := m.Result(pod.UID)(podstatus.ReadinessProbe, "proxy", "containerd://p1"); !ok {
		t.Fatalf("sidecar not ready")
	}

	// Liveness fails: the kubelet hears of it.
	s.set("app", Liveness, Failure, "dead")
	clk.Step(7 * time.Second)
	if uid := recvUID(t, m); uid != pod.UID {
		t.Fatalf("update for %q", uid)
	}
	eventually.True(t, "liveness verdict", func() bool { f, _ := m.Liveness(pod.UID, "app", "c1"); return f })

	// Removing the pod ends its workers: no timers left.
	m.RemovePod(pod.UID)
	eventually.True(t, "workers gone", func() bool { return clk.Waiters() == 0 })
}

func TestUpdatesCoalescePerPod(t *testing.T) {
	m := NewManager(Options{})
	defer m.Stop()
	for i := 0; i < 100; i++ {
		m.notify("a")
		m.notify(types.UID("b"))
	}
	got := map[types.UID]int{}
	got[recvUID(t, m)]++
	got[recvUID(t, m)]++
	select {
	case uid := <-m.Updates():
		got[uid]++
	case <-time.After(100 * time.Millisecond):
	}
	// At most one signal may still be in flight per pod (queued while the
	// first was being delivered).
	if got["a"] < 1 || got["b"] < 1 || got["a"]+got["b"] > 3 {
		t.Fatalf("updates %v", got)
	}
}

func TestStopEndsEverything(t *testing.T) {
	m := NewManager(Options{})
	s := newScript()
	m.run = s.run
	pod := podWith(v1.Container{Name: "app", ReadinessProbe: probe(1, 0, 0, 0)})
	m.UpdatePod(pod, &container.PodStatus{Containers: []container.Status{{ID: "c1", Name: "app", State: container.StateRunning, StartedAt: time.Now()}}})
	m.notify(pod.UID)
	done := make(chan struct{})
	go func() { m.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("Stop hangs")
	}
	m.UpdatePod(pod, nil) // after Stop: ignored, no new goroutines
	m.notify(pod.UID)
}

// The real mechanisms against a server on loopback, on the real clock.
func TestHTTPReadinessAndTCPLivenessEndToEnd(t *testing.T) {
	var unready atomic.Bool
	unready.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" && unready.Load() {
			w.WriteHeader(503)
		}
	}))
	defer srv.Close()
	_, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)

	rec := record.NewFakeRecorder(100)
	m := NewManager(Options{Recorder: rec})
	defer m.Stop()
	pod := podWith(v1.Container{Name: "app",
		Ports:          []v1.ContainerPort{{Name: "http", ContainerPort: int32(port)}},
		ReadinessProbe: &v1.Probe{PeriodSeconds: 1, ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("http")}}},
		LivenessProbe:  &v1.Probe{PeriodSeconds: 1, ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}}},
	})
	st := &container.PodStatus{UID: pod.UID, IPs: []string{"127.0.0.1"}, Containers: []container.Status{
		{ID: "c1", Name: "app", State: container.StateRunning, StartedAt: time.Now()}}}
	m.UpdatePod(pod, st)
	ready := func() (bool, bool) { return m.Result(pod.UID)(podstatus.ReadinessProbe, "app", "c1") }
	eventually.True(t, "readiness failure", func() bool { ok, known := ready(); return known && !ok })
	select {
	case ev := <-rec.Events:
		if ev != "Warning Unhealthy Readiness probe failed: HTTP probe failed with statuscode: 503" {
			t.Fatalf("event %q", ev)
		}
	case <-time.After(time.Second):
		t.Fatalf("no event")
	}
	unready.Store(false)
	eventually.True(t, "ready", func() bool { ok, _ := ready(); return ok })
	if f, _ := m.Liveness(pod.UID, "app", "c1"); f {
		t.Fatalf("liveness failed against an open port")
	}
}

func TestNilManagerRunsNoProbes(t *testing.T) {
	var m *Manager
	m.UpdatePod(podWith(v1.Container{Name: "app"}), nil)
	m.RemovePod("x")
	m.Stop()
	if m.Result("x") != nil || m.Updates() != nil {
		t.Fatalf("nil manager gives results")
	}
	if f, _ := m.Liveness("x", "app", "c1"); f {
		t.Fatalf("nil manager fails liveness")
	}
}
