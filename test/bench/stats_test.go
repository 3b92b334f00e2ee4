package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	for _, c := range []struct{ p, want float64 }{{50, 5}, {90, 9}, {99, 10}, {100, 10}, {1, 1}} {
		if got := Percentile(xs, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if xs[0] != 5 {
		t.Error("input modified")
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("empty input should be NaN")
	}
}

func TestMedianMinMaxRatio(t *testing.T) {
	if m := Median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median odd = %v", m)
	}
	if m := Median([]float64{4, 1, 2, 3, math.NaN()}); m != 2.5 {
		t.Errorf("median even = %v", m)
	}
	lo, hi := MinMax([]float64{3, math.NaN(), 1, 7})
	if lo != 1 || hi != 7 {
		t.Errorf("minmax = %v %v", lo, hi)
	}
	if !math.IsNaN(Ratio(1, 0)) || Ratio(3, 2) != 1.5 {
		t.Error("ratio")
	}
	r := PairedRatios([]float64{2, 4, 6}, []float64{1, 2})
	if len(r) != 2 || r[0] != 2 || r[1] != 2 {
		t.Errorf("paired = %v", r)
	}
	if s := FormatSpread([]float64{1, 2, 3}); s != "2.00 [1.00–3.00]" {
		t.Errorf("spread = %q", s)
	}
}

func TestParseProc(t *testing.T) {
	stat := "1234 (my (odd) cmd) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 12 0 555 0 0"
	cpu, err := ParseProcStatCPU(stat)
	if err != nil || cpu != 325 {
		t.Fatalf("cpu = %v, %v", cpu, err)
	}
	status := "Name:\tkubelet\nVmPeak:\t  900 kB\nVmHWM:\t   51234 kB\nVmRSS:\t   40000 kB\n"
	if v, err := ParseProcStatusKB(status, "VmHWM"); err != nil || v != 51234 {
		t.Fatalf("hwm = %v, %v", v, err)
	}
	if v, err := ParseProcStatusKB(status, "VmRSS"); err != nil || v != 40000 {
		t.Fatalf("rss = %v, %v", v, err)
	}
	if _, err := ParseProcStatusKB(status, "VmSwap"); err == nil {
		t.Fatal("missing key should fail")
	}
}

func TestSumDispatched(t *testing.T) {
	m := `# HELP apiserver_flowcontrol_dispatched_requests_total x
apiserver_flowcontrol_dispatched_requests_total{flow_schema="exempt",priority_level="exempt"} 311
apiserver_flowcontrol_dispatched_requests_total{flow_schema="system-node-high",priority_level="node-high"} 3
apiserver_flowcontrol_dispatched_requests_total{flow_schema="system-nodes",priority_level="system"} 17
`
	v, err := SumDispatched(m, NodeFlowSchemas)
	if err != nil || v != 20 {
		t.Fatalf("sum = %v, %v", v, err)
	}
	if _, err := SumDispatched("foo 1\n", NodeFlowSchemas); err == nil {
		t.Fatal("missing metric should fail")
	}
}

func TestParseKlogLine(t *testing.T) {
	loc := time.UTC
	ev, ok := ParseKlogLine(`I1122 16:05:53.159062   13198 syncloop.go:48] "Pod config update" node="vm" op="ADD" source="api" pods=["ns/a","ns/b"]`, 2026, loc)
	if !ok || ev.Msg != "Pod config update" || len(ev.Pods) != 2 || ev.Pods[1] != "ns/b" {
		t.Fatalf("add: %+v %v", ev, ok)
	}
	if want := time.Date(2026, 11, 22, 16, 5, 53, 159062000, loc); !ev.At.Equal(want) {
		t.Fatalf("time %v, want %v", ev.At, want)
	}
	if _, ok := ParseKlogLine(`I1122 16:05:53.183158   13198 syncloop.go:48] "Pod config update" node="vm" op="RECONCILE" source="api" pods=["ns/a"]`, 2026, loc); ok {
		t.Fatal("RECONCILE is not a startup step")
	}
	ev, ok = ParseKlogLine(`I1122 16:05:54.002939   13198 container_start.go:230] "Started container" node="vm" pod="ns/small-001" podUID="x" container="sleep"`, 2026, loc)
	if !ok || ev.Pods[0] != "ns/small-001" {
		t.Fatalf("started: %+v %v", ev, ok)
	}
	if _, ok := ParseKlogLine(`E1122 16:05:54.002939   13198 x.go:1] "Started container" pod="ns/a"`, 2026, loc); ok {
		t.Fatal("error lines are ignored")
	}
}

func TestChurnSectionIsKept(t *testing.T) {
	sec := churnBegin + "\n## Churn\nfigures\n" + churnEnd + "\n"
	doc := withChurnSection("# Benchmarks\n\ntable\n", sec)
	if churnSectionOf(doc) != sec {
		t.Fatalf("section not found in %q", doc)
	}
	newer := churnBegin + "\n## Churn\nnew figures\n" + churnEnd + "\n"
	doc2 := withChurnSection(doc, newer)
	if !strings.Contains(doc2, "new figures") || strings.Contains(doc2, "\nfigures") || !strings.HasPrefix(doc2, "# Benchmarks") {
		t.Errorf("replaced badly: %q", doc2)
	}
}

func TestSumByLabel(t *testing.T) {
	metrics := `# HELP kubelet_runtime_operations_total Cumulative number of runtime operations by operation type.
# TYPE kubelet_runtime_operations_total counter
kubelet_runtime_operations_total{operation_type="container_status"} 250
kubelet_runtime_operations_total{operation_type="run_podsandbox"} 100
kubelet_runtime_operations_total{operation_type="run_podsandbox",other="x"} 2
kubelet_runtime_operations_errors_total{operation_type="run_podsandbox"} 7
`
	got, err := SumByLabel(metrics, "kubelet_runtime_operations_total", "operation_type")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["container_status"] != 250 || got["run_podsandbox"] != 102 {
		t.Errorf("got %v", got)
	}
	if _, err := SumByLabel(metrics, "kubelet_nothing_total", "operation_type"); err == nil {
		t.Error("a missing counter is no error")
	}
	if _, err := SumByLabel(`kubelet_runtime_operations_total{operation_type="x"} NaNish`, "kubelet_runtime_operations_total", "operation_type"); err == nil {
		t.Error("a bad sample is no error")
	}
}
