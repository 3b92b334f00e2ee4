package stats

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	compbase "k8s.io/component-base/metrics"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/metrics/metricstest"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/stats/cgroups"
)

// The sections of docs/metrics.md that list served metrics, by endpoint.
var docMetricSections = []string{"/metrics", "/metrics/resource", "/metrics/probes", "/metrics/cadvisor"}

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	braceSet   = regexp.MustCompile(`\{([a-z0-9_]+(?:,[a-z0-9_]+)+)\}`)
	metricName = regexp.MustCompile(`^(kubelet|prober|container|machine|node|pod|process|go|resource|scrape)((_[a-z0-9]+)+(_\*)?|_\*)$`)
)

// expandBraces expands shell-style {a,b} sets: x_{a,b}_y is x_a_y, x_b_y.
func expandBraces(s string) []string {
	loc := braceSet.FindStringSubmatchIndex(s)
	if loc == nil {
		return []string{s}
	}
	var out []string
	for _, alt := range strings.Split(s[loc[2]:loc[3]], ",") {
		out = append(out, expandBraces(s[:loc[0]]+alt+s[loc[1]:])...)
	}
	return out
}

// docMetricNames extracts, per endpoint, the metric names docs/metrics.md
// says are served: the first column of the endpoint section's tables and
// the names in its prose, leaving out paragraphs that begin "Not
// provided". A name ending in _* stands for a family prefix. Label lists
// (name{a, b}) are cut off, brace sets (x_{a,b}) expanded.
func docMetricNames(doc string) map[string][]string {
	out := map[string][]string{}
	sections := map[string]string{}
	for _, part := range strings.Split(doc, "\n## ")[1:] {
		title, body, _ := strings.Cut(part, "\n")
		sections[strings.TrimSpace(title)] = body
	}
	for _, sec := range docMetricSections {
		seen := map[string]bool{}
		add := func(token string) {
			if i := strings.Index(token, "{"); i >= 0 && strings.ContainsAny(token[i:], " =") {
				token = token[:i] // a label list
			}
			for _, name := range expandBraces(token) {
				if metricName.MatchString(name) && !seen[name] {
					seen[name] = true
					out[sec] = append(out[sec], name)
				}
			}
		}
		for _, para := range strings.Split(sections[sec], "\n\n") {
			para = strings.TrimSpace(para)
			if strings.HasPrefix(para, "Not provided") {
				continue
			}
			if strings.HasPrefix(para, "|") {
				for _, row := range strings.Split(para, "\n") {
					cells := strings.Split(row, "|")
					if len(cells) < 3 {
						continue
					}
					for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
						add(m[1])
					}
				}
				continue
			}
			for _, m := range backticked.FindAllStringSubmatch(para, -1) {
				add(m[1])
			}
		}
	}
	return out
}

func TestDocMetricNamesExtraction(t *testing.T) {
	doc := "intro `kubelet_not_a_section`\n" +
		"## /metrics\n\n| Metric | Labels |\n| --- | --- |\n| `kubelet_a_total`, `kubelet_b` | `container_state` (`created`) |\n| `go_*`, `process_*` | |\n\n" +
		"`prober_x_total{probe_type, result}` counts (`successful`); `process_start_time_seconds` too.\n\n" +
		"Not provided: `kubelet_missing`,\n`kubelet_gone`.\n\n" +
		"## /metrics/cadvisor\n\nLabels `container`, `id=\"/\"`.\n\nProvided: `container_net_{rx,tx}_{bytes,packets}_total` (`interface`).\n"
	got := docMetricNames(doc)
	want := map[string]string{
		"/metrics":          "kubelet_a_total kubelet_b go_* process_* prober_x_total process_start_time_seconds",
		"/metrics/cadvisor": "container_net_rx_bytes_total container_net_rx_packets_total container_net_tx_bytes_total container_net_tx_packets_total",
	}
	for sec, w := range want {
		if g := strings.Join(got[sec], " "); g != w {
			t.Errorf("%s: %s\nwant %s", sec, g, w)
		}
	}
}

// TestDocumentedMetricsAreEmitted reads docs/metrics.md and checks that
// every metric it says an endpoint serves is emitted by that endpoint's
// registry in a scenario that should emit it: the kubelet's /metrics
// registry with every metric fed as its producer feeds it and its
// scrape-time collectors given pods, containers, pod counts and a claim
// volume; /metrics/probes after probe runs; /metrics/resource from a full
// summary; /metrics/cadvisor from the fixture's cgroups plus one cgroup
// with everything (CPU quota, swap, threads, network, PSI). A name documented
// but never emitted fails, so the page cannot promise more than the
// endpoints serve; a metric served but not on the page fails too.
func TestDocumentedMetricsAreEmitted(t *testing.T) {
	b, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := docMetricNames(string(b))
	total := 0
	for _, sec := range docMetricSections {
		total += len(documented[sec])
	}
	// A parse that finds (almost) nothing must not pass as "all emitted".
	if total < 80 || len(documented["/metrics"]) < 30 || len(documented["/metrics/cadvisor"]) < 30 {
		t.Fatalf("only %d metric names found in docs/metrics.md: %v", total, documented)
	}

	emitted := map[string]metricstest.Families{
		"/metrics":          scrapeKubeletScenario(t),
		"/metrics/probes":   scrapeProbesScenario(t),
		"/metrics/resource": scrapeResourceScenario(t),
		"/metrics/cadvisor": scrapeCadvisorScenario(t),
	}
	for _, sec := range docMetricSections {
		fam := emitted[sec]
		for _, name := range documented[sec] {
			if prefix, ok := strings.CutSuffix(name, "*"); ok {
				found := false
				for have := range fam {
					found = found || strings.HasPrefix(have, prefix)
				}
				if !found {
					t.Errorf("%s: docs/metrics.md lists %s, but no metric with that prefix is emitted", sec, name)
				}
				continue
			}
			if fam[name] == nil || len(fam[name].GetMetric()) == 0 {
				t.Errorf("%s: docs/metrics.md lists %s, but it is not emitted; emitted: %s", sec, name, fam.Names())
			}
		}
		// And the other way round: what the endpoint serves is on the page.
		for have := range fam {
			if !documentedName(documented[sec], have) {
				t.Errorf("%s serves %s, which docs/metrics.md does not list", sec, have)
			}
		}
	}
}

func documentedName(names []string, name string) bool {
	for _, d := range names {
		if d == name {
			return true
		}
		if prefix, ok := strings.CutSuffix(d, "*"); ok && strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

func scrapeRegistry(t *testing.T, r compbase.Gatherer) metricstest.Families {
	t.Helper()
	f, err := metricstest.ScrapeHandler(handlerFor(r), "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// scrapeKubeletScenario feeds every /metrics metric the way the kubelet's
// parts do (the pod workers, the PLEG, the CRI decorator, the eviction
// manager, the startup tracker, ...) and scrapes the registry.
func scrapeKubeletScenario(t *testing.T) metricstest.Families {
	running := []*container.PodStatus{{UID: "u1", Sandboxes: []container.SandboxStatus{{ID: "s", State: container.SandboxReady}},
		Containers: []container.Status{{ID: "c", State: container.StateRunning}}}}
	r := metrics.NewKubeletRegistry(metrics.KubeletOptions{
		NodeName:      "node-a",
		CgroupVersion: 2,
		Running:       func() []*container.PodStatus { return running },
		Pods: func() metrics.PodCounts {
			return metrics.PodCounts{Desired: [2]int{3, 1}, Active: [2]int{2, 1}, Mirror: 1, Ephemeral: 1,
				Working: map[metrics.WorkingPod]int{{Lifecycle: metrics.WorkingSync, Config: metrics.WorkingDesired}: 3}}
		},
		Volumes: func() []metrics.VolumeStats {
			return []metrics.VolumeStats{{Namespace: "ns", PersistentVolumeClaim: "data", CapacityBytes: 10, AvailableBytes: 4, UsedBytes: 6, Inodes: 5, InodesFree: 2, InodesUsed: 3}}
		},
	})
	metrics.PodWorkerDuration.WithLabelValues("sync").Observe(0.1)
	metrics.PodWorkerStartDuration.Observe(0.01)
	metrics.ContainersPerPodCount.Observe(2)
	metrics.PodStartDuration.Observe(1.5)
	metrics.PodStartSLIDuration.WithLabelValues().Observe(1.2)
	metrics.PodStartTotalDuration.WithLabelValues().Observe(2.2)
	metrics.FirstNetworkPodStartSLIDuration.Set(1.2)
	metrics.PodStartupPhaseDuration.WithLabelValues("sandbox").Observe(0.3)
	metrics.PLEGRelistDuration.Observe(0.02)
	metrics.PLEGRelistInterval.Observe(1.02)
	metrics.PLEGLastSeen.SetToCurrentTime()
	metrics.PLEGDiscardEvents.Inc()
	metrics.EventedPLEGConn.Inc()
	metrics.EventedPLEGConnErr.Inc()
	metrics.EventedPLEGConnLatency.Observe(0.001)
	metrics.PodStatusSyncDuration.Observe(0.05)
	metrics.AdmissionRejections.WithLabelValues("OutOfcpu").Inc()
	metrics.ImageManagerMustPullChecksTotal.WithLabelValues("credentialPolicyAllowed").Inc()
	metrics.LifecycleHandlerSleepTerminated.Inc()
	metrics.EvictionStatsAge.WithLabelValues("memory.available").Observe(1)
	metrics.NodeStartupPreKubeletDuration.Set(30)
	metrics.NodeStartupPreRegistrationDuration.Set(1)
	metrics.NodeStartupRegistrationDuration.Set(0.1)
	metrics.NodeStartupPostRegistrationDuration.Set(2)
	metrics.NodeStartupDuration.Set(33.1)
	metrics.CgroupManagerDuration.WithLabelValues("create").Observe(0.001)
	metrics.Preemptions.WithLabelValues("cpu").Inc()
	metrics.LifecycleHandlerHTTPFallbacks.Inc()
	metrics.DevicePluginRegistrations.WithLabelValues("example.com/gpu").Inc()
	metrics.DevicePluginAllocationDuration.WithLabelValues("example.com/gpu").Observe(0.01)
	metrics.RuntimeOperations.WithLabelValues("run_podsandbox").Inc()
	metrics.RuntimeOperationsDuration.WithLabelValues("run_podsandbox").Observe(0.2)
	metrics.RuntimeOperationsErrors.WithLabelValues("pull_image").Inc()
	metrics.RunPodSandboxDuration.WithLabelValues("").Observe(0.2)
	metrics.RunPodSandboxErrors.WithLabelValues("").Inc()
	metrics.StartedPodsTotal.Inc()
	metrics.StartedPodsErrorsTotal.Inc()
	metrics.StartedContainersTotal.WithLabelValues(metrics.Container).Inc()
	metrics.StartedContainersErrorsTotal.WithLabelValues(metrics.Container, "ErrImagePull").Inc()
	metrics.RestartedPodTotal.WithLabelValues("true").Inc()
	metrics.OrphanedRuntimePodTotal.Inc()
	metrics.ImageGarbageCollectedTotal.WithLabelValues("space").Inc()
	metrics.ImageVolumeRequestedTotal.Inc()
	metrics.ImageVolumeMountedSucceedTotal.Inc()
	metrics.ImageVolumeMountedErrorsTotal.Inc()
	for _, c := range []*compbase.CounterVec{metrics.PodResourcesRequestsTotal, metrics.PodResourcesRequestsList, metrics.PodResourcesRequestsGet,
		metrics.PodResourcesRequestsGetAllocatable, metrics.PodResourcesErrorsList, metrics.PodResourcesErrorsGet, metrics.PodResourcesErrorsGetAllocatable} {
		c.WithLabelValues("v1").Inc()
	}
	metrics.ImagePullDuration.WithLabelValues(metrics.ImageSizeBucket(50 << 20)).Observe(3)
	metrics.Evictions.WithLabelValues("memory.available").Inc()
	return scrapeRegistry(t, r)
}

func scrapeProbesScenario(t *testing.T) metricstest.Families {
	r := metrics.NewProbesRegistry()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "docs-u1"}}
	metrics.ObserveProbe("Readiness", metrics.ProbeSuccessful, pod, "web", 10*time.Millisecond)
	t.Cleanup(func() { metrics.ForgetProbe("Readiness", "docs-u1", "web") })
	return scrapeRegistry(t, r)
}

type fixedSummary struct{ s *statsapi.Summary }

func (f fixedSummary) Summary(context.Context, Scope) (*statsapi.Summary, error) { return f.s, nil }

func scrapeResourceScenario(t *testing.T) metricstest.Families {
	now := metav1.NewTime(t0)
	cpu := &statsapi.CPUStats{Time: now, UsageCoreNanoSeconds: u64(2e9)}
	mem := &statsapi.MemoryStats{Time: now, WorkingSetBytes: u64(4 << 20)}
	s := &statsapi.Summary{
		Node: statsapi.NodeStats{NodeName: "n1", CPU: cpu, Memory: mem, Swap: &statsapi.SwapStats{Time: now, SwapUsageBytes: u64(1 << 20)}},
		Pods: []statsapi.PodStats{{PodRef: statsapi.PodReference{Name: "web", Namespace: "ns", UID: "u1"}, CPU: cpu, Memory: mem,
			Containers: []statsapi.ContainerStats{{Name: "app", StartTime: now, CPU: cpu, Memory: mem}}}},
	}
	return scrapeRegistry(t, NewResourceRegistry(fixedSummary{s}))
}

// everythingCgroup emits one cgroup with every reading cadvisor can have
// (filesystems are the root cgroup's alone, but nothing in emitCgroup
// depends on that).
type everythingCgroup struct{ compbase.BaseStableCollector }

func (*everythingCgroup) DescribeWithStability(ch chan<- *compbase.Desc) {
	for _, d := range cadvisorDescs {
		ch <- d
	}
}

func (*everythingCgroup) CollectWithStability(ch chan<- compbase.Metric) {
	pids, pidsMax := uint64(7), uint64(100)
	psi := &cgroups.PSI{Some: cgroups.PSIData{Total: 3}, Full: &cgroups.PSIData{Total: 1}}
	dev := []deviceIO{{device: "/dev/sda", major: 8, stats: map[string]uint64{"Read": 4096, "Write": 8192}}}
	emitCgroup(ch, cgroupEntry{
		labels: []string{"", "/kubepods/podq", "", "", "ns", "quota"},
		stats: cgroups.Stats{Time: t0,
			CPU:     &cgroups.CPU{Usage: 1e9, User: 6e8, System: 4e8, Periods: 10, ThrottledPeriods: 2, ThrottledTime: 5e7, Quota: 50000, Period: 100000, Shares: 512},
			Memory:  &cgroups.Memory{Usage: 100, MaxUsage: 200, WorkingSet: 80, RSS: 50, Cache: 20, MappedFile: 5, HasSwap: true, Swap: 1, Failcnt: 1, Limit: 1000, EventsMax: 1, PageFaults: 9},
			Pids:    &pids,
			PidsMax: &pidsMax,
			PSI:     cgroups.Pressure{CPU: psi, Memory: psi, IO: psi}},
		start: t0.Add(-time.Minute),
		net:   []Interface{{Name: "eth0", RxBytes: 1, RxPackets: 1, TxBytes: 2, TxPackets: 2}},
		io:    blockIO{bytes: dev, ops: dev},
		procs: &ProcessStats{Processes: 1, FileDescriptors: 3, Sockets: 1, Ulimits: []Ulimit{{Name: "max_open_files", Soft: 1024}}},
		fs:    []fsUsage{{device: "/dev/sda1", info: FsInfo{Capacity: 100, Used: 40, Inodes: 10, InodesFree: 5}}},
	})
}

func scrapeCadvisorScenario(t *testing.T) metricstest.Families {
	f := newFixture(t)
	fam := scrapeRegistry(t, NewCadvisorRegistry(f.p))
	r := compbase.NewKubeRegistry()
	r.CustomMustRegister(&everythingCgroup{})
	for name, mf := range scrapeRegistry(t, r) {
		if fam[name] == nil {
			fam[name] = mf
		} else {
			fam[name].Metric = append(fam[name].Metric, mf.Metric...)
		}
	}
	return fam
}
