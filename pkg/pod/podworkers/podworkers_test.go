package podworkers

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// call is one handler invocation as the fake saw it.
type call struct {
	kind    string // sync, terminating, terminated
	uid     types.UID
	version string // pod.ResourceVersion, to tell which spec was synced
	grace   *int64
	removed bool
}

// fakeHandler records calls; gates let a test hold a call until released.
type fakeHandler struct {
	mu       sync.Mutex
	calls    []call
	events   chan call
	gate     map[string]chan struct{} // kind -> channel to receive from before returning
	terminal map[types.UID]bool
	syncErr  error
	// blockSyncUntilCancel makes SyncPod wait for its context to end.
	blockSyncUntilCancel bool
}

func newFake() *fakeHandler {
	return &fakeHandler{events: make(chan call, 100), gate: map[string]chan struct{}{}, terminal: map[types.UID]bool{}}
}

func (f *fakeHandler) record(c call) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	g := f.gate[c.kind]
	f.mu.Unlock()
	f.events <- c
	if g != nil {
		<-g
	}
}

func (f *fakeHandler) SyncPod(ctx context.Context, pod *v1.Pod) (bool, time.Duration, error) {
	f.record(call{kind: "sync", uid: pod.UID, version: pod.ResourceVersion})
	if f.blockSyncUntilCancel {
		<-ctx.Done()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.terminal[pod.UID], 0, f.syncErr
}

func (f *fakeHandler) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, running *container.RunningPod, grace *int64, statusFn func(*v1.PodStatus)) error {
	uid := types.UID("")
	if pod != nil {
		uid = pod.UID
	} else if running != nil {
		uid = running.UID
	}
	f.record(call{kind: "terminating", uid: uid, grace: grace})
	return nil
}

func (f *fakeHandler) SyncTerminatedPod(ctx context.Context, uid types.UID, pod *v1.Pod, removed bool) error {
	f.record(call{kind: "terminated", uid: uid, removed: removed})
	return nil
}

// next waits for the next handler call; a generous bound turns a hang into
// a failure rather than a stuck test.
func (f *fakeHandler) next(t *testing.T) call {
	t.Helper()
	select {
	case c := <-f.events:
		return c
	case <-time.After(10 * time.Second):
		t.Fatalf("no handler call arrived")
		return call{}
	}
}

// noCall asserts no further call is pending once the workers are idle.
func (f *fakeHandler) noCall(t *testing.T, w *Workers) {
	t.Helper()
	waitIdle(t, w)
	select {
	case c := <-f.events:
		t.Fatalf("unexpected handler call %+v", c)
	default:
	}
}

// waitIdle waits until no worker has work queued or running.
func waitIdle(t *testing.T, w *Workers) {
	t.Helper()
	eventually.True(t, "the workers idle", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, ps := range w.pods {
			if ps.working || (ps.dirty && !(ps.state == Syncing && !ps.started && w.blockedByNamesake(ps))) {
				return false
			}
		}
		return true
	})
}

func pod(uid, name, version string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: name, Namespace: "ns", ResourceVersion: version}}
}

func newWorkers(h Handler) (*Workers, *clocktesting.FakeClock, context.CancelFunc) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	w := New(h, Options{Resync: time.Minute, Clock: clk})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = w.Start(ctx); close(stopped) }()
	<-w.Ready()
	return w, clk, func() { cancel(); <-stopped }
}

func TestUpdatesArriveCoalescedLatestWins(t *testing.T) {
	f := newFake()
	release := make(chan struct{})
	f.gate["sync"] = release
	w, _, cancel := newWorkers(f)
	defer cancel()

	w.UpdatePod(Update{Type: UpdateSync, Pod: pod("a", "p", "1")})
	if c := f.next(t); c.version != "1" {
		t.Fatalf("first sync saw version %q", c.version)
	}
	// While the first sync runs, three updates arrive.
	for _, v := range []string{"2", "3", "4"} {
		w.UpdatePod(Update{Type: UpdateSync, Pod: pod("a", "p", v)})
	}
	release <- struct{}{}
	c := f.next(t)
	if c.kind != "sync" || c.version != "4" {
		t.Fatalf("second call = %+v, want a sync of version 4", c)
	}
	release <- struct{}{}
	f.noCall(t, w)
}

func TestKillIsNotOverwrittenBySync(t *testing.T) {
	f := newFake()
	release := make(chan struct{})
	f.gate["sync"] = release
	w, _, cancel := newWorkers(f)
	defer cancel()

	w.UpdatePod(Update{Type: UpdateSync, Pod: pod("a", "p", "1")})
	f.next(t)
	w.UpdatePod(Update{Type: UpdateKill, Pod: pod("a", "p", "2"), GracePeriod: ptr.To[int64](30)})
	w.UpdatePod(Update{Type: UpdateSync, Pod: pod("a", "p", "3")})
	// A later, longer grace period must not extend the kill.
	w.UpdatePod(Update{Type: UpdateKill, Pod: pod("a", "p", "4"), GracePeriod: ptr.To[int64](60)})
	close(release)

	c := f.next(t)
	if c.kind != "terminating" {
		t.Fatalf("after kill got %+v, want terminating", c)
	}
	if c.grace == nil || *c.grace != 30 {
		t.Fatalf("grace = %v, want 30", c.grace)
	}
	if c := f.next(t); c.kind != "terminated" || c.removed {
		t.Fatalf("got %+v, want terminated without removal", c)
	}
	if info, _ := w.Get("a"); info.State != Terminated {
		t.Fatalf("state = %v", info.State)
	}
	// A terminated pod never syncs again.
	w.UpdatePod(Update{Type: UpdateSync, Pod: pod("a", "p", "5")})
	f.noCall(t, w)
}

func TestKillCancelsInFlightSync(t *testing.T) {
	f := newFake()
	f.blockSyncUntilCancel = true
	w, _, cancel := newWorkers(f)
	defer cancel()

	w.UpdatePod(Update{Type: UpdateSync, Pod: pod("a", "p", "1")})
	f.next(t)
	w.UpdatePod(Update{Type: UpdateKill, Pod: pod("a", "p", "1")})
	if c := f.next(t); c.kind != "terminating" {
		t.Fatalf("got %+v, want terminating after the sync was cancelled", c)
	}
}

func TestTerminalPodStopsThenRemovalForgetsIt(t *testing.T) {
	f := newFake()
	f.terminal["a"] = true
	w, _, cancel := newWorkers(f)
	defer cancel()

	w.UpdatePod(Update{Type: UpdateSync, Pod: pod("a", "p", "1")})
	for _, want := range []string{"sync", "terminating", "terminated"} {
		if c := f.next(t); c.kind != want {
			t.Fatalf("got %+v, want %s", c, want)
		}
	}
	f.noCall(t, w)
	w.UpdatePod(Update{Type: UpdateKill, Pod: pod("a", "p", "1"), Remove: true})
	if c := f.next(t); c.kind != "terminated" || !c.removed {
		t.Fatalf("got %+v, want terminated with removal", c)
	}
	waitIdle(t, w)
	if _, ok := w.Get("a"); ok {
		t.Fatalf("removed pod still has a worker")
	}
}

func (f *fakeHandler) PodRestarting(uid types.UID) {
	f.record(call{kind: "restarting", uid: uid})
}

func TestPodBackUnderItsUIDRunsAgain(t *testing.T) {
	f := newFake()
	gate := make(chan struct{})
	f.gate["terminating"] = gate
	w, _, cancel := newWorkers(f)
	defer cancel()

	w.UpdatePod(Update{Type: UpdateSync, Pod: pod("a", "p", "1")})
	if c := f.next(t); c.kind != "sync" {
		t.Fatalf("got %+v, want sync", c)
	}
	// The manifest is removed, and written back while the pod stops.
	w.UpdatePod(Update{Type: UpdateKill, Pod: pod("a", "p", "1"), Remove: true})
	if c := f.next(t); c.kind != "terminating" {
		t.Fatalf("got %+v, want terminating", c)
	}
	w.UpdatePod(Update{Type: UpdateSync, Pod: pod("a", "p", "2")})
	close(gate)
	// Released without removing its runtime objects, then run again with
	// the spec it came back with.
	for _, want := range []call{{kind: "terminated", uid: "a"}, {kind: "restarting", uid: "a"}, {kind: "sync", uid: "a", version: "2"}} {
		if c := f.next(t); c.kind != want.kind || c.removed != want.removed || c.version != want.version {
			t.Fatalf("got %+v, want %+v", c, want)
		}
	}
	f.noCall(t, w)
	if pi, ok := w.Get("a"); !ok || pi.State != Syncing {
		t.Fatalf("pod a: %+v %v, want syncing", pi, ok)
	}

	// Removed again for good: stopped, removed and forgotten.
	w.UpdatePod(Update{Type: UpdateKill, Pod: pod("a", "p", "2"), Remove: true})
	for _, want := range []call{{kind: "terminating", uid: "a"}, {kind: "terminated", uid: "a", removed: true}} {
		if c := f.next(t); c.kind != want.kind || c.removed != want.removed {
			t.Fatalf("got %+v, want %+v", c, want)
		}
	}
	waitIdle(t, w)
	if _, ok := w.Get("a"); ok {
		t.Fatalf("removed pod still has a worker")
	}
}

func TestPodBackThenGoneAgainIsRemoved(t *testing.T) {
	f := newFake()
	gate := make(chan struct{})
	f.gate["terminating"] = gate
	w, _, cancel := newWorkers(f)
	defer cancel()

	w.UpdatePod(Update{Type: UpdateSync, Pod: pod("a", "p", "1")})
	f.next(t)
	w.UpdatePod(Update{Type: UpdateKill, Pod: pod("a", "p", "1"), Remove: true})
	f.next(t) // terminating, held
	w.UpdatePod(Update{Type: UpdateSync, Pod: pod("a", "p", "1")})
	w.UpdatePod(Update{Type: UpdateKill, Pod: pod("a", "p", "1"), Remove: true})
	close(gate)
	if c := f.next(t); c.kind != "terminated" || !c.removed {
		t.Fatalf("got %+v, want terminated with removal", c)
	}
	f.noCall(t, w)
	if _, ok := w.Get("a"); ok {
		t.Fatalf("removed pod still has a worker")
	}
}

func TestNamesakeWaitsForTermination(t *testing.T) {
	f := newFake()
	release := make(chan struct{})
	w, _, cancel := newWorkers(f)
	defer cancel()

	w.UpdatePod(Update{Type: UpdateSync, Pod: pod("old", "p", "1")})
	f.next(t)
	waitIdle(t, w)
	f.mu.Lock()
	f.gate["terminating"] = release
	f.mu.Unlock()
	w.UpdatePod(Update{Type: UpdateKill, Pod: pod("old", "p", "1"), Remove: true})
	if c := f.next(t); c.kind != "terminating" || c.uid != "old" {
		t.Fatalf("got %+v", c)
	}
	// The edited pod (same full name, new UID) must wait.
	w.UpdatePod(Update{Type: UpdateSync, Pod: pod("new", "p", "1")})
	eventually.True(t, "the new pod queued behind its terminating namesake", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		ps := w.pods["new"]
		return ps != nil && ps.dirty && !ps.started && w.blockedByNamesake(ps)
	})
	select {
	case c := <-f.events:
		t.Fatalf("call while the namesake terminates: %+v", c)
	default:
	}
	close(release)
	seenNewSync := false
	for i := 0; i < 2; i++ {
		c := f.next(t)
		if c.kind == "sync" && c.uid == "new" {
			seenNewSync = true
		}
	}
	if !seenNewSync {
		t.Fatalf("the new pod did not start after the old one terminated")
	}
}

func TestOrphanKillUsesRunningPod(t *testing.T) {
	f := newFake()
	w, _, cancel := newWorkers(f)
	defer cancel()
	w.UpdatePod(Update{Type: UpdateKill, RunningPod: &container.RunningPod{UID: "o", Name: "x", Namespace: "ns"}, Remove: true})
	if c := f.next(t); c.kind != "terminating" || c.uid != "o" {
		t.Fatalf("got %+v", c)
	}
	if c := f.next(t); c.kind != "terminated" || !c.removed {
		t.Fatalf("got %+v", c)
	}
}

func TestResyncTimerAndErrorRetry(t *testing.T) {
	f := newFake()
	f.syncErr = fmt.Errorf("boom")
	w, clk, cancel := newWorkers(f)
	defer cancel()
	w.UpdatePod(Update{Type: UpdateSync, Pod: pod("a", "p", "1")})
	f.next(t)
	waitIdle(t, w)
	// First retry after 1s.
	clk.Step(time.Second)
	if c := f.next(t); c.kind != "sync" {
		t.Fatalf("got %+v", c)
	}
	waitIdle(t, w)
	f.mu.Lock()
	f.syncErr = nil
	f.mu.Unlock()
	// Second retry after 2s, not 1s.
	clk.Step(time.Second)
	f.noCall(t, w)
	clk.Step(time.Second)
	f.next(t)
	waitIdle(t, w)
	// Healthy: next visit after the resync interval.
	clk.Step(59 * time.Second)
	f.noCall(t, w)
	clk.Step(time.Second)
	if c := f.next(t); c.kind != "sync" {
		t.Fatalf("got %+v", c)
	}
}

func TestNextDelay(t *testing.T) {
	const resync, maxB = time.Minute, 10 * time.Second
	tests := []struct {
		name     string
		state    State
		cleaned  bool
		failed   bool
		errCount int
		retry    time.Duration
		want     time.Duration
	}{
		{"healthy sync waits for resync", Syncing, false, false, 0, 0, resync},
		{"back-off expiry comes first", Syncing, false, false, 0, 20 * time.Second, 20 * time.Second},
		{"retry beyond resync is capped by resync", Syncing, false, false, 0, 5 * time.Minute, resync},
		{"first error", Syncing, false, true, 1, 0, time.Second},
		{"third error", Syncing, false, true, 3, 0, 4 * time.Second},
		{"many errors capped", Syncing, false, true, 40, 0, maxB},
		{"error with earlier retry", Syncing, false, true, 5, 3 * time.Second, 3 * time.Second},
		{"terminated and cleaned: never", Terminated, true, false, 0, 0, 0},
		{"terminated cleanup failed: retry", Terminated, false, true, 1, 0, time.Second},
	}
	for _, tt := range tests {
		if got := nextDelay(tt.state, tt.cleaned, tt.failed, tt.errCount, tt.retry, resync, maxB); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestGraceArithmetic(t *testing.T) {
	if g := minGrace(ptr.To[int64](30), ptr.To[int64](60)); *g != 30 {
		t.Errorf("minGrace kept %d, want 30", *g)
	}
	if g := minGrace(ptr.To[int64](30), ptr.To[int64](5)); *g != 5 {
		t.Errorf("minGrace kept %d, want 5", *g)
	}
	if g := minGrace(nil, nil); g != nil {
		t.Errorf("minGrace(nil,nil) = %d", *g)
	}
	now := time.Unix(100, 0)
	if g := remainingGrace(ptr.To[int64](30), now.Add(-10*time.Second), now); *g != 20 {
		t.Errorf("remaining = %d, want 20", *g)
	}
	if g := remainingGrace(ptr.To[int64](5), now.Add(-10*time.Second), now); *g != 0 {
		t.Errorf("remaining = %d, want 0", *g)
	}
	if g := remainingGrace(nil, now, now); g != nil {
		t.Errorf("remaining of nil = %d", *g)
	}
}

func TestStopWaitsForTheStepUnderWay(t *testing.T) {
	f := newFake()
	release := make(chan struct{})
	f.gate["sync"] = release
	w := New(f, Options{Resync: time.Minute, Clock: clocktesting.NewFakeClock(time.Unix(1000, 0))})
	// An update handed over before Start waits for it.
	w.UpdatePod(Update{Type: UpdateSync, Pod: pod("a", "p", "1")})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = w.Start(ctx); close(stopped) }()
	f.next(t)
	cancel() // shutdown: the step under way is not abandoned
	select {
	case <-stopped:
		t.Fatalf("Start returned while a sync was still running")
	case <-time.After(10 * time.Millisecond):
	}
	close(release)
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatalf("Start did not return after the sync finished")
	}
}
