package metrics

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	compbase "k8s.io/component-base/metrics"

	"github.com/gokubelet/kubelet/pkg/metrics/metricstest"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

func scrape(t *testing.T, g compbase.Gatherer) metricstest.Families {
	t.Helper()
	h := compbase.HandlerFor(g, compbase.HandlerOpts{})
	f, err := metricstest.ScrapeHandler(h, "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestImageSizeBucket(t *testing.T) {
	const mb, gb = 1 << 20, 1 << 30
	for _, tc := range []struct {
		size uint64
		want string
	}{
		{0, "N/A"},
		{1, "0-10MB"},
		{10 * mb, "0-10MB"},
		{10*mb + 1, "10MB-100MB"},
		{200 * mb, "100MB-500MB"},
		{600 * mb, "500MB-1GB"},
		{2 * gb, "1GB-5GB"},
		{7 * gb, "5GB-10GB"},
		{15 * gb, "10GB-20GB"},
		{25 * gb, "20GB-30GB"},
		{35 * gb, "30GB-40GB"},
		{50 * gb, "40GB-60GB"},
		{70 * gb, "60GB-100GB"},
		{101 * gb, "GT100GB"},
	} {
		if got := ImageSizeBucket(tc.size); got != tc.want {
			t.Errorf("ImageSizeBucket(%d) = %q, want %q", tc.size, got, tc.want)
		}
	}
}

func TestCountRunning(t *testing.T) {
	pods := []*container.PodStatus{
		{UID: "a", Sandboxes: []container.SandboxStatus{{ID: "s1", State: container.SandboxReady}},
			Containers: []container.Status{{ID: "c1", State: container.StateRunning}, {ID: "c2", State: container.StateExited}}},
		// Newest sandbox not ready: the pod does not count as running.
		{UID: "b", Sandboxes: []container.SandboxStatus{{ID: "s3", State: container.SandboxNotReady}, {ID: "s2", State: container.SandboxReady}},
			Containers: []container.Status{{ID: "c3", State: container.StateCreated}}},
		{UID: "c"},
	}
	n, by := CountRunning(pods)
	if n != 1 || by[container.StateRunning] != 1 || by[container.StateExited] != 1 || by[container.StateCreated] != 1 || by[container.StateUnknown] != 0 {
		t.Fatalf("CountRunning = %d %v", n, by)
	}
}

// TestKubeletRegistry scrapes the /metrics registry and checks upstream's
// names and labels, the collector-backed gauges and values fed through the
// package variables.
func TestKubeletRegistry(t *testing.T) {
	pods := []*container.PodStatus{{UID: "a", Sandboxes: []container.SandboxStatus{{ID: "s", State: container.SandboxReady}},
		Containers: []container.Status{{ID: "c", State: container.StateRunning}, {ID: "d", State: container.StateRunning}}}}
	r := NewKubeletRegistry(KubeletOptions{NodeName: "node-a", CgroupVersion: 1, Running: func() []*container.PodStatus { return pods }})
	before := scrape(t, r)
	RuntimeOperations.WithLabelValues("version").Inc()
	RuntimeOperationsDuration.WithLabelValues("version").Observe(0.01)
	PLEGRelistDuration.Observe(0.2)
	PodWorkerDuration.WithLabelValues("sync").Observe(0.1)
	f := scrape(t, r)

	if v := f.Sum("kubelet_node_name", map[string]string{"node": "node-a"}); v != 1 {
		t.Errorf("kubelet_node_name{node=node-a} = %v", v)
	}
	if v := f.Sum("kubelet_running_pods", nil); v != 1 {
		t.Errorf("kubelet_running_pods = %v", v)
	}
	if v := f.Sum("kubelet_running_containers", map[string]string{"container_state": "running"}); v != 2 {
		t.Errorf("kubelet_running_containers{running} = %v", v)
	}
	if v := f.Sum("kubelet_running_containers", map[string]string{"container_state": "exited"}); v != 0 || len(f.Find("kubelet_running_containers", map[string]string{"container_state": "exited"})) != 1 {
		t.Errorf("kubelet_running_containers{exited} should be reported as 0, got %v", v)
	}
	if v := f.Sum("kubelet_cgroup_version", nil); v != 1 {
		t.Errorf("kubelet_cgroup_version = %v", v)
	}
	for name, delta := range map[string]float64{
		"kubelet_runtime_operations_total":            1,
		"kubelet_runtime_operations_duration_seconds": 1,
		"kubelet_pleg_relist_duration_seconds":        1,
		"kubelet_pod_worker_duration_seconds":         1,
	} {
		if got := f.Sum(name, nil) - before.Sum(name, nil); got != delta {
			t.Errorf("%s grew by %v, want %v", name, got, delta)
		}
	}
	if got := f.LabelNames("kubelet_runtime_operations_total"); len(got) != 1 || got[0] != "operation_type" {
		t.Errorf("kubelet_runtime_operations_total labels = %v", got)
	}
	for _, name := range []string{"go_goroutines", "process_start_time_seconds", "kubelet_pleg_relist_interval_seconds", "kubelet_pod_start_duration_seconds"} {
		if f[name] == nil {
			t.Errorf("%s missing; have %s", name, f.Names())
		}
	}
}

func TestProbeMetrics(t *testing.T) {
	r := NewProbesRegistry()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}}
	ObserveProbe("Readiness", ProbeSuccessful, pod, "web", 30*time.Millisecond)
	ObserveProbe("Readiness", ProbeFailed, pod, "web", 10*time.Millisecond)
	ObserveProbe("Readiness", ProbeSuccessful, pod, "web", 20*time.Millisecond)
	f := scrape(t, r)
	sel := map[string]string{"probe_type": "Readiness", "container": "web", "pod": "p", "namespace": "ns", "pod_uid": "u1"}
	if v := f.Sum("prober_probe_total", merge(sel, "result", "successful")); v != 2 {
		t.Errorf("successful = %v", v)
	}
	if v := f.Sum("prober_probe_total", merge(sel, "result", "failed")); v != 1 {
		t.Errorf("failed = %v", v)
	}
	// Failed runs are not timed.
	if v := f.Sum("prober_probe_duration_seconds", map[string]string{"probe_type": "Readiness", "pod": "p"}); v != 2 {
		t.Errorf("duration count = %v, want 2", v)
	}
	if f["process_start_time_seconds"] == nil {
		t.Errorf("process_start_time_seconds missing")
	}
	ForgetProbe("Readiness", "u1", "web")
	f = scrape(t, r)
	if n := len(f.Find("prober_probe_total", map[string]string{"pod_uid": "u1"})) + len(f.Find("prober_probe_duration_seconds", map[string]string{"pod": "p"})); n != 0 {
		t.Errorf("series of a forgotten probe remain: %d", n)
	}
}

func merge(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for a, b := range m {
		out[a] = b
	}
	return out
}
