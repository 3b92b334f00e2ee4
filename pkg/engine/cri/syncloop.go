package cri

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/pod/podconfig"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/podstatus"
	"github.com/gokubelet/kubelet/pkg/pod/podworkers"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/runtime/pleg"
)

// syncLoop is the kubelet's one select: pod config changes, runtime events
// and housekeeping. It never does runtime work itself; it hands pods to
// their workers, so one slow pod never holds up another.
func (e *Engine) syncLoop(ctx context.Context) error {
	log := logger(ctx)
	log.Info("Starting the sync loop")
	housekeeping := e.clock.NewTicker(housekeepingPeriod)
	defer housekeeping.Stop()
	e.heartbeat()
	for {
		select {
		case <-ctx.Done():
			log.Info("Sync loop stopped; pods keep running")
			return nil
		case u, ok := <-e.updates:
			if !ok {
				return errors.New("the pod sources' update channel closed")
			}
			e.handlePodUpdate(ctx, u)
		case ev := <-e.pleg.Events():
			e.handlePLEGEvent(ctx, ev)
		case uid := <-e.probes.Updates():
			// A probe result changed: status (ready, started) and maybe a
			// liveness kill.
			if p, ok := e.core.Pods().Get(uid); ok {
				e.dispatch(ctx, p)
			}
		case <-housekeeping.C():
			e.housekeeping(ctx)
		}
		e.heartbeat()
	}
}

// handlePodUpdate applies one merged config change.
func (e *Engine) handlePodUpdate(ctx context.Context, u podconfig.PodUpdate) {
	log := logger(ctx)
	if len(u.Pods) > 0 {
		log.V(2).Info("Pod config update", "op", u.Op.String(), "source", u.Source, "pods", podNames(u.Pods))
	}
	e.observer.PodUpdate(u)
	switch u.Op {
	case podconfig.ADD, podconfig.UPDATE, podconfig.DELETE, podconfig.RECONCILE:
		// DELETE is a graceful deletion: the pod stays desired until its
		// source drops it, and dispatch stops it within its deletion grace
		// period.
		e.core.Pods().AddOrUpdate(u.Pods...)
		// Admission sees pods in creation order, as upstream.
		for _, p := range sortByCreation(u.Pods) {
			if podspec.IsMirror(p) {
				e.core.OnMirrorPodChange(p)
				continue
			}
			if u.Op == podconfig.RECONCILE {
				// A status-only change; a sync only when a readiness
				// gate's condition changed what Ready must say.
				if podstatus.NeedsReadinessReconcile(p) {
					e.dispatch(ctx, p)
				}
				continue
			}
			if podspec.IsStatic(p) {
				e.core.TriggerMirrors()
			}
			e.dispatch(ctx, p)
		}
	case podconfig.REMOVE:
		e.core.Pods().Remove(u.Pods...)
		for _, p := range u.Pods {
			if podspec.IsStatic(p) {
				e.core.TriggerMirrors()
			}
			if podspec.IsMirror(p) {
				e.core.OnMirrorPodChange(p)
				continue
			}
			e.workers.UpdatePod(podworkers.Update{Type: podworkers.UpdateKill, Pod: p, Remove: true})
		}
	}
}

// dispatch hands a desired pod to its worker: a sync, or a kill when the
// pod is being deleted. A deleted pod's runtime objects are removed once it
// stopped, so the status manager can issue the final delete; the pod
// itself stays desired until the API server drops it.
func (e *Engine) dispatch(ctx context.Context, p *v1.Pod) {
	if p.DeletionTimestamp != nil {
		e.workers.UpdatePod(podworkers.Update{Type: podworkers.UpdateKill, Pod: p, GracePeriod: p.DeletionGracePeriodSeconds, Remove: true})
		return
	}
	if !e.admit(ctx, p) {
		return
	}
	e.workers.UpdatePod(podworkers.Update{Type: podworkers.UpdateSync, Pod: p})
}

// handlePLEGEvent wakes the worker of the pod that changed. Changes to
// pods the kubelet does not want are left to housekeeping.
func (e *Engine) handlePLEGEvent(ctx context.Context, ev pleg.Event) {
	if p, ok := e.core.Pods().Get(ev.UID); ok {
		e.dispatch(ctx, p)
	}
}

// housekeeping stops what nobody wants any more: runtime pods the sources
// do not know (after a restart, or left by an earlier kubelet), and workers
// of pods that left without a REMOVE. It waits until every source has
// reported once, so a restarted kubelet never kills pods it simply has not
// heard of yet.
func (e *Engine) housekeeping(ctx context.Context) {
	if !e.seenAllSources(e.sources...) || !e.pleg.HasRelisted() {
		return
	}
	log := logger(ctx)
	for _, rs := range e.pleg.Pods() {
		if e.core.Pods().Has(rs.UID) {
			continue
		}
		info, known := e.workers.Get(rs.UID)
		if known && info.Removed {
			continue
		}
		if !known {
			metrics.OrphanedRuntimePodTotal.Inc()
		}
		log.Info("Stopping a pod no source wants", "podUID", rs.UID, "pod", rs.Namespace+"/"+rs.Name)
		e.workers.UpdatePod(podworkers.Update{Type: podworkers.UpdateKill, RunningPod: runningPod(rs), Remove: true})
	}
	for _, info := range e.workers.List() {
		if info.Removed || e.core.Pods().Has(info.UID) {
			continue
		}
		e.workers.UpdatePod(podworkers.Update{Type: podworkers.UpdateKill, RunningPod: &container.RunningPod{UID: info.UID}, Remove: true})
	}
	// Drop what is kept about pods no source has any more.
	e.core.Status().RemoveOrphans(e.core.Pods().Has)
	e.observer.Prune(e.core.Pods().Has)
	e.admission.forget(e.core.Pods().Has)
	if e.housekeepingRuns%resizeRetryEvery == 0 {
		e.forgetResizes(func(uid types.UID) bool {
			_, working := e.workers.Get(uid)
			return working || e.core.Pods().Has(uid)
		})
		e.retryPendingResizes(ctx)
	}
	e.volumeHousekeeping(ctx)
	e.housekeepingRuns++
	if e.housekeepingRuns%cgroupCleanupEvery == 0 {
		e.cleanupPodCgroups(ctx)
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
