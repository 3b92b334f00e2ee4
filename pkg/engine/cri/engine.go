package cri

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/config/features"
	"github.com/gokubelet/kubelet/pkg/node"
	"github.com/gokubelet/kubelet/pkg/node/nodestatus"
	"github.com/gokubelet/kubelet/pkg/pod/admission"
	"github.com/gokubelet/kubelet/pkg/pod/allocation"
	"github.com/gokubelet/kubelet/pkg/pod/podconfig"
	"github.com/gokubelet/kubelet/pkg/pod/podworkers"
	"github.com/gokubelet/kubelet/pkg/pod/prober"
	"github.com/gokubelet/kubelet/pkg/runnable"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/runtime/pleg"
	"github.com/gokubelet/kubelet/pkg/server"
	"github.com/gokubelet/kubelet/pkg/volume"
)

// Timings of the loops around the pod workers. The relist period and the
// health threshold follow upstream; housekeeping only cleans up, so its
// period bounds how long an orphan lingers, not pod start latency.
const (
	plegRelistPeriod = time.Second
	// plegStreamRelistPeriod is the relist period while the runtime's
	// event stream is followed: the relist is then only the safety net
	// for an event the stream lost without a break the PLEG sees (a
	// break or a runtime restart makes it relist at once). Upstream's
	// evented PLEG relists every 300 s.
	plegStreamRelistPeriod = 10 * time.Second
	plegChannelCapacity    = 1000
	housekeepingPeriod     = 2 * time.Second
	// cgroupCleanupEvery: pod cgroups are swept every this many
	// housekeeping runs (10 s), so a departed pod's cgroup goes within
	// about 20 s (the sweep leaves cgroups younger than 10 s).
	cgroupCleanupEvery = 5
	// syncLoopThreshold is how long the sync loop may go without an
	// iteration before healthz fails.
	syncLoopThreshold = 2 * time.Minute
	// runtimeCheckTimeout bounds the runtime calls made for the Node's
	// status.
	runtimeCheckTimeout = 5 * time.Second
)

// Runtime is what the engine drives: the runtime-neutral pod contract and
// the runtime's own readiness.
type Runtime interface {
	container.Runtime
	// Status reports whether the runtime and its pod network are ready.
	Status(ctx context.Context) (container.RuntimeStatus, error)
}

// Clock is what the engine's loops need: tickers for the PLEG and
// housekeeping, timers for pod worker resyncs.
type Clock interface {
	clock.WithTicker
	AfterFunc(d time.Duration, f func()) clock.Timer
}

// Deps are what the engine is built from.
type Deps struct {
	// Core is the node core the engine runs pods for.
	Core *node.Core
	// Runtime runs the pods.
	Runtime Runtime
	// Probes runs liveness, readiness and startup probes.
	Probes *prober.Manager
	// Security is the node-security part of admission.
	Security SecurityAdmission
	// Volumes sets up and tears down the pods' volumes on the host; its
	// Resync and Evict callbacks are the engine's.
	Volumes *volume.Manager
	// Cgroups keeps the pods' cgroups (nil: the runtime alone creates
	// them, without pod-level limits).
	Cgroups PodCgroups
	// Allocation keeps the pods' allocated and actuated resources for
	// in-place resize (nil: resizes are not acted on).
	Allocation *allocation.Manager
	// Updates are the merged pod source changes; Sources names every
	// configured source and SeenAllSources tells whether each reported.
	Updates        <-chan podconfig.PodUpdate
	Sources        []string
	SeenAllSources func(sources ...string) bool
	// HostIPs are the node's IPs, primary first.
	HostIPs []string
	// Resync is how often a pod is re-synced without an event
	// (syncFrequency).
	Resync time.Duration
	// Clock defaults to the real clock.
	Clock Clock
	// Observer, when set, hears about pod updates, worker steps and
	// computed statuses (the pod startup timeline).
	Observer Observer
	// Features are the feature gates the engine follows
	// (PodReadyToStartContainersCondition, PodObservedGenerationTracking);
	// the zero value has them on. InPlacePodVerticalScaling is Allocation
	// being set.
	Features features.Gates
}

// Engine is the CRI engine. Build it with New and add its runnables to the
// group with AddTo.
type Engine struct {
	core    *node.Core
	runtime Runtime
	probes  *prober.Manager
	volumes *volume.Manager
	vols    volumeState
	cgroups PodCgroups

	allocation *allocation.Manager
	// allocMu makes each allocation decision, a new pod's admission or a
	// resize's, see every other: held from reading the other pods'
	// allocations until the decision is recorded (upstream's allocation
	// manager has the same lock). It is taken before the pod workers' own
	// lock and is never held while waiting for a worker.
	allocMu sync.Mutex
	resizes resizeState
	workers *podworkers.Workers
	pleg    *pleg.PLEG
	clock   Clock
	hostIPs []string

	updates        <-chan podconfig.PodUpdate
	sources        []string
	seenAllSources func(sources ...string) bool

	reasons       reasonCache
	admission     admissionCache
	admitHandlers []AdmitFunc
	releasers     []ReleaseFunc
	statusParts   []StatusFunc
	security      SecurityAdmission
	observer      Observer
	features      features.Gates

	// housekeepingRuns counts housekeeping passes (sync loop only).
	housekeepingRuns int
	// loopHeartbeat is the unix nano time of the last sync loop iteration.
	loopHeartbeat atomic.Int64
	// runtimeFacts are the runtime's handlers and features as of the last
	// readiness check that reached it.
	runtimeFacts atomic.Pointer[nodestatus.RuntimeFacts]
}

// New builds the engine and attaches it to the core as its Lifecycle.
func New(d Deps) *Engine {
	if d.Clock == nil {
		d.Clock = clock.RealClock{}
	}
	e := &Engine{
		core:           d.Core,
		runtime:        d.Runtime,
		probes:         d.Probes,
		volumes:        d.Volumes,
		security:       d.Security,
		cgroups:        d.Cgroups,
		allocation:     d.Allocation,
		resizes:        resizeState{pending: map[types.UID][2]string{}, inProgress: map[types.UID]string{}},
		vols:           volumeState{waiting: map[types.UID]map[string]container.WaitingReason{}},
		clock:          d.Clock,
		hostIPs:        d.HostIPs,
		features:       d.Features,
		updates:        d.Updates,
		sources:        d.Sources,
		seenAllSources: d.SeenAllSources,
		admission:      admissionCache{m: map[types.UID]bool{}},
		observer:       d.Observer,
	}
	if e.observer == nil {
		e.observer = noObserver{}
	}
	e.pleg = pleg.New(d.Runtime, plegRelistPeriod, plegStreamRelistPeriod, plegChannelCapacity, d.Clock)
	e.workers = podworkers.New(e.observer.InstrumentHandler(e), podworkers.Options{Resync: d.Resync, Clock: d.Clock})
	e.loopHeartbeat.Store(d.Clock.Now().UnixNano())
	d.Core.SetLifecycle(e)
	if !d.Features.Enabled(features.PodLevelResources) {
		e.admitHandlers = append(e.admitHandlers, func(pod *v1.Pod) (bool, string, string) {
			r := admission.PodLevelResourcesOff(pod)
			return r.Admit, r.Reason, r.Message
		})
	}
	if !d.Features.Enabled(features.ContainerRestartRules) {
		e.admitHandlers = append(e.admitHandlers, func(pod *v1.Pod) (bool, string, string) {
			r := admission.ContainerRestartRulesOff(pod)
			return r.Admit, r.Reason, r.Message
		})
	}
	return e
}

// AddTo adds the engine's loops: the pod workers, the PLEG and the probers
// to workers, then the sync loop that feeds them to loop (a later stage, so
// the workers are ready before the first pod is dispatched, and the loop
// stops before them).
func (e *Engine) AddTo(workers, loop *runnable.Stage) {
	workers.Add("pod-workers", e.workers).
		Add("pleg", runnable.Func(e.pleg.Start)).
		Add("prober", e.probes).
		Add("volumes", runnable.Func(e.volumes.Start))
	if src, ok := e.runtime.(pleg.EventSource); ok {
		// A change the kubelet did not make itself (a container's exit),
		// seen on the runtime's event stream, makes the PLEG relist at
		// once; while the stream is followed the periodic relist slows
		// to plegStreamRelistPeriod.
		workers.Add("pleg-events", runnable.Func(func(ctx context.Context) error { return e.pleg.WatchEvents(ctx, src) }))
	}
	loop.Add("sync-loop", runnable.Func(e.syncLoop))
}

// ---- node.Lifecycle ----------------------------------------------------

// PodTerminated reports that none of the pod's containers runs or will run
// again.
func (e *Engine) PodTerminated(uid types.UID) bool {
	info, ok := e.workers.Get(uid)
	return !ok || info.State == podworkers.Terminated
}

// CanBeDeleted reports that a deleted pod has nothing left on the node, so
// its API object can go.
func (e *Engine) CanBeDeleted(pod *v1.Pod) bool {
	info, ok := e.workers.Get(pod.UID)
	return !ok || (info.State == podworkers.Terminated && info.Removed)
}

// RunsStaticPod reports that a static pod was not rejected by admission
// and has not been removed.
func (e *Engine) RunsStaticPod(uid types.UID) bool {
	if info, ok := e.workers.Get(uid); ok && info.Removed {
		return false
	}
	if admitted, decided := e.admission.get(uid); decided && !admitted {
		return false
	}
	return true
}

// ---- what the node and the HTTP API read -------------------------------

// RuntimeVersion is the Node's containerRuntimeVersion ("" when the
// runtime does not answer: the last one stays).
func (e *Engine) RuntimeVersion(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, runtimeCheckTimeout)
	defer cancel()
	v, err := e.runtime.Version(ctx)
	if err != nil {
		return ""
	}
	return e.runtime.Type() + "://" + v
}

// Readiness feeds the Node's Ready condition: the runtime and its network
// as the runtime reports them, and the engine's own loops.
func (e *Engine) Readiness(ctx context.Context) nodestatus.Readiness {
	ctx, cancel := context.WithTimeout(ctx, runtimeCheckTimeout)
	defer cancel()
	st, err := e.runtime.Status(ctx)
	r := nodestatus.Readiness{RuntimeReady: st.RuntimeReady, NetworkReady: st.NetworkReady, Errors: st.Errors}
	if err != nil {
		r.RuntimeReady, r.NetworkReady = false, true // the network's state is unknown
		r.Errors = append(r.Errors, fmt.Sprintf("container runtime status check failed: %v", err))
	} else {
		e.runtimeFacts.Store(nodeRuntimeFacts(st))
	}
	if err := e.pleg.Healthy(); err != nil {
		r.Errors = append(r.Errors, "PLEG is not healthy: "+err.Error())
	}
	return r
}

// RuntimeFacts are the runtime's handlers and features for the Node's
// status, as of the last Readiness call that reached the runtime; nil
// before one did.
func (e *Engine) RuntimeFacts() *nodestatus.RuntimeFacts { return e.runtimeFacts.Load() }

// nodeRuntimeFacts maps what the runtime reports to the Node's
// runtimeHandlers and features. A handler's userNamespaces is false
// whatever the runtime says: a pod user namespace needs ID mappings this
// kubelet does not allocate, so such pods are refused here (see
// kuberuntime.RefusedUserNamespacesNotImplemented), and the node must not
// advertise them.
func nodeRuntimeFacts(st container.RuntimeStatus) *nodestatus.RuntimeFacts {
	f := &nodestatus.RuntimeFacts{}
	for _, h := range st.Handlers {
		f.Handlers = append(f.Handlers, v1.NodeRuntimeHandler{
			Name: h.Name,
			Features: &v1.NodeRuntimeHandlerFeatures{
				RecursiveReadOnlyMounts: ptr.To(h.RecursiveReadOnlyMounts),
				UserNamespaces:          ptr.To(false),
			},
		})
	}
	if st.Features != nil {
		f.Features = &v1.NodeFeatures{SupplementalGroupsPolicy: ptr.To(st.Features.SupplementalGroupsPolicy)}
	}
	return f
}

// HealthChecks are the engine's liveness checks for /healthz: the sync
// loop iterates, the PLEG relists.
func (e *Engine) HealthChecks() []server.HealthCheck {
	return []server.HealthCheck{{Name: "syncloop", Check: e.syncLoopHealthy}, {Name: "pleg", Check: e.pleg.Healthy}}
}

// RunningPods are what the runtime runs, as bare pods (/runningpods/).
func (e *Engine) RunningPods(ctx context.Context) ([]*v1.Pod, error) {
	running, err := e.runtime.GetPods(ctx, false)
	if err != nil {
		return nil, err
	}
	out := make([]*v1.Pod, 0, len(running))
	for _, rp := range running {
		p := &v1.Pod{
			TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: rp.Name, Namespace: rp.Namespace, UID: rp.UID},
		}
		for _, c := range rp.Containers {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c.Name, Image: c.Image})
		}
		out = append(out, p)
	}
	return out, nil
}

// heartbeat records a sync loop iteration.
func (e *Engine) heartbeat() { e.loopHeartbeat.Store(e.clock.Now().UnixNano()) }

// syncLoopHealthy fails when the sync loop has stalled.
func (e *Engine) syncLoopHealthy() error {
	last := time.Unix(0, e.loopHeartbeat.Load())
	if age := e.clock.Since(last); age > syncLoopThreshold {
		return fmt.Errorf("sync loop last iterated %v ago; threshold is %v", age.Round(time.Second), syncLoopThreshold)
	}
	return nil
}

// reasonCache keeps, per pod, the waiting reasons of the last sync.
type reasonCache struct {
	mu sync.Mutex
	m  map[types.UID]map[string]container.WaitingReason
}

func (r *reasonCache) update(uid types.UID, reasons map[string]container.WaitingReason) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[types.UID]map[string]container.WaitingReason{}
	}
	cur := r.m[uid]
	if cur == nil {
		cur = map[string]container.WaitingReason{}
		r.m[uid] = cur
	}
	for name, w := range reasons {
		if w.Reason == "" {
			delete(cur, name)
		} else {
			cur[name] = w
		}
	}
}

func (r *reasonCache) get(uid types.UID) map[string]container.WaitingReason {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]container.WaitingReason{}
	for k, v := range r.m[uid] {
		out[k] = v
	}
	return out
}

func (r *reasonCache) remove(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, uid)
}

func logger(ctx context.Context) klog.Logger { return klog.FromContext(ctx) }
