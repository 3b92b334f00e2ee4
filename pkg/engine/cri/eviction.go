package cri

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/pod/podstatus"
	"github.com/gokubelet/kubelet/pkg/pod/podworkers"
)

// The engine's side of the node's resource managers: the eviction
// manager's kill and cleanup checks, the garbage collectors' view of the
// pods, and extra admission checks (pressure).

// ReleaseFunc releases what a stopped pod holds beside its volumes (its
// DRA claims); an error makes the pod's termination be retried.
type ReleaseFunc func(ctx context.Context, uid types.UID) error

// AddReleaser adds a ReleaseFunc, run when a pod has stopped. Call it
// before the engine runs.
func (e *Engine) AddReleaser(f ReleaseFunc) { e.releasers = append(e.releasers, f) }

// StatusFunc adds what another part of the node owns to a pod's computed
// status (the devices' allocatedResourcesStatus). It must be cheap: it
// runs at every status computation.
type StatusFunc func(pod *v1.Pod, st *v1.PodStatus)

// AddStatusPart adds a StatusFunc. Call it before the engine runs.
func (e *Engine) AddStatusPart(f StatusFunc) { e.statusParts = append(e.statusParts, f) }

// AdmitFunc is an admission check run before the resource fit: false
// refuses the pod with reason and message.
type AdmitFunc func(pod *v1.Pod) (admit bool, reason, message string)

// AddAdmitHandler adds an admission check (the eviction manager's
// pressure check). Call it before the engine starts.
func (e *Engine) AddAdmitHandler(f AdmitFunc) {
	e.admission.mu.Lock()
	defer e.admission.mu.Unlock()
	e.admitHandlers = append(e.admitHandlers, f)
}

// EvictPod stops a pod for good within gracePeriod seconds: Failed with
// reason Evicted and msg, and a DisruptionTarget condition saying the
// kubelet terminated it, as upstream's eviction manager does.
func (e *Engine) EvictPod(pod *v1.Pod, gracePeriod int64, msg string) {
	klog.Background().Info("Evicting pod", "pod", klog.KObj(pod), "gracePeriod", gracePeriod, "reason", msg)
	e.terminate(pod, &gracePeriod, reasonEvicted, msg, msg)
}

// TerminatePod stops a pod for good within gracePeriod seconds (graceful
// node shutdown), Failed with reason and msg, and a DisruptionTarget
// condition; the channel closes once nothing of it runs.
func (e *Engine) TerminatePod(pod *v1.Pod, gracePeriod int64, reason, msg string) <-chan struct{} {
	e.terminate(pod, &gracePeriod, reason, msg, msg)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !e.PodCleanedUp(pod.UID) {
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return done
}

// terminate stops a pod for good, within gracePeriod seconds (nil: the
// pod's own), Failed with reason and msg and a DisruptionTarget condition
// saying condMsg.
func (e *Engine) terminate(pod *v1.Pod, gracePeriod *int64, reason, msg, condMsg string) {
	p, ok := e.core.Pods().Get(pod.UID)
	if !ok {
		p = pod
	}
	now := metav1.NewTime(e.clock.Now())
	e.workers.UpdatePod(podworkers.Update{Type: podworkers.UpdateKill, Pod: p, GracePeriod: gracePeriod, KillStatus: func(st *v1.PodStatus) {
		st.Phase, st.Reason, st.Message = v1.PodFailed, reason, msg
		cond := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet,
			Message: condMsg, LastTransitionTime: now, ObservedGeneration: p.Generation}
		for i := range st.Conditions {
			if st.Conditions[i].Type == v1.DisruptionTarget {
				st.Conditions[i] = cond
				return
			}
		}
		st.Conditions = append(st.Conditions, cond)
	}})
}

// PodCleanedUp reports that nothing of the pod runs any more and its
// volumes were released (an evicted emptyDir's space is back).
func (e *Engine) PodCleanedUp(uid types.UID) bool {
	info, ok := e.workers.Get(uid)
	return !ok || (info.State == podworkers.Terminated && info.Cleaned)
}

// PodGCState tells the garbage collectors about a pod: gone when no source
// wants it and no worker holds it (nothing of it may stay), terminated
// when none of its containers will run again.
func (e *Engine) PodGCState(uid types.UID) (gone, terminated bool) {
	info, working := e.workers.Get(uid)
	if !e.core.Pods().Has(uid) && (!working || (info.Removed && info.State == podworkers.Terminated)) {
		return true, true
	}
	if working && info.State == podworkers.Terminated {
		return false, true
	}
	if phase, ok := e.core.Status().Phase(uid); ok && podstatus.IsTerminal(phase) {
		return false, true
	}
	return false, false
}

// SourcesReady reports that every pod source has been heard from and the
// runtime relisted: until then a pod the kubelet does not know may simply
// not be known yet.
func (e *Engine) SourcesReady() bool {
	return e.seenAllSources(e.sources...) && e.pleg.HasRelisted()
}

// runAdmitHandlers runs the extra admission checks.
func (e *Engine) runAdmitHandlers(_ context.Context, p *v1.Pod) (bool, string, string) {
	e.admission.mu.Lock()
	handlers := e.admitHandlers
	e.admission.mu.Unlock()
	for _, h := range handlers {
		if ok, reason, msg := h(p); !ok {
			return false, reason, msg
		}
	}
	return true, "", ""
}
