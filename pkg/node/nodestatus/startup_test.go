package nodestatus

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/metrics/metricstest"
)

func TestStartupDurations(t *testing.T) {
	boot := time.Unix(1000, 0)
	at := func(s int) time.Time { return boot.Add(time.Duration(s) * time.Second) }
	for _, tc := range []struct {
		name                                 string
		boot, start, attempt, created, ready time.Time
		want                                 startupPhases
	}{
		{"not registered yet", boot, at(10), at(12), time.Time{}, time.Time{}, startupPhases{}},
		{"registered, not Ready", boot, at(10), at(12), at(15), time.Time{},
			startupPhases{PreKubelet: 10 * time.Second, PreRegistration: 2 * time.Second, Registration: 3 * time.Second, HasPreKubelet: true, HasRegistration: true}},
		{"Ready", boot, at(10), at(12), at(15), at(20),
			startupPhases{PreKubelet: 10 * time.Second, PreRegistration: 2 * time.Second, Registration: 3 * time.Second,
				PostRegistration: 5 * time.Second, Total: 20 * time.Second, HasPreKubelet: true, HasRegistration: true, HasReady: true}},
		{"boot time unknown", time.Time{}, at(10), at(12), at(15), at(20),
			startupPhases{PreRegistration: 2 * time.Second, Registration: 3 * time.Second, PostRegistration: 5 * time.Second,
				HasRegistration: true, HasReady: true}},
	} {
		if got := startupDurations(tc.boot, tc.start, tc.attempt, tc.created, tc.ready); got != tc.want {
			t.Errorf("%s: %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// TestStartupTimed: the controller times a start that creates the Node,
// up to its first Ready status; a start that finds its Node registered is
// not timed, as upstream.
func TestStartupTimed(t *testing.T) {
	reg := metrics.NewKubeletRegistry(metrics.KubeletOptions{})
	gauge := func(name string) float64 { return metricstest.ScrapeRegistry(t, reg).Sum(name, nil) }
	ctx := context.Background()

	h := newHarness(t)
	now := h.clock.Now()
	s := &Startup{Boot: now.Add(-100 * time.Second), KubeletStart: now.Add(-10 * time.Second)}
	h.c.opts.Startup = s
	h.mu.Lock()
	h.readiness.RuntimeReady = false
	h.mu.Unlock()
	if err := h.c.register(ctx); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{
		"kubelet_node_startup_pre_kubelet_duration_seconds":       90,
		"kubelet_node_startup_pre_registration_duration_seconds":  10,
		"kubelet_node_startup_registration_duration_seconds":      0,
		"kubelet_node_startup_post_registration_duration_seconds": 0,
		"kubelet_node_startup_duration_seconds":                   0,
	} {
		if got := gauge(name); got != want {
			t.Errorf("registered, not Ready: %s = %v, want %v", name, got, want)
		}
	}
	h.clock.Step(7 * time.Second)
	h.mu.Lock()
	h.readiness.RuntimeReady = true
	h.mu.Unlock()
	if err := h.c.syncStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if !IsReady(h.node(t)) {
		t.Fatal("the node is not Ready")
	}
	if got := gauge("kubelet_node_startup_post_registration_duration_seconds"); got != 7 {
		t.Errorf("post registration = %v, want 7", got)
	}
	if got := gauge("kubelet_node_startup_duration_seconds"); got != 107 {
		t.Errorf("startup = %v, want 107", got)
	}

	// A later Ready report changes nothing.
	h.clock.Step(time.Hour)
	h.c.Trigger()
	if err := h.c.syncStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if got := gauge("kubelet_node_startup_duration_seconds"); got != 107 {
		t.Errorf("after another report, startup = %v, want 107", got)
	}

	// A kubelet that finds its Node registered times nothing.
	existing := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "old-uid"}}
	h2 := newHarness(t, existing)
	s2 := &Startup{Boot: now.Add(-100 * time.Second), KubeletStart: now}
	h2.c.opts.Startup = s2
	if err := h2.c.register(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h2.c.syncStatus(ctx); err != nil {
		t.Fatal(err)
	}
	s2.mu.Lock()
	registered, done := s2.registered, s2.done
	s2.mu.Unlock()
	if !registered.IsZero() || !done.IsZero() {
		t.Errorf("a reused Node was timed: registered %v, ready %v", registered, done)
	}
}
