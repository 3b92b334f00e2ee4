package statuswriter

import (
	"fmt"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/podstatus"
)

// Target is the API object that carries a pod's status.
type Target struct {
	// Pod is the object as the informer last saw it: the pod itself, or the
	// mirror pod of a static pod. Its name, namespace and UID address the
	// write; its status is the API's view used to compute the patch and to
	// reconcile; its deletionTimestamp starts the final delete.
	Pod *v1.Pod
	// Mirror is true when Pod is the mirror pod of a static pod.
	Mirror bool
}

// PodResolver is what the manager needs to know about pods from the rest of
// the kubelet. Its methods are called from the manager's workers and must
// not block.
type PodResolver interface {
	// StatusTarget returns the API object that carries the status of the
	// pod with this UID. false when there is none (yet): a static pod whose
	// mirror pod does not exist, or a pod unknown to the API. The manager
	// tries again on the next change or reconcile.
	StatusTarget(uid types.UID) (Target, bool)
	// PodTerminated reports whether the kubelet has finished terminating
	// the pod: none of its containers runs or will run again. Until then a
	// terminal phase is held back from the API server (the API keeps its
	// non-terminal phase), so that no controller sees Succeeded or Failed
	// while a container may still run.
	PodTerminated(uid types.UID) bool
	// CanBeDeleted reports whether nothing of the pod is left on the node
	// (containers and sandboxes removed, volumes cleaned up), so that its API
	// object can be deleted for good. pod is the kubelet's copy.
	CanBeDeleted(pod *v1.Pod) bool
}

// Options configure a Manager. The zero value is a standalone cache.
type Options struct {
	// Client writes to the API server; nil in standalone mode.
	Client kubernetes.Interface
	// Resolver maps pods to their API objects. When nil, a pod is written
	// as the object given to SetPodStatus (static pods are not written),
	// terminal phases are not held back, and pods are never deleted.
	Resolver PodResolver
	// Workers is the number of concurrent writers (default 4).
	Workers int
	// ReconcilePeriod is how often the cache is compared with the API's
	// view (default 10s).
	ReconcilePeriod time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// RetryBase and RetryMax bound the per-pod back-off after a failed write
	// (default 50ms and 30s).
	RetryBase, RetryMax time.Duration
}

// Manager caches pod statuses and writes them to the API server.
type Manager struct {
	client   kubernetes.Interface
	resolver PodResolver
	workers  int
	period   time.Duration
	now      func() time.Time
	queue    workqueue.TypedRateLimitingInterface[types.UID]

	mu   sync.Mutex
	pods map[types.UID]*entry
}

type entry struct {
	// pod is the kubelet's copy of the pod.
	pod *v1.Pod
	// status is the latest status, normalized.
	status v1.PodStatus
	// written is the UID and status of the API object returned by our
	// last successful write, nil when there was none or the reconcile
	// found the API changed since.
	written *v1.Pod
	// deleted is set once the final delete was issued.
	deleted bool
	// changedAt is when the status first changed since the last write
	// took it (zero: nothing unwritten), for
	// kubelet_pod_status_sync_duration_seconds.
	changedAt time.Time
	// gen counts the changes of status.
	gen uint64
	// inSync is what the last reconcile found in sync with the API (the
	// zero value: nothing), so the next one compares again only when the
	// API object, our status or the pod's termination changed since.
	inSync reconciled
}

// reconciled names one comparison of the reconcile: the API object's
// resourceVersion, our status's generation and whether the pod finished.
type reconciled struct {
	rv       string
	gen      uint64
	finished bool
}

// NewManager returns a manager; call Run to start writing.
func NewManager(opts Options) *Manager {
	m := &Manager{
		client:   opts.Client,
		resolver: opts.Resolver,
		workers:  opts.Workers,
		period:   opts.ReconcilePeriod,
		now:      opts.Now,
		pods:     map[types.UID]*entry{},
	}
	if m.workers <= 0 {
		m.workers = 4
	}
	if m.period <= 0 {
		m.period = 10 * time.Second
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.resolver == nil {
		m.resolver = ownPods{m}
	}
	if m.client != nil {
		base, max := opts.RetryBase, opts.RetryMax
		if base <= 0 {
			base = 50 * time.Millisecond
		}
		if max <= 0 {
			max = 30 * time.Second
		}
		m.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[types.UID](base, max),
			workqueue.TypedRateLimitingQueueConfig[types.UID]{Name: "pod_status"})
	}
	return m
}

// SetPodStatus records the latest status of pod and, with a client, queues
// a write. The rules in the package doc apply; an update that would show a
// terminated container running again against the restart policy is refused
// and logged.
func (m *Manager) SetPodStatus(pod *v1.Pod, st v1.PodStatus) {
	st = *st.DeepCopy()
	normalize(&st)
	now := metav1.NewTime(m.now()).Rfc3339Copy()

	m.mu.Lock()
	e := m.pods[pod.UID]
	var old v1.PodStatus
	if e != nil {
		old = e.status
	} else {
		old = *pod.Status.DeepCopy()
		normalize(&old)
	}

	if podstatus.IsTerminal(old.Phase) && st.Phase != old.Phase {
		klog.V(2).InfoS("Refusing to leave a terminal phase", "pod", klog.KObj(pod), "podUID", pod.UID, "phase", old.Phase, "attempted", st.Phase)
		st.Phase, st.Reason, st.Message = old.Phase, old.Reason, old.Message
	}
	if err := checkContainerTransitions(pod, &old, &st); err != nil {
		m.mu.Unlock()
		klog.ErrorS(err, "Refusing pod status update", "pod", klog.KObj(pod), "podUID", pod.UID)
		return
	}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		o := podspec.FindCondition(old.Conditions, c.Type)
		switch {
		case o != nil && o.Status == c.Status && !o.LastTransitionTime.IsZero():
			c.LastTransitionTime = o.LastTransitionTime
		case c.LastTransitionTime.IsZero(), o != nil && !c.LastTransitionTime.After(o.LastTransitionTime.Time):
			// Changed, and the caller's time does not say when: now.
			c.LastTransitionTime = now
		}
	}
	switch {
	case old.StartTime != nil && !old.StartTime.IsZero():
		st.StartTime = old.StartTime.DeepCopy()
	case st.StartTime == nil || st.StartTime.IsZero():
		st.StartTime = &now
	}

	changed := e == nil || !equalStatus(&e.status, &st)
	if e == nil {
		e = &entry{}
		m.pods[pod.UID] = e
	}
	// The copy kept leaves out managedFields: nothing here reads them,
	// and a node with thousands of pods would hold them all.
	shallow := *pod
	shallow.ManagedFields = nil
	e.pod = shallow.DeepCopy()
	e.status = st
	if changed {
		e.gen++
	}
	if changed && m.queue != nil && e.changedAt.IsZero() {
		e.changedAt = m.now()
	}
	// Queue when there is something to write, or a final delete to check.
	enqueue := changed || e.written == nil || (pod.DeletionTimestamp != nil && !e.deleted)
	m.mu.Unlock()

	if enqueue && m.queue != nil {
		m.queue.Add(pod.UID)
	}
}

// Phase returns the cached phase of the pod, without copying its status.
func (m *Manager) Phase(uid types.UID) (v1.PodPhase, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.pods[uid]
	if !ok {
		return "", false
	}
	return e.status.Phase, true
}

// GetPodStatus returns a copy of the cached status of the pod.
func (m *Manager) GetPodStatus(uid types.UID) (v1.PodStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.pods[uid]
	if !ok {
		return v1.PodStatus{}, false
	}
	return *e.status.DeepCopy(), true
}

// Sync queues a write (and final-delete check) for the pod now, for example
// when the kubelet finished terminating or cleaning it up.
func (m *Manager) Sync(uid types.UID) {
	if m.queue == nil {
		return
	}
	m.mu.Lock()
	_, ok := m.pods[uid]
	m.mu.Unlock()
	if ok {
		m.queue.Add(uid)
	}
}

// RemovePod forgets the pod.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	delete(m.pods, uid)
	m.mu.Unlock()
	if m.queue != nil {
		m.queue.Forget(uid)
	}
}

// RemoveOrphans forgets every pod for which keep returns false.
func (m *Manager) RemoveOrphans(keep func(uid types.UID) bool) {
	m.mu.Lock()
	var gone []types.UID
	for uid := range m.pods {
		if !keep(uid) {
			gone = append(gone, uid)
		}
	}
	for _, uid := range gone {
		delete(m.pods, uid)
	}
	m.mu.Unlock()
	if m.queue != nil {
		for _, uid := range gone {
			m.queue.Forget(uid)
		}
	}
}

// checkContainerTransitions refuses a status that shows a terminated
// container as not terminated when the pod's restart policy does not let it
// leave that state (podspec.MayLeaveTerminated).
func checkContainerTransitions(pod *v1.Pod, old, st *v1.PodStatus) error {
	check := func(olds, news []v1.ContainerStatus, specs []v1.Container, init bool) error {
		for _, o := range olds {
			if o.State.Terminated == nil {
				continue
			}
			c := podspec.FindIn(specs, o.Name)
			if c == nil {
				c = &v1.Container{Name: o.Name} // not in the spec: no sidecar
			}
			if podspec.MayLeaveTerminated(pod, c, init, o.State.Terminated.ExitCode) {
				continue
			}
			if n := podspec.FindStatus(news, o.Name); n != nil && n.State.Terminated == nil {
				return fmt.Errorf("terminated container %q attempted illegal transition to a non-terminated state", n.Name)
			}
		}
		return nil
	}
	if err := check(old.ContainerStatuses, st.ContainerStatuses, pod.Spec.Containers, false); err != nil {
		return err
	}
	return check(old.InitContainerStatuses, st.InitContainerStatuses, pod.Spec.InitContainers, true)
}

// normalize makes a status compare equal to its round trip through the API
// server: times at second precision.
func normalize(s *v1.PodStatus) {
	if s.StartTime != nil {
		t := s.StartTime.Rfc3339Copy()
		s.StartTime = &t
	}
	for i := range s.Conditions {
		s.Conditions[i].LastProbeTime = s.Conditions[i].LastProbeTime.Rfc3339Copy()
		s.Conditions[i].LastTransitionTime = s.Conditions[i].LastTransitionTime.Rfc3339Copy()
	}
	for _, list := range [][]v1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses, s.EphemeralContainerStatuses} {
		for i := range list {
			normalizeState(&list[i].State)
			normalizeState(&list[i].LastTerminationState)
		}
	}
}

func normalizeState(s *v1.ContainerState) {
	if s.Running != nil {
		s.Running.StartedAt = s.Running.StartedAt.Rfc3339Copy()
	}
	if s.Terminated != nil {
		s.Terminated.StartedAt = s.Terminated.StartedAt.Rfc3339Copy()
		s.Terminated.FinishedAt = s.Terminated.FinishedAt.Rfc3339Copy()
	}
}

// equalStatus compares two statuses, ignoring the order of conditions.
func equalStatus(a, b *v1.PodStatus) bool {
	return apiequality.Semantic.DeepEqual(sortedConditions(a), sortedConditions(b))
}

func sortedConditions(s *v1.PodStatus) *v1.PodStatus {
	c := s.DeepCopy()
	sort.SliceStable(c.Conditions, func(i, j int) bool { return c.Conditions[i].Type < c.Conditions[j].Type })
	if len(c.Conditions) == 0 {
		c.Conditions = nil
	}
	return c
}

// ownPods is the resolver used when the caller gives none: a pod is its own
// target, as last given to SetPodStatus; static pods have none.
type ownPods struct{ m *Manager }

func (r ownPods) StatusTarget(uid types.UID) (Target, bool) {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	e, ok := r.m.pods[uid]
	if !ok || podspec.IsStatic(e.pod) {
		return Target{}, false
	}
	return Target{Pod: e.pod}, true
}

func (ownPods) PodTerminated(types.UID) bool { return true }
func (ownPods) CanBeDeleted(*v1.Pod) bool    { return false }
