// Package pleg is the pod lifecycle event generator: it relists the runtime
// periodically, compares each pod with what it saw last, and emits an event
// per change (container started, died, removed; sandbox changed). The
// events only speed up the sync loop — pods are also re-synced on timers —
// so an event lost to a full channel costs latency, never correctness.
//
// Where the runtime streams container events (CRI GetContainerEvents:
// containerd 2 and 1.7, not 1.6), a change the kubelet did not make itself
// (a container's exit, above all) makes it relist at once instead of at the
// next period, and the periodic relist slows down while the stream is
// followed (events.go); the relist stays the truth and the safety net.
// The kubelet also hands the PLEG the status it reads right after acting on
// a pod (Observe), so the next relist does not report the kubelet's own
// changes back to it as news.
package pleg

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// EventType is the kind of change seen.
type EventType string

const (
	ContainerStarted EventType = "ContainerStarted"
	ContainerDied    EventType = "ContainerDied"
	ContainerRemoved EventType = "ContainerRemoved"
	ContainerChanged EventType = "ContainerChanged"
	SandboxChanged   EventType = "SandboxChanged"
)

// Event is one change of one pod.
type Event struct {
	UID  types.UID
	Type EventType
	// ID is the container or sandbox ID concerned.
	ID string
}

// Relister is the runtime as the PLEG needs it.
type Relister interface {
	Relist(ctx context.Context) ([]*container.PodStatus, error)
}

// RelistThreshold is how old the last successful relist may be before the
// PLEG reports itself unhealthy.
const RelistThreshold = 3 * time.Minute

// PLEG generates pod lifecycle events by relisting.
type PLEG struct {
	runtime Relister
	// period is the relist period without an event stream; streamPeriod
	// with one, when the relist is only the safety net (events.go).
	period, streamPeriod time.Duration
	clock                clock.WithTicker
	events               chan Event
	// kicks asks for a relist now (events.go); streaming: the runtime's
	// event stream is followed.
	kicks     chan struct{}
	streaming atomic.Bool

	mu   sync.Mutex
	last map[types.UID]*container.PodStatus
	// acting counts, per pod, the kubelet's actions under way (Acting);
	// pending holds the stream's events about those pods meanwhile.
	acting     map[types.UID]int
	pending    map[types.UID][]*runtimeapi.ContainerEventResponse
	lastRelist time.Time
	lastErr    error
}

// New makes a PLEG relisting every period, or every streamPeriod while the
// runtime's event stream is followed (WatchEvents); the event channel holds
// capacity events.
func New(r Relister, period, streamPeriod time.Duration, capacity int, clk clock.WithTicker) *PLEG {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &PLEG{runtime: r, period: period, streamPeriod: streamPeriod, clock: clk, events: make(chan Event, capacity), kicks: make(chan struct{}, 1), last: map[types.UID]*container.PodStatus{}, acting: map[types.UID]int{}, pending: map[types.UID][]*runtimeapi.ContainerEventResponse{}}
}

// Events is the channel events arrive on.
func (p *PLEG) Events() <-chan Event { return p.events }

// Start relists every period (streamPeriod while the event stream is
// followed), and sooner when the stream says something changed that the
// PLEG has not seen (WatchEvents), until ctx ends. A failed relist is
// logged and shows in Healthy; it never stops the loop.
func (p *PLEG) Start(ctx context.Context) error {
	for {
		p.Relist(ctx)
		last := p.clock.Now()
		period := p.period
		if p.streaming.Load() {
			period = p.streamPeriod
		}
		t := p.clock.NewTimer(period)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		case <-p.kicks:
			t.Stop()
			if wait := eventKickGap - p.clock.Since(last); wait > 0 {
				select {
				case <-ctx.Done():
					return nil
				case <-p.clock.After(wait):
				}
			}
		}
	}
}

// Relist does one relist and emits the events it finds.
func (p *PLEG) Relist(ctx context.Context) {
	defer p.instrumentRelist()()
	start := p.clock.Now()
	pods, err := p.runtime.Relist(ctx)
	if err != nil {
		klog.FromContext(ctx).Error(err, "PLEG relist failed")
		p.mu.Lock()
		p.lastErr = err
		p.mu.Unlock()
		return
	}
	p.mu.Lock()
	next, events := reconcile(p.last, pods, start, p.acting)
	p.last = next
	p.lastRelist = p.clock.Now()
	p.lastErr = nil
	p.mu.Unlock()
	for _, e := range events {
		select {
		case p.events <- e:
		default:
			metrics.PLEGDiscardEvents.Inc()
			klog.FromContext(ctx).Info("PLEG event channel full, dropping event; the pod's resync covers it", "podUID", e.UID, "event", e.Type)
		}
	}
}

// reconcile merges a relist that began at start into what was seen last,
// and returns the new record and the changes to report.
//
// A pod the kubelet read itself (Observe) after the relist began keeps that
// read, unreported: the relist's listing may predate the kubelet's own
// changes (a pod being started while the relist runs), and reporting those
// back as news would sync the pod again for nothing, or, for a pod just
// removed, bring it back for housekeeping to kill. The next relist, which
// begins after that read, diffs against it, so nothing is lost. A pod the
// kubelet is acting on (acting: a sandbox or containers being made or
// stopped) keeps its record, unreported, for the same reason: the relist
// sees the action half done, and the kubelet reads the pod itself when it
// is done. Every other pod is diffed against the relist. (Reads are timed
// by the runtime's clock, start by the PLEG's: the kubelet gives both the
// same clock.)
func reconcile(last map[types.UID]*container.PodStatus, relisted []*container.PodStatus, start time.Time, acting map[types.UID]int) (map[types.UID]*container.PodStatus, []Event) {
	next := make(map[types.UID]*container.PodStatus, len(relisted))
	var events []Event
	for _, s := range relisted {
		if o := last[s.UID]; readAfter(o, start) || acting[s.UID] > 0 {
			if o != nil {
				next[s.UID] = o
			}
			continue
		}
		events = append(events, Diff(last[s.UID], s)...)
		next[s.UID] = s
	}
	for uid, o := range last {
		if _, ok := next[uid]; ok {
			continue
		}
		if readAfter(o, start) || acting[uid] > 0 {
			next[uid] = o
			continue
		}
		events = append(events, Diff(o, nil)...)
	}
	return next, events
}

// readAfter reports whether s was read after t.
func readAfter(s *container.PodStatus, t time.Time) bool {
	return s != nil && s.Timestamp.After(t)
}

// Observe records a pod status the kubelet has just read, so the changes
// it made itself are not reported again by the next relist. A read older
// than what is recorded is ignored; a pod read with nothing left is kept
// as such (not listed by Pods) until a relist begun after it drops it.
func (p *PLEG) Observe(s *container.PodStatus) {
	if s == nil {
		return
	}
	if s.Timestamp.IsZero() {
		// Unstamped: as of now (else any record would count as newer).
		c := *s
		c.Timestamp = p.clock.Now()
		s = &c
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if o := p.last[s.UID]; o != nil && o.Timestamp.After(s.Timestamp) {
		return
	}
	p.last[s.UID] = s
}

// Acting marks the kubelet as acting on pod uid until done is called (once):
// relists meanwhile keep the pod's record and report nothing for it, since
// they may see the action half done; the kubelet reads the pod itself
// (Observe) when it has acted, and the first relist after done diffs
// against the newer of the two, so a change it did not make is still
// reported. The event stream's events about the pod meanwhile are judged
// at done, against that read: one it does not show makes the PLEG relist.
func (p *PLEG) Acting(uid types.UID) (done func()) {
	p.mu.Lock()
	p.acting[uid]++
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			news := false
			if p.acting[uid]--; p.acting[uid] <= 0 {
				delete(p.acting, uid)
				for _, e := range p.pending[uid] {
					news = news || isNews(e, p.last[uid])
				}
				delete(p.pending, uid)
			}
			p.mu.Unlock()
			if news {
				p.kick()
			}
		})
	}
}

// Pods returns the pods seen by the last relist (and Observe since) that
// have a sandbox or a container.
func (p *PLEG) Pods() []*container.PodStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*container.PodStatus, 0, len(p.last))
	for _, s := range p.last {
		if len(s.Sandboxes) == 0 && len(s.Containers) == 0 {
			continue
		}
		out = append(out, s)
	}
	return out
}

// HasRelisted reports whether one relist has succeeded.
func (p *PLEG) HasRelisted() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.lastRelist.IsZero()
}

// Healthy reports an error when the last successful relist is too old.
func (p *PLEG) Healthy() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lastRelist.IsZero() {
		if p.lastErr != nil {
			return fmt.Errorf("pleg has not relisted yet: %w", p.lastErr)
		}
		return nil
	}
	if age := p.clock.Since(p.lastRelist); age > RelistThreshold {
		return fmt.Errorf("pleg was last seen active %v ago; threshold is %v", age.Round(time.Second), RelistThreshold)
	}
	return nil
}

// observed is a container's state as far as diffing is concerned.
type observed struct {
	state container.State
}

// Diff computes the events between two observations of one pod; either
// may be nil (pod appeared, pod vanished).
func Diff(old, cur *container.PodStatus) []Event {
	uid := types.UID("")
	if old != nil {
		uid = old.UID
	}
	if cur != nil {
		uid = cur.UID
	}
	oldC, curC := containerStates(old), containerStates(cur)
	var events []Event
	for id, c := range curC {
		o, existed := oldC[id]
		if existed && o.state == c.state {
			continue
		}
		switch c.state {
		case container.StateRunning:
			events = append(events, Event{UID: uid, Type: ContainerStarted, ID: id})
		case container.StateExited:
			events = append(events, Event{UID: uid, Type: ContainerDied, ID: id})
		case container.StateUnknown:
			events = append(events, Event{UID: uid, Type: ContainerChanged, ID: id})
		case container.StateCreated:
			if existed {
				events = append(events, Event{UID: uid, Type: ContainerChanged, ID: id})
			}
		}
	}
	for id, o := range oldC {
		if _, ok := curC[id]; ok {
			continue
		}
		if o.state == container.StateRunning {
			// Gone without being seen dead: it died, then was removed.
			events = append(events, Event{UID: uid, Type: ContainerDied, ID: id})
		}
		events = append(events, Event{UID: uid, Type: ContainerRemoved, ID: id})
	}
	oldS, curS := sandboxStates(old), sandboxStates(cur)
	for id, st := range curS {
		if o, ok := oldS[id]; !ok || o != st {
			events = append(events, Event{UID: uid, Type: SandboxChanged, ID: id})
		}
	}
	for id := range oldS {
		if _, ok := curS[id]; !ok {
			events = append(events, Event{UID: uid, Type: SandboxChanged, ID: id})
		}
	}
	return events
}

func containerStates(s *container.PodStatus) map[string]observed {
	out := map[string]observed{}
	if s == nil {
		return out
	}
	for _, c := range s.Containers {
		out[c.ID] = observed{state: c.State}
	}
	return out
}

func sandboxStates(s *container.PodStatus) map[string]container.SandboxState {
	out := map[string]container.SandboxState{}
	if s == nil {
		return out
	}
	for _, sb := range s.Sandboxes {
		out[sb.ID] = sb.State
	}
	return out
}
