package podworkers

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/runnable"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// State is where a pod is in its lifecycle.
type State int

const (
	// Syncing: the pod should run; SyncPod converges it.
	Syncing State = iota
	// Terminating: the pod must stop; SyncTerminatingPod stops it.
	Terminating
	// Terminated: nothing of the pod runs; SyncTerminatedPod cleans up.
	Terminated
)

func (s State) String() string {
	switch s {
	case Syncing:
		return "syncing"
	case Terminating:
		return "terminating"
	case Terminated:
		return "terminated"
	}
	return "unknown"
}

// UpdateType says what an Update asks for.
type UpdateType int

const (
	// UpdateSync asks for the pod to be run towards its (new) spec.
	UpdateSync UpdateType = iota
	// UpdateKill asks for the pod to be stopped.
	UpdateKill
)

// Update is one request to a pod's worker.
type Update struct {
	Type UpdateType
	// Pod is the desired pod. It may be nil for a kill of a pod known only
	// from the runtime (an orphan); RunningPod is set then.
	Pod        *v1.Pod
	RunningPod *container.RunningPod
	// GracePeriod overrides the pod's grace period for a kill. Once
	// termination started, a later kill can only shorten it.
	GracePeriod *int64
	// Remove means the pod left its source: once terminated and cleaned up,
	// the worker forgets it.
	Remove bool
	// KillStatus, for a kill, amends the pod's final status (e.g. phase
	// Failed with reason DeadlineExceeded or Evicted).
	KillStatus func(*v1.PodStatus)
}

// Handler does the work for a pod. Calls for one pod never overlap.
type Handler interface {
	// SyncPod runs the pod towards its spec. terminal reports that the pod
	// reached a terminal phase and must not run again. retryAfter, when
	// positive, asks for the next sync at that time (a back-off expiry).
	SyncPod(ctx context.Context, pod *v1.Pod) (terminal bool, retryAfter time.Duration, err error)
	// SyncTerminatingPod stops every container and the sandbox of the pod.
	// pod is nil for an orphan. gracePeriod, when non-nil, overrides the
	// pod's own grace period. It is called again until it returns nil.
	SyncTerminatingPod(ctx context.Context, pod *v1.Pod, running *container.RunningPod, gracePeriod *int64, statusFn func(*v1.PodStatus)) error
	// SyncTerminatedPod releases what is left once nothing runs. removed
	// tells that the pod left its source, so its runtime objects can go.
	SyncTerminatedPod(ctx context.Context, uid types.UID, pod *v1.Pod, removed bool) error
}

// Restarter is a Handler that runs a pod again under the UID of one that
// left its source and came back before its worker had finished with it: a
// static pod whose manifest was removed and written back (its UID is the
// hash of the manifest). The earlier run is stopped and released as usual
// (SyncTerminatedPod with removed false: its exited containers stay, so
// the restart counts go on, as upstream's do); then PodRestarting drops
// what records that run as final, and SyncPod starts the pod again.
type Restarter interface {
	PodRestarting(uid types.UID)
}

// Options tune the workers.
type Options struct {
	// Resync is how often a pod is re-synced when nothing happens.
	Resync time.Duration
	// MaxErrorBackoff caps the retry delay after a failed handler call.
	MaxErrorBackoff time.Duration
	Clock           clock.WithDelayedExecution
}

// Workers is the set of pod workers.
type Workers struct {
	handler Handler
	opts    Options

	mu     sync.Mutex
	ctx    context.Context
	pods   map[types.UID]*podState
	byName map[string]map[types.UID]*podState

	// inflight counts handler calls under way, waited for at stop.
	inflight sync.WaitGroup
	started  runnable.ReadyOnce
}

type podState struct {
	uid      types.UID
	fullName string
	pod      *v1.Pod
	running  *container.RunningPod
	state    State

	// started is set once SyncPod was called: the pod may have containers.
	started bool
	// dirty means there is work to do on the next wake.
	dirty bool
	// working is set while a handler call runs.
	working bool
	// cleaned is set once SyncTerminatedPod succeeded (for the current
	// value of remove).
	cleaned bool

	killGrace  *int64
	killStatus func(*v1.PodStatus)
	remove     bool
	// readded: the pod came back to its source (same UID) after it left;
	// once terminated it runs again instead of being forgotten.
	readded          bool
	terminatingSince time.Time
	errCount         int

	cancelSync context.CancelFunc
	timer      clock.Timer
	wake       chan struct{}
}

// New makes the workers; Start must be called before updates are processed.
func New(h Handler, opts Options) *Workers {
	if opts.Resync <= 0 {
		opts.Resync = time.Minute
	}
	if opts.MaxErrorBackoff <= 0 {
		opts.MaxErrorBackoff = 10 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Workers{
		handler: h,
		opts:    opts,
		pods:    map[types.UID]*podState{},
		byName:  map[string]map[types.UID]*podState{},
	}
}

// Start sets the context workers run in and is ready at once; updates
// handed over before Start wait for it. When ctx ends, workers stop and
// Start waits for the handler calls under way to return, so the process
// does not exit in the middle of a runtime call (the runnable group bounds
// that wait).
func (w *Workers) Start(ctx context.Context) error {
	w.mu.Lock()
	w.ctx = ctx
	w.mu.Unlock()
	w.started.MarkReady()
	<-ctx.Done()
	w.inflight.Wait()
	return nil
}

// Ready is closed once Start has set the workers' context.
func (w *Workers) Ready() <-chan struct{} { return w.started.Ready() }

// FullName is namespace/name, the identity two instances of a pod share.
func FullName(namespace, name string) string { return namespace + "/" + name }

// UpdatePod hands an update to the pod's worker, starting one if needed.
// It never blocks on the worker.
func (w *Workers) UpdatePod(u Update) {
	uid, ns, name := updateIdentity(u)
	if uid == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	ps, ok := w.pods[uid]
	if !ok {
		if u.Type == UpdateSync && u.Pod == nil {
			return
		}
		ps = &podState{uid: uid, fullName: FullName(ns, name), wake: make(chan struct{}, 1)}
		w.pods[uid] = ps
		if w.byName[ps.fullName] == nil {
			w.byName[ps.fullName] = map[types.UID]*podState{}
		}
		w.byName[ps.fullName][uid] = ps
		go w.run(ps)
	}
	if u.Pod != nil {
		ps.pod = u.Pod
	}
	if u.RunningPod != nil {
		ps.running = u.RunningPod
	}
	switch u.Type {
	case UpdateSync:
		if ps.state != Syncing {
			// A terminating or terminated pod never runs again; its
			// spec is kept for the status only. One that had left its
			// source and is back runs again once it has stopped.
			if ps.remove && u.Pod != nil && !ps.readded {
				ps.readded = true
				w.markDirty(ps)
			}
			return
		}
	case UpdateKill:
		if u.Remove {
			ps.readded = false
		}
		if u.Remove && !ps.remove {
			ps.remove = true
			ps.cleaned = false
		}
		ps.killGrace = minGrace(ps.killGrace, u.GracePeriod)
		if u.KillStatus != nil {
			ps.killStatus = u.KillStatus
		}
		if ps.state == Syncing {
			ps.state = Terminating
			ps.terminatingSince = w.opts.Clock.Now()
			if ps.cancelSync != nil {
				// Stop an in-flight sync (a long pull, a start) at once.
				ps.cancelSync()
			}
		}
		if ps.state == Terminated && ps.cleaned {
			return
		}
	}
	w.markDirty(ps)
}

func updateIdentity(u Update) (types.UID, string, string) {
	if u.Pod != nil {
		return u.Pod.UID, u.Pod.Namespace, u.Pod.Name
	}
	if u.RunningPod != nil {
		return u.RunningPod.UID, u.RunningPod.Namespace, u.RunningPod.Name
	}
	return "", "", ""
}

// markDirty records work and wakes the worker. Caller holds w.mu.
func (w *Workers) markDirty(ps *podState) {
	ps.dirty = true
	select {
	case ps.wake <- struct{}{}:
	default:
	}
}

func (w *Workers) run(ps *podState) {
	<-w.started.Ready()
	w.mu.Lock()
	ctx := w.ctx
	w.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ps.wake:
		}
		if !w.step(ctx, ps) {
			return
		}
	}
}

// step does one handler call if there is work. It returns false when the
// worker must exit (the pod was forgotten).
func (w *Workers) step(ctx context.Context, ps *podState) bool {
	w.mu.Lock()
	if !ps.dirty {
		w.mu.Unlock()
		return true
	}
	if ps.state == Syncing && !ps.started && w.blockedByNamesake(ps) {
		// Wait: the namesake's termination wakes us.
		w.mu.Unlock()
		return true
	}
	ps.dirty = false
	ps.working = true
	w.inflight.Add(1)
	defer w.inflight.Done()
	state, pod, running, remove, readded := ps.state, ps.pod, ps.running, ps.remove, ps.readded
	grace := remainingGrace(ps.killGrace, ps.terminatingSince, w.opts.Clock.Now())
	statusFn := ps.killStatus
	var syncCtx context.Context
	if state == Syncing {
		ps.started = true
		var cancel context.CancelFunc
		syncCtx, cancel = context.WithCancel(ctx)
		ps.cancelSync = cancel
	}
	w.mu.Unlock()

	logger := klog.FromContext(ctx).WithValues("podUID", ps.uid, "pod", ps.fullName)
	var err error
	var retryAfter time.Duration
	switch state {
	case Syncing:
		var terminal bool
		terminal, retryAfter, err = w.handler.SyncPod(syncCtx, pod)
		w.mu.Lock()
		ps.cancelSync()
		ps.cancelSync = nil
		if terminal && ps.state == Syncing {
			logger.V(2).Info("Pod reached a terminal phase, stopping it")
			ps.state = Terminating
			ps.terminatingSince = w.opts.Clock.Now()
			ps.dirty = true
		}
	case Terminating:
		err = w.handler.SyncTerminatingPod(ctx, pod, running, grace, statusFn)
		w.mu.Lock()
		if err == nil {
			ps.state = Terminated
			ps.dirty = true
			w.wakeNamesakes(ps)
		}
	case Terminated:
		if remove && readded {
			if err = w.handler.SyncTerminatedPod(ctx, ps.uid, pod, false); err == nil {
				if r, ok := w.handler.(Restarter); ok {
					r.PodRestarting(ps.uid)
				}
			}
			w.mu.Lock()
			if err == nil {
				if ps.readded {
					logger.V(2).Info("Pod is back in its source under the same UID, starting it again")
					w.restart(ps)
				} else {
					// It left again meanwhile: release it as removed.
					ps.dirty = true
				}
			}
			break
		}
		err = w.handler.SyncTerminatedPod(ctx, ps.uid, pod, remove)
		w.mu.Lock()
		if err == nil && ps.remove == remove {
			ps.cleaned = true
			if remove {
				w.forget(ps)
				ps.working = false
				w.mu.Unlock()
				return false
			}
		}
	}
	ps.working = false
	if err != nil {
		ps.errCount++
		logger.Error(err, "Pod worker step failed", "state", state.String(), "attempt", ps.errCount)
	} else {
		ps.errCount = 0
	}
	w.schedule(ps, err, retryAfter)
	if ps.dirty {
		select {
		case ps.wake <- struct{}{}:
		default:
		}
	}
	w.mu.Unlock()
	return true
}

// restart makes a terminated pod's state that of a new pod to sync (its
// latest spec is kept). Caller holds w.mu.
func (w *Workers) restart(ps *podState) {
	ps.state = Syncing
	ps.started = false
	ps.cleaned = false
	ps.remove = false
	ps.readded = false
	ps.killGrace = nil
	ps.killStatus = nil
	ps.terminatingSince = time.Time{}
	ps.running = nil
	ps.dirty = true
}

// schedule arms the pod's timer for its next visit. Caller holds w.mu.
func (w *Workers) schedule(ps *podState, err error, retryAfter time.Duration) {
	delay := nextDelay(ps.state, ps.cleaned, err != nil, ps.errCount, retryAfter, w.opts.Resync, w.opts.MaxErrorBackoff)
	if ps.timer != nil {
		ps.timer.Stop()
		ps.timer = nil
	}
	if delay <= 0 {
		return
	}
	ps.timer = w.opts.Clock.AfterFunc(delay, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.pods[ps.uid] == ps {
			w.markDirty(ps)
		}
	})
}

// nextDelay is when a pod's worker should run again without being asked:
// 0 means not at all.
func nextDelay(state State, cleaned, failed bool, errCount int, retryAfter, resync, maxBackoff time.Duration) time.Duration {
	if state == Terminated && cleaned && !failed {
		return 0
	}
	if failed {
		d := time.Second << min(errCount-1, 10)
		if d > maxBackoff {
			d = maxBackoff
		}
		if retryAfter > 0 && retryAfter < d {
			d = retryAfter
		}
		return d
	}
	if retryAfter > 0 && retryAfter < resync {
		return retryAfter
	}
	return resync
}

// blockedByNamesake reports whether another instance of the same full name
// has started and is not terminated yet. Caller holds w.mu.
func (w *Workers) blockedByNamesake(ps *podState) bool {
	for uid, other := range w.byName[ps.fullName] {
		if uid != ps.uid && other.started && other.state != Terminated {
			return true
		}
	}
	return false
}

// wakeNamesakes wakes pods waiting for ps to terminate. Caller holds w.mu.
func (w *Workers) wakeNamesakes(ps *podState) {
	for uid, other := range w.byName[ps.fullName] {
		if uid != ps.uid && other.dirty {
			select {
			case other.wake <- struct{}{}:
			default:
			}
		}
	}
}

// forget drops a pod's state. Caller holds w.mu.
func (w *Workers) forget(ps *podState) {
	if ps.timer != nil {
		ps.timer.Stop()
	}
	delete(w.pods, ps.uid)
	if m := w.byName[ps.fullName]; m != nil {
		delete(m, ps.uid)
		if len(m) == 0 {
			delete(w.byName, ps.fullName)
		}
	}
}

// minGrace returns the shorter of two optional grace periods.
func minGrace(cur, req *int64) *int64 {
	if req == nil {
		return cur
	}
	if cur == nil || *req < *cur {
		v := *req
		return &v
	}
	return cur
}

// remainingGrace is what is left of a requested grace period once
// termination has been under way since since; nil means the pod's own.
func remainingGrace(req *int64, since, now time.Time) *int64 {
	if req == nil {
		return nil
	}
	left := *req - int64(now.Sub(since)/time.Second)
	if left < 0 {
		left = 0
	}
	return &left
}

// PodInfo is a snapshot of one worker's state.
type PodInfo struct {
	UID      types.UID
	FullName string
	State    State
	// Started: SyncPod has been called, so containers may exist.
	Started bool
	// Removed: the pod left its source.
	Removed bool
	// Cleaned: SyncTerminatedPod succeeded (volumes released).
	Cleaned bool
	// HasSpec: the worker has the pod's spec; false for a pod known only
	// from the runtime (an orphan the kubelet never had a spec for).
	HasSpec bool
	// Static: the spec is a static pod's.
	Static bool
}

// Get reports the state of a pod's worker.
func (w *Workers) Get(uid types.UID) (PodInfo, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ps, ok := w.pods[uid]
	if !ok {
		return PodInfo{}, false
	}
	return info(ps), true
}

// List reports every worker's state.
func (w *Workers) List() []PodInfo {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]PodInfo, 0, len(w.pods))
	for _, ps := range w.pods {
		out = append(out, info(ps))
	}
	return out
}

func info(ps *podState) PodInfo {
	return PodInfo{UID: ps.uid, FullName: ps.fullName, State: ps.state, Started: ps.started, Removed: ps.remove, Cleaned: ps.cleaned,
		HasSpec: ps.pod != nil, Static: ps.pod != nil && podspec.IsStatic(ps.pod)}
}

// IsTerminationRequested reports whether the pod is terminating or
// terminated.
func (w *Workers) IsTerminationRequested(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	ps, ok := w.pods[uid]
	return ok && ps.state != Syncing
}
