package main

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// The start-up figures are read after the watch has seen the node Ready,
// not at the moment the driver's own GET does: a node created Ready at once
// has both figures once wait returns.
func TestNodeStartupWaitsForTheWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := fake.NewSimpleClientset()
	start := time.Now()
	ns, err := watchNodeStartup(ctx, cs, "n1")
	if err != nil {
		t.Fatal(err)
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}}}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns.wait(ctx, 10*time.Second)
	reg, ready := ns.since(start)
	if math.IsNaN(reg) || math.IsNaN(ready) || reg > ready {
		t.Errorf("registered %v, ready %v", reg, ready)
	}
	// A watch that never sees Ready (a clientset of its own: the fake
	// ignores field selectors): wait returns at its limit.
	other, err := watchNodeStartup(ctx, fake.NewSimpleClientset(), "n2")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	other.wait(ctx, 200*time.Millisecond)
	if d := time.Since(t0); d < 200*time.Millisecond || d > 5*time.Second {
		t.Errorf("wait without Ready returned after %v", d)
	}
	if reg, _ := other.since(start); !math.IsNaN(reg) {
		t.Errorf("n2 registered %v without any event", reg)
	}
}

func TestSecondsSince(t *testing.T) {
	start := time.Unix(100, 0)
	if got := secondsSince(start, time.Unix(101, 500_000_000)); got != 1.5 {
		t.Errorf("secondsSince = %v, want 1.5", got)
	}
	if got := secondsSince(start, time.Time{}); !math.IsNaN(got) {
		t.Errorf("secondsSince(unset) = %v, want NaN", got)
	}
}

// The test binary itself is an ELF file: its loaded image is positive and
// smaller than the file, which also holds symbols and DWARF.
func TestLoadedImageMB(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mb, err := loadedImageMB(exe)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	if mb <= 0 || mb*1e6 >= float64(fi.Size()) {
		t.Errorf("loaded image %.1f MB of a %d-byte file", mb, fi.Size())
	}
	if _, err := loadedImageMB("/proc/self/status"); err == nil {
		t.Error("a text file has no loaded image")
	}
}

// The runtime calls per pod: a reading before and after each window gives
// the calls per pod by operation and in all; the table lists those either
// kubelet made, with the total first.
func TestRuntimeOpsTable(t *testing.T) {
	b := &bench{res: results{}, opt: options{batchSmall: 2, batchLarge: 4, streamN: 3, streamEvery: time.Second}}
	before := map[string]float64{"run_podsandbox": 10, "container_status": 5, "version": 1}
	b.recordRuntimeOps("ours", "batch-large", before, map[string]float64{"run_podsandbox": 14, "container_status": 13, "version": 1}, 4)
	b.recordRuntimeOps("upstream", "batch-large", before, map[string]float64{"run_podsandbox": 14, "container_status": 25, "version": 1}, 4)
	b.recordRuntimeOps("ours", "stream", nil, map[string]float64{"run_podsandbox": 3}, 3)
	got := b.runtimeOpsTable()
	for _, want := range []string{
		"| batch of 4 | all | 3.00 | 6.00 | 0.50 |",
		"|  | container_status | 2.00 | 5.00 | 0.40 |",
		"|  | run_podsandbox | 1.00 | 1.00 | 1.00 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "version") {
		t.Errorf("an operation no kubelet made in the window is listed:\n%s", got)
	}
	if strings.Contains(got, "stream of") || strings.Contains(got, "batch of 2") {
		t.Errorf("a workload without both readings is listed:\n%s", got)
	}
}

func TestExitTable(t *testing.T) {
	b := &bench{res: results{}}
	for _, r := range []struct{ ours, relist, up float64 }{{0.06, 0.50, 0.58}, {0.07, 0.60, 0.45}} {
		b.res.add("ours", "exit", "p50", r.ours)
		b.res.add(kindRelist, "exit", "p50", r.relist)
		b.res.add("upstream", "exit", "p50", r.up)
	}
	got := b.exitTable()
	// Paired per round: 0.06/0.50 = 0.12 and 0.07/0.60 = 0.117; 0.50/0.58 and 0.60/0.45.
	if want := "| p50 (s) | 0.07 [0.06–0.07] | 0.55 [0.50–0.60] | 0.52 [0.45–0.58] | 0.12 [0.12–0.12] | 1.10 [0.86–1.33] |"; !strings.Contains(got, want) {
		t.Errorf("missing %q in\n%s", want, got)
	}
	if strings.Contains(got, "p90") {
		t.Errorf("a figure with no readings is listed:\n%s", got)
	}
}

func TestVolumesPodAsksForTheToken(t *testing.T) {
	p := volumesPod("v")
	if p.Spec.AutomountServiceAccountToken == nil || !*p.Spec.AutomountServiceAccountToken {
		t.Error("the volumes pod does not automount its token")
	}
	if hasTokenVolume(p) {
		t.Error("a pod before admission has a token volume")
	}
	p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "kube-api-access", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}}})
	if !hasTokenVolume(p) {
		t.Error("the admitted pod's token volume is not found")
	}
}

// A watch the API server ends before the node is Ready is opened again from
// the last version it saw, so the figures are still taken.
func TestNodeStartupWatchesAgainWhenTheWatchEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := fake.NewSimpleClientset()
	first := watch.NewFake()
	second := watch.NewFake()
	var rvs []string
	watchers := []*watch.FakeWatcher{first, second}
	cs.PrependWatchReactor("nodes", func(a k8stesting.Action) (bool, watch.Interface, error) {
		rvs = append(rvs, a.(k8stesting.WatchActionImpl).WatchRestrictions.ResourceVersion)
		w := watchers[0]
		watchers = watchers[1:]
		return true, w, nil
	})
	start := time.Now()
	ns, err := watchNodeStartup(ctx, cs, "n1")
	if err != nil {
		t.Fatal(err)
	}
	first.Add(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "7"}})
	first.Stop()
	ready := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "8"}, Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}}}
	second.Modify(ready)
	ns.wait(ctx, 10*time.Second)
	reg, rdy := ns.since(start)
	if math.IsNaN(reg) || math.IsNaN(rdy) || reg > rdy {
		t.Errorf("registered %v, ready %v", reg, rdy)
	}
	if len(rvs) != 2 || rvs[1] != "7" {
		t.Errorf("watches from versions %q, want the second from 7", rvs)
	}
}
