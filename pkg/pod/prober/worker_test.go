package prober

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gokubelet/kubelet/pkg/pod/podstatus"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// script is a fake prober: each (container, kind) answers what it was told,
// and runs are counted.
type script struct {
	mu     sync.Mutex
	answer map[workerKey]outcome
	runs   map[workerKey]int
}

func newScript() *script {
	return &script{answer: map[workerKey]outcome{}, runs: map[workerKey]int{}}
}

func (s *script) set(name string, kind Kind, r Result, out string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answer[workerKey{name, kind}] = outcome{result: r, output: out}
}

func (s *script) count(name string, kind Kind) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[workerKey{name, kind}]
}

func (s *script) run(ctx context.Context, p *v1.Probe, t target) (outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := workerKey{t.container.Name, kindOfProbe(t.container, p)}
	s.runs[k]++
	o, ok := s.answer[k]
	if !ok {
		return outcome{}, fmt.Errorf("no answer scripted for %v", k)
	}
	return o, nil
}

func kindOfProbe(c *v1.Container, p *v1.Probe) Kind {
	switch p {
	case c.LivenessProbe:
		return Liveness
	case c.StartupProbe:
		return Startup
	}
	return Readiness
}

// bench is a manager whose workers are stepped by hand.
type bench struct {
	t   *testing.T
	m   *Manager
	clk *clocktesting.FakeClock
	rec *record.FakeRecorder
	s   *script
	pod *v1.Pod
	st  *container.PodStatus
}

func newBench(t *testing.T, pod *v1.Pod) *bench {
	b := &bench{t: t, clk: clocktesting.NewFakeClock(t0), rec: record.NewFakeRecorder(100), s: newScript(), pod: pod}
	b.m = NewManager(Options{Clock: b.clk, Recorder: b.rec})
	b.m.run = b.s.run
	b.m.start = func(*worker) {}
	b.st = &container.PodStatus{UID: pod.UID, IPs: []string{"10.0.0.5"}}
	return b
}

// runInstance makes id the newest, running instance of name, started now.
func (b *bench) runInstance(name, id string) {
	var keep []container.Status
	for _, c := range b.st.Containers {
		if c.Name != name {
			keep = append(keep, c)
		}
	}
	b.st.Containers = append(keep, container.Status{ID: id, Name: name, State: container.StateRunning, StartedAt: b.clk.Now(), CreatedAt: b.clk.Now()})
	b.m.UpdatePod(b.pod, b.st)
}

func (b *bench) exit(name string) {
	for i := range b.st.Containers {
		if b.st.Containers[i].Name == name {
			b.st.Containers[i].State = container.StateExited
		}
	}
	b.m.UpdatePod(b.pod, b.st)
}

// step runs one step of the worker and returns its wait.
func (b *bench) step(name string, kind Kind) time.Duration {
	b.t.Helper()
	b.m.mu.Lock()
	w := b.m.pods[b.pod.UID].workers[workerKey{name, kind}]
	b.m.mu.Unlock()
	if w == nil {
		b.t.Fatalf("no %v worker for %s", kind, name)
	}
	d, ok := w.step()
	if !ok {
		b.t.Fatalf("%v worker for %s ended", kind, name)
	}
	return d
}

func (b *bench) ready(name, id string) (bool, bool) {
	return b.m.Result(b.pod.UID)(podstatus.ReadinessProbe, name, "containerd://"+id)
}

func (b *bench) started(name, id string) (bool, bool) {
	return b.m.Result(b.pod.UID)(podstatus.StartupProbe, name, id)
}

func (b *bench) events() []string {
	var out []string
	for len(b.rec.Events) > 0 {
		out = append(out, <-b.rec.Events)
	}
	return out
}

func probe(period, delay, success, failure int32) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
		PeriodSeconds: period, InitialDelaySeconds: delay, SuccessThreshold: success, FailureThreshold: failure}
}

func podWith(c v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{Containers: []v1.Container{c}}}
}

func TestReadinessFalseUntilFirstSuccessAfterInitialDelay(t *testing.T) {
	b := newBench(t, podWith(v1.Container{Name: "app", ReadinessProbe: probe(5, 10, 0, 0)}))
	b.s.set("app", Readiness, Success, "")
	b.m.UpdatePod(b.pod, b.st)
	if d := b.step("app", Readiness); d != idle {
		t.Fatalf("no container yet: wait %v, want idle", d)
	}
	b.runInstance("app", "c1")
	if d := b.step("app", Readiness); d != 10*time.Second {
		t.Fatalf("within the initial delay: wait %v, want 10s", d)
	}
	if ok, known := b.ready("app", "c1"); ok || known {
		t.Fatalf("ready before any probe: %v %v", ok, known)
	}
	b.clk.Step(10 * time.Second)
	if d := b.step("app", Readiness); d != 5*time.Second {
		t.Fatalf("after a probe: wait %v, want the 5s period", d)
	}
	if ok, known := b.ready("app", "c1"); !ok || !known {
		t.Fatalf("not ready after a success: %v %v", ok, known)
	}
	if n := b.s.count("app", Readiness); n != 1 {
		t.Fatalf("%d probes", n)
	}
	// The container exits: not ready.
	b.exit("app")
	b.step("app", Readiness)
	if ok, known := b.ready("app", "c1"); ok || !known {
		t.Fatalf("ready after exit: %v %v", ok, known)
	}
	// A new instance starts from scratch.
	b.runInstance("app", "c2")
	if ok, known := b.ready("app", "c2"); ok || known {
		t.Fatalf("new instance inherits readiness: %v %v", ok, known)
	}
}

func TestReadinessThresholds(t *testing.T) {
	b := newBench(t, podWith(v1.Container{Name: "app", ReadinessProbe: probe(1, 0, 2, 3)}))
	b.runInstance("app", "c1")
	seq := []struct {
		r     Result
		ready bool
	}{
		{Success, false}, // successThreshold 2
		{Success, true},
		{Failure, true},
		{Failure, true},
		{Failure, false}, // failureThreshold 3
		{Success, false},
		{Failure, false}, // a run is broken by a different result
		{Success, false},
		{Success, true},
	}
	for i, s := range seq {
		b.s.set("app", Readiness, s.r, "x")
		b.step("app", Readiness)
		if ok, _ := b.ready("app", "c1"); ok != s.ready {
			t.Fatalf("probe %d (%v): ready %v, want %v", i, s.r, ok, s.ready)
		}
		b.clk.Step(time.Second)
	}
}

func TestLivenessFailsAtThresholdThenHoldsUntilANewInstance(t *testing.T) {
	b := newBench(t, podWith(v1.Container{Name: "app", LivenessProbe: probe(2, 0, 0, 3)}))
	b.runInstance("app", "c1")
	b.s.set("app", Liveness, Failure, "cat: /tmp/healthy: No such file or directory")
	for i := 1; i <= 3; i++ {
		if failed, _ := b.m.Liveness(b.pod.UID, "app", "c1"); failed {
			t.Fatalf("failed after %d failures", i-1)
		}
		d := b.step("app", Liveness)
		if i < 3 && d != 2*time.Second {
			t.Fatalf("wait %v", d)
		}
		if i == 3 && d != idle {
			t.Fatalf("after the verdict: wait %v, want idle", d)
		}
		b.clk.Step(2 * time.Second)
	}
	failed, msg := b.m.Liveness(b.pod.UID, "app", "containerd://c1")
	if !failed || msg != "Container app failed liveness probe" {
		t.Fatalf("Liveness = %v %q", failed, msg)
	}
	b.step("app", Liveness)
	if n := b.s.count("app", Liveness); n != 3 {
		t.Fatalf("probed %d times; on hold after the verdict", n)
	}
	// One event for three identical failures within a minute.
	evs := b.events()
	if len(evs) != 1 || evs[0] != "Warning Unhealthy Liveness probe failed: cat: /tmp/healthy: No such file or directory" {
		t.Fatalf("events %q", evs)
	}
	// The kubelet restarted it: fresh results, probing again, events again.
	b.runInstance("app", "c2")
	if failed, _ := b.m.Liveness(b.pod.UID, "app", "c2"); failed {
		t.Fatalf("new instance starts failed")
	}
	b.step("app", Liveness)
	if n := b.s.count("app", Liveness); n != 4 {
		t.Fatalf("new instance not probed: %d", n)
	}
	if evs := b.events(); len(evs) != 1 {
		t.Fatalf("new instance events %q", evs)
	}
}

func TestEventsRepeatAfterTheInterval(t *testing.T) {
	b := newBench(t, podWith(v1.Container{Name: "app", ReadinessProbe: probe(30, 0, 0, 0)}))
	b.runInstance("app", "c1")
	b.s.set("app", Readiness, Failure, "HTTP probe failed with statuscode: 503")
	for i := 0; i < 4; i++ {
		b.step("app", Readiness)
		b.clk.Step(30 * time.Second)
	}
	if evs := b.events(); len(evs) != 2 {
		t.Fatalf("4 failures over 2 minutes gave %d events: %q", len(evs), evs)
	}
	b.s.set("app", Readiness, Failure, "HTTP probe failed with statuscode: 500")
	b.step("app", Readiness)
	if evs := b.events(); len(evs) != 1 || !strings.HasSuffix(evs[0], "statuscode: 500") {
		t.Fatalf("a new message is told at once: %q", evs)
	}
}

func TestStartupGatesLivenessAndReadiness(t *testing.T) {
	b := newBench(t, podWith(v1.Container{Name: "app", StartupProbe: probe(1, 0, 0, 30), LivenessProbe: probe(1, 0, 0, 1), ReadinessProbe: probe(1, 0, 0, 0)}))
	b.runInstance("app", "c1")
	b.s.set("app", Startup, Failure, "not yet")
	b.s.set("app", Liveness, Failure, "would kill")
	b.s.set("app", Readiness, Success, "")
	for i := 0; i < 3; i++ {
		b.step("app", Startup)
		if d := b.step("app", Liveness); d != idle {
			t.Fatalf("liveness not gated: %v", d)
		}
		if d := b.step("app", Readiness); d != idle {
			t.Fatalf("readiness not gated: %v", d)
		}
		b.clk.Step(time.Second)
	}
	if b.s.count("app", Liveness)+b.s.count("app", Readiness) != 0 {
		t.Fatalf("gated probes ran")
	}
	if ok, known := b.started("app", "c1"); ok || known {
		t.Fatalf("started before success: %v %v", ok, known)
	}
	if ok, _ := b.ready("app", "c1"); ok {
		t.Fatalf("ready before started")
	}
	b.s.set("app", Startup, Success, "")
	if d := b.step("app", Startup); d != time.Second {
		t.Fatalf("wait %v", d)
	}
	if ok, _ := b.started("app", "c1"); !ok {
		t.Fatalf("not started after success")
	}
	if d := b.step("app", Startup); d != idle {
		t.Fatalf("startup probes on after success: %v", d)
	}
	b.step("app", Readiness)
	b.step("app", Liveness)
	if ok, _ := b.ready("app", "c1"); !ok {
		t.Fatalf("not ready once started")
	}
	if failed, _ := b.m.Liveness(b.pod.UID, "app", "c1"); !failed {
		t.Fatalf("liveness not probed once started")
	}
}

func TestStartupFailureKills(t *testing.T) {
	b := newBench(t, podWith(v1.Container{Name: "app", StartupProbe: probe(1, 0, 0, 2)}))
	b.runInstance("app", "c1")
	b.s.set("app", Startup, Failure, "no")
	b.step("app", Startup)
	b.clk.Step(time.Second)
	if d := b.step("app", Startup); d != idle {
		t.Fatalf("wait %v", d)
	}
	failed, msg := b.m.Liveness(b.pod.UID, "app", "c1")
	if !failed || msg != "Container app failed startup probe" {
		t.Fatalf("Liveness = %v %q", failed, msg)
	}
	if ok, known := b.started("app", "c1"); ok || !known {
		t.Fatalf("started %v %v", ok, known)
	}
}

func TestProbeErrorsDoNotCount(t *testing.T) {
	b := newBench(t, podWith(v1.Container{Name: "app", LivenessProbe: probe(1, 0, 0, 1)}))
	b.runInstance("app", "c1")
	// Nothing scripted: the fake errors.
	for i := 0; i < 3; i++ {
		b.step("app", Liveness)
		b.clk.Step(time.Second)
	}
	if failed, _ := b.m.Liveness(b.pod.UID, "app", "c1"); failed {
		t.Fatalf("errors counted as failures")
	}
	if evs := b.events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning Unhealthy Liveness probe errored: ") {
		t.Fatalf("events %q", evs)
	}
}

func TestDeletionStopsLivenessAndStartupKeepsReadiness(t *testing.T) {
	b := newBench(t, podWith(v1.Container{Name: "app", StartupProbe: probe(1, 0, 0, 3), LivenessProbe: probe(1, 0, 0, 1), ReadinessProbe: probe(1, 0, 0, 0)}))
	b.runInstance("app", "c1")
	now := metav1.NewTime(b.clk.Now())
	b.pod = b.pod.DeepCopy()
	b.pod.DeletionTimestamp = &now
	b.m.UpdatePod(b.pod, b.st)
	b.m.mu.Lock()
	n := len(b.m.pods[b.pod.UID].workers)
	b.m.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d workers left; only readiness should run", n)
	}
	if ok, _ := b.started("app", "c1"); !ok {
		t.Fatalf("a deleted pod's container counts as started")
	}
	b.s.set("app", Readiness, Success, "")
	b.step("app", Readiness)
	if ok, _ := b.ready("app", "c1"); !ok {
		t.Fatalf("readiness stopped")
	}
}

func TestRemovePodForgets(t *testing.T) {
	b := newBench(t, podWith(v1.Container{Name: "app", ReadinessProbe: probe(1, 0, 0, 0)}))
	b.runInstance("app", "c1")
	b.s.set("app", Readiness, Success, "")
	b.step("app", Readiness)
	b.m.mu.Lock()
	w := b.m.pods[b.pod.UID].workers[workerKey{"app", Readiness}]
	b.m.mu.Unlock()
	b.m.RemovePod(b.pod.UID)
	if _, known := b.ready("app", "c1"); known {
		t.Fatalf("result kept after RemovePod")
	}
	if _, ok := w.step(); ok {
		t.Fatalf("worker goes on after RemovePod")
	}
}

// A restarted kubelet meets a running container its last status reported
// ready and started: it stays so until the probes say otherwise (no flap),
// while a status about another instance seeds nothing.
func TestRestartKeepsReportedReadiness(t *testing.T) {
	c := v1.Container{Name: "app", ReadinessProbe: probe(1, 0, 0, 2), StartupProbe: probe(1, 0, 0, 0)}
	pod := podWith(c)
	started := true
	pod.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "app", ContainerID: "containerd://c1", Ready: true, Started: &started,
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
	b := newBench(t, pod)
	b.st.Containers = []container.Status{{ID: "c1", Name: "app", State: container.StateRunning, StartedAt: t0, CreatedAt: t0}}
	b.m.UpdatePod(b.pod, b.st)
	if ok, known := b.ready("app", "c1"); !ok || !known {
		t.Fatalf("reported ready before the restart, not ready right after it: %v %v", ok, known)
	}
	if ok, known := b.started("app", "c1"); !ok || !known {
		t.Fatalf("reported started before the restart, not started right after it: %v %v", ok, known)
	}
	// The probes go on: the first step does not reset the result.
	b.s.set("app", Readiness, Failure, "down")
	b.step("app", Readiness)
	if ok, _ := b.ready("app", "c1"); !ok {
		t.Fatal("one failure below failureThreshold 2 made it unready")
	}
	b.step("app", Readiness)
	if ok, known := b.ready("app", "c1"); ok || !known {
		t.Fatalf("failureThreshold reached, still ready: %v %v", ok, known)
	}

	// A status about an older instance seeds nothing.
	other := podWith(c)
	other.UID = "uid-2"
	other.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "app", ContainerID: "containerd://old", Ready: true, Started: &started,
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
	b2 := newBench(t, other)
	b2.st.Containers = []container.Status{{ID: "new", Name: "app", State: container.StateRunning, StartedAt: t0, CreatedAt: t0}}
	b2.m.UpdatePod(b2.pod, b2.st)
	if _, known := b2.ready("app", "new"); known {
		t.Error("a new instance inherited the old one's readiness")
	}
}
