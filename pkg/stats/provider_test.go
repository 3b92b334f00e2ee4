package stats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/gokubelet/kubelet/pkg/metrics/metricstest"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/stats/cgroups"
)

// fixture is a provider over a fake runtime and a fixture cgroup tree with
// one running pod: sandbox sb1, container c1 ("app").
type fixture struct {
	p     *Provider
	rt    *critest.FakeRuntimeService
	clock *testingclock.FakeClock
	root  string
	pod   *container.PodStatus
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root := t.TempDir()
	rt := critest.NewFakeRuntimeService()
	rt.SetFakeSandboxes([]*critest.FakePodSandbox{{PodSandboxStatus: runtimeapi.PodSandboxStatus{Id: "sb1", State: runtimeapi.PodSandboxState_SANDBOX_READY}}})
	cpu := func(v uint64) *runtimeapi.CpuUsage {
		return &runtimeapi.CpuUsage{Timestamp: t0.UnixNano(), UsageCoreNanoSeconds: uv(v)}
	}
	rt.SetFakePodSandboxStats([]*runtimeapi.PodSandboxStats{{Attributes: &runtimeapi.PodSandboxAttributes{Id: "sb1"}, Linux: &runtimeapi.LinuxPodSandboxStats{
		Cpu: cpu(3e9), Memory: &runtimeapi.MemoryUsage{Timestamp: t0.UnixNano(), WorkingSetBytes: uv(5 << 20)},
		Containers: []*runtimeapi.ContainerStats{{Attributes: &runtimeapi.ContainerAttributes{Id: "c1"}, Cpu: cpu(2e9),
			Memory: &runtimeapi.MemoryUsage{Timestamp: t0.UnixNano(), WorkingSetBytes: uv(4 << 20)}}},
	}}})
	img := critest.NewFakeImageService()
	img.SetFakeFilesystemUsage([]*runtimeapi.FilesystemUsage{{Timestamp: t0.UnixNano(), FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: root}, UsedBytes: uv(777)}})
	pod := &container.PodStatus{UID: "u1", Name: "web", Namespace: "ns",
		Sandboxes:  []container.SandboxStatus{{ID: "sb1", State: container.SandboxReady, CreatedAt: t0.Add(-time.Minute)}},
		Containers: []container.Status{{ID: "c1", Name: "app", State: container.StateRunning, Image: "example.com/app:1", CreatedAt: t0.Add(-30 * time.Second)}}}
	clk := testingclock.NewFakeClock(t0)
	p := New(Options{NodeName: "n1", RootDir: root, PodLogsDir: filepath.Join(root, "logs"), Runtime: rt, Images: img,
		Pods:           func() []*container.PodStatus { return []*container.PodStatus{pod} },
		PodCgroup:      func(uid types.UID) (string, bool) { return "/kubepods/burstable/pod" + string(uid), uid == "u1" },
		MemoryCapacity: 8 << 30, NumCPU: 2, BootID: "b", MachineID: "m", SystemUUID: "s", Clock: clk})
	// A fixture cgroup v1 tree stands in for the host's.
	h := cgroups.Hierarchy{Version: 1, V1: map[string]string{"cpuacct": "/cg/cpuacct", "memory": "/cg/memory", "cpu": "/cg/cpu"}}
	p.cg = cgroups.NewReaderAt(h, root)
	// And fixture /proc and /sys trees for the host's, empty unless a
	// test writes them.
	p.procRoot, p.sysRoot = filepath.Join(root, "proc"), filepath.Join(root, "sys")
	for _, cg := range []string{"", "/kubepods", "/kubepods/burstable/podu1", "/kubepods/burstable/podu1/c1"} {
		writeFile(t, filepath.Join(root, "cg/cpuacct", cg, "cpuacct.usage"), "1000000000\n")
		writeFile(t, filepath.Join(root, "cg/memory", cg, "memory.usage_in_bytes"), "4096\n")
		writeFile(t, filepath.Join(root, "cg/memory", cg, "memory.stat"), "total_inactive_file 1024\ntotal_rss 2048\n")
	}
	writeFile(t, filepath.Join(root, "logs", "ns_web_u1", "app", "0.log"), "hello\n")
	if err := os.MkdirAll(filepath.Join(root, "pods", "u1", "volumes", "kubernetes.io~empty-dir", "scratch"), 0o755); err != nil {
		t.Fatal(err)
	}
	return &fixture{p: p, rt: rt, clock: clk, root: root, pod: pod}
}

func TestProviderSummary(t *testing.T) {
	f := newFixture(t)
	s, err := f.p.Summary(context.Background(), Full)
	if err != nil {
		t.Fatal(err)
	}
	if s.Node.NodeName != "n1" || s.Node.CPU == nil || *s.Node.Memory.WorkingSetBytes != 3072 || s.Node.Fs == nil || *s.Node.Runtime.ImageFs.UsedBytes != 777 {
		t.Errorf("node = %+v", s.Node)
	}
	if len(s.Pods) != 1 || len(s.Pods[0].Containers) != 1 {
		t.Fatalf("pods = %+v", s.Pods)
	}
	p := s.Pods[0]
	c := p.Containers[0]
	if c.Name != "app" || *c.CPU.UsageCoreNanoSeconds != 2e9 || c.Logs == nil || *c.Logs.UsedBytes == 0 {
		t.Errorf("container = %+v", c)
	}
	if len(p.VolumeStats) != 1 || p.VolumeStats[0].Name != "scratch" {
		t.Errorf("volumes = %+v", p.VolumeStats)
	}
	// Served from the cache within MaxAge: no second CRI call, and a CPU
	// and memory summary cut from the full one.
	calls := len(f.rt.GetCalls())
	s2, _ := f.p.Summary(context.Background(), CPUAndMemory)
	if len(f.rt.GetCalls()) != calls {
		t.Errorf("a fresh summary was not reused (calls %d -> %d)", calls, len(f.rt.GetCalls()))
	}
	if s2.Node.Fs != nil || s2.Node.Runtime != nil || s2.Pods[0].VolumeStats != nil || s2.Pods[0].Containers[0].Logs != nil || s2.Node.CPU == nil || s2.Pods[0].Containers[0].CPU == nil {
		t.Errorf("CPU and memory summary from the cache: %+v", s2)
	}
	if s.Node.Fs == nil || s.Pods[0].VolumeStats == nil {
		t.Errorf("cutting the CPU and memory summary changed the full one")
	}
	f.clock.Step(2 * time.Second)
	if _, err := f.p.Summary(context.Background(), CPUAndMemory); err != nil || len(f.rt.GetCalls()) == calls {
		t.Errorf("a stale summary was reused: %v", err)
	}
}

func TestProviderFallsBackToContainerStats(t *testing.T) {
	f := newFixture(t)
	f.rt.InjectError("ListPodSandboxStats", status.Error(codes.Unimplemented, "unknown method"))
	f.rt.SetFakeContainers([]*critest.FakeContainer{{ContainerStatus: runtimeapi.ContainerStatus{Id: "c1"}, SandboxID: "sb1"}})
	f.rt.SetFakeContainerStats([]*runtimeapi.ContainerStats{{Attributes: &runtimeapi.ContainerAttributes{Id: "c1", Metadata: &runtimeapi.ContainerMetadata{Name: "app"}},
		Cpu: &runtimeapi.CpuUsage{Timestamp: t0.UnixNano(), UsageCoreNanoSeconds: uv(7)}, Memory: &runtimeapi.MemoryUsage{WorkingSetBytes: uv(9)}}})
	s, err := f.p.Summary(context.Background(), CPUAndMemory)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Pods) != 1 || s.Pods[0].CPU == nil || *s.Pods[0].CPU.UsageCoreNanoSeconds != 7 || len(s.Pods[0].Containers) != 1 || *s.Pods[0].Containers[0].Memory.WorkingSetBytes != 9 {
		t.Fatalf("pods = %+v", s.Pods)
	}
}

func TestProviderError(t *testing.T) {
	f := newFixture(t)
	f.rt.InjectError("ListPodSandboxStats", errors.New("runtime down"))
	if _, err := f.p.Summary(context.Background(), Full); err == nil {
		t.Fatal("a failed CRI call must fail the summary")
	}
	// /metrics/resource reads the cgroups without the runtime; when it
	// must ask the runtime (here the pod's cgroup is gone), it reports the
	// failure instead of data.
	for _, c := range []string{"cpuacct", "memory"} {
		if err := os.RemoveAll(filepath.Join(f.root, "cg", c, "kubepods/burstable/podu1")); err != nil {
			t.Fatal(err)
		}
	}
	f.rt.InjectError("ListPodSandboxStats", errors.New("runtime down"))
	fam, err := metricstest.ScrapeHandler(handlerFor(NewResourceRegistry(f.p)), "/metrics/resource")
	if err != nil {
		t.Fatal(err)
	}
	if fam.Sum("resource_scrape_error", nil) != 1 || fam.Sum("scrape_error", nil) != 1 || fam["container_cpu_usage_seconds_total"] != nil {
		t.Errorf("failed scrape: %s", fam.Names())
	}
}

func TestSummaryHandler(t *testing.T) {
	f := newFixture(t)
	h := SummaryHandler(f.p)
	for _, tc := range []struct {
		method, url string
		code        int
		withFs      bool
	}{
		{http.MethodGet, "/stats/summary", 200, true},
		{http.MethodPost, "/stats/summary", 200, true},
		{http.MethodGet, "/stats/summary?only_cpu_and_memory=true", 200, false},
		{http.MethodDelete, "/stats/summary", 405, false},
	} {
		f.clock.Step(2 * time.Second) // past the cache
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.url, nil))
		if rec.Code != tc.code {
			t.Errorf("%s %s: %d %s", tc.method, tc.url, rec.Code, rec.Body)
			continue
		}
		if tc.code != 200 {
			continue
		}
		var s statsapi.Summary
		if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		if (s.Node.Fs != nil) != tc.withFs || len(s.Pods) != 1 {
			t.Errorf("%s: fs=%v pods=%d", tc.url, s.Node.Fs != nil, len(s.Pods))
		}
	}
}

// TestResourceMetrics checks /metrics/resource against what metrics-server
// reads: names, labels, values in seconds and bytes, and timestamps.
// /metrics/resource reads the pod and container cgroups and leaves the
// runtime alone; when a running container's cgroup cannot be read, the
// scrape asks the runtime instead and leaves nothing out.
func TestResourceMetrics(t *testing.T) {
	for _, fromCgroups := range []bool{true, false} {
		t.Run(fmt.Sprintf("fromCgroups=%v", fromCgroups), func(t *testing.T) {
			f := newFixture(t)
			// The pod's and the container's cgroups read otherwise than
			// the runtime's stats.
			pod, ctr := "/kubepods/burstable/podu1", "/kubepods/burstable/podu1/c1"
			writeFile(t, filepath.Join(f.root, "cg/cpuacct", pod, "cpuacct.usage"), "7000000000\n")
			writeFile(t, filepath.Join(f.root, "cg/memory", pod, "memory.usage_in_bytes"), "9000\n")
			writeFile(t, filepath.Join(f.root, "cg/cpuacct", ctr, "cpuacct.usage"), "6000000000\n")
			writeFile(t, filepath.Join(f.root, "cg/memory", ctr, "memory.usage_in_bytes"), "8000\n")
			// cpu 7 s and 6 s, working set usage minus inactive_file (1024).
			podCPU, podWS, ctrCPU, ctrWS := 7.0, 9000.0-1024, 6.0, 8000.0-1024
			if !fromCgroups {
				for _, c := range []string{"cpuacct", "memory"} {
					if err := os.RemoveAll(filepath.Join(f.root, "cg", c, ctr)); err != nil {
						t.Fatal(err)
					}
				}
				podCPU, podWS, ctrCPU, ctrWS = 3, 5<<20, 2, 4<<20
			}
			checkResourceMetrics(t, f, podCPU, podWS, ctrCPU, ctrWS)
			asked := false
			for _, c := range f.rt.GetCalls() {
				asked = asked || c == "ListPodSandboxStats"
			}
			if asked == fromCgroups {
				t.Errorf("ListPodSandboxStats called: %v, want %v", asked, !fromCgroups)
			}
		})
	}
}

func checkResourceMetrics(t *testing.T, f *fixture, podCPU, podWS, ctrCPU, ctrWS float64) {
	t.Helper()
	rec := httptest.NewRecorder()
	handlerFor(NewResourceRegistry(f.p)).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics/resource", nil))
	fam, err := metricstest.Parse(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	sel := map[string]string{"container": "app", "pod": "web", "namespace": "ns"}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
		stamp  bool
	}{
		{"container_cpu_usage_seconds_total", sel, ctrCPU, true},
		{"container_memory_working_set_bytes", sel, ctrWS, true},
		{"container_start_time_seconds", sel, float64(t0.Add(-30 * time.Second).Unix()), false},
		{"pod_cpu_usage_seconds_total", map[string]string{"pod": "web", "namespace": "ns"}, podCPU, true},
		{"pod_memory_working_set_bytes", map[string]string{"pod": "web", "namespace": "ns"}, podWS, true},
		{"node_memory_working_set_bytes", nil, 3072, true},
		{"node_cpu_usage_seconds_total", nil, 1, true},
		{"resource_scrape_error", nil, 0, false},
	} {
		ms := fam.Find(tc.name, tc.labels)
		if len(ms) != 1 {
			t.Errorf("%s%v: %d series; have %s", tc.name, tc.labels, len(ms), fam.Names())
			continue
		}
		if v := metricstest.Value(ms[0]); v != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, v, tc.want)
		}
		if tc.stamp && ms[0].GetTimestampMs() == 0 {
			t.Errorf("%s has no timestamp", tc.name)
		}
	}
	if got := fam.LabelNames("container_cpu_usage_seconds_total"); len(got) != 3 || got[0] != "container" || got[1] != "namespace" || got[2] != "pod" {
		t.Errorf("labels = %v", got)
	}
}

func TestCadvisorMetrics(t *testing.T) {
	f := newFixture(t)
	fam, err := metricstest.ScrapeHandler(handlerFor(NewCadvisorRegistry(f.p)), "/metrics/cadvisor")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"container": "app", "pod": "web", "namespace": "ns", "id": "/kubepods/burstable/podu1/c1", "image": "example.com/app:1", "name": "c1"}
	if v := fam.Sum("container_cpu_usage_seconds_total", merge(want, "cpu", "total")); v != 1 {
		t.Errorf("container cpu = %v; series %v", v, fam.Find("container_cpu_usage_seconds_total", nil))
	}
	if v := fam.Sum("container_memory_working_set_bytes", want); v != 3072 {
		t.Errorf("container working set = %v", v)
	}
	pod := map[string]string{"container": "", "pod": "web", "namespace": "ns", "id": "/kubepods/burstable/podu1", "image": "", "name": ""}
	if len(fam.Find("container_memory_usage_bytes", pod)) != 1 {
		t.Errorf("pod cgroup series missing")
	}
	if len(fam.Find("container_memory_rss", map[string]string{"id": "/", "pod": ""})) != 1 {
		t.Errorf("root cgroup series missing")
	}
	if fam.Sum("machine_cpu_cores", map[string]string{"boot_id": "b", "machine_id": "m", "system_uuid": "s"}) != 2 || fam.Sum("machine_memory_bytes", nil) != 8<<30 {
		t.Errorf("machine metrics: %v %v", fam.Find("machine_cpu_cores", nil), fam.Find("machine_memory_bytes", nil))
	}
	if got := fam.LabelNames("container_memory_working_set_bytes"); len(got) != 6 {
		t.Errorf("labels = %v", got)
	}
	// No CPU quota: no CFS throttling series (as cadvisor).
	if fam["container_cpu_cfs_periods_total"] != nil {
		t.Errorf("throttling series without a quota")
	}
	if ContainerCgroup("/kubepods.slice/kubepods-pod1.slice", "systemd", "abc") != "/kubepods.slice/kubepods-pod1.slice/cri-containerd-abc.scope" ||
		ContainerCgroup("/kubepods/pod1", "cgroupfs", "abc") != "/kubepods/pod1/abc" {
		t.Errorf("ContainerCgroup")
	}
}

func merge(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for a, b := range m {
		out[a] = b
	}
	return out
}

// TestProviderPSI: on a v1 hybrid host the node's, pods' and containers'
// pressure is read under the cgroup2 mount, and goes into the summary and
// /metrics/cadvisor; a cgroup without pressure files gets none.
func TestProviderPSI(t *testing.T) {
	f := newFixture(t)
	h := cgroups.Hierarchy{Version: 1, V1: map[string]string{"cpuacct": "/cg/cpuacct", "memory": "/cg/memory", "cpu": "/cg/cpu"}, PSIRoot: "/cg/unified"}
	f.p.cg = cgroups.NewReaderAt(h, f.root)
	pressure := func(some, full uint64) string {
		return fmt.Sprintf("some avg10=2.50 avg60=1.00 avg300=0.50 total=%d\nfull avg10=0.10 avg60=0.00 avg300=0.00 total=%d\n", some, full)
	}
	for i, cg := range []string{"", "/kubepods", "/kubepods/burstable/podu1", "/kubepods/burstable/podu1/c1"} {
		n := uint64(i+1) * 1_000_000
		writeFile(t, filepath.Join(f.root, "cg/unified", cg, "cpu.pressure"), pressure(n+1, n+2))
		writeFile(t, filepath.Join(f.root, "cg/unified", cg, "memory.pressure"), pressure(n+3, n+4))
		if cg != "/kubepods" {
			writeFile(t, filepath.Join(f.root, "cg/unified", cg, "io.pressure"), pressure(n+5, n+6))
		}
	}
	s, err := f.p.Summary(context.Background(), Full)
	if err != nil {
		t.Fatal(err)
	}
	p := s.Pods[0]
	c := p.Containers[0]
	for _, tc := range []struct {
		what string
		psi  *statsapi.PSIStats
		some uint64
	}{
		{"node cpu", s.Node.CPU.PSI, 1_000_001}, {"node memory", s.Node.Memory.PSI, 1_000_003},
		{"pods cpu", s.Node.SystemContainers[0].CPU.PSI, 2_000_001}, {"pods memory", s.Node.SystemContainers[0].Memory.PSI, 2_000_003},
		{"pod cpu", p.CPU.PSI, 3_000_001}, {"pod memory", p.Memory.PSI, 3_000_003},
		{"container cpu", c.CPU.PSI, 4_000_001}, {"container memory", c.Memory.PSI, 4_000_003},
	} {
		if tc.psi == nil || tc.psi.Some.Total != tc.some || tc.psi.Full.Total != tc.some+1 || tc.psi.Some.Avg10 != 2.5 {
			t.Errorf("%s: PSI %+v, want some total %d", tc.what, tc.psi, tc.some)
		}
	}
	if s.Node.IO == nil || s.Node.IO.PSI.Some.Total != 1_000_005 || p.IO == nil || p.IO.PSI.Full.Total != 3_000_006 || c.IO == nil || c.IO.PSI.Some.Total != 4_000_005 {
		t.Errorf("io: node %+v pod %+v container %+v", s.Node.IO, p.IO, c.IO)
	}
	if s.Node.SystemContainers[0].IO != nil {
		t.Errorf("pods io without io.pressure: %+v", s.Node.SystemContainers[0].IO)
	}

	fam, err := metricstest.ScrapeHandler(handlerFor(NewCadvisorRegistry(f.p)), "/metrics/cadvisor")
	if err != nil {
		t.Fatal(err)
	}
	ctr := map[string]string{"container": "app", "pod": "web", "namespace": "ns", "id": "/kubepods/burstable/podu1/c1", "image": "example.com/app:1", "name": "c1"}
	pod := map[string]string{"container": "", "pod": "web", "namespace": "ns", "id": "/kubepods/burstable/podu1", "image": "", "name": ""}
	root := map[string]string{"id": "/", "pod": ""}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		// Microseconds to seconds.
		{"container_pressure_cpu_waiting_seconds_total", ctr, 4.000001},
		{"container_pressure_cpu_stalled_seconds_total", ctr, 4.000002},
		{"container_pressure_memory_waiting_seconds_total", ctr, 4.000003},
		{"container_pressure_memory_stalled_seconds_total", ctr, 4.000004},
		{"container_pressure_io_waiting_seconds_total", ctr, 4.000005},
		{"container_pressure_io_stalled_seconds_total", ctr, 4.000006},
		{"container_pressure_memory_stalled_seconds_total", pod, 3.000004},
		{"container_pressure_io_waiting_seconds_total", root, 1.000005},
	} {
		ms := fam.Find(tc.name, tc.labels)
		if len(ms) != 1 {
			t.Errorf("%s%v: %d series", tc.name, tc.labels, len(ms))
			continue
		}
		if v := metricstest.Value(ms[0]); v != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, v, tc.want)
		}
		if ms[0].GetTimestampMs() == 0 {
			t.Errorf("%s has no timestamp", tc.name)
		}
	}
	// Series only for what was read: one io series each for the root, the
	// pod and the container, none for the kubepods cgroup (not listed) and
	// none from a fixture without PSI.
	if n := len(fam.Find("container_pressure_io_stalled_seconds_total", nil)); n != 3 {
		t.Errorf("%d io stalled series, want 3", n)
	}
	// Each scope reads what it returns: the CPU and memory summary
	// carries the pods' pressure; /metrics/resource, which emits none,
	// does not read the pods' and containers' pressure files.
	for _, tc := range []struct {
		scope   Scope
		withPSI bool
	}{{CPUAndMemory, true}, {ResourceMetrics, false}} {
		f.clock.Step(2 * time.Second) // past the cache
		s, err := f.p.Summary(context.Background(), tc.scope)
		if err != nil {
			t.Fatal(err)
		}
		p, c := s.Pods[0], s.Pods[0].Containers[0]
		if got := p.CPU.PSI != nil && c.Memory.PSI != nil; got != tc.withPSI {
			t.Errorf("scope %d: pod and container PSI read = %v, want %v", tc.scope, got, tc.withPSI)
		}
		if p.CPU.UsageCoreNanoSeconds == nil || c.Memory.WorkingSetBytes == nil {
			t.Errorf("scope %d: no CPU or memory usage: %+v", tc.scope, p)
		}
	}
	noPSI, err := metricstest.ScrapeHandler(handlerFor(NewCadvisorRegistry(newFixture(t).p)), "/metrics/cadvisor")
	if err != nil {
		t.Fatal(err)
	}
	for name := range noPSI {
		if strings.HasPrefix(name, "container_pressure_") {
			t.Errorf("%s without pressure files", name)
		}
	}
}

// TestCadvisorProcessesIOAndFilesystems: the series cadvisor has beyond
// CPU and memory usage — memory failures, events and spec, processes, file
// descriptors, sockets, ulimits, thread limit, block I/O per device and the
// root cgroup's filesystems — with cadvisor's labels, from a v1 fixture
// tree and fixture /proc and /sys.
func TestCadvisorProcessesIOAndFilesystems(t *testing.T) {
	f := newFixture(t)
	h := cgroups.Hierarchy{Version: 1, V1: map[string]string{"cpuacct": "/cg/cpuacct", "memory": "/cg/memory", "cpu": "/cg/cpu", "pids": "/cg/pids", "blkio": "/cg/blkio"}}
	f.p.cg = cgroups.NewReaderAt(h, f.root)
	ctrCg, podCg := "/kubepods/burstable/podu1/c1", "/kubepods/burstable/podu1"
	mem := filepath.Join(f.root, "cg/memory", ctrCg)
	writeFile(t, filepath.Join(mem, "memory.stat"), "total_inactive_file 1024\ntotal_rss 2048\npgfault 11\npgmajfault 2\ntotal_pgfault 99\ntotal_pgmajfault 9\n")
	writeFile(t, filepath.Join(mem, "memory.failcnt"), "3\n")
	writeFile(t, filepath.Join(mem, "memory.soft_limit_in_bytes"), "9223372036854771712\n")
	writeFile(t, filepath.Join(mem, "memory.memsw.limit_in_bytes"), "83886080\n")
	writeFile(t, filepath.Join(mem, "cgroup.procs"), "100\n101\n")
	writeFile(t, filepath.Join(f.root, "cg/memory", podCg, "cgroup.procs"), "")
	writeFile(t, filepath.Join(f.root, "cg/pids", ctrCg, "pids.current"), "2\n")
	writeFile(t, filepath.Join(f.root, "cg/pids", ctrCg, "pids.max"), "max\n")
	writeFile(t, filepath.Join(f.root, "cg/pids", podCg, "pids.max"), "1024\n")
	blkio := filepath.Join(f.root, "cg/blkio", ctrCg)
	writeFile(t, filepath.Join(blkio, "blkio.throttle.io_serviced_recursive"), "254:0 Read 2\n254:0 Write 3\n254:0 Sync 5\n254:0 Async 0\n254:0 Discard 0\n254:0 Total 5\nTotal 5\n")
	writeFile(t, filepath.Join(blkio, "blkio.throttle.io_service_bytes_recursive"), "254:0 Read 8192\n254:0 Write 12288\n254:0 Sync 20480\n254:0 Async 0\n254:0 Discard 0\n254:0 Total 20480\nTotal 20480\n")
	writeFile(t, filepath.Join(f.root, "cg/blkio", podCg, "blkio.throttle.io_serviced_recursive"), "Total 0\n")
	proc := filepath.Join(f.root, "proc")
	fakeProc(t, proc, 100, 1, 500, "/dev/null", "socket:[12]", "pipe:[13]")
	fakeProc(t, proc, 101, 100, 600, "socket:[14]")
	writeFile(t, filepath.Join(proc, "self", "mountinfo"), nodeMountinfo)
	if err := os.MkdirAll(filepath.Join(f.root, "sys", "dev", "block"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../devices/virtio1/block/vda", filepath.Join(f.root, "sys", "dev", "block", "254:0")); err != nil {
		t.Fatal(err)
	}
	f.p.fsInfo = func(p string) (FsInfo, error) {
		if p == "/" {
			return FsInfo{Capacity: 1000, Available: 300, Used: 600, Inodes: 50, InodesFree: 20}, nil
		}
		return FsInfo{}, errors.New("not mounted here")
	}

	fam, err := metricstest.ScrapeHandler(handlerFor(NewCadvisorRegistry(f.p)), "/metrics/cadvisor")
	if err != nil {
		t.Fatal(err)
	}
	ctr := map[string]string{"container": "app", "pod": "web", "namespace": "ns", "id": ctrCg, "image": "example.com/app:1", "name": "c1"}
	pod := map[string]string{"container": "", "pod": "web", "namespace": "ns", "id": podCg, "image": "", "name": ""}
	root := map[string]string{"id": "/", "pod": "", "container": ""}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := merge(base, kv[0], kv[1])
		for i := 2; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
		stamp  bool
	}{
		// memory.stat's own pgfault for both scopes, as cadvisor.
		{"container_memory_failures_total", with(ctr, "failure_type", "pgfault", "scope", "container"), 11, true},
		{"container_memory_failures_total", with(ctr, "failure_type", "pgfault", "scope", "hierarchy"), 11, true},
		{"container_memory_failures_total", with(ctr, "failure_type", "pgmajfault", "scope", "container"), 2, true},
		{"container_memory_failures_total", with(ctr, "failure_type", "pgmajfault", "scope", "hierarchy"), 2, true},
		{"container_memory_events_high_total", ctr, 0, true},
		{"container_memory_events_max_total", ctr, 3, true},
		{"container_spec_memory_reservation_limit_bytes", ctr, 0, false},
		{"container_spec_memory_swap_limit_bytes", ctr, 83886080, false},
		{"container_threads", ctr, 2, true},
		{"container_threads_max", ctr, 0, true},
		{"container_threads_max", pod, 1024, true},
		{"container_processes", ctr, 2, true},
		{"container_file_descriptors", ctr, 4, true},
		{"container_sockets", ctr, 2, true},
		{"container_ulimits_soft", with(ctr, "ulimit", "max_open_files"), 100, true},
		{"container_processes", pod, 0, true},
		{"container_file_descriptors", pod, 0, true},
		{"container_blkio_device_usage_total", with(ctr, "device", "/dev/vda", "major", "254", "minor", "0", "operation", "Read"), 8192, true},
		{"container_blkio_device_usage_total", with(ctr, "device", "/dev/vda", "major", "254", "minor", "0", "operation", "Total"), 20480, true},
		{"container_fs_reads_bytes_total", with(ctr, "device", "/dev/vda"), 8192, true},
		{"container_fs_writes_bytes_total", with(ctr, "device", "/dev/vda"), 12288, true},
		{"container_fs_reads_total", with(ctr, "device", "/dev/vda"), 2, true},
		{"container_fs_writes_total", with(ctr, "device", "/dev/vda"), 3, true},
		{"container_fs_usage_bytes", with(root, "device", "/dev/vda"), 600, true},
		{"container_fs_limit_bytes", with(root, "device", "/dev/vda"), 1000, true},
		{"container_fs_inodes_total", with(root, "device", "/dev/vda"), 50, true},
		{"container_fs_inodes_free", with(root, "device", "/dev/vda"), 20, true},
	} {
		ms := fam.Find(tc.name, tc.labels)
		if len(ms) != 1 {
			t.Errorf("%s%v: %d series; have %v", tc.name, tc.labels, len(ms), fam.Find(tc.name, nil))
			continue
		}
		if v := metricstest.Value(ms[0]); v != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, v, tc.want)
		}
		if tc.stamp != (ms[0].GetTimestampMs() != 0) {
			t.Errorf("%s: timestamp %d", tc.name, ms[0].GetTimestampMs())
		}
	}
	for _, tc := range []struct {
		name   string
		labels []string
	}{
		{"container_memory_failures_total", []string{"container", "failure_type", "id", "image", "name", "namespace", "pod", "scope"}},
		{"container_blkio_device_usage_total", []string{"container", "device", "id", "image", "major", "minor", "name", "namespace", "operation", "pod"}},
		{"container_fs_reads_total", []string{"container", "device", "id", "image", "name", "namespace", "pod"}},
		{"container_ulimits_soft", []string{"container", "id", "image", "name", "namespace", "pod", "ulimit"}},
		{"container_processes", []string{"container", "id", "image", "name", "namespace", "pod"}},
	} {
		if got := fam.LabelNames(tc.name); !reflect.DeepEqual(got, tc.labels) {
			t.Errorf("%s labels = %v, want %v", tc.name, got, tc.labels)
		}
	}
	// Every v1 operation of the device; nothing for the pod (no device
	// counted) or the root (its blkio files are empty); the root has no
	// process series (its processes are the host's) and a pod's cgroup no
	// ulimits (no process); only the root has filesystems, and only the
	// block ones (/, not the containerd partition statfs could not read).
	if n := len(fam.Find("container_blkio_device_usage_total", nil)); n != 6 {
		t.Errorf("%d blkio series, want 6", n)
	}
	if n := len(fam.Find("container_fs_reads_total", nil)); n != 1 {
		t.Errorf("%d fs reads series, want the container's", n)
	}
	if len(fam.Find("container_processes", root)) != 0 || len(fam.Find("container_ulimits_soft", pod)) != 0 {
		t.Errorf("process series for the root or ulimits for the pod")
	}
	if n := len(fam.Find("container_fs_usage_bytes", nil)); n != 1 {
		t.Errorf("%d fs usage series, want 1: %v", n, fam.Find("container_fs_usage_bytes", nil))
	}
}

// TestProviderSystemContainers: the node's own cgroups (kubeletCgroups,
// --runtime-cgroups, systemCgroups) are system containers beside "pods",
// with no available bytes (they are not limited by node allocatable), the
// kubelet's with its start time; one that cannot be read is left out.
func TestProviderSystemContainers(t *testing.T) {
	f := newFixture(t)
	started := t0.Add(-time.Hour)
	f.p.o.Started = started
	f.p.o.SystemCgroups = func() map[string]string {
		return map[string]string{"kubelet": "/kubelet", "misc": "/system", "runtime": "/gone"}
	}
	for _, cg := range []string{"/kubelet", "/system"} {
		writeFile(t, filepath.Join(f.root, "cg/cpuacct", cg, "cpuacct.usage"), "2000000000\n")
		writeFile(t, filepath.Join(f.root, "cg/memory", cg, "memory.usage_in_bytes"), "8192\n")
		writeFile(t, filepath.Join(f.root, "cg/memory", cg, "memory.stat"), "total_inactive_file 1024\ntotal_rss 4096\n")
	}
	s, err := f.p.Summary(context.Background(), Full)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range s.Node.SystemContainers {
		names = append(names, c.Name)
	}
	if want := []string{"pods", "kubelet", "misc"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("system containers %v, want %v", names, want)
	}
	kubelet, misc := s.Node.SystemContainers[1], s.Node.SystemContainers[2]
	if !kubelet.StartTime.Time.Equal(started) || misc.StartTime.Time.Equal(started) {
		t.Errorf("start times: kubelet %v (want %v), misc %v", kubelet.StartTime, started, misc.StartTime)
	}
	for _, c := range []statsapi.ContainerStats{kubelet, misc} {
		if c.CPU == nil || *c.CPU.UsageCoreNanoSeconds != 2e9 || c.Memory == nil || *c.Memory.UsageBytes != 8192 || *c.Memory.WorkingSetBytes != 7168 {
			t.Errorf("%s: cpu %+v memory %+v", c.Name, c.CPU, c.Memory)
		}
		if c.Memory != nil && c.Memory.AvailableBytes != nil {
			t.Errorf("%s has available bytes %d without a limit of its own", c.Name, *c.Memory.AvailableBytes)
		}
	}
	if s.Node.SystemContainers[0].Memory.AvailableBytes == nil {
		t.Errorf("pods lost its available bytes")
	}
	// The CPU and memory summary (and /metrics/resource's) has them too.
	f.clock.Step(2 * time.Second)
	cm, err := f.p.Summary(context.Background(), ResourceMetrics)
	if err != nil || len(cm.Node.SystemContainers) != 3 {
		t.Errorf("CPU and memory summary: %v, %+v", err, cm)
	}
}
