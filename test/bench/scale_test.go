package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/gokubelet/kubelet/pkg/config/virtualnodes"
)

const requestMetrics = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 1000
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 990
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 10
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 7
apiserver_request_total{code="200",component="",dry_run="",group="",resource="",scope="",subresource="/healthz",verb="GET",version=""} 3
apiserver_request_duration_seconds_bucket{verb="PATCH",le="0.1"} 5
`

func TestRequestCounts(t *testing.T) {
	got := RequestCounts(requestMetrics)
	want := map[string]float64{"POST pods": 1000, "PATCH pods/status": 1000, "PUT leases": 7, "GET (non-resource)": 3}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}

func TestDiffAndFormatBreakdown(t *testing.T) {
	before := map[string]float64{"POST pods": 10, "PATCH pods/status": 5, "PUT leases": 7}
	after := map[string]float64{"POST pods": 1010, "PATCH pods/status": 2005, "PUT leases": 9, "GET pods": 1005}
	d := DiffCounts(before, after)
	if d["PATCH pods/status"] != 2000 || d["GET pods"] != 1005 || d["PUT leases"] != 2 {
		t.Fatalf("diff = %v", d)
	}
	s := FormatBreakdown(d, 1000, []string{"POST pods"})
	// Largest first; below 0.01 per pod (2 leases) left out; the excluded
	// key absent.
	if s != "PATCH pods/status 2.00, GET pods 1.00" {
		t.Errorf("breakdown = %q", s)
	}
	if FormatBreakdown(map[string]float64{"PUT leases": 1}, 1000, nil) != "none above 0.01" {
		t.Error("empty breakdown")
	}
}

func TestRunningPatchMakesACompleteStatus(t *testing.T) {
	pod := benchPod("p-1")
	pod.Spec.NodeName = "scale-floor"
	pod.UID = "uid-1"
	pod.Status = v1.PodStatus{Phase: v1.PodPending}
	patch, err := runningPatch(pod, "192.0.2.2", "10.100.0.1", time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	if why := incompleteStatus(pod, "scale-floor"); why == "" {
		t.Fatal("a Pending pod counted as complete")
	}
	orig, _ := json.Marshal(pod)
	out, err := strategicpatch.StrategicMergePatch(orig, patch, v1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	var got v1.Pod
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if why := incompleteStatus(&got, "scale-floor"); why != "" {
		t.Errorf("patched pod incomplete: %s (%+v)", why, got.Status)
	}
	if why := incompleteStatus(&got, "other"); why == "" {
		t.Error("a pod of another node counted")
	}
	if !strings.Contains(string(patch), `"uid":"uid-1"`) {
		t.Errorf("no UID precondition in %s", patch)
	}
}

func TestIncompleteStatus(t *testing.T) {
	running := func() *v1.Pod {
		p := benchPod("p")
		p.Spec.NodeName = "n"
		p.Status = v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.1",
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "sleep", Ready: true,
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.Now()}}}}}
		return p
	}
	if why := incompleteStatus(running(), "n"); why != "" {
		t.Fatalf("complete pod: %s", why)
	}
	for name, mut := range map[string]func(p *v1.Pod){
		"pending":   func(p *v1.Pod) { p.Status.Phase = v1.PodPending },
		"no ip":     func(p *v1.Pod) { p.Status.PodIP = "" },
		"not ready": func(p *v1.Pod) { p.Status.ContainerStatuses[0].Ready = false },
		"waiting": func(p *v1.Pod) {
			p.Status.ContainerStatuses[0].State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}
		},
		"no status":      func(p *v1.Pod) { p.Status.ContainerStatuses = nil },
		"ready false":    func(p *v1.Pod) { p.Status.Conditions[0].Status = v1.ConditionFalse },
		"no conditions":  func(p *v1.Pod) { p.Status.Conditions = nil },
		"another node's": func(p *v1.Pod) { p.Spec.NodeName = "m" },
	} {
		p := running()
		mut(p)
		if why := incompleteStatus(p, "n"); why == "" {
			t.Errorf("%s: counted as complete", name)
		}
	}
}

func TestSections(t *testing.T) {
	scale := "<!-- scale:begin -->\n## Scale\n\nold\n<!-- scale:end -->\n"
	churn := "<!-- churn:begin -->\n## Churn\n<!-- churn:end -->\n"
	doc := withSection(withSection("# Benchmarks\n\nmain table\n", "churn", churn), "scale", scale)
	if sectionOf(doc, "scale") != scale || sectionOf(doc, "churn") != churn {
		t.Fatalf("sections not found in %q", doc)
	}
	// The main mode rewrites everything else and keeps both.
	doc2 := keepSections("# Benchmarks\n\nnew main table\n", doc)
	if !strings.Contains(doc2, "new main table") || strings.Contains(doc2, "\nmain table") ||
		sectionOf(doc2, "scale") != scale || sectionOf(doc2, "churn") != churn {
		t.Errorf("keepSections: %q", doc2)
	}
	// The scale mode replaces only its own.
	newer := strings.Replace(scale, "old", "new", 1)
	doc3 := withSection(doc2, "scale", newer)
	if sectionOf(doc3, "scale") != newer || sectionOf(doc3, "churn") != churn || strings.Count(doc3, "## Scale") != 1 {
		t.Errorf("replacing: %q", doc3)
	}
}

func TestSumSamplesAndMachineBusy(t *testing.T) {
	m := `apiserver_request_duration_seconds_sum{component="apiserver",resource="pods",subresource="status",verb="PATCH",version="v1"} 1.5
apiserver_request_duration_seconds_sum{component="apiserver",resource="pods",subresource="",verb="PATCH",version="v1"} 7
apiserver_request_duration_seconds_sum{component="apiserver",resource="pods",subresource="status",verb="PUT",version="v1"} 9
apiserver_request_duration_seconds_sum{component="other",resource="pods",subresource="status",verb="PATCH",version="v1"} 0.5
apiserver_request_duration_seconds_count{component="apiserver",resource="pods",subresource="status",verb="PATCH",version="v1"} 10
`
	patch := map[string]string{"verb": "PATCH", "resource": "pods", "subresource": "status"}
	if got := SumSamples(m, "apiserver_request_duration_seconds_sum", patch); got != 2 {
		t.Errorf("sum = %v, want 2", got)
	}
	if got := SumSamples(m, "apiserver_request_duration_seconds_count", patch); got != 10 {
		t.Errorf("count = %v, want 10", got)
	}
	busy, err := ParseMachineBusy("cpu  100 5 50 1000 20 3 2 1 7 0\ncpu0 1 2 3 4 5 6 7 8\n")
	if err != nil || busy != 100+5+50+3+2+1 {
		t.Errorf("busy = %v %v, want 161", busy, err)
	}
	if _, err := ParseMachineBusy("intr 1 2 3\n"); err == nil {
		t.Error("malformed /proc/stat accepted")
	}
}

func TestScaleSizes(t *testing.T) {
	got := scaleSizes(scaleOptions{pods: 1000, rounds: 3, large: 10000, nodes: 100, podsPerNode: 100})
	want := []scaleSize{{1, 1000, 3, false}, {1, 10000, 1, true}, {100, 100, 1, true}}
	if len(got) != len(want) {
		t.Fatalf("sizes = %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("size %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if wl := got[0].wl(); wl != "scale-1000" {
		t.Errorf("one node's key %q: the 1000-pod rounds keep their key", wl)
	}
	if wl, n := got[2].wl(), got[2].pods(); wl != "scale-100x100" || n != 10000 {
		t.Errorf("several nodes: %q, %d pods", wl, n)
	}
	// 0 leaves a size out.
	for _, o := range []scaleOptions{
		{pods: 100, rounds: 1},
		{pods: 100, rounds: 1, nodes: 5},
		{pods: 100, rounds: 1, podsPerNode: 20},
	} {
		if got := scaleSizes(o); len(got) != 1 || got[0].goal {
			t.Errorf("%+v: sizes %+v", o, got)
		}
	}
}

func TestVirtualKubeletSitsOutSeveralNodes(t *testing.T) {
	s := &scaleBench{o: scaleOptions{kinds: scaleKinds}}
	one, many := scaleSize{nodes: 1, perNode: 10}, scaleSize{nodes: 5, perNode: 2}
	if got := strings.Join(s.kindsAt(one), ","); got != "floor,ours,kwok,vk" {
		t.Errorf("one node: %s", got)
	}
	if got := strings.Join(s.kindsAt(many), ","); got != "floor,ours,kwok" {
		t.Errorf("several nodes: %s", got)
	}
}

func TestNodeNamesAndSpread(t *testing.T) {
	if got := scaleNodeNames("ours", 1); len(got) != 1 || got[0] != "scale-ours" {
		t.Errorf("one node: %v", got)
	}
	names := scaleNodeNames("kwok", 100)
	if len(names) != 100 || names[0] != "scale-kwok-00" || names[99] != "scale-kwok-99" {
		t.Errorf("100 nodes: %v", names)
	}
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
	}
	if len(seen) != 100 {
		t.Errorf("names not distinct: %d", len(seen))
	}
	per := map[string]int{}
	for _, n := range spread(10000, names) {
		per[n]++
	}
	if len(per) != 100 {
		t.Fatalf("pods on %d nodes", len(per))
	}
	for n, c := range per {
		if c != 100 {
			t.Errorf("%s: %d pods, want 100", n, c)
		}
	}
}

// The file our kubelet gets at several nodes is one the product accepts:
// realNode false, every node a mock on a port of its own.
func TestOursConfigDecodes(t *testing.T) {
	nodes := scaleNodeNames("ours", 100)
	ports, err := freePorts(len(nodes))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d twice", p)
		}
		seen[p] = true
	}
	cfg, err := virtualnodes.Decode([]byte(oursConfig(nodes, ports, "kubeAPIQPS: 500", "podSync: {workers: 10}")), "")
	if err != nil {
		t.Fatalf("%v\n%s", err, oursConfig(nodes, ports, "", ""))
	}
	if cfg.RunsRealNode() || len(cfg.Nodes) != 100 || cfg.QPS() != 500 {
		t.Errorf("realNode %v, %d nodes, qps %v", cfg.RunsRealNode(), len(cfg.Nodes), cfg.QPS())
	}
	for i, n := range cfg.Nodes {
		if n.Name != nodes[i] || n.Provider != "mock" || int(n.Port) != ports[i] || n.PodSync.Workers != 10 {
			t.Errorf("node %d: %+v", i, n)
		}
	}
}

func TestMemoryFormulas(t *testing.T) {
	if got := PerPodKiB(110*1024, 100*1024, 1000); got != 10.24 {
		t.Errorf("per pod = %v, want 10.24 KiB", got)
	}
	if !math.IsNaN(PerPodKiB(1, 0, 0)) {
		t.Error("per pod without pods")
	}
	// 100 nodes at 160 MiB, one at 61: 99 more nodes added 99 MiB.
	if got := PerNodeMiB(160, 61, 100); got != 1 {
		t.Errorf("per node = %v, want 1", got)
	}
	if !math.IsNaN(PerNodeMiB(160, 61, 1)) || !math.IsNaN(PerNodeMiB(math.NaN(), 61, 100)) {
		t.Error("per node without a second node or a figure")
	}
}

func TestFloorCheck(t *testing.T) {
	if _, lo, ok := floorCheck([]float64{90, 80}, []float64{100, 100}); !ok || lo != 0.8 {
		t.Errorf("0.9 and 0.8: lowest %v ok %v", lo, ok)
	}
	if _, lo, ok := floorCheck([]float64{90, 79}, []float64{100, 100}); ok || lo != 0.79 {
		t.Errorf("0.79: lowest %v ok %v", lo, ok)
	}
	if _, lo, ok := floorCheck([]float64{90}, nil); ok || !math.IsNaN(lo) {
		t.Error("no floor passed")
	}
}

// The report at every size: the goal over the sizes it names, with the
// shortfall; no Virtual Kubelet column at several nodes; the memory table.
func TestScaleReport(t *testing.T) {
	o := scaleOptions{pods: 10, rounds: 2, large: 40, nodes: 4, podsPerNode: 5, kinds: scaleKinds, createWorkers: 10,
		vkVersion: "v1", kwokVersion: "v2"}
	s := &scaleBench{b: &bench{res: results{}}, o: o, notes: map[string]map[string][]string{}, breakdown: map[string]map[string]string{}}
	r := s.b.res
	for _, z := range scaleSizes(o) {
		for range z.rounds {
			for _, k := range s.kindsAt(z) {
				rate := map[string]float64{"floor": 100, "ours": 90, "kwok": 50, "vk": 5}[k]
				if k == "ours" && z.nodes > 1 {
					rate = 70
				}
				r.add(k, z.wl(), "rate", rate)
				r.add(k, z.wl(), "complete", float64(z.pods()))
				if k != "floor" {
					r.add(k, z.wl(), "rss_idle", 60+float64(z.nodes-1)*2)
					r.add(k, z.wl(), "mem_pod", 8)
				}
			}
		}
	}
	rep := s.report()
	for _, want := range []string{
		"**Goal** (ours at least 0.8× the floor's pods/s at each of these sizes, lowest round): **does not hold**: " +
			"40 pods on one node: ours 90.0 pods/s, floor 100, ours/floor 0.90; 4 nodes × 5 pods (20 pods): ours 70.0 pods/s, floor 100, ours/floor 0.70 (0.10 below 0.80: ours needs 14% more pods/s).",
		"### 4 nodes × 5 pods (20 pods)\n\n| figure | floor (driver PATCHes) | ours (mock) | KWOK v2 | ours/floor | ours/kwok |\n",
		"| RSS, 4 nodes Ready, no pods (MiB) | 66.0 | 66.0 | – (not run) |",
		"| **per virtual node** (MiB) | 2.00 | 2.00 | 60.0 (its one-node process) |",
		"| **per virtual pod**, 4 nodes × 5 pods (20 pods) (KiB) | 8.00 | 8.00 | – (not run) |",
		"4 of its processes",
	} {
		if !strings.Contains(rep, want) {
			t.Errorf("report lacks %q:\n%s", want, rep)
		}
	}
	_, several, _ := strings.Cut(rep, "### 4 nodes")
	several, _, _ = strings.Cut(several, "### Memory")
	if strings.Contains(several, "Virtual Kubelet") || strings.Contains(several, "ours/vk") {
		t.Errorf("Virtual Kubelet at several nodes:\n%s", several)
	}
	if !strings.Contains(rep, "| ours/floor | ours/kwok | ours/vk |") {
		t.Errorf("no Virtual Kubelet at one node:\n%s", rep)
	}
}
