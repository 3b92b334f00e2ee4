package pleg

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

func status(containers map[string]container.State, sandboxes map[string]container.SandboxState) *container.PodStatus {
	s := &container.PodStatus{UID: "u"}
	for id, st := range containers {
		s.Containers = append(s.Containers, container.Status{ID: id, State: st})
	}
	for id, st := range sandboxes {
		s.Sandboxes = append(s.Sandboxes, container.SandboxStatus{ID: id, State: st})
	}
	return s
}

func kinds(evs []Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, string(e.Type)+":"+e.ID)
	}
	sort.Strings(out)
	return out
}

func TestDiff(t *testing.T) {
	R, X, C, U := container.StateRunning, container.StateExited, container.StateCreated, container.StateUnknown
	ready, notReady := container.SandboxReady, container.SandboxNotReady
	tests := []struct {
		name     string
		old, cur *container.PodStatus
		want     []string
	}{
		{"nothing changed", status(map[string]container.State{"a": R}, nil), status(map[string]container.State{"a": R}, nil), nil},
		{"new running container", status(nil, nil), status(map[string]container.State{"a": R}, nil), []string{"ContainerStarted:a"}},
		{"pod appears", nil, status(map[string]container.State{"a": R}, map[string]container.SandboxState{"s": ready}), []string{"ContainerStarted:a", "SandboxChanged:s"}},
		{"created container is not news", status(nil, nil), status(map[string]container.State{"a": C}, nil), nil},
		{"created then started", status(map[string]container.State{"a": C}, nil), status(map[string]container.State{"a": R}, nil), []string{"ContainerStarted:a"}},
		{"running died", status(map[string]container.State{"a": R}, nil), status(map[string]container.State{"a": X}, nil), []string{"ContainerDied:a"}},
		{"died before first seen", status(nil, nil), status(map[string]container.State{"a": X}, nil), []string{"ContainerDied:a"}},
		{"exited removed", status(map[string]container.State{"a": X}, nil), status(nil, nil), []string{"ContainerRemoved:a"}},
		{"running vanished", status(map[string]container.State{"a": R}, nil), nil, []string{"ContainerDied:a", "ContainerRemoved:a"}},
		{"unknown state", status(map[string]container.State{"a": R}, nil), status(map[string]container.State{"a": U}, nil), []string{"ContainerChanged:a"}},
		{"sandbox not ready", status(nil, map[string]container.SandboxState{"s": ready}), status(nil, map[string]container.SandboxState{"s": notReady}), []string{"SandboxChanged:s"}},
		{"sandbox removed", status(nil, map[string]container.SandboxState{"s": notReady}), status(nil, nil), []string{"SandboxChanged:s"}},
	}
	for _, tt := range tests {
		got := kinds(Diff(tt.old, tt.cur))
		if len(got) != len(tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
			}
		}
	}
}

type fakeRuntime struct{ pods []*container.PodStatus }

func (f *fakeRuntime) Relist(context.Context) ([]*container.PodStatus, error) { return f.pods, nil }

func TestRelistEmitsAndObserveSuppresses(t *testing.T) {
	rt := &fakeRuntime{}
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	p := New(rt, time.Second, time.Second, 10, clk)
	ctx := context.Background()
	p.Relist(ctx)
	if len(p.events) != 0 {
		t.Fatalf("empty runtime produced events")
	}
	running := &container.PodStatus{UID: types.UID("u1"), Containers: []container.Status{{ID: "c1", State: container.StateRunning}}}
	rt.pods = []*container.PodStatus{running}
	p.Relist(ctx)
	if e := <-p.events; e.Type != ContainerStarted || e.UID != "u1" {
		t.Fatalf("got %+v", e)
	}
	// The kubelet itself saw c1 die and c2 start: the relist that follows
	// must not report it again.
	after := &container.PodStatus{UID: "u1", Containers: []container.Status{{ID: "c1", State: container.StateExited}, {ID: "c2", State: container.StateRunning}}}
	p.Observe(after)
	rt.pods = []*container.PodStatus{after}
	p.Relist(ctx)
	if len(p.events) != 0 {
		t.Fatalf("observed changes were reported again: %+v", <-p.events)
	}
	if err := p.Healthy(); err != nil {
		t.Fatalf("healthy: %v", err)
	}
	clk.Step(RelistThreshold + time.Second)
	if err := p.Healthy(); err == nil {
		t.Fatalf("stale PLEG reported healthy")
	}
}

func TestFullChannelDropsWithoutBlocking(t *testing.T) {
	rt := &fakeRuntime{}
	p := New(rt, time.Second, time.Second, 1, clocktesting.NewFakeClock(time.Unix(0, 0)))
	for i := 0; i < 3; i++ {
		rt.pods = append(rt.pods, &container.PodStatus{UID: types.UID(string(rune('a' + i))), Containers: []container.Status{{ID: string(rune('a' + i)), State: container.StateRunning}}})
	}
	done := make(chan struct{})
	go func() { p.Relist(context.Background()); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("relist blocked on a full channel")
	}
	if len(p.events) != 1 {
		t.Fatalf("channel holds %d events, want 1", len(p.events))
	}
}

func TestReconcile(t *testing.T) {
	R, C := container.StateRunning, container.StateCreated
	start := time.Unix(100, 0)
	before, after := start.Add(-time.Second), start.Add(time.Second)
	at := func(ts time.Time, uid types.UID, containers map[string]container.State) *container.PodStatus {
		s := status(containers, nil)
		s.UID, s.Timestamp = uid, ts
		return s
	}
	tests := []struct {
		name     string
		last     []*container.PodStatus
		relisted []*container.PodStatus
		// acting: pods the kubelet is acting on.
		acting []types.UID
		// want: the state of c in the record of each pod, "" for none.
		want   map[types.UID]container.State
		events []string
	}{
		{
			name:     "the kubelet read the pod after the relist began: its read stands, nothing reported",
			last:     []*container.PodStatus{at(after, "a", map[string]container.State{"c": R})},
			relisted: []*container.PodStatus{at(start, "a", map[string]container.State{"c": C})},
			want:     map[types.UID]container.State{"a": R},
		},
		{
			name:     "read before the relist began: the relist is newer and diffed",
			last:     []*container.PodStatus{at(before, "a", map[string]container.State{"c": C})},
			relisted: []*container.PodStatus{at(start, "a", map[string]container.State{"c": R})},
			want:     map[types.UID]container.State{"a": R},
			events:   []string{"ContainerStarted:c"},
		},
		{
			name:     "created after the listing: kept, not reported removed",
			last:     []*container.PodStatus{at(after, "a", map[string]container.State{"c": R})},
			relisted: nil,
			want:     map[types.UID]container.State{"a": R},
		},
		{
			name:     "removed by the kubelet after the listing: stays removed, not brought back",
			last:     []*container.PodStatus{at(after, "a", nil)},
			relisted: []*container.PodStatus{at(start, "a", map[string]container.State{"c": R})},
			want:     map[types.UID]container.State{"a": ""},
		},
		{
			name:     "a removal record older than the relist goes",
			last:     []*container.PodStatus{at(before, "a", nil)},
			relisted: nil,
			want:     map[types.UID]container.State{},
		},
		{
			name:     "gone since an older read: reported",
			last:     []*container.PodStatus{at(before, "a", map[string]container.State{"c": R})},
			relisted: nil,
			want:     map[types.UID]container.State{},
			events:   []string{"ContainerDied:c", "ContainerRemoved:c"},
		},
		{
			name:     "being acted on (its sandbox being made): its record stands, nothing reported",
			last:     []*container.PodStatus{at(before, "a", nil)},
			relisted: []*container.PodStatus{at(start, "a", map[string]container.State{"c": C})},
			acting:   []types.UID{"a"},
			want:     map[types.UID]container.State{"a": ""},
		},
		{
			name:     "being stopped: not reported gone either",
			last:     []*container.PodStatus{at(before, "a", map[string]container.State{"c": R})},
			relisted: nil,
			acting:   []types.UID{"a"},
			want:     map[types.UID]container.State{"a": R},
		},
		{
			name:     "acted on, never read: nothing recorded or reported until it is done",
			relisted: []*container.PodStatus{at(start, "a", map[string]container.State{"c": R})},
			acting:   []types.UID{"a"},
			want:     map[types.UID]container.State{},
		},
		{
			name:     "another pod's action holds nothing of this one",
			last:     []*container.PodStatus{at(before, "a", map[string]container.State{"c": C})},
			relisted: []*container.PodStatus{at(start, "a", map[string]container.State{"c": R})},
			acting:   []types.UID{"b"},
			want:     map[types.UID]container.State{"a": R},
			events:   []string{"ContainerStarted:c"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			last := map[types.UID]*container.PodStatus{}
			for _, s := range tt.last {
				last[s.UID] = s
			}
			acting := map[types.UID]int{}
			for _, uid := range tt.acting {
				acting[uid]++
			}
			next, events := reconcile(last, tt.relisted, start, acting)
			if got := kinds(events); strings.Join(got, ",") != strings.Join(tt.events, ",") {
				t.Errorf("events %v, want %v", got, tt.events)
			}
			if len(next) != len(tt.want) {
				t.Fatalf("record has %d pods, want %d", len(next), len(tt.want))
			}
			for uid, st := range tt.want {
				s := next[uid]
				if s == nil {
					t.Fatalf("pod %s not recorded", uid)
				}
				got := container.State("")
				if len(s.Containers) > 0 {
					got = s.Containers[0].State
				}
				if got != st {
					t.Errorf("pod %s: container %q, want %q", uid, got, st)
				}
			}
		})
	}
}

// TestActing: a relist during an action reports nothing for the pod; once
// done, a change the kubelet did not make is reported by the next relist.
func TestActing(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	rt := &fakeRuntime{}
	p := New(rt, time.Second, time.Second, 10, clk)
	ctx := context.Background()
	p.Relist(ctx)
	done := p.Acting("a")
	again := p.Acting("a") // a second action under way
	rt.pods = []*container.PodStatus{{UID: "a", Containers: []container.Status{{ID: "c", State: container.StateCreated}}}}
	clk.Step(time.Second)
	p.Relist(ctx)
	if len(p.events) != 0 {
		t.Fatalf("%d events while acting", len(p.events))
	}
	done()
	done() // once only
	clk.Step(time.Second)
	p.Relist(ctx)
	if len(p.events) != 0 {
		t.Fatalf("%d events while the second action is under way", len(p.events))
	}
	again()
	// The action ended without a read; the container the kubelet did not
	// report to itself is news.
	rt.pods[0].Containers[0].State = container.StateRunning
	clk.Step(time.Second)
	p.Relist(ctx)
	if got := kinds(drain(p.events)); strings.Join(got, ",") != "ContainerStarted:c" {
		t.Fatalf("events after the action %v, want ContainerStarted:c", got)
	}
}

func drain(ch chan Event) []Event {
	var out []Event
	for len(ch) > 0 {
		out = append(out, <-ch)
	}
	return out
}

func TestObserveKeepsTheNewerRead(t *testing.T) {
	p := New(&fakeRuntime{}, time.Second, time.Second, 10, clocktesting.NewFakeClock(time.Unix(0, 0)))
	newer := &container.PodStatus{UID: "a", Timestamp: time.Unix(10, 0), Containers: []container.Status{{ID: "c", State: container.StateExited}}}
	older := &container.PodStatus{UID: "a", Timestamp: time.Unix(5, 0), Containers: []container.Status{{ID: "c", State: container.StateRunning}}}
	p.Observe(newer)
	p.Observe(older)
	if got := p.Pods(); len(got) != 1 || got[0].Containers[0].State != container.StateExited {
		t.Errorf("an older read replaced a newer one: %+v", got)
	}
	// A pod read with nothing left is not listed.
	p.Observe(&container.PodStatus{UID: "a", Timestamp: time.Unix(11, 0)})
	if got := p.Pods(); len(got) != 0 {
		t.Errorf("a removed pod is listed: %+v", got)
	}
}

// A read without a time (the kubelet's own removal of a pod) counts as of
// now: it replaces what a relist recorded before it, and a relist running
// while the pod is removed does not bring it back.
func TestObserveUnstampedRemoval(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(100, 0))
	listed := []*container.PodStatus{{UID: "a", Timestamp: time.Unix(99, 0), Containers: []container.Status{{ID: "c", State: container.StateExited}}}}
	rt := &hookRuntime{pods: listed}
	p := New(rt, time.Second, time.Second, 10, clk)
	p.Relist(context.Background())
	clk.Step(time.Second)
	p.Observe(&container.PodStatus{UID: "a"})
	if got := p.Pods(); len(got) != 0 {
		t.Fatalf("a removed pod is still listed: %+v", got)
	}
	// The pod is back (someone else's) and listed; the kubelet removes it
	// while that relist is still running.
	p.Observe(&container.PodStatus{UID: "a", Timestamp: time.Unix(90, 0)}) // older: ignored
	clk.Step(time.Second)
	rt.during = func() {
		clk.Step(time.Millisecond)
		p.Observe(&container.PodStatus{UID: "a"})
	}
	p.Relist(context.Background())
	if got := p.Pods(); len(got) != 0 {
		t.Errorf("a relist that listed the pod before its removal brought it back: %+v", got)
	}
	// The next relist, begun after the removal, sees whatever is there.
	rt.during = nil
	clk.Step(time.Second)
	p.Relist(context.Background())
	if got := p.Pods(); len(got) != 1 {
		t.Errorf("a relist begun after the removal does not see the pod listed: %+v", got)
	}
}

// hookRuntime lists pods and runs during (if set) after listing, as a
// relist racing the kubelet's own work.
type hookRuntime struct {
	pods   []*container.PodStatus
	during func()
}

func (h *hookRuntime) Relist(context.Context) ([]*container.PodStatus, error) {
	out := h.pods
	if h.during != nil {
		h.during()
	}
	return out, nil
}
