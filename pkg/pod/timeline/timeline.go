// Package timeline records where each pod's start spent its time: when the
// kubelet first saw the pod, when its pod worker took it up (after
// admission), when its sandbox was ready, each image pull, each container
// created and started, when every container ran, when the pod was Ready
// and, for API pods, when the API server's copy showed it running. The
// timeline is served on /stats/timeline (see docs/metrics.md) and feeds
// the pod startup metrics: upstream's kubelet_pod_start_duration_seconds,
// kubelet_pod_start_sli_duration_seconds,
// kubelet_pod_start_total_duration_seconds,
// kubelet_pod_worker_start_duration_seconds, and this kubelet's
// kubelet_pod_startup_phase_duration_seconds by phase.
//
// Only pods the kubelet starts are timed: a pod that already has a start
// time when first seen, or whose containers were already running (adopted
// after a kubelet restart), is marked adopted and feeds no metric.
//
// Every entry point is cheap (a map lookup under a mutex and a few
// comparisons); nothing here calls the runtime or the API server.
package timeline

import (
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/pod/podconfig"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/runtime/instrumented"
)

// EventType names a moment of a pod's start.
type EventType string

// The events of a timeline.
const (
	// Seen: the kubelet first saw the pod (its config.seen annotation).
	Seen EventType = "Seen"
	// WorkerStarted: the pod worker began its first sync of the pod, after
	// admission.
	WorkerStarted        EventType = "WorkerStarted"
	SandboxReady         EventType = "SandboxReady"
	SandboxFailed        EventType = "SandboxFailed"
	ImagePulled          EventType = "ImagePulled"
	ImagePullFailed      EventType = "ImagePullFailed"
	ContainerCreated     EventType = "ContainerCreated"
	ContainerCreateError EventType = "ContainerCreateFailed"
	ContainerStarted     EventType = "ContainerStarted"
	ContainerStartError  EventType = "ContainerStartFailed"
	// PhaseRunning: the pod's status phase first became Running.
	PhaseRunning EventType = "PhaseRunning"
	// Running: the kubelet's status first showed every container running.
	Running EventType = "Running"
	// Ready: the pod's Ready condition first became true.
	Ready EventType = "Ready"
	// ObservedRunning: the API server's copy of the pod, seen on the
	// kubelet's watch, first showed every container running.
	ObservedRunning EventType = "ObservedRunning"
)

// Phases of a start, the phase label of
// kubelet_pod_startup_phase_duration_seconds. Together, admission, sandbox,
// image_pull and containers cover the time from Seen to Running.
const (
	// PhaseAdmission: Seen → WorkerStarted (queueing and admission).
	PhaseAdmission = "admission"
	// PhaseSandbox: WorkerStarted → SandboxReady (sandbox and network).
	PhaseSandbox = "sandbox"
	// PhaseImagePull: time spent pulling images before Running
	// (overlapping pulls counted once).
	PhaseImagePull = "image_pull"
	// PhaseContainers: SandboxReady → Running minus image pulls: creating
	// and starting containers, init containers' run time included.
	PhaseContainers = "containers"
	// PhaseReadiness: Running → Ready (readiness and startup probes).
	PhaseReadiness = "readiness"
	// PhaseAPIReport: Running → ObservedRunning (status written to and
	// seen back from the API server).
	PhaseAPIReport = "api_report"
)

// maxEvents bounds a timeline (a pod failing to pull or start keeps
// trying; the first attempts tell the story).
const maxEvents = 64

// Event is one moment of a pod's start.
type Event struct {
	Time      time.Time `json:"time"`
	Type      EventType `json:"type"`
	Container string    `json:"container,omitempty"`
	Image     string    `json:"image,omitempty"`
	// DurationSeconds is how long the runtime call took (sandbox, pull,
	// create, start).
	DurationSeconds float64 `json:"durationSeconds,omitempty"`
	Error           string  `json:"error,omitempty"`
}

// Timeline is one pod's start, as served.
type Timeline struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
	// Created is the pod's creation timestamp (API pods).
	Created *time.Time `json:"created,omitempty"`
	// Adopted: the pod was already started when this kubelet took it up;
	// its timeline records what was seen, and it feeds no metric.
	Adopted bool `json:"adopted,omitempty"`
	// Complete: the pod reached Ready.
	Complete bool    `json:"complete"`
	Events   []Event `json:"events"`
	// PhasesSeconds are the phase durations known so far.
	PhasesSeconds map[string]float64 `json:"phasesSeconds,omitempty"`
	// TotalSeconds is Seen → Ready, or Seen → Running before Ready.
	TotalSeconds float64 `json:"totalSeconds,omitempty"`
}

type interval struct{ start, end time.Time }

// record is the tracker's state for one pod.
type record struct {
	namespace, name string
	uid             types.UID
	hostNetwork     bool
	created         time.Time
	adopted         bool

	seen, admitted, sandboxReady         time.Time
	phaseRunning, running, ready         time.Time
	observedRunning                      time.Time
	pulls                                []interval
	sawSandbox                           bool
	events                               []Event
	startMetricsDone, readinessDone, sli bool
}

// Tracker keeps the timelines of the pods on the node. It implements
// instrumented.Observer. Safe for concurrent use.
type Tracker struct {
	clock clock.PassiveClock

	mu                  sync.Mutex
	pods                map[types.UID]*record
	firstNetworkPodSeen bool
}

var _ instrumented.Observer = (*Tracker)(nil)

// New returns an empty Tracker; clk is the real clock when nil.
func New(clk clock.PassiveClock) *Tracker {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Tracker{clock: clk, pods: map[types.UID]*record{}}
}

// seenTime is when the kubelet first saw pod: its config.seen annotation,
// else now.
func seenTime(pod *v1.Pod, now time.Time) time.Time {
	if s := pod.Annotations[podspec.ConfigSeenAnnotation]; s != "" {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t
		}
	}
	return now
}

// ensure returns the pod's record, creating it when the pod is one the
// kubelet is about to start. Caller holds t.mu.
func (t *Tracker) ensure(pod *v1.Pod, now time.Time) *record {
	if r := t.pods[pod.UID]; r != nil {
		return r
	}
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed || podspec.IsMirror(pod) {
		return nil
	}
	r := &record{namespace: pod.Namespace, name: pod.Name, uid: pod.UID, hostNetwork: pod.Spec.HostNetwork,
		created: pod.CreationTimestamp.Time, seen: seenTime(pod, now)}
	// Already started elsewhere (a kubelet restart): nothing to time.
	r.adopted = pod.Status.StartTime != nil
	r.add(Event{Time: r.seen, Type: Seen})
	t.pods[pod.UID] = r
	return r
}

func (r *record) add(e Event) {
	if len(r.events) < maxEvents {
		r.events = append(r.events, e)
	}
}

// starting reports whether the record still takes start events.
func (r *record) starting() bool { return r != nil && r.running.IsZero() }

// ObservePods is called with every pod update the kubelet receives from
// its sources (ADD, UPDATE, RECONCILE...). It starts records for new pods
// and, for API pods, notes when the API's copy first shows every container
// running: the end of upstream's pod startup SLI.
func (t *Tracker) ObservePods(pods []*v1.Pod) {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, pod := range pods {
		if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
			continue
		}
		r := t.ensure(pod, now)
		if r == nil || r.sli || r.running.IsZero() || !allContainersStarted(pod.Status.ContainerStatuses, len(pod.Spec.Containers)) {
			continue
		}
		r.sli = true
		r.observedRunning = now
		r.add(Event{Time: now, Type: ObservedRunning})
		if r.adopted || r.created.IsZero() {
			continue
		}
		total := now.Sub(r.created)
		sli := total - pullSpan(r.pulls)
		metrics.PodStartTotalDuration.WithLabelValues().Observe(total.Seconds())
		metrics.PodStartSLIDuration.WithLabelValues().Observe(sli.Seconds())
		metrics.PodStartupPhaseDuration.WithLabelValues(PhaseAPIReport).Observe(now.Sub(r.running).Seconds())
		if !r.hostNetwork && !t.firstNetworkPodSeen {
			t.firstNetworkPodSeen = true
			metrics.FirstNetworkPodStartSLIDuration.Set(sli.Seconds())
		}
		klog.V(2).InfoS("Observed pod startup duration", "pod", klog.KRef(r.namespace, r.name), "podUID", r.uid,
			"podStartSLOduration", sli.Seconds(), "podStartE2EDuration", total)
	}
}

// allContainersStarted reports whether every one of want app containers
// has a status that shows it running (upstream's SLI condition).
func allContainersStarted(statuses []v1.ContainerStatus, want int) bool {
	if want == 0 || len(statuses) < want {
		return false
	}
	for _, cs := range statuses {
		if cs.State.Running == nil || cs.State.Running.StartedAt.IsZero() {
			return false
		}
	}
	return true
}

// pullSpan is upstream's image pulling time: first pull start to last pull
// end.
func pullSpan(pulls []interval) time.Duration {
	if len(pulls) == 0 {
		return 0
	}
	first, last := pulls[0].start, pulls[0].end
	for _, p := range pulls[1:] {
		if p.start.Before(first) {
			first = p.start
		}
		if p.end.After(last) {
			last = p.end
		}
	}
	return last.Sub(first)
}

// WorkerStarted is called when a pod worker begins its first sync of pod.
func (t *Tracker) WorkerStarted(pod *v1.Pod, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.ensure(pod, at)
	if r == nil || !r.admitted.IsZero() {
		return
	}
	r.admitted = at
	r.add(Event{Time: at, Type: WorkerStarted})
	if !r.adopted {
		metrics.PodWorkerStartDuration.Observe(at.Sub(r.seen).Seconds())
	}
}

// SandboxStarted implements instrumented.Observer.
func (t *Tracker) SandboxStarted(uid types.UID, start, end time.Time, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.pods[uid]
	if !r.starting() {
		return
	}
	e := Event{Time: end, Type: SandboxReady, DurationSeconds: end.Sub(start).Seconds()}
	if err != nil {
		e.Type, e.Error = SandboxFailed, err.Error()
	} else if r.sandboxReady.IsZero() {
		r.sandboxReady = end
		r.sawSandbox = true
	}
	r.add(e)
}

// ImagePulled implements instrumented.Observer.
func (t *Tracker) ImagePulled(uid types.UID, image string, start, end time.Time, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.pods[uid]
	if !r.starting() {
		return
	}
	r.pulls = append(r.pulls, interval{start, end})
	e := Event{Time: end, Type: ImagePulled, Image: image, DurationSeconds: end.Sub(start).Seconds()}
	if err != nil {
		e.Type, e.Error = ImagePullFailed, err.Error()
	}
	r.add(e)
}

// ContainerCreated implements instrumented.Observer.
func (t *Tracker) ContainerCreated(uid types.UID, name string, start, end time.Time, err error) {
	t.containerEvent(uid, name, ContainerCreated, ContainerCreateError, start, end, err)
}

// ContainerStarted implements instrumented.Observer.
func (t *Tracker) ContainerStarted(uid types.UID, name string, start, end time.Time, err error) {
	t.containerEvent(uid, name, ContainerStarted, ContainerStartError, start, end, err)
}

func (t *Tracker) containerEvent(uid types.UID, name string, ok, failed EventType, start, end time.Time, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.pods[uid]
	if !r.starting() {
		return
	}
	e := Event{Time: end, Type: ok, Container: name, DurationSeconds: end.Sub(start).Seconds()}
	if err != nil {
		e.Type, e.Error = failed, err.Error()
	}
	r.add(e)
}

// StatusComputed is called with every status the kubelet computes for a
// pod: it marks the first Running phase, the first status with every
// container running, and the first Ready.
func (t *Tracker) StatusComputed(pod *v1.Pod, st v1.PodStatus) {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.pods[pod.UID]
	if r == nil {
		return
	}
	if r.phaseRunning.IsZero() && st.Phase == v1.PodRunning {
		r.phaseRunning = now
		r.add(Event{Time: now, Type: PhaseRunning})
		if !r.adopted && r.sawSandbox {
			metrics.PodStartDuration.Observe(now.Sub(r.seen).Seconds())
		}
	}
	if r.running.IsZero() && allContainersStarted(st.ContainerStatuses, len(pod.Spec.Containers)) {
		r.running = now
		r.add(Event{Time: now, Type: Running})
		if !r.sawSandbox {
			// Running without this kubelet creating its sandbox: it was
			// already running (a kubelet restart adopted it).
			r.adopted = true
		}
		if !r.adopted && !r.startMetricsDone {
			r.startMetricsDone = true
			for phase, d := range r.phases() {
				if phase == PhaseReadiness || phase == PhaseAPIReport {
					continue
				}
				metrics.PodStartupPhaseDuration.WithLabelValues(phase).Observe(d.Seconds())
			}
		}
	}
	if r.ready.IsZero() && !r.running.IsZero() && podReady(st) {
		r.ready = now
		r.add(Event{Time: now, Type: Ready})
		if !r.adopted && !r.readinessDone {
			r.readinessDone = true
			metrics.PodStartupPhaseDuration.WithLabelValues(PhaseReadiness).Observe(now.Sub(r.running).Seconds())
		}
	}
}

func podReady(st v1.PodStatus) bool {
	c := podspec.FindCondition(st.Conditions, v1.PodReady)
	return c != nil && c.Status == v1.ConditionTrue
}

// PodUpdate shows the tracker a pod config change (called from the sync
// loop): removed pods are forgotten, other changes go to ObservePods.
func (t *Tracker) PodUpdate(u podconfig.PodUpdate) {
	if u.Op == podconfig.REMOVE {
		for _, p := range u.Pods {
			t.Forget(p.UID)
		}
		return
	}
	t.ObservePods(u.Pods)
}

// Forget drops a pod's record (the pod left the node).
func (t *Tracker) Forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.pods, uid)
}

// phases computes the phase durations known so far. Caller holds t.mu.
func (r *record) phases() map[string]time.Duration {
	return Phases(Milestones{
		Seen: r.seen, Admitted: r.admitted, SandboxReady: r.sandboxReady, Running: r.running,
		Ready: r.ready, ObservedRunning: r.observedRunning, Pulls: spans(r.pulls),
	})
}

func spans(in []interval) [][2]time.Time {
	out := make([][2]time.Time, len(in))
	for i, p := range in {
		out[i] = [2]time.Time{p.start, p.end}
	}
	return out
}

// Milestones are the moments phases are computed from; zero means not
// (yet) reached.
type Milestones struct {
	Seen, Admitted, SandboxReady, Running, Ready, ObservedRunning time.Time
	// Pulls are [start, end] of each image pull.
	Pulls [][2]time.Time
}

// Phases derives the phase durations from the milestones reached: a phase
// is present once both its ends are known. image_pull counts only pulls
// that ended before Running, overlapping pulls once; containers is
// SandboxReady → Running without that pull time (never negative).
func Phases(m Milestones) map[string]time.Duration {
	out := map[string]time.Duration{}
	between := func(phase string, from, to time.Time) {
		if !from.IsZero() && !to.IsZero() && !to.Before(from) {
			out[phase] = to.Sub(from)
		}
	}
	between(PhaseAdmission, m.Seen, m.Admitted)
	between(PhaseSandbox, m.Admitted, m.SandboxReady)
	between(PhaseReadiness, m.Running, m.Ready)
	between(PhaseAPIReport, m.Running, m.ObservedRunning)
	if m.Running.IsZero() {
		return out
	}
	pull := unionLength(m.Pulls, m.Running)
	out[PhaseImagePull] = pull
	if !m.SandboxReady.IsZero() && !m.Running.Before(m.SandboxReady) {
		c := m.Running.Sub(m.SandboxReady) - pull
		if c < 0 {
			c = 0
		}
		out[PhaseContainers] = c
	}
	return out
}

// unionLength is the total length of the intervals (cut at limit), with
// overlaps counted once.
func unionLength(in [][2]time.Time, limit time.Time) time.Duration {
	var iv [][2]time.Time
	for _, p := range in {
		s, e := p[0], p[1]
		if e.After(limit) {
			e = limit
		}
		if e.After(s) {
			iv = append(iv, [2]time.Time{s, e})
		}
	}
	sort.Slice(iv, func(i, j int) bool { return iv[i][0].Before(iv[j][0]) })
	var total time.Duration
	var curS, curE time.Time
	for i, p := range iv {
		if i == 0 || p[0].After(curE) {
			if i > 0 {
				total += curE.Sub(curS)
			}
			curS, curE = p[0], p[1]
			continue
		}
		if p[1].After(curE) {
			curE = p[1]
		}
	}
	if len(iv) > 0 {
		total += curE.Sub(curS)
	}
	return total
}

// snapshot turns a record into its served form. Caller holds t.mu.
func (r *record) snapshot() Timeline {
	tl := Timeline{Namespace: r.namespace, Name: r.name, UID: r.uid, Adopted: r.adopted, Complete: !r.ready.IsZero()}
	if !r.created.IsZero() {
		c := r.created
		tl.Created = &c
	}
	tl.Events = append([]Event(nil), r.events...)
	sort.SliceStable(tl.Events, func(i, j int) bool { return tl.Events[i].Time.Before(tl.Events[j].Time) })
	if ph := r.phases(); len(ph) > 0 {
		tl.PhasesSeconds = map[string]float64{}
		for k, v := range ph {
			tl.PhasesSeconds[k] = v.Seconds()
		}
	}
	switch {
	case !r.ready.IsZero():
		tl.TotalSeconds = r.ready.Sub(r.seen).Seconds()
	case !r.running.IsZero():
		tl.TotalSeconds = r.running.Sub(r.seen).Seconds()
	}
	return tl
}

// Get returns the timeline of the pod namespace/name (the newest, when a
// pod of that name is being replaced).
func (t *Tracker) Get(namespace, name string) (Timeline, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var best *record
	for _, r := range t.pods {
		if r.namespace == namespace && r.name == name && (best == nil || r.seen.After(best.seen)) {
			best = r
		}
	}
	if best == nil {
		return Timeline{}, false
	}
	return best.snapshot(), true
}

// Prune drops the records of pods keep does not claim.
func (t *Tracker) Prune(keep func(types.UID) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for uid := range t.pods {
		if !keep(uid) {
			delete(t.pods, uid)
		}
	}
}

// List returns every timeline, ordered by namespace and name.
func (t *Tracker) List() []Timeline {
	t.mu.Lock()
	out := make([]Timeline, 0, len(t.pods))
	for _, r := range t.pods {
		out = append(out, r.snapshot())
	}
	t.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}
