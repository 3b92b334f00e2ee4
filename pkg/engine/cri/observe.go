package cri

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gokubelet/kubelet/pkg/config/features"
	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/pod/podconfig"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/podstatus"
	"github.com/gokubelet/kubelet/pkg/pod/podworkers"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/runtime/kuberuntime"
)

// Observer hears about the engine's pods as they start and change (the
// pod startup timeline, pkg/pod/timeline, implements it). Its methods are
// called from the engine's loops and must be cheap.
type Observer interface {
	// InstrumentHandler decorates the pod worker handler (timing its
	// steps, noting each pod's first sync).
	InstrumentHandler(h podworkers.Handler) podworkers.Handler
	// PodUpdate is told every pod config change, before it is applied.
	PodUpdate(u podconfig.PodUpdate)
	// StatusComputed is told every status the engine sets for a pod.
	StatusComputed(pod *v1.Pod, st v1.PodStatus)
	// Prune drops what is kept for pods keep does not claim.
	Prune(keep func(types.UID) bool)
}

// noObserver is the Observer of an engine built without one.
type noObserver struct{}

func (noObserver) InstrumentHandler(h podworkers.Handler) podworkers.Handler { return h }
func (noObserver) PodUpdate(podconfig.PodUpdate)                             {}
func (noObserver) StatusComputed(*v1.Pod, v1.PodStatus)                      {}
func (noObserver) Prune(func(types.UID) bool)                                {}

// setStatus records a pod's computed status with the core and tells the
// observer.
func (e *Engine) setStatus(pod *v1.Pod, st v1.PodStatus) {
	if !e.features.Enabled(features.PodObservedGenerationTracking) {
		podstatus.DropObservedGeneration(&st)
	}
	e.core.Status().SetPodStatus(pod, st)
	e.observer.StatusComputed(pod, st)
}

// countStarts counts the sandbox and container starts of one SyncPod round
// (kubelet_started_pods_total, kubelet_started_containers_total and their
// errors). A restart held back by crash-loop back-off tried nothing and is
// not counted, as upstream.
func countStarts(pod *v1.Pod, res container.SyncResult) {
	for _, s := range res.Steps {
		switch s.Action {
		case container.ActionCreateSandbox:
			metrics.StartedPodsTotal.Inc()
			if s.Err != nil {
				metrics.StartedPodsErrorsTotal.Inc()
			}
		case container.ActionStart, container.ActionStartInit, container.ActionPull:
			if s.Reason == kuberuntime.ReasonCrashLoopBackOff {
				continue
			}
			typ := containerType(pod, s.Container)
			metrics.StartedContainersTotal.WithLabelValues(typ).Inc()
			if s.Err != nil {
				code := s.Reason
				if code == "" {
					code = "Unknown"
				}
				metrics.StartedContainersErrorsTotal.WithLabelValues(typ, code).Inc()
			}
		}
	}
}

// containerType is the container_type label of a container of pod.
func containerType(pod *v1.Pod, name string) string {
	_, kind, _ := podspec.FindContainer(pod, name)
	switch kind {
	case podspec.Init:
		return metrics.InitContainer
	case podspec.Ephemeral:
		return metrics.EphemeralContainer
	}
	return metrics.Container
}

// PodCounts counts the desired, active (admitted and not finished) and
// mirror pods, the pod workers and the desired pods' ephemeral containers,
// for kubelet_desired_pods, kubelet_active_pods, kubelet_mirror_pods,
// kubelet_working_pods and kubelet_managed_ephemeral_containers (read at
// scrape time).
func (e *Engine) PodCounts() metrics.PodCounts {
	var n metrics.PodCounts
	idx := func(p *v1.Pod) int {
		if podspec.IsStatic(p) {
			return 1
		}
		return 0
	}
	for _, p := range e.core.Pods().List() {
		n.Desired[idx(p)]++
		n.Ephemeral += len(p.Spec.EphemeralContainers)
	}
	for _, p := range e.activePods("") {
		n.Active[idx(p)]++
	}
	n.Mirror = len(e.core.Pods().Mirrors())
	n.Working = map[metrics.WorkingPod]int{}
	for _, w := range e.workers.List() {
		n.Working[workingPod(w, e.core.Pods().Has(w.UID))]++
	}
	return n
}

// workingPod is the kubelet_working_pods series of a pod worker; desired
// tells whether its pod is in the kubelet's configuration.
func workingPod(w podworkers.PodInfo, desired bool) metrics.WorkingPod {
	s := metrics.WorkingPod{Lifecycle: metrics.WorkingSync}
	switch w.State {
	case podworkers.Terminating:
		s.Lifecycle = metrics.WorkingTerminating
	case podworkers.Terminated:
		s.Lifecycle = metrics.WorkingTerminated
	}
	switch {
	case !w.HasSpec:
		s.Config, s.Static = metrics.WorkingRuntimeOnly, "unknown"
		return s
	case desired:
		s.Config = metrics.WorkingDesired
	default:
		s.Config = metrics.WorkingOrphan
	}
	if w.Static {
		s.Static = "true"
	}
	return s
}

// RuntimePods are the pods as the runtime last showed them (the PLEG's
// cache), for kubelet_running_pods and kubelet_running_containers and the
// Summary API.
func (e *Engine) RuntimePods() []*container.PodStatus { return e.pleg.Pods() }
