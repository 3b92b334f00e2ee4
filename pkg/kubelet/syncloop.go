package kubelet

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gokubelet/kubelet/pkg/pod/podconfig"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/podworkers"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/runtime/pleg"
)

// syncLoop is the kubelet's one select: pod config changes, runtime events
// and housekeeping. It never does runtime work itself; it hands pods to
// their workers, so one slow pod never holds up another.
func (k *Kubelet) syncLoop(ctx context.Context) {
	log := logger(ctx)
	log.Info("Starting the sync loop")
	housekeeping := k.clock.NewTicker(housekeepingPeriod)
	defer housekeeping.Stop()
	k.heartbeat()
	for {
		select {
		case <-ctx.Done():
			log.Info("Sync loop stopped")
			return
		case u, ok := <-k.merger.Updates():
			if !ok {
				return
			}
			k.handlePodUpdate(ctx, u)
		case e := <-k.pleg.Events():
			k.handlePLEGEvent(ctx, e)
		case uid := <-k.probes.Updates():
			// A probe result changed: status (ready, started) and maybe a
			// liveness kill.
			if p, ok := k.pods.Get(uid); ok {
				k.dispatch(ctx, p)
			}
		case <-housekeeping.C():
			k.housekeeping(ctx)
		}
		k.heartbeat()
	}
}

// handlePodUpdate applies one merged config change.
func (k *Kubelet) handlePodUpdate(ctx context.Context, u podconfig.PodUpdate) {
	log := logger(ctx)
	if len(u.Pods) > 0 {
		log.V(2).Info("Pod config update", "op", u.Op.String(), "source", u.Source, "pods", podNames(u.Pods))
	}
	k.obs.podUpdate(u)
	switch u.Op {
	case podconfig.ADD, podconfig.UPDATE, podconfig.DELETE, podconfig.RECONCILE:
		// DELETE is a graceful deletion: the pod stays desired until its
		// source drops it, and dispatch stops it within its deletion grace
		// period.
		k.pods.AddOrUpdate(u.Pods...)
		// Admission sees pods in creation order, as upstream.
		for _, p := range sortByCreation(u.Pods) {
			if podspec.IsMirror(p) {
				k.onMirrorPodChange(ctx, p)
				continue
			}
			if u.Op == podconfig.RECONCILE {
				continue
			}
			if podspec.IsStatic(p) {
				k.triggerMirrors()
			}
			k.dispatch(ctx, p)
		}
	case podconfig.REMOVE:
		k.pods.Remove(u.Pods...)
		for _, p := range u.Pods {
			if podspec.IsStatic(p) {
				k.triggerMirrors()
			}
			if podspec.IsMirror(p) {
				k.onMirrorPodChange(ctx, p)
				continue
			}
			k.workers.UpdatePod(podworkers.Update{Type: podworkers.UpdateKill, Pod: p, Remove: true})
		}
	}
}

// dispatch hands a desired pod to its worker: a sync, or a kill when the
// pod is being deleted. A deleted pod's runtime objects are removed once it
// stopped, so the status manager can issue the final delete; the pod
// itself stays desired until the API server drops it.
func (k *Kubelet) dispatch(ctx context.Context, p *v1.Pod) {
	if p.DeletionTimestamp != nil {
		k.workers.UpdatePod(podworkers.Update{Type: podworkers.UpdateKill, Pod: p, GracePeriod: p.DeletionGracePeriodSeconds, Remove: true})
		return
	}
	if !k.admit(ctx, p) {
		return
	}
	k.workers.UpdatePod(podworkers.Update{Type: podworkers.UpdateSync, Pod: p})
}

// handlePLEGEvent wakes the worker of the pod that changed. Changes to
// pods the kubelet does not want are left to housekeeping.
func (k *Kubelet) handlePLEGEvent(ctx context.Context, e pleg.Event) {
	if p, ok := k.pods.Get(e.UID); ok {
		k.dispatch(ctx, p)
	}
}

// housekeeping stops what nobody wants any more: runtime pods the sources
// do not know (after a restart, or left by an earlier kubelet), and workers
// of pods that left without a REMOVE. It waits until every source has
// reported once, so a restarted kubelet never kills pods it simply has not
// heard of yet.
func (k *Kubelet) housekeeping(ctx context.Context) {
	if !k.merger.SeenAllSources(k.sources...) || !k.pleg.HasRelisted() {
		return
	}
	log := logger(ctx)
	for _, rs := range k.pleg.Pods() {
		if k.pods.Has(rs.UID) {
			continue
		}
		if info, ok := k.workers.Get(rs.UID); ok && info.Removed {
			continue
		}
		log.Info("Stopping a pod no source wants", "podUID", rs.UID, "pod", rs.Namespace+"/"+rs.Name)
		k.workers.UpdatePod(podworkers.Update{Type: podworkers.UpdateKill, RunningPod: runningPod(rs), Remove: true})
	}
	for _, info := range k.workers.List() {
		if info.Removed || k.pods.Has(info.UID) {
			continue
		}
		k.workers.UpdatePod(podworkers.Update{Type: podworkers.UpdateKill, RunningPod: &container.RunningPod{UID: info.UID}, Remove: true})
	}
	k.housekeepingExtras(ctx)
	k.housekeepingRuns++
	if k.housekeepingRuns%cgroupCleanupEvery == 0 {
		k.cleanupPodCgroups(ctx)
	}
}

// cleanupPodCgroups removes the empty cgroups of pods that are gone: not
// desired, not in the runtime, no worker.
func (k *Kubelet) cleanupPodCgroups(ctx context.Context) {
	c, ok := k.runtime.(interface {
		CleanupPodCgroups(keep func(types.UID) bool) int
	})
	if !ok {
		return
	}
	inRuntime := map[types.UID]bool{}
	for _, s := range k.pleg.Pods() {
		inRuntime[s.UID] = true
	}
	n := c.CleanupPodCgroups(func(uid types.UID) bool {
		_, working := k.workers.Get(uid)
		return inRuntime[uid] || working || k.pods.Has(uid)
	})
	if n > 0 {
		logger(ctx).V(2).Info("Removed cgroups of departed pods", "count", n)
	}
}

// runningPod turns a relisted pod into the RunningPod a kill needs.
func runningPod(s *container.PodStatus) *container.RunningPod {
	return &container.RunningPod{UID: s.UID, Name: s.Name, Namespace: s.Namespace, Sandboxes: s.Sandboxes, Containers: s.Containers}
}

func podNames(pods []*v1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}
