package cri

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// PodCgroups is the engine's view of the node's cgroup hierarchy
// (pkg/runtime/cgroups.Manager).
type PodCgroups interface {
	// EnsurePod creates the pod's cgroup with its limits when it does not
	// exist, and reports whether it did.
	EnsurePod(pod *v1.Pod) (bool, error)
	// SetPod applies the pod's limits to its existing cgroup (a resize).
	SetPod(pod *v1.Pod) error
	// UpdateQOS brings the QoS levels in line with the active pods.
	UpdateQOS(pods []*v1.Pod) error
	// CleanupPods removes the empty cgroups of pods keep does not claim.
	CleanupPods(keep func(types.UID) bool) int
}

// Event reason of a pod cgroup that cannot be created (upstream's).
const eventFailedToCreatePodContainer = "FailedCreatePodContainer"

// ensurePodCgroup creates the pod's cgroup before the runtime creates its
// sandbox under it: a stat when it exists, one mkdir per hierarchy and a
// few writes when not. The burstable level's shares follow a new
// burstable pod at once, as upstream.
func (e *Engine) ensurePodCgroup(ctx context.Context, pod *v1.Pod) error {
	if e.cgroups == nil {
		return nil
	}
	created, err := e.cgroups.EnsurePod(pod)
	if err != nil {
		e.core.Recorder().Eventf(pod, v1.EventTypeWarning, eventFailedToCreatePodContainer, "unable to ensure pod container exists: %v", err)
		return fmt.Errorf("failed to ensure that the pod's cgroups exist and are correctly applied: %w", err)
	}
	if created && podspec.QOSClass(pod) == v1.PodQOSBurstable {
		if err := e.cgroups.UpdateQOS(e.activePods("")); err != nil {
			klog.FromContext(ctx).V(2).Info("Updating the burstable QoS cgroup failed", "err", err)
		}
	}
	return nil
}

// cleanupPodCgroups removes the empty cgroups of pods that are gone: not
// desired, not in the runtime, no worker.
func (e *Engine) cleanupPodCgroups(ctx context.Context) {
	if e.cgroups == nil {
		return
	}
	inRuntime := map[types.UID]bool{}
	for _, s := range e.pleg.Pods() {
		inRuntime[s.UID] = true
	}
	n := e.cgroups.CleanupPods(func(uid types.UID) bool {
		_, working := e.workers.Get(uid)
		return inRuntime[uid] || working || e.core.Pods().Has(uid)
	})
	if n > 0 {
		logger(ctx).V(2).Info("Removed cgroups of departed pods", "count", n)
	}
}

// ActivePods are the admitted pods that run or may run.
func (e *Engine) ActivePods() []*v1.Pod { return e.activePods("") }
