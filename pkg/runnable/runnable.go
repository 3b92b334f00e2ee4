// Package runnable is the one contract for the kubelet's long-running parts
// (sources, controllers, loops, servers) and the group that starts and
// stops them in order.
//
// Every part is a Runnable: Start blocks until its context ends and returns
// nil, or returns an error when the part cannot go on, which stops the whole
// group (nothing fails silently). A part that is useful only after some
// start-up work (a listener bound, a first relist done, an informer synced)
// also implements Readier; the group starts the next stage only once every
// part of the current one is ready. Stages stop in reverse order, each one
// given its stop timeout before the stage before it is stopped, so that,
// for example, the pod loops stop before the status writer they feed.
package runnable

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// Runnable is a long-running part of the kubelet.
type Runnable interface {
	// Start runs the part until ctx ends, then returns nil. It returns an
	// error only when the part cannot go on; the group then stops every
	// part and reports the error. Returning nil before ctx ends means the
	// part finished its work (a one-shot); the group carries on.
	Start(ctx context.Context) error
}

// Func adapts a function to Runnable.
type Func func(ctx context.Context) error

// Start calls f.
func (f Func) Start(ctx context.Context) error { return f(ctx) }

// Readier is implemented by a Runnable that becomes ready some time after
// Start begins. The channel is closed once it is ready.
type Readier interface {
	Ready() <-chan struct{}
}

// Group runs stages of runnables. Build it with Stage and Add, then call
// Run once.
type Group struct {
	stages []*Stage
}

// Stage is one step of the start order: its runnables start together.
type Stage struct {
	name    string
	timeout time.Duration
	members []member
}

type member struct {
	name string
	r    Runnable
}

// DefaultStopTimeout is how long a stage's runnables get to return once
// their context is cancelled.
const DefaultStopTimeout = 15 * time.Second

// Stage appends a stage that starts after the ones added before it and
// stops before them.
func (g *Group) Stage(name string) *Stage {
	s := &Stage{name: name, timeout: DefaultStopTimeout}
	g.stages = append(g.stages, s)
	return s
}

// StopTimeout sets how long the stage's runnables get to return once
// stopping began; those still running after it are abandoned (logged).
func (s *Stage) StopTimeout(d time.Duration) *Stage {
	s.timeout = d
	return s
}

// Add adds a named runnable to the stage. A nil runnable is ignored, so
// optional parts can be added unconditionally.
func (s *Stage) Add(name string, r Runnable) *Stage {
	if r != nil {
		s.members = append(s.members, member{name: name, r: r})
	}
	return s
}

// Names lists the stage's runnables, in order.
func (s *Stage) Names() []string {
	out := make([]string, 0, len(s.members))
	for _, m := range s.members {
		out = append(out, m.name)
	}
	return out
}

// running is a started stage.
type running struct {
	stage  *Stage
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Run starts the stages in order and blocks until ctx ends or a runnable
// fails, then stops them in reverse order. It returns the failures joined,
// or nil after a clean stop. Run must be called once.
func (g *Group) Run(ctx context.Context) error {
	log := klog.FromContext(ctx)
	failed := make(chan error, 1)
	var (
		errMu sync.Mutex
		errs  []error
	)
	fail := func(err error) {
		errMu.Lock()
		errs = append(errs, err)
		errMu.Unlock()
		select {
		case failed <- err:
		default:
		}
	}

	joined := func() error {
		errMu.Lock()
		defer errMu.Unlock()
		return errors.Join(errs...)
	}
	var started []*running
	stopAll := func() {
		for i := len(started) - 1; i >= 0; i-- {
			r := started[i]
			r.cancel()
			done := make(chan struct{})
			go func() { r.wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(r.stage.timeout):
				log.Info("Stage did not stop in time; going on", "stage", r.stage.name, "timeout", r.stage.timeout)
			}
		}
	}

	for _, s := range g.stages {
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		r := &running{stage: s, cancel: cancel}
		started = append(started, r)
		var ready []<-chan struct{}
		var readyNames []string
		for _, m := range s.members {
			m := m
			mlog := log.WithName(m.name)
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				err := m.r.Start(klog.NewContext(sctx, mlog))
				switch {
				case err != nil:
					fail(fmt.Errorf("%s: %w", m.name, err))
				case sctx.Err() == nil:
					mlog.V(2).Info("Finished before the kubelet stopped")
				}
			}()
			if rd, ok := m.r.(Readier); ok {
				ready = append(ready, rd.Ready())
				readyNames = append(readyNames, m.name)
			}
		}
		for i, ch := range ready {
			select {
			case <-ch:
			case err := <-failed:
				log.Error(err, "A part failed while its stage was starting", "stage", s.name)
				stopAll()
				return joined()
			case <-ctx.Done():
				log.Info("Stopped while waiting for readiness", "stage", s.name, "part", readyNames[i])
				stopAll()
				return joined()
			}
		}
		log.V(2).Info("Stage started", "stage", s.name, "parts", s.Names())
	}

	select {
	case <-ctx.Done():
	case err := <-failed:
		log.Error(err, "A part failed; stopping the kubelet")
	}
	stopAll()
	return joined()
}

// ReadyOnce is a Readier helper: embed it and call MarkReady once ready.
type ReadyOnce struct {
	once sync.Once
	ch   chan struct{}
	mu   sync.Mutex
}

func (r *ReadyOnce) channel() chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ch == nil {
		r.ch = make(chan struct{})
	}
	return r.ch
}

// Ready is closed once MarkReady was called.
func (r *ReadyOnce) Ready() <-chan struct{} { return r.channel() }

// MarkReady closes Ready; later calls do nothing.
func (r *ReadyOnce) MarkReady() {
	ch := r.channel()
	r.once.Do(func() { close(ch) })
}
