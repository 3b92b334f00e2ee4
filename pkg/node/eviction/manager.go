package eviction

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// Timings of the manager, upstream's.
const (
	// DefaultPeriod is how often the signals are observed.
	DefaultPeriod = 10 * time.Second
	// cleanupTimeout bounds the wait for an evicted pod to be cleaned up
	// before the next pass; cleanupPoll is how often it is checked.
	cleanupTimeout = 30 * time.Second
	cleanupPoll    = time.Second
	// immediateGracePeriod is the termination grace period of a pod
	// evicted for a hard threshold or a local storage limit.
	immediateGracePeriod int64 = 1
)

// Event reasons on the node.
const (
	EventThresholdMet = "EvictionThresholdMet"
)

// Observer measures the node's signals. dedicatedImageFs tells whether the
// runtime's images live on another filesystem than the kubelet's root.
type Observer interface {
	Observe(ctx context.Context) (obs Observations, dedicatedImageFs bool, err error)
}

// Pods is the engine's side: the pods that may be evicted and the kill.
type Pods interface {
	// ActivePods are the admitted pods that run or may run.
	ActivePods() []*v1.Pod
	// EvictPod stops the pod for good within gracePeriod seconds, Failed
	// with reason Evicted and msg.
	EvictPod(pod *v1.Pod, gracePeriod int64, msg string)
	// PodCleanedUp reports that nothing of the pod runs any more.
	PodCleanedUp(uid types.UID) bool
}

// UsageProvider measures the pods' usage for ranking (an expensive pass:
// called only when a pod must be picked, or for pods with local storage
// limits).
type UsageProvider func(ctx context.Context, pods []*v1.Pod) UsageFunc

// Reclaimer frees node-level resources (dead containers, unused images)
// before any pod is evicted.
type Reclaimer func(ctx context.Context) error

// Options configure a Manager.
type Options struct {
	Thresholds []Threshold
	// TransitionPeriod is evictionPressureTransitionPeriod.
	TransitionPeriod time.Duration
	// MaxPodGracePeriod is evictionMaxPodGracePeriod, the most a pod evicted
	// for a soft threshold gets to stop.
	MaxPodGracePeriod int64
	// LocalStorageLimits evicts pods past their ephemeral-storage limits
	// (localStorageCapacityIsolation).
	LocalStorageLimits bool
	Observer           Observer
	Pods               Pods
	Usage              UsageProvider
	// Reclaim gives the node-level reclaimers for a disk signal, in order
	// (container GC, then image GC).
	Reclaim  func(signal Signal, dedicatedImageFs bool) []Reclaimer
	Recorder record.EventRecorder
	NodeRef  *v1.ObjectReference
	Period   time.Duration
	Clock    clock.WithTicker
}

// Manager is the eviction manager: every period it observes the signals,
// keeps the node's pressure conditions, and under pressure first reclaims
// node-level resources, then evicts one pod, the first by rank, and waits
// for it to be cleaned up.
type Manager struct {
	o Options

	mu    sync.RWMutex
	state State
	conds []v1.NodeConditionType
}

// New returns a manager; start it with Start.
func New(o Options) *Manager {
	if o.Period == 0 {
		o.Period = DefaultPeriod
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Recorder == nil {
		o.Recorder = &record.FakeRecorder{}
	}
	return &Manager{o: o}
}

// Conditions are the node's pressure conditions now.
func (m *Manager) Conditions() []v1.NodeConditionType {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return append([]v1.NodeConditionType(nil), m.conds...)
}

// Admit is the admission check under pressure (see Admit).
func (m *Manager) Admit(pod *v1.Pod) (bool, string, string) {
	return Admit(pod, m.Conditions())
}

// Start runs the loop until ctx ends.
func (m *Manager) Start(ctx context.Context) error {
	log := klog.FromContext(ctx).WithName("eviction")
	ctx = klog.NewContext(ctx, log)
	log.Info("Eviction manager started", "thresholds", fmt.Sprint(m.o.Thresholds), "period", m.o.Period)
	for {
		evicted := m.Synchronize(ctx)
		if evicted != nil {
			m.waitForCleanup(ctx, evicted)
		} else {
			select {
			case <-ctx.Done():
				return nil
			case <-m.o.Clock.After(m.o.Period):
			}
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// Synchronize runs one pass and returns the pod it evicted, if any.
func (m *Manager) Synchronize(ctx context.Context) *v1.Pod {
	log := klog.FromContext(ctx)
	if len(m.o.Thresholds) == 0 && !m.o.LocalStorageLimits {
		return nil
	}
	obs, dedicated, err := m.o.Observer.Observe(ctx)
	if err != nil {
		log.Error(err, "Eviction manager: observing the node's signals failed")
		return nil
	}
	now := m.o.Clock.Now()
	m.mu.Lock()
	step := m.state.Update(m.o.Thresholds, obs, now, m.o.TransitionPeriod)
	if !sameConditions(m.conds, step.Conditions) {
		log.Info("Eviction manager: node pressure conditions changed", "conditions", step.Conditions, "observations", describe(obs))
	}
	m.conds = step.Conditions
	m.mu.Unlock()

	if m.o.LocalStorageLimits {
		if p := m.localStorageEviction(ctx); p != nil {
			return p
		}
	}
	if len(step.Act) == 0 {
		return nil
	}
	t := step.Act[0]
	res := t.Signal.Resource()
	log.Info("Eviction manager: attempting to reclaim", "resourceName", res, "threshold", t.String(), "observations", describe(obs))
	if m.o.NodeRef != nil {
		m.o.Recorder.Eventf(m.o.NodeRef, v1.EventTypeWarning, EventThresholdMet, "Attempting to reclaim %s", res)
	}
	if m.reclaimNodeLevel(ctx, t.Signal, dedicated) {
		log.Info("Eviction manager: able to reduce resource pressure without evicting pods", "resourceName", res)
		return nil
	}
	pods := m.o.Pods.ActivePods()
	if len(pods) == 0 {
		log.Error(nil, "Eviction manager: eviction thresholds have been met, but no pods are active to evict")
		return nil
	}
	usage := m.o.Usage(ctx, pods)
	Rank(pods, t.Signal, dedicated, usage)
	log.Info("Eviction manager: pods ranked for eviction", "pods", klog.KObjSlice(pods))
	// How old the observations behind this eviction are, per met
	// threshold's signal.
	for _, met := range step.Act {
		if o := obs[met.Signal]; !o.Time.IsZero() {
			metrics.EvictionStatsAge.WithLabelValues(string(met.Signal)).Observe(max(0, m.o.Clock.Since(o.Time)).Seconds())
		}
	}
	for _, p := range pods {
		if podspec.IsCritical(p) {
			log.Error(nil, "Eviction manager: cannot evict a critical pod", "pod", klog.KObj(p))
			continue
		}
		grace := immediateGracePeriod
		if !t.Hard() {
			grace = m.o.MaxPodGracePeriod
			if tg := p.Spec.TerminationGracePeriodSeconds; tg != nil && *tg < grace {
				grace = *tg
			}
		}
		u, ok := usage(p)
		msg := Message(res, p, u, ok, t, obs)
		m.o.Recorder.Event(p, v1.EventTypeWarning, Reason, msg)
		log.Info("Eviction manager: evicting pod", "pod", klog.KObj(p), "podUID", p.UID, "gracePeriod", grace, "message", msg)
		m.o.Pods.EvictPod(p, grace, msg)
		metrics.Evictions.WithLabelValues(string(t.Signal)).Inc()
		return p
	}
	log.Info("Eviction manager: unable to evict any pods from the node")
	return nil
}

// reclaimNodeLevel runs the signal's reclaimers and reports whether no
// threshold is met any more, minimum reclaims included.
func (m *Manager) reclaimNodeLevel(ctx context.Context, s Signal, dedicated bool) bool {
	if m.o.Reclaim == nil {
		return false
	}
	rs := m.o.Reclaim(s, dedicated)
	if len(rs) == 0 {
		return false
	}
	for _, r := range rs {
		if err := r(ctx); err != nil {
			klog.FromContext(ctx).Info("Eviction manager: unexpected error when attempting to reduce resource pressure", "signal", s, "err", err)
		}
	}
	obs, _, err := m.o.Observer.Observe(ctx)
	if err != nil {
		return false
	}
	return len(Met(m.o.Thresholds, obs, true)) == 0
}

// localStorageEviction evicts the first pod found past its pod or
// container ephemeral-storage limit (emptyDir sizeLimit is the volume
// manager's), with upstream's messages.
func (m *Manager) localStorageEviction(ctx context.Context) *v1.Pod {
	var limited []*v1.Pod
	for _, p := range m.o.Pods.ActivePods() {
		if hasEphemeralLimit(p) {
			limited = append(limited, p)
		}
	}
	if len(limited) == 0 {
		return nil
	}
	usage := m.o.Usage(ctx, limited)
	for _, p := range limited {
		u, ok := usage(p)
		if !ok || podspec.IsCritical(p) {
			continue
		}
		msg, signal := localStorageViolation(p, u)
		if msg == "" {
			continue
		}
		m.o.Recorder.Event(p, v1.EventTypeWarning, Reason, msg)
		klog.FromContext(ctx).Info("Eviction manager: evicting pod past its local storage limit", "pod", klog.KObj(p), "message", msg)
		m.o.Pods.EvictPod(p, immediateGracePeriod, msg)
		metrics.Evictions.WithLabelValues(signal).Inc()
		return p
	}
	return nil
}

func hasEphemeralLimit(p *v1.Pod) bool {
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Limits[v1.ResourceEphemeralStorage]; ok && !q.IsZero() {
			return true
		}
	}
	return false
}

// localStorageViolation returns upstream's message, and the eviction
// signal to count it under, when the pod's ephemeral usage (writable
// layers, logs, local volumes) exceeds the sum of its containers' limits,
// or one container's (writable layer and logs) exceeds its own.
func localStorageViolation(p *v1.Pod, u PodUsage) (string, string) {
	limits := resourcehelper.PodLimits(p, resourcehelper.PodResourcesOptions{})
	if lim, ok := limits[v1.ResourceEphemeralStorage]; ok {
		if total := u.Rootfs + u.Logs + u.Volumes; total > lim.Value() {
			return fmt.Sprintf("Pod ephemeral local storage usage exceeds the total limit of containers %s. ", lim.String()), metrics.EvictionSignalEphemeralPodFsLimit
		}
	}
	for _, c := range p.Spec.Containers {
		lim, ok := c.Resources.Limits[v1.ResourceEphemeralStorage]
		if !ok || lim.IsZero() {
			continue
		}
		if cu, ok := u.Containers[c.Name]; ok && cu.Rootfs+cu.Logs > lim.Value() {
			return fmt.Sprintf("Container %s exceeded its local ephemeral storage limit %q. ", c.Name, lim.String()), metrics.EvictionSignalEphemeralContainerFsLimit
		}
	}
	return "", ""
}

func (m *Manager) waitForCleanup(ctx context.Context, p *v1.Pod) {
	timeout := m.o.Clock.NewTimer(cleanupTimeout)
	defer timeout.Stop()
	tick := m.o.Clock.NewTicker(cleanupPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timeout.C():
			klog.FromContext(ctx).Info("Eviction manager: timed out waiting for pods to be cleaned up", "pod", klog.KObj(p))
			return
		case <-tick.C():
			if m.o.Pods.PodCleanedUp(p.UID) {
				klog.FromContext(ctx).Info("Eviction manager: pods successfully cleaned up", "pod", klog.KObj(p))
				return
			}
		}
	}
}

func sameConditions(a, b []v1.NodeConditionType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func describe(obs Observations) map[string]string {
	out := map[string]string{}
	for s, o := range obs {
		out[string(s)] = fmt.Sprintf("%v/%v", quantity(s.Resource(), o.Available), quantity(s.Resource(), o.Capacity))
	}
	return out
}
