package pleg

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// truthRuntime is the runtime's truth, which each relist reads.
type truthRuntime struct {
	mu      sync.Mutex
	state   map[string]container.State
	relists int
}

func (r *truthRuntime) set(id string, s container.State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state[id] = s
}

func (r *truthRuntime) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.relists
}

func (r *truthRuntime) Relist(context.Context) ([]*container.PodStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.relists++
	ps := &container.PodStatus{UID: "u"}
	for id, s := range r.state {
		ps.Containers = append(ps.Containers, container.Status{ID: id, State: s})
	}
	return []*container.PodStatus{ps}, nil
}

// script is an event source: each connection plays one session, whose
// events are sent and whose end (nil: stay open until ctx ends) is
// returned; a session with refuse set fails before connecting.
type script struct {
	mu       sync.Mutex
	sessions []session
	opened   int
}

type session struct {
	refuse error
	before func()
	events []runtimeapi.ContainerEventType
	// after, when set, is waited for after the events, then end returned.
	after <-chan struct{}
	end   error
}

func (s *script) WatchContainerEvents(ctx context.Context, connected func(), event func(*runtimeapi.ContainerEventResponse)) error {
	s.mu.Lock()
	if s.opened >= len(s.sessions) {
		s.mu.Unlock()
		<-ctx.Done()
		return ctx.Err()
	}
	ss := s.sessions[s.opened]
	s.opened++
	s.mu.Unlock()
	if ss.refuse != nil {
		return ss.refuse
	}
	if ss.before != nil {
		ss.before()
	}
	connected()
	for _, t := range ss.events {
		event(&runtimeapi.ContainerEventResponse{ContainerId: "a", ContainerEventType: t})
	}
	if ss.after != nil {
		select {
		case <-ss.after:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if ss.end != nil {
		return ss.end
	}
	<-ctx.Done()
	return ctx.Err()
}

// startPLEG runs a PLEG whose periods are an hour: every relist after the
// first is one the event stream asked for.
func startPLEG(t *testing.T, rt *truthRuntime, src EventSource) (*PLEG, chan error) {
	t.Helper()
	return startPLEGEvery(t, rt, src, time.Hour, time.Hour)
}

// startPLEGEvery runs a PLEG with the given periods, following src.
func startPLEGEvery(t *testing.T, rt *truthRuntime, src EventSource, period, streamPeriod time.Duration) (*PLEG, chan error) {
	t.Helper()
	p := New(rt, period, streamPeriod, 100, clock.RealClock{})
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = p.Start(ctx) }()
	go func() { defer wg.Done(); watched <- p.WatchEvents(ctx, src) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return p, watched
}

// next is the next PLEG event, failing after a few seconds.
func next(t *testing.T, p *PLEG) Event {
	t.Helper()
	select {
	case e := <-p.Events():
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no PLEG event")
		return Event{}
	}
}

// quiet fails if the PLEG emits an event within a while.
func quiet(t *testing.T, p *PLEG, what string) {
	t.Helper()
	select {
	case e := <-p.Events():
		t.Fatalf("%s: unexpected event %+v", what, e)
	case <-time.After(300 * time.Millisecond):
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var (
	created = runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT
	started = runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT
	stopped = runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT
	deleted = runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT
)

func TestIsNews(t *testing.T) {
	rec := status(map[string]container.State{"run": container.StateRunning, "done": container.StateExited, "made": container.StateCreated},
		map[string]container.SandboxState{"sb-up": container.SandboxReady, "sb-down": container.SandboxNotReady})
	for _, tt := range []struct {
		t    runtimeapi.ContainerEventType
		id   string
		rec  *container.PodStatus
		want bool
	}{
		// An exit is news unless the record shows it ended.
		{stopped, "done", rec, false}, {stopped, "sb-down", rec, false},
		{stopped, "run", rec, true}, {stopped, "sb-up", rec, true}, {stopped, "made", rec, true},
		{stopped, "new", rec, true}, {stopped, "done", nil, true},
		// A creation is news unless the record holds the container.
		{created, "made", rec, false}, {created, "run", rec, false}, {created, "sb-up", rec, false},
		{created, "new", rec, true}, {created, "run", nil, true},
		// A start is news unless the record shows it running or ended.
		{started, "run", rec, false}, {started, "done", rec, false}, {started, "sb-up", rec, false},
		{started, "made", rec, true}, {started, "new", rec, true},
		// A removal is news if the record still holds it.
		{deleted, "done", rec, true}, {deleted, "run", rec, true}, {deleted, "sb-down", rec, true},
		{deleted, "new", rec, false}, {deleted, "done", nil, false},
	} {
		e := &runtimeapi.ContainerEventResponse{ContainerId: tt.id, ContainerEventType: tt.t}
		if got := isNews(e, tt.rec); got != tt.want {
			t.Errorf("%v of %q (record %v): news %v, want %v", tt.t, tt.id, tt.rec != nil, got, tt.want)
		}
	}
}

// An exit on the stream is reported at once, not at the next period; the
// same exit delivered twice, and events out of order, are reported once:
// the relist, not the event, says what changed.
func TestExitOnTheStreamIsReportedAtOnceAndOnce(t *testing.T) {
	rt := &truthRuntime{state: map[string]container.State{"a": container.StateRunning}}
	gate := make(chan struct{})
	src := &script{sessions: []session{{before: func() { <-gate }, events: []runtimeapi.ContainerEventType{stopped, stopped, deleted, created, stopped}}}}
	p, _ := startPLEG(t, rt, src)
	if e := next(t, p); e.Type != ContainerStarted {
		t.Fatalf("first relist: %+v", e)
	}
	rt.set("a", container.StateExited)
	start := time.Now()
	close(gate)
	if e := next(t, p); e.Type != ContainerDied || e.ID != "a" {
		t.Fatalf("after the exit event: %+v", e)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the exit took %v to be reported", d)
	}
	quiet(t, p, "duplicated and reordered events")
	if !p.Streaming() {
		t.Error("Streaming() is false with the stream open")
	}
	if n := rt.count(); n > 4 {
		t.Errorf("%d relists for one connection and three exit events: the kicks are not coalesced", n)
	}
}

// A stream that breaks, or a runtime that restarts and refuses the stream
// for a while: what changed meanwhile, with no event ever sent for it, is
// found by the relists the watcher asks for when the stream breaks, is
// refused, and comes back.
func TestLostStreamAndRuntimeRestartAreCaughtUp(t *testing.T) {
	rt := &truthRuntime{state: map[string]container.State{"a": container.StateRunning}}
	reconnected := make(chan struct{})
	src := &script{sessions: []session{
		{end: errors.New("stream reset")},
		{refuse: grpcstatus.Error(codes.Unavailable, "runtime restarting")},
		{before: func() { close(reconnected) }},
	}}
	p, _ := startPLEG(t, rt, src)
	if e := next(t, p); e.Type != ContainerStarted {
		t.Fatalf("first relist: %+v", e)
	}
	rt.set("a", container.StateExited)
	select {
	case <-reconnected:
	case <-time.After(10 * time.Second):
		t.Fatal("never reconnected after the stream broke and the runtime refused it")
	}
	if e := next(t, p); e.Type != ContainerDied || e.ID != "a" {
		t.Fatalf("after reconnecting: %+v", e)
	}
	quiet(t, p, "after catching up")
}

// A runtime without the stream (containerd 1.6): the watcher gives up at
// once and the PLEG relists on its period alone.
func TestNoStreamLeavesTheRelist(t *testing.T) {
	rt := &truthRuntime{state: map[string]container.State{}}
	src := &script{sessions: []session{{refuse: grpcstatus.Error(codes.Unimplemented, "unknown method GetContainerEvents")}}}
	p, watched := startPLEG(t, rt, src)
	select {
	case err := <-watched:
		if err != nil {
			t.Errorf("WatchEvents: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WatchEvents kept trying a runtime without the stream")
	}
	if p.Streaming() {
		t.Error("Streaming() is true without a stream")
	}
}

// While the stream is followed the periodic relist runs at streamPeriod;
// when the stream is gone for good (a runtime without it) it runs at period
// again.
func TestStreamSlowsThePeriodicRelist(t *testing.T) {
	rt := &truthRuntime{state: map[string]container.State{}}
	drop := make(chan struct{})
	src := &script{sessions: []session{
		{after: drop, end: grpcstatus.Error(codes.Unimplemented, "stream no longer offered")},
	}}
	p, watched := startPLEGEvery(t, rt, src, 20*time.Millisecond, time.Hour)
	eventually(t, "the stream followed", p.Streaming)
	// The relist the connection asked for is made within eventKickGap.
	time.Sleep(2 * eventKickGap)
	before := rt.count()
	time.Sleep(20 * 20 * time.Millisecond)
	if n := rt.count() - before; n > 1 {
		t.Errorf("%d relists in 20 periods with the stream followed: want the stream period", n)
	}
	close(drop)
	select {
	case <-watched:
	case <-time.After(5 * time.Second):
		t.Fatal("the watcher kept following a stream the runtime no longer offers")
	}
	before = rt.count()
	eventually(t, "relists at the period again", func() bool { return rt.count()-before >= 5 })
}

// Events about a pod the kubelet is acting on make no relist meanwhile;
// they are judged when the action ends, against the kubelet's own read: its
// own changes are not news, a change it did not make is.
func TestEventsWhileActingAreJudgedAtDone(t *testing.T) {
	for _, tt := range []struct {
		name string
		// read is the state of "a" the kubelet reads before done.
		read container.State
		want bool
	}{
		{"the kubelet's own stop", container.StateExited, false},
		{"an exit after the kubelet's read", container.StateRunning, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rt := &truthRuntime{state: map[string]container.State{"a": container.StateRunning}}
			p := New(rt, time.Hour, time.Hour, 100, clock.RealClock{})
			p.Relist(context.Background())
			done := p.Acting("u")
			p.onEvent(&runtimeapi.ContainerEventResponse{ContainerId: "a", ContainerEventType: stopped,
				PodSandboxStatus: &runtimeapi.PodSandboxStatus{Metadata: &runtimeapi.PodSandboxMetadata{Uid: "u"}}})
			if kicked(p) {
				t.Fatal("an event about a pod being acted on made a relist at once")
			}
			p.Observe(status(map[string]container.State{"a": tt.read}, nil))
			done()
			if got := kicked(p); got != tt.want {
				t.Errorf("relist asked at done: %v, want %v", got, tt.want)
			}
		})
	}
}

// kicked reports (and consumes) a pending request to relist.
func kicked(p *PLEG) bool {
	select {
	case <-p.kicks:
		return true
	default:
		return false
	}
}

// An event not naming its pod is matched to the pod whose record holds its
// container or sandbox.
func TestPodOf(t *testing.T) {
	p := New(&truthRuntime{}, time.Hour, time.Hour, 1, clock.RealClock{})
	p.Observe(status(map[string]container.State{"c": container.StateRunning}, map[string]container.SandboxState{"sb": container.SandboxReady}))
	for _, tt := range []struct {
		uid, id string
		want    string
	}{{"", "c", "u"}, {"", "sb", "u"}, {"", "other", ""}, {"x", "c", "x"}} {
		e := &runtimeapi.ContainerEventResponse{ContainerId: tt.id}
		if tt.uid != "" {
			e.PodSandboxStatus = &runtimeapi.PodSandboxStatus{Metadata: &runtimeapi.PodSandboxMetadata{Uid: tt.uid}}
		}
		p.mu.Lock()
		got := p.podOf(e)
		p.mu.Unlock()
		if string(got) != tt.want {
			t.Errorf("pod %q container %q: %q, want %q", tt.uid, tt.id, got, tt.want)
		}
	}
}
