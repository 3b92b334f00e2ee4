package prober

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/runtime/images"
)

// Events, as upstream names them.
const (
	EventUnhealthy    = "Unhealthy"
	EventProbeWarning = "ProbeWarning"
)

// worker probes one kind of probe of one container of one pod, for
// whichever instance of the container is newest. Its counters belong to its
// goroutine; it reads the pod through the manager's snapshot.
type worker struct {
	m    *Manager
	uid  types.UID
	name string
	kind Kind

	stop   chan struct{}
	wake   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc

	// containerID is the instance the counters below are about.
	containerID string
	lastResult  Result
	resultRun   int
	// onHold: liveness or startup failed on this instance; nothing more to
	// do until the kubelet replaces it.
	onHold bool
	// probed: the instance has been probed at least once.
	probed bool

	lastEvent    time.Time
	lastEventMsg string
}

func newWorker(m *Manager, uid types.UID, name string, kind Kind) *worker {
	ctx, cancel := context.WithCancel(context.Background())
	return &worker{m: m, uid: uid, name: name, kind: kind, stop: make(chan struct{}), wake: make(chan struct{}, 1), ctx: ctx, cancel: cancel}
}

// halt ends the worker (a probe under way is cancelled). Idempotent.
func (w *worker) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
		w.cancel()
	}
}

// poke makes the worker look at its container again now.
func (w *worker) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *worker) run() {
	defer w.m.wg.Done()
	defer forgetProbeMetrics(w)
	for {
		wait, ok := w.step()
		if !ok {
			return
		}
		var timerC <-chan time.Time
		var stopTimer func() bool
		if wait >= 0 {
			t := w.m.clock.NewTimer(wait)
			timerC, stopTimer = t.C(), t.Stop
		}
		select {
		case <-w.stop:
			if stopTimer != nil {
				stopTimer()
			}
			return
		case <-w.wake:
		case <-timerC:
		}
		if stopTimer != nil {
			stopTimer()
		}
	}
}

// idle is step's answer when only a poke can bring new work.
const idle = time.Duration(-1)

// step does what is due now for the worker's container and says how long
// to wait before the next step (idle: until poked); ok is false when the
// worker has nothing left to probe (pod or probe gone).
func (w *worker) step() (time.Duration, bool) {
	select {
	case <-w.stop:
		return 0, false
	default:
	}
	s, ok := w.m.snapshot(w.uid, w.name, w.kind)
	if !ok {
		return 0, false
	}
	if s.inst.id == "" {
		return idle, true // not created yet
	}
	if s.inst.id != w.containerID {
		// A new instance: fresh results.
		w.containerID = s.inst.id
		w.lastResult, w.resultRun, w.onHold, w.probed = Unknown, 0, false, false
		w.lastEvent, w.lastEventMsg = time.Time{}, ""
		w.m.setResult(w, s.inst.id, Unknown)
	}
	if !s.inst.running {
		if w.kind == Readiness && w.probed {
			w.m.setResult(w, s.inst.id, Failure)
		}
		return idle, true
	}
	if w.onHold {
		return idle, true
	}
	if w.kind == Startup && s.started {
		return idle, true // done for this instance
	}
	if w.kind != Startup && !s.started {
		return idle, true // the startup probe wakes us when it succeeds
	}
	now := w.m.clock.Now()
	if delay := time.Duration(s.probe.InitialDelaySeconds) * time.Second; delay > 0 && !s.inst.startedAt.IsZero() {
		if due := s.inst.startedAt.Add(delay); now.Before(due) {
			return due.Sub(now), true
		}
	}

	period := secondsOr(s.probe.PeriodSeconds, defaultPeriod)
	o, err := w.m.run(w.ctx, s.probe, target{pod: s.pod, container: s.container, containerID: s.inst.id, host: s.host})
	observeProbe(w, s.pod, o, err, now)
	select {
	case <-w.stop:
		return 0, false
	default:
	}
	w.probed = true
	logger := klog.Background().WithValues("probeType", w.kind.String(), "pod", klog.KObj(s.pod), "podUID", w.uid, "containerName", w.name)
	if err != nil {
		logger.V(1).Info("Probe errored", "err", err)
		w.event(s, v1.EventTypeWarning, EventUnhealthy, w.kind.String()+" probe errored: "+err.Error())
		return w.next(now, period), true
	}
	if o.result == Failure {
		logger.V(1).Info("Probe failed", "probeResult", o.result.String(), "output", o.output)
		w.event(s, v1.EventTypeWarning, EventUnhealthy, w.kind.String()+" probe failed: "+o.output)
	} else {
		logger.V(4).Info("Probe succeeded", "probeResult", o.result.String())
		if o.warning {
			w.event(s, v1.EventTypeWarning, EventProbeWarning, w.kind.String()+" probe warning: "+o.output)
		}
	}

	if o.result == w.lastResult {
		w.resultRun++
	} else {
		w.lastResult, w.resultRun = o.result, 1
	}
	success := thresholdOr(s.probe.SuccessThreshold, defaultSuccessThreshold)
	if w.kind != Readiness {
		success = 1 // must be 1 for liveness and startup
	}
	failure := thresholdOr(s.probe.FailureThreshold, defaultFailureThreshold)
	if (o.result == Failure && w.resultRun < failure) || (o.result == Success && w.resultRun < success) {
		return w.next(now, period), true
	}
	w.m.setResult(w, s.inst.id, o.result)
	if o.result == Failure && w.kind != Readiness {
		// The kubelet kills this instance; probing it more would only
		// repeat the verdict.
		w.onHold, w.resultRun = true, 0
		return idle, true
	}
	return w.next(now, period), true
}

// next is the wait until the next probe, a period after the last one began.
func (w *worker) next(began time.Time, period time.Duration) time.Duration {
	d := period - w.m.clock.Since(began)
	if d < 0 {
		d = 0
	}
	return d
}

// event records a probe event, at most once per EventInterval for the
// same message (a new message or a new instance is told at once).
func (w *worker) event(s snapshot, typ, reason, msg string) {
	now := w.m.clock.Now()
	if msg == w.lastEventMsg && !w.lastEvent.IsZero() && now.Sub(w.lastEvent) < w.m.opts.EventInterval {
		return
	}
	w.lastEvent, w.lastEventMsg = now, msg
	w.m.opts.Recorder.Event(images.ContainerRef(s.pod, s.container), typ, reason, msg)
}
