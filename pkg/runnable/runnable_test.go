package runnable

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
)

// recorder logs starts and stops in order.
type recorder struct {
	mu  sync.Mutex
	log []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, s)
}

func (r *recorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.log...)
}

// part starts, optionally becomes ready when release is closed, and stops
// with its context.
type part struct {
	ReadyOnce
	name    string
	rec     *recorder
	release chan struct{}
	err     error
}

func (p *part) Start(ctx context.Context) error {
	p.rec.add("start " + p.name)
	if p.err != nil {
		return p.err
	}
	if p.release != nil {
		select {
		case <-p.release:
			p.MarkReady()
		case <-ctx.Done():
		}
	}
	<-ctx.Done()
	p.rec.add("stop " + p.name)
	return nil
}

// plain is a part without readiness.
type plain struct{ p *part }

func (q plain) Start(ctx context.Context) error { return q.p.Start(ctx) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestStagesStartAfterReadinessAndStopInReverse(t *testing.T) {
	rec := &recorder{}
	release := make(chan struct{})
	var g Group
	g.Stage("core").Add("a", &part{name: "a", rec: rec, release: release})
	g.Stage("loops").Add("b", plain{&part{name: "b", rec: rec}}).Add("nil", nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()

	eventually.True(t, "a to start", func() bool { return contains(rec.get(), "start a") })
	// b must wait for a's readiness: once the group and every part it
	// started wait, nothing more starts until a is released.
	eventually.Seen(t, "the group and its parts waiting", func() (bool, string) {
		return eventually.Settled("runnable.(*Group).Run")
	})
	if contains(rec.get(), "start b") {
		t.Fatalf("stage 2 started before stage 1 was ready: %v", rec.get())
	}
	close(release)
	eventually.True(t, "b to start", func() bool { return contains(rec.get(), "start b") })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil after a clean stop", err)
	}
	want := []string{"start a", "start b", "stop b", "stop a"}
	if got := rec.get(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("order = %v, want %v", got, want)
	}
}

func TestFailureStopsEverythingAndIsReported(t *testing.T) {
	rec := &recorder{}
	boom := errors.New("boom")
	var g Group
	g.Stage("core").Add("a", plain{&part{name: "a", rec: rec}})
	g.Stage("loops").Add("bad", plain{&part{name: "bad", rec: rec, err: boom}})
	err := g.Run(context.Background())
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("Run = %v, want boom naming the part", err)
	}
	if !contains(rec.get(), "stop a") {
		t.Fatalf("a not stopped after a failure: %v", rec.get())
	}
}

func TestFailureWhileWaitingForReadiness(t *testing.T) {
	rec := &recorder{}
	boom := errors.New("boom")
	var g Group
	// a never becomes ready; bad fails in the same stage.
	g.Stage("core").Add("a", &part{name: "a", rec: rec, release: make(chan struct{})}).Add("bad", plain{&part{name: "bad", rec: rec, err: boom}})
	g.Stage("loops").Add("b", plain{&part{name: "b", rec: rec}})
	if err := g.Run(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want boom", err)
	}
	if contains(rec.get(), "start b") {
		t.Fatalf("a later stage started after a failure: %v", rec.get())
	}
}

func TestOneShotFinishingEarlyIsNotAFailure(t *testing.T) {
	var g Group
	finished := make(chan struct{})
	g.Stage("s").Add("once", Func(func(context.Context) error { close(finished); return nil }))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	<-finished
	select {
	case err := <-done:
		t.Fatalf("Run returned %v when a one-shot finished", err)
	case <-time.After(20 * time.Millisecond):
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
}

func TestStopTimeoutAbandonsAStuckPart(t *testing.T) {
	var g Group
	stuck := make(chan struct{})
	defer close(stuck)
	g.Stage("s").StopTimeout(10*time.Millisecond).Add("stuck", Func(func(context.Context) error { <-stuck; return nil }))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := g.Run(ctx); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("Run waited for a stuck part beyond its stop timeout")
	}
}
