package cri

import (
	"context"
	"fmt"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/pod/admission"
	"github.com/gokubelet/kubelet/pkg/pod/podstatus"
	"github.com/gokubelet/kubelet/pkg/pod/podworkers"
)

// SecurityAdmission is the node-security part of admission: sysctls the
// node allows, and why AppArmor is unavailable ("" when it is available).
type SecurityAdmission struct {
	Sysctls       *admission.SysctlAllowlist
	AppArmorError string
}

// admissionCache remembers, per pod, admission's decision: a pod is
// admitted once, and a rejected pod is not reconsidered on every update.
type admissionCache struct {
	mu sync.Mutex
	m  map[types.UID]bool
}

func (a *admissionCache) get(uid types.UID) (admitted, decided bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	admitted, decided = a.m[uid]
	return admitted, decided
}

func (a *admissionCache) set(uid types.UID, admitted bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.m[uid] = admitted
}

// forget drops the decisions about pods keep does not claim.
func (a *admissionCache) forget(keep func(types.UID) bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for uid := range a.m {
		if !keep(uid) {
			delete(a.m, uid)
		}
	}
}

// admit decides, once per pod, whether a new pod may run here, as upstream
// admission does, against the core's Node (the API server's copy, or the
// one built from local facts). A rejected pod ends Failed with the reason
// and an event.
func (e *Engine) admit(ctx context.Context, p *v1.Pod) bool {
	if admitted, decided := e.admission.get(p.UID); decided {
		return admitted
	}
	e.allocMu.Lock()
	defer e.allocMu.Unlock()
	if admitted, decided := e.admission.get(p.UID); decided {
		return admitted
	}
	if _, running := e.workers.Get(p.UID); running {
		// Already running (e.g. adopted after a restart): keep it.
		e.admission.set(p.UID, true)
		e.admitted(ctx, p)
		return true
	}
	if phase, ok := e.core.Status().Phase(p.UID); ok && podstatus.IsTerminal(phase) {
		return false
	}
	if podstatus.IsTerminal(p.Status.Phase) {
		return false
	}
	node := e.core.Node()
	// What the pod carries into host paths and cgroup files comes first:
	// nothing below may see a UID like "../x" or a quantity that wraps.
	res := admission.Input(p)
	if res.Admit {
		res = admission.Security(p, node, e.security.Sysctls, e.security.AppArmorError)
	}
	if res.Admit {
		if ok, reason, msg := e.runAdmitHandlers(ctx, p); !ok {
			res = admission.Result{Reason: reason, Message: msg}
		} else {
			res = admission.Admit(p, node, e.allocatedPods(e.activePods(p.UID)))
		}
	}
	if res.Admit && len(res.Preempt) > 0 {
		res = e.preempt(ctx, p, res.Preempt)
	}
	e.admission.set(p.UID, res.Admit)
	if res.Admit {
		e.admitted(ctx, p)
		return true
	}
	klog.FromContext(ctx).Info("Pod rejected by admission", "pod", klog.KObj(p), "reason", res.Reason, "message", res.Message)
	metrics.AdmissionRejections.WithLabelValues(admission.RejectionLabel(res.Reason)).Inc()
	e.core.Recorder().Event(p, v1.EventTypeWarning, res.Reason, res.Message)
	st := e.computeStatus(p, nil, podstatus.Options{FailReason: res.Reason, FailMessage: res.Message})
	e.setStatus(p, st)
	return false
}

// preempt stops the pods a critical pod admitted with shortages needs
// room from (admission.Preemption), as upstream: each gets a Preempting
// event and ends Failed, reason Preempting, within its own grace period,
// and counts in kubelet_preemptions under the first short resource. The
// critical pod is admitted at once, while they stop (upstream's admission
// waits for them). When no set of pods covers the shortages it is
// rejected instead, as upstream.
func (e *Engine) preempt(ctx context.Context, p *v1.Pod, short []admission.Shortage) admission.Result {
	log := klog.FromContext(ctx)
	victims, err := admission.Preemption(p, e.allocatedPods(e.activePods(p.UID)), short)
	if err != nil {
		return admission.Result{Reason: admission.ReasonUnexpectedAdmissionError,
			Message: "Unexpected error while attempting to recover from admission failure: preemption: error finding a set of pods to preempt: " + err.Error()}
	}
	for _, v := range victims {
		log.Info("Preempting pod to free up resources", "pod", klog.KObj(v), "podUID", v.UID, "insufficientResources", fmt.Sprint(short), "requestingPod", klog.KObj(p))
		e.core.Recorder().Event(v, v1.EventTypeWarning, admission.ReasonPreempting, admission.MessagePreempted)
		e.terminate(v, nil, admission.ReasonPreempting, admission.MessagePreempted, admission.MessagePreemptedCondition)
		metrics.Preemptions.WithLabelValues(string(short[0].Resource)).Inc()
	}
	return admission.Result{Admit: true}
}

// activePods are the admitted pods that still run or may run.
func (e *Engine) activePods(except types.UID) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range e.core.Pods().List() {
		if p.UID == except {
			continue
		}
		if admitted, _ := e.admission.get(p.UID); !admitted {
			continue
		}
		if info, ok := e.workers.Get(p.UID); ok && info.State == podworkers.Terminated {
			continue
		}
		if phase, ok := e.core.Status().Phase(p.UID); ok && podstatus.IsTerminal(phase) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// allocatedPods are pods as their resources were allocated: a resize not
// allocated yet takes nothing from the node (as upstream's admission
// counts allocated resources).
func (e *Engine) allocatedPods(pods []*v1.Pod) []*v1.Pod {
	if e.allocation == nil {
		return pods
	}
	out := make([]*v1.Pod, len(pods))
	for i, p := range pods {
		out[i] = e.allocation.Allocated(p)
	}
	return out
}

// sortByCreation orders pods as upstream admits them: oldest first.
func sortByCreation(pods []*v1.Pod) []*v1.Pod {
	out := append([]*v1.Pod(nil), pods...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp) })
	return out
}

// admitted records an admitted pod's resources as its allocation.
func (e *Engine) admitted(ctx context.Context, p *v1.Pod) {
	if e.allocation == nil {
		return
	}
	if err := e.allocation.Admitted(p); err != nil {
		klog.FromContext(ctx).Error(err, "Recording a pod's allocation failed", "pod", klog.KObj(p))
	}
}

// UnfinishedPods are the node's pods that have not finished, admitted or
// not yet: what may hold node resources (devices) across a restart,
// before admission has seen them again. Pods admission rejected have
// finished (Failed).
func (e *Engine) UnfinishedPods() []*v1.Pod {
	var out []*v1.Pod
	for _, p := range e.core.Pods().List() {
		if podstatus.IsTerminal(p.Status.Phase) {
			continue
		}
		if info, ok := e.workers.Get(p.UID); ok && info.State == podworkers.Terminated {
			continue
		}
		if phase, ok := e.core.Status().Phase(p.UID); ok && podstatus.IsTerminal(phase) {
			continue
		}
		out = append(out, p)
	}
	return out
}
