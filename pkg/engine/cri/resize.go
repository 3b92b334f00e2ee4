package cri

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/config/features"
	"github.com/gokubelet/kubelet/pkg/pod/allocation"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// In-place pod resize in the engine (see pkg/pod/allocation): every sync
// decides the pod's pending resize and runs the runtime on the pod with
// its allocated resources; statuses carry each container's allocated and
// actuated resources and the PodResizePending / PodResizeInProgress
// conditions.

// resizeRetryEvery: deferred resizes are looked at again every this many
// housekeeping passes (10s).
const resizeRetryEvery = 5

// Event reason of a finished resize (upstream's).
const eventResizeCompleted = "ResizeCompleted"

// resizeState is the engine's bookkeeping of resizes.
type resizeState struct {
	mu sync.Mutex
	// pending: the reason (Deferred, Infeasible) and message of a resize
	// waiting to be allocated.
	pending map[types.UID][2]string
	// inProgress: pods with an allocation not yet actuated; the value is
	// the last actuation error ("" while none).
	inProgress map[types.UID]string
}

// allocatedPod decides the pod's resize and returns the pod with its
// allocated resources, which is what the runtime runs.
func (e *Engine) allocatedPod(ctx context.Context, pod *v1.Pod) *v1.Pod {
	if e.allocation == nil {
		return pod
	}
	allocated := e.allocation.Allocated(pod)
	var d allocation.Decision
	if allocated != pod {
		// A resize to decide: against the others' allocations, and
		// recorded before any other decision reads them.
		e.allocMu.Lock()
		defer e.allocMu.Unlock()
		allocated = e.allocation.Allocated(pod)
	}
	if allocated != pod {
		d = allocation.Decide(pod, allocated, e.allocatedPods(e.activePods(pod.UID)), e.core.Node(),
			e.features.Enabled(features.InPlacePodVerticalScalingSchedulerPreemption))
		if d.Allocate && len(d.Preempt) > 0 {
			// A critical pod's resize makes room as its admission would.
			if res := e.preempt(ctx, pod, d.Preempt); !res.Admit {
				d = allocation.Decision{PendingReason: v1.PodReasonDeferred, PendingMessage: res.Message}
			}
		}
	}
	e.resizes.mu.Lock()
	defer e.resizes.mu.Unlock()
	if d.Allocate {
		if err := e.allocation.Allocate(pod); err != nil {
			klog.FromContext(ctx).Error(err, "Recording a pod's allocation failed", "pod", klog.KObj(pod))
			return allocated
		}
		klog.FromContext(ctx).Info("Pod resize allocated", "pod", klog.KObj(pod))
		allocated = pod
		e.resizes.inProgress[pod.UID] = ""
	}
	if d.PendingReason != "" {
		if prev := e.resizes.pending[pod.UID]; prev[0] != d.PendingReason || prev[1] != d.PendingMessage {
			klog.FromContext(ctx).Info("Pod resize pending", "pod", klog.KObj(pod), "reason", d.PendingReason, "message", d.PendingMessage)
		}
		e.resizes.pending[pod.UID] = [2]string{d.PendingReason, d.PendingMessage}
	} else {
		delete(e.resizes.pending, pod.UID)
	}
	return allocated
}

// noteResizeSteps records the outcome of the runtime's resize steps.
func (e *Engine) noteResizeSteps(uid types.UID, res container.SyncResult) {
	e.resizes.mu.Lock()
	defer e.resizes.mu.Unlock()
	for _, s := range res.Steps {
		if s.Action != container.ActionResize {
			continue
		}
		if s.Err != nil {
			e.resizes.inProgress[uid] = s.Message
		} else if _, ok := e.resizes.inProgress[uid]; ok {
			e.resizes.inProgress[uid] = ""
		}
	}
}

// resizeStatus fills the status's resize parts: each container's
// allocated requests and actual resources (what was last applied to a
// running container), and the resize conditions.
func (e *Engine) resizeStatus(pod *v1.Pod, rs *container.PodStatus, st *v1.PodStatus, now metav1.Time) {
	if e.allocation == nil {
		return
	}
	allocated := e.allocation.Allocated(pod)
	inProgress := false
	fill := func(list []v1.ContainerStatus, specs []v1.Container) {
		for i := range list {
			cs := &list[i]
			c := podspec.FindIn(specs, cs.Name)
			if c == nil {
				continue
			}
			cs.AllocatedResources = c.Resources.Requests.DeepCopy()
			actual := c.Resources.DeepCopy()
			if cs.State.Running != nil {
				if a, ok := e.allocation.Actuated(pod.UID, c.Name); ok {
					actual = a.DeepCopy()
					if !allocation.SameResources(a, c.Resources) {
						inProgress = true
					}
				}
			}
			cs.Resources = actual
		}
	}
	fill(st.ContainerStatuses, allocated.Spec.Containers)
	var sidecars []v1.Container
	for _, c := range allocated.Spec.InitContainers {
		if podspec.IsSidecar(&c) {
			sidecars = append(sidecars, c)
		}
	}
	fill(st.InitContainerStatuses, sidecars)

	e.resizes.mu.Lock()
	pending, isPending := e.resizes.pending[pod.UID]
	errMsg, tracked := e.resizes.inProgress[pod.UID]
	completed := tracked && !inProgress && errMsg == ""
	if completed {
		delete(e.resizes.inProgress, pod.UID)
	}
	e.resizes.mu.Unlock()
	if completed && rs != nil {
		e.core.Recorder().Event(pod, v1.EventTypeNormal, eventResizeCompleted, allocation.CompletionMessage(allocated))
	}

	var conds []v1.PodCondition
	for _, c := range st.Conditions {
		if c.Type != v1.PodResizePending && c.Type != v1.PodResizeInProgress {
			conds = append(conds, c)
		}
	}
	prevTime := func(t v1.PodConditionType) metav1.Time {
		if old, ok := e.core.Status().GetPodStatus(pod.UID); ok {
			if c := podspec.FindCondition(old.Conditions, t); c != nil {
				return c.LastTransitionTime
			}
		}
		return now
	}
	if isPending {
		conds = append(conds, v1.PodCondition{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: pending[0], Message: pending[1],
			ObservedGeneration: pod.Generation, LastTransitionTime: prevTime(v1.PodResizePending)})
	}
	if inProgress || (tracked && errMsg != "") {
		c := v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue, ObservedGeneration: pod.Generation,
			LastTransitionTime: prevTime(v1.PodResizeInProgress)}
		if errMsg != "" {
			c.Reason, c.Message = v1.PodReasonError, errMsg
		}
		conds = append(conds, c)
	}
	st.Conditions = conds
}

// retryPendingResizes syncs the pods whose resize is deferred, so one
// goes ahead once room was made (called from housekeeping).
func (e *Engine) retryPendingResizes(ctx context.Context) {
	e.resizes.mu.Lock()
	var uids []types.UID
	for uid, p := range e.resizes.pending {
		if p[0] == v1.PodReasonDeferred {
			uids = append(uids, uid)
		}
	}
	e.resizes.mu.Unlock()
	for _, uid := range uids {
		if p, ok := e.core.Pods().Get(uid); ok {
			e.dispatch(ctx, p)
		}
	}
}

// forgetResizes drops what is kept about pods that are gone.
func (e *Engine) forgetResizes(keep func(types.UID) bool) {
	e.resizes.mu.Lock()
	for uid := range e.resizes.pending {
		if !keep(uid) {
			delete(e.resizes.pending, uid)
		}
	}
	for uid := range e.resizes.inProgress {
		if !keep(uid) {
			delete(e.resizes.inProgress, uid)
		}
	}
	e.resizes.mu.Unlock()
	if e.allocation != nil {
		_ = e.allocation.RemoveOrphans(keep)
	}
}
