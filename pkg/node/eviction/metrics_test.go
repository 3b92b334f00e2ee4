package eviction

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/record"
	compbase "k8s.io/component-base/metrics"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/metrics/metricstest"
)

func evictions(t *testing.T, r compbase.Gatherer) metricstest.Families {
	t.Helper()
	f, err := metricstest.ScrapeHandler(compbase.HandlerFor(r, compbase.HandlerOpts{}), "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestEvictionsCounted: every pod the manager evicts counts once in
// kubelet_evictions under upstream's eviction_signal: the threshold's
// signal, or the local storage limit it broke; a pass that evicts nobody
// counts nothing.
func TestEvictionsCounted(t *testing.T) {
	r := metrics.NewKubeletRegistry(metrics.KubeletOptions{})
	before := evictions(t, r)
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	obs := &fakeObserver{}
	hog := pod("hog", 0, nil, nil)
	podLimit := pod("pod-limit", 0, nil, v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("10Mi")})
	ctrLimit := pod("ctr-limit", 0, nil, v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("10Mi")})
	usage := map[string]PodUsage{
		"hog":       {Memory: 600 * Mi},
		"pod-limit": {Rootfs: 5 * Mi, Logs: 6 * Mi},
		"ctr-limit": {Rootfs: 1 * Mi, Volumes: 1 * Mi, Containers: map[string]ContainerUsage{"c": {Rootfs: 11 * Mi}}},
	}
	pods := &fakePods{}
	m := New(Options{
		Thresholds:         []Threshold{{Signal: MemoryAvailable, Value: Value{Quantity: q("100Mi")}}},
		TransitionPeriod:   time.Minute,
		LocalStorageLimits: true,
		Observer:           obs,
		Pods:               pods,
		Usage: func(context.Context, []*v1.Pod) UsageFunc {
			return func(p *v1.Pod) (PodUsage, bool) { u, ok := usage[p.Name]; return u, ok }
		},
		Recorder: record.NewFakeRecorder(100),
		Clock:    clk,
	})
	ctx := context.Background()
	pass := func(mem int64, on ...*v1.Pod) {
		t.Helper()
		pods.pods = on
		clk.Step(10 * time.Second)
		obs.obs = Observations{MemoryAvailable: {Available: mem, Capacity: 8000 * Mi, Time: clk.Now()}}
		m.Synchronize(ctx)
	}
	pass(4000*Mi, hog) // no pressure
	pass(50*Mi, hog)
	pass(4000*Mi, podLimit)
	pass(4000*Mi, ctrLimit)
	if len(pods.evicted) != 3 {
		t.Fatalf("evicted %v, want three pods", pods.evicted)
	}
	after := evictions(t, r)
	for signal, want := range map[string]float64{
		"memory.available":           1,
		"ephemeralpodfs.limit":       1,
		"ephemeralcontainerfs.limit": 1,
		"nodefs.available":           0,
	} {
		sel := map[string]string{"eviction_signal": signal}
		if got := after.Sum("kubelet_evictions", sel) - before.Sum("kubelet_evictions", sel); got != want {
			t.Errorf("kubelet_evictions{eviction_signal=%q} grew by %v, want %v", signal, got, want)
		}
	}
}

// TestEvictionStatsAge: a pass that acts on a met threshold observes how
// old the signal's observation is; a pass without pressure observes
// nothing.
func TestEvictionStatsAge(t *testing.T) {
	r := metrics.NewKubeletRegistry(metrics.KubeletOptions{})
	mem := map[string]string{"eviction_signal": "memory.available"}
	read := func() (uint64, float64) { return evictions(t, r).Observed("kubelet_eviction_stats_age_seconds", mem) }
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	obs := &fakeObserver{}
	pods := &fakePods{pods: []*v1.Pod{pod("hog", 0, nil, nil)}}
	m := New(Options{
		Thresholds: []Threshold{{Signal: MemoryAvailable, Value: Value{Quantity: q("100Mi")}}},
		Observer:   obs,
		Pods:       pods,
		Usage: func(context.Context, []*v1.Pod) UsageFunc {
			return func(*v1.Pod) (PodUsage, bool) { return PodUsage{Memory: 600 * Mi}, true }
		},
		Recorder: record.NewFakeRecorder(100),
		Clock:    clk,
	})
	count0, sum0 := read()
	obs.obs = Observations{MemoryAvailable: {Available: 4000 * Mi, Capacity: 8000 * Mi, Time: clk.Now()}}
	m.Synchronize(context.Background())
	if c, _ := read(); c != count0 {
		t.Fatalf("a pass without pressure observed %d ages", c-count0)
	}
	clk.Step(10 * time.Second)
	obs.obs = Observations{MemoryAvailable: {Available: 50 * Mi, Capacity: 8000 * Mi, Time: clk.Now().Add(-3 * time.Second)}}
	m.Synchronize(context.Background())
	if len(pods.evicted) != 1 {
		t.Fatalf("evicted %v, want the hog", pods.evicted)
	}
	if c, s := read(); c != count0+1 || s-sum0 != 3 {
		t.Errorf("kubelet_eviction_stats_age_seconds{memory.available}: %d observations of %vs, want 1 of 3s", c-count0, s-sum0)
	}
}
