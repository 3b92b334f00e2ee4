package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
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
