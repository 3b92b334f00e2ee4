package prober

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/podstatus"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/upstream"
)

// DefaultUserAgent is the User-Agent of HTTP and gRPC probes, as upstream's
// kubelet of the API version this one speaks.
const DefaultUserAgent = "kube-probe/" + upstream.Minor

// Options configure a Manager.
type Options struct {
	// Exec runs exec probes in containers (see CRIExec). Without it exec
	// probes error (and so never change a result).
	Exec ExecFunc
	// Recorder receives Unhealthy and ProbeWarning events.
	Recorder record.EventRecorder
	// Clock drives the workers' timers; the real clock when nil.
	Clock clock.Clock
	// HostIPs are the node's IPs, primary first: what probes without a host
	// reach for host-network pods.
	HostIPs []string
	// UserAgent of HTTP and gRPC probes (DefaultUserAgent when empty).
	UserAgent string
	// H2C runs httpGet probes with protocol HTTP2 over HTTP/2 cleartext
	// with prior knowledge (the H2CContainerProbe gate).
	H2C bool
	// GRPCTLS runs grpc probes with mode TLS over TLS, without verifying
	// the certificate (the GRPCContainerProbeTLS gate).
	GRPCTLS bool
	// EventInterval is the least time between two identical Unhealthy
	// events of one worker (default one minute). A new message, or a new
	// container instance, is reported at once.
	EventInterval time.Duration
}

// Manager runs probe workers and keeps their results. All methods are safe
// for concurrent use; none blocks on a probe. A nil *Manager runs no probes:
// its methods do nothing, Result is nil (podstatus then ignores probes) and
// Updates never delivers.
type Manager struct {
	opts  Options
	clock clock.Clock
	http  *http.Client
	// h2c is http's twin over HTTP/2 cleartext (nil without opts.H2C).
	h2c *http.Client

	mu      sync.Mutex
	pods    map[types.UID]*podEntry
	results map[resultKey]resultEntry
	stopped bool

	pendMu   sync.Mutex
	pending  map[types.UID]struct{}
	kick     chan struct{}
	updates  chan types.UID
	done     chan struct{}
	pumpOnce sync.Once
	wg       sync.WaitGroup

	// run replaces runProbe in tests; start replaces starting a worker's
	// goroutine (tests step workers by hand).
	run   func(ctx context.Context, p *v1.Probe, t target) (outcome, error)
	start func(w *worker)
}

// podEntry is what the manager knows of one pod.
type podEntry struct {
	pod *v1.Pod
	// host is the address probes without a host of their own reach.
	host      string
	instances map[string]instance
	workers   map[workerKey]*worker
}

// instance is the newest runtime instance of one container.
type instance struct {
	id        string
	running   bool
	startedAt time.Time
}

type workerKey struct {
	name string
	kind Kind
}

type resultKey struct {
	uid  types.UID
	name string
	kind Kind
}

// resultEntry is the latest result of one worker, for one instance.
type resultEntry struct {
	id     string
	result Result
}

// NewManager returns a Manager with no pods. Call Stop to end its
// goroutines.
func NewManager(o Options) *Manager {
	if o.Recorder == nil {
		o.Recorder = &record.FakeRecorder{}
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	if o.EventInterval <= 0 {
		o.EventInterval = time.Minute
	}
	m := &Manager{
		opts:    o,
		clock:   o.Clock,
		http:    newHTTPClient(false),
		pods:    map[types.UID]*podEntry{},
		results: map[resultKey]resultEntry{},
		pending: map[types.UID]struct{}{},
		kick:    make(chan struct{}, 1),
		updates: make(chan types.UID),
		done:    make(chan struct{}),
	}
	if o.H2C {
		m.h2c = newHTTPClient(true)
	}
	m.run = m.runProbe
	m.start = func(w *worker) {
		m.wg.Add(1)
		go w.run()
	}
	return m
}

// Updates delivers the UID of a pod whose probe results changed, so the
// kubelet syncs it again (its status, and the kill of a container that
// failed liveness). Signals are coalesced per pod while nobody reads; a
// worker never waits for the reader.
func (m *Manager) Updates() <-chan types.UID {
	if m == nil {
		return nil
	}
	return m.updates
}

// Start runs until ctx ends, then stops every worker (see Stop). Workers
// themselves start with the pods they probe (UpdatePod).
func (m *Manager) Start(ctx context.Context) error {
	<-ctx.Done()
	m.Stop()
	return nil
}

// Stop ends every worker and the update pump, and waits for them.
func (m *Manager) Stop() {
	if m == nil {
		return
	}
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return
	}
	m.stopped = true
	close(m.done)
	for _, pe := range m.pods {
		for _, w := range pe.workers {
			w.halt()
		}
	}
	m.mu.Unlock()
	m.wg.Wait()
}

// UpdatePod tells the manager the pod's spec and what the runtime last
// showed of it (after every sync). It starts workers for probes in the spec
// (app containers and sidecars), stops those no longer there, and learns
// each container's newest instance and the pod's IP. A terminal pod has its
// workers stopped; a pod being deleted keeps only readiness.
func (m *Manager) UpdatePod(pod *v1.Pod, status *container.PodStatus) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped || pod == nil {
		return
	}
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		m.removeLocked(pod.UID)
		return
	}
	pe := m.pods[pod.UID]
	if pe == nil {
		pe = &podEntry{instances: map[string]instance{}, workers: map[workerKey]*worker{}}
	}
	pe.pod = pod
	hostChanged := false
	if h := m.podHost(pod, status); h != pe.host {
		pe.host, hostChanged = h, true
	}

	want := map[workerKey]bool{}
	for _, c := range probedContainers(pod) {
		var inst instance
		if s := status.Latest(c.Name); s != nil {
			inst = instance{id: s.ID, running: s.State == container.StateRunning, startedAt: s.StartedAt}
		}
		changed := hostChanged || pe.instances[c.Name] != inst
		pe.instances[c.Name] = inst
		for _, kind := range []Kind{Startup, Readiness, Liveness} {
			if probeOf(c, kind) == nil || (kind != Readiness && pod.DeletionTimestamp != nil) {
				continue
			}
			k := workerKey{c.Name, kind}
			want[k] = true
			if w, ok := pe.workers[k]; ok {
				if changed {
					w.poke()
				}
				continue
			}
			m.warnIgnoredFields(pod, c, kind)
			w := newWorker(m, pod.UID, c.Name, kind)
			m.seed(w, pod, inst)
			pe.workers[k] = w
			m.start(w)
		}
	}
	for k, w := range pe.workers {
		if want[k] {
			continue
		}
		w.halt()
		delete(pe.workers, k)
		rk := resultKey{pod.UID, k.name, k.kind}
		if pod.DeletionTimestamp != nil && k.kind == Startup {
			// Being deleted: the container counts as started, as upstream.
			if id := pe.instances[k.name].id; id != "" {
				m.results[rk] = resultEntry{id: id, result: Success}
			}
			continue
		}
		delete(m.results, rk)
	}
	m.pods[pod.UID] = pe
}

// seed starts a new worker from the pod's last reported status when that
// status is about the container's current running instance and holds a
// verdict for the worker's kind: Ready for readiness, Started for startup.
// A restarted kubelet thus keeps reporting a ready container ready (and a
// started one started) until its probes say otherwise, instead of
// resetting them (upstream issue 100277). A new instance, or a status about
// another one, starts from no result as before. Called with m.mu held,
// before the worker runs.
func (m *Manager) seed(w *worker, pod *v1.Pod, inst instance) {
	if inst.id == "" || !inst.running || (w.kind != Readiness && w.kind != Startup) {
		return
	}
	rk := resultKey{pod.UID, w.name, w.kind}
	if _, ok := m.results[rk]; ok {
		return
	}
	cs := podspec.FindStatus(pod.Status.ContainerStatuses, w.name)
	if cs == nil {
		cs = podspec.FindStatus(pod.Status.InitContainerStatuses, w.name)
	}
	if cs == nil || cs.State.Running == nil {
		return
	}
	if _, id, _ := strings.Cut(cs.ContainerID, "://"); id != inst.id {
		return
	}
	switch {
	case w.kind == Readiness && cs.Ready:
	case w.kind == Startup && cs.Started != nil && *cs.Started:
	default:
		return
	}
	w.containerID, w.lastResult, w.resultRun, w.probed = inst.id, Success, 1, true
	m.results[rk] = resultEntry{id: inst.id, result: Success}
}

// RemovePod stops the pod's workers and forgets its results.
func (m *Manager) RemovePod(uid types.UID) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removeLocked(uid)
}

func (m *Manager) removeLocked(uid types.UID) {
	pe := m.pods[uid]
	if pe == nil {
		return
	}
	for _, w := range pe.workers {
		w.halt()
	}
	for k := range m.results {
		if k.uid == uid {
			delete(m.results, k)
		}
	}
	delete(m.pods, uid)
}

// Result returns the startup and readiness results of the pod's containers
// in the form podstatus.Options.Probes takes. containerID may carry the
// "<runtime>://" prefix of the API's containerID.
func (m *Manager) Result(uid types.UID) podstatus.ProbeResults {
	if m == nil {
		return nil
	}
	return func(kind podstatus.ProbeKind, name, containerID string) (bool, bool) {
		k := Readiness
		if kind == podstatus.StartupProbe {
			k = Startup
		}
		r := m.result(uid, name, k, containerID)
		return r == Success, r != Unknown
	}
}

// StartupSucceeded reports whether the startup probe of one running
// container instance has succeeded: false until it has a result and while
// it fails. It has the shape kuberuntime.Options.Started takes (the next
// init container waits for a sidecar's startup probe). A container without
// a startup probe has no result: callers only ask for probed ones.
func (m *Manager) StartupSucceeded(uid types.UID, name, containerID string) bool {
	if m == nil {
		return true
	}
	return m.result(uid, name, Startup, containerID) == Success
}

// Liveness reports whether the liveness or startup probe of one container
// instance reached its failureThreshold; message says which in upstream's
// words ("Container web failed liveness probe"). It has the shape
// kuberuntime.Options.Liveness takes.
func (m *Manager) Liveness(uid types.UID, name, containerID string) (bool, string) {
	if m == nil {
		return false, ""
	}
	if m.result(uid, name, Startup, containerID) == Failure {
		return true, fmt.Sprintf("Container %s failed startup probe", name)
	}
	if m.result(uid, name, Liveness, containerID) == Failure {
		return true, fmt.Sprintf("Container %s failed liveness probe", name)
	}
	return false, ""
}

func (m *Manager) result(uid types.UID, name string, kind Kind, containerID string) Result {
	if _, id, ok := strings.Cut(containerID, "://"); ok {
		containerID = id
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.results[resultKey{uid, name, kind}]
	if !ok || e.id != containerID || containerID == "" {
		return Unknown
	}
	return e.result
}

// setResult records a worker's result for an instance and signals the pod
// when it changed. A startup success wakes the instance's other workers.
func (m *Manager) setResult(w *worker, id string, r Result) {
	uid, name, kind := w.uid, w.name, w.kind
	m.mu.Lock()
	k := resultKey{uid, name, kind}
	prev, had := m.results[k]
	if pe := m.pods[uid]; pe == nil || pe.workers[workerKey{name, kind}] != w {
		// The worker was stopped while probing: its word is stale.
		m.mu.Unlock()
		return
	}
	m.results[k] = resultEntry{id: id, result: r}
	changed := !had || prev.id != id || prev.result != r
	if changed && kind == Startup && r == Success {
		for wk, w := range m.pods[uid].workers {
			if wk.name == name && wk.kind != Startup {
				w.poke()
			}
		}
	}
	m.mu.Unlock()
	if changed && r != Unknown {
		m.notify(uid)
	}
}

// snapshot is what a worker reads of its pod before a probe.
type snapshot struct {
	pod       *v1.Pod
	container *v1.Container
	probe     *v1.Probe
	host      string
	inst      instance
	// started: the instance has no startup probe, or it succeeded.
	started bool
}

func (m *Manager) snapshot(uid types.UID, name string, kind Kind) (snapshot, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	pe := m.pods[uid]
	if pe == nil {
		return snapshot{}, false
	}
	c := findContainer(pe.pod, name)
	if c == nil || probeOf(c, kind) == nil {
		return snapshot{}, false
	}
	s := snapshot{pod: pe.pod, container: c, probe: probeOf(c, kind), host: pe.host, inst: pe.instances[name], started: true}
	if c.StartupProbe != nil {
		e := m.results[resultKey{uid, name, Startup}]
		s.started = e.id == s.inst.id && e.result == Success
	}
	return s, true
}

// notify queues uid for Updates without blocking.
func (m *Manager) notify(uid types.UID) {
	m.pendMu.Lock()
	m.pending[uid] = struct{}{}
	m.pendMu.Unlock()
	m.pumpOnce.Do(func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.stopped {
			return
		}
		m.wg.Add(1)
		go m.pump()
	})
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// pump hands queued UIDs to the Updates reader, one at a time.
func (m *Manager) pump() {
	defer m.wg.Done()
	for {
		select {
		case <-m.done:
			return
		case <-m.kick:
		}
		for {
			m.pendMu.Lock()
			var uid types.UID
			found := false
			for u := range m.pending {
				uid, found = u, true
				delete(m.pending, u)
				break
			}
			m.pendMu.Unlock()
			if !found {
				break
			}
			select {
			case m.updates <- uid:
			case <-m.done:
				return
			}
		}
	}
}

// podHost is the address of the pod for probes: its IP, the node's for a
// host-network pod, else the IP the API shows.
func (m *Manager) podHost(pod *v1.Pod, status *container.PodStatus) string {
	if status != nil && len(status.IPs) > 0 {
		return status.IPs[0]
	}
	if pod.Spec.HostNetwork && len(m.opts.HostIPs) > 0 {
		return m.opts.HostIPs[0]
	}
	return pod.Status.PodIP
}

// probedContainers are the containers that may have probes: app containers
// and sidecars (restartable init containers).
func probedContainers(pod *v1.Pod) []*v1.Container {
	var out []*v1.Container
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if podspec.IsSidecar(c) {
			out = append(out, c)
		}
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

func findContainer(pod *v1.Pod, name string) *v1.Container {
	for _, c := range probedContainers(pod) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func probeOf(c *v1.Container, kind Kind) *v1.Probe {
	switch kind {
	case Liveness:
		return c.LivenessProbe
	case Readiness:
		return c.ReadinessProbe
	case Startup:
		return c.StartupProbe
	}
	return nil
}
