package pleg

import (
	"context"
	"sort"
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
	p := New(rt, time.Second, 10, clk)
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
	p := New(rt, time.Second, 1, clocktesting.NewFakeClock(time.Unix(0, 0)))
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
