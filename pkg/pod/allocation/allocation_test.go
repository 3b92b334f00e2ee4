package allocation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func pod(uid, cpu, mem string) *v1.Pod {
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid, Namespace: "ns"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}}}}}
}

func node(cpu, mem string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem), v1.ResourcePods: resource.MustParse("10")}}}
}

func TestDecide(t *testing.T) {
	n := node("2", "4Gi")
	other := pod("other", "1", "2Gi")
	for _, tc := range []struct {
		name          string
		desired       *v1.Pod
		allocated     *v1.Pod
		allocate      bool
		reason, match string
	}{
		{"no change", pod("a", "500m", "1Gi"), pod("a", "500m", "1Gi"), false, "", ""},
		{"fits", pod("a", "1", "1Gi"), pod("a", "500m", "1Gi"), true, "", ""},
		{"more than the node has", pod("a", "500m", "5Gi"), pod("a", "500m", "1Gi"), false, v1.PodReasonInfeasible, "Node didn't have enough capacity: memory, requested: 5368709120, capacity: 4294967296"},
		{"more cpu than the node has", pod("a", "3", "1Gi"), pod("a", "500m", "1Gi"), false, v1.PodReasonInfeasible, "Node didn't have enough capacity: cpu, requested: 3000, capacity: 2000"},
		{"resize to cpu 1e18 (attack: wraps around in the CFS quota)", pod("a", "1e18", "1Gi"), pod("a", "500m", "1Gi"), false, v1.PodReasonInfeasible, "more than a cgroup can hold"},
		{"resize to memory 1e30", pod("a", "500m", "1e30"), pod("a", "500m", "1Gi"), false, v1.PodReasonInfeasible, "memory is 1e30"},
		{"not beside the others now", pod("a", "1500m", "1Gi"), pod("a", "500m", "1Gi"), false, v1.PodReasonDeferred, "Node didn't have enough resource: cpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.desired, tc.allocated, []*v1.Pod{other}, n, false)
			if d.Allocate != tc.allocate || d.PendingReason != tc.reason || !strings.Contains(d.PendingMessage, tc.match) || d.Preempt != nil {
				t.Errorf("got %+v", d)
			}
		})
	}

	// A critical pod's resize that needs room is allocated with what to
	// preempt, as its admission would be; with the scheduler owning
	// preemption for resizes, it is deferred like any other.
	critical := func(p *v1.Pod) *v1.Pod {
		p.Spec.Priority = ptr.To[int32](2000000000)
		return p
	}
	desired, allocated := critical(pod("a", "1500m", "1Gi")), critical(pod("a", "500m", "1Gi"))
	d := Decide(desired, allocated, []*v1.Pod{other}, n, false)
	if !d.Allocate || d.PendingReason != "" || len(d.Preempt) != 1 || d.Preempt[0].Resource != v1.ResourceCPU || d.Preempt[0].Amount != 500 {
		t.Errorf("critical resize needing 500m more: got %+v, want allocated, preempting cpu 500m", d)
	}
	d = Decide(desired, allocated, []*v1.Pod{other}, n, true)
	if d.Allocate || d.PendingReason != v1.PodReasonDeferred || !strings.Contains(d.PendingMessage, "Node didn't have enough resource: cpu") || d.Preempt != nil {
		t.Errorf("critical resize with InPlacePodVerticalScalingSchedulerPreemption: got %+v, want Deferred", d)
	}
	if d := Decide(critical(pod("a", "1", "1Gi")), allocated, []*v1.Pod{other}, n, false); !d.Allocate || d.Preempt != nil {
		t.Errorf("critical resize that fits: got %+v, want allocated, preempting nothing", d)
	}
}

func TestManagerKeepsAllocationsAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	m, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := pod("a", "500m", "1Gi")
	if err := m.Admitted(p); err != nil {
		t.Fatal(err)
	}
	resized := pod("a", "1", "2Gi")
	if got := m.Allocated(resized); got == resized || got.Spec.Containers[0].Resources.Limits.Cpu().String() != "500m" {
		t.Fatalf("before allocating, the runtime must run the old allocation: %v", got.Spec.Containers[0].Resources)
	}
	if err := m.Allocate(resized); err != nil {
		t.Fatal(err)
	}
	if err := m.SetActuated("a", "c", resized.Spec.Containers[0].Resources); err != nil {
		t.Fatal(err)
	}
	// A restarted kubelet reads both back; admission does not overwrite
	// the allocation with the spec it sees.
	m2, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := m2.Admitted(p); err != nil {
		t.Fatal(err)
	}
	if got := m2.Allocated(p); got.Spec.Containers[0].Resources.Limits.Memory().String() != "2Gi" {
		t.Errorf("allocation lost across a restart: %v", got.Spec.Containers[0].Resources)
	}
	if a, ok := m2.Actuated("a", "c"); !ok || a.Limits.Cpu().String() != "1" {
		t.Errorf("actuation lost across a restart: %v %v", a, ok)
	}
	if err := m2.RemoveOrphans(func(types.UID) bool { return false }); err != nil {
		t.Fatal(err)
	}
	m3, _ := New(dir)
	if _, ok := m3.Actuated("a", "c"); ok {
		t.Error("an orphan's actuation survived")
	}
	if _, err := OpenStore(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("a missing checkpoint is a fresh start: %v", err)
	}
}

func TestCompletionMessage(t *testing.T) {
	got := CompletionMessage(pod("a", "1", "1Gi"))
	want := `Pod resize completed: {"containers":[{"name":"c","resources":{"limits":{"cpu":"1","memory":"1Gi"},"requests":{"cpu":"1","memory":"1Gi"}}}]}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// Upstream's checkpoints in the same root directory are left as they are:
// the upstream kubelet panics on a file it cannot verify, so a takeover
// back to it would fail (TestTakeoverFromUpstreamAndBack caught this).
func TestCheckpointsLeaveUpstreamFilesAlone(t *testing.T) {
	dir := t.TempDir()
	upstream := map[string]string{
		"allocated_pods_state": `{"data":{},"checksum":1234}`,
		"actuated_pods_state":  `{"data":{},"checksum":5678}`,
	}
	for f, body := range upstream {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	m, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := pod("a", "500m", "1Gi")
	if err := m.Admitted(p); err != nil {
		t.Fatal(err)
	}
	if err := m.SetActuated("a", "c", p.Spec.Containers[0].Resources); err != nil {
		t.Fatal(err)
	}
	for f, body := range upstream {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || string(b) != body {
			t.Errorf("upstream's %s changed: %q, %v", f, b, err)
		}
	}
	for _, f := range []string{AllocatedFile, ActuatedFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("our checkpoint %s: %v", f, err)
		}
	}
}
