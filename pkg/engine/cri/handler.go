package cri

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/podstatus"
	"github.com/gokubelet/kubelet/pkg/pod/podworkers"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// The pod worker handlers. Each reads the pod's state from the runtime
// first, so a decision is never made on a stale relist, and reads it again
// right after acting, so the status reflects the action at once instead of
// after the next relist.

// SyncPod runs one round of convergence for a pod that should run.
func (e *Engine) SyncPod(ctx context.Context, pod *v1.Pod) (bool, time.Duration, error) {
	rs, err := e.inspect(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return false, 0, err
	}
	e.probes.UpdatePod(pod, rs)
	// The runtime runs the pod with its allocated resources (an in-place
	// resize waits until it is allocated).
	run := e.allocatedPod(ctx, pod)
	st := e.computeStatus(pod, rs, podstatus.Options{})
	if reason, msg, ok := e.activeDeadlineExceeded(pod, st); ok {
		e.core.Recorder().Event(pod, v1.EventTypeNormal, reason, msg)
		st = e.computeStatus(pod, rs, podstatus.Options{FailReason: reason, FailMessage: msg})
	}
	e.setStatus(pod, st)
	if podstatus.IsTerminal(st.Phase) {
		e.probes.RemovePod(pod.UID)
		return true, 0, nil
	}

	if wait, retry := e.prepareVolumes(ctx, pod, rs); wait {
		return false, e.deadlineRetry(pod, retry), nil
	}
	// Relists while the pod is being changed see it half done: they hold
	// their news until the read after the action (pleg.Acting).
	defer e.pleg.Acting(pod.UID)()
	if err := e.ensurePodCgroup(ctx, run); err != nil {
		return false, 0, err
	}
	res := e.runtime.SyncPod(ctx, run, rs)
	countStarts(pod, res)
	e.noteResizeSteps(pod.UID, res)
	klog.FromContext(ctx).V(3).Info("Pod synced", "pod", klog.KObj(pod), "podUID", pod.UID, "changed", res.Changed(), "steps", len(res.Steps))
	e.reasons.update(pod.UID, res.WaitingReasons())
	retry := res.RetryAfter()
	if res.Changed() {
		if rs2, err := e.inspect(ctx, pod.UID, pod.Name, pod.Namespace); err == nil {
			e.probes.UpdatePod(pod, rs2)
			e.setStatus(pod, e.computeStatus(pod, rs2, podstatus.Options{}))
			if endedDuring(rs, rs2) {
				// No relist reports an exit the kubelet read itself
				// (an init container done, a container killed or
				// crashed at once): the next step is taken now.
				retry = endedRetry
			}
		}
	}
	if err := res.Error(); err != nil {
		// A failed step keeps its own retry and the error back-off.
		return false, res.RetryAfter(), err
	}
	return false, e.deadlineRetry(pod, retry), nil
}

// endedRetry is how soon a pod is synced again when a container ended
// while it was being synced (and no step failed).
const endedRetry = time.Millisecond

// endedDuring reports whether after (the read after acting on a pod) holds
// a container instance that has exited and had not in before (the read
// before acting).
func endedDuring(before, after *container.PodStatus) bool {
	exited := map[string]bool{}
	if before != nil {
		for _, c := range before.Containers {
			if c.State == container.StateExited {
				exited[c.ID] = true
			}
		}
	}
	for _, c := range after.Containers {
		if c.State == container.StateExited && !exited[c.ID] {
			return true
		}
	}
	return false
}

// SyncTerminatingPod stops everything of the pod within its grace period.
func (e *Engine) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, running *container.RunningPod, gracePeriod *int64, statusFn func(*v1.PodStatus)) error {
	uid, name, ns := identity(pod, running)
	// Nothing of the pod will run again: no more probes (and no liveness
	// kill racing the pod's own).
	e.probes.RemovePod(uid)
	rs, err := e.inspect(ctx, uid, name, ns)
	if err != nil {
		return err
	}
	live := runningPod(rs)
	if live.Name == "" && running != nil {
		live.Name, live.Namespace = running.Name, running.Namespace
	}
	defer e.pleg.Acting(uid)()
	if err := e.runtime.KillPod(ctx, pod, live, gracePeriod); err != nil {
		return fmt.Errorf("killing pod: %w", err)
	}
	rs, err = e.inspect(ctx, uid, name, ns)
	if err != nil {
		return err
	}
	if pod != nil {
		st := e.computeStatus(pod, rs, podstatus.Options{Terminal: true})
		if statusFn != nil {
			statusFn(&st)
		}
		e.setStatus(pod, st)
	}
	if n := len(rs.Running()); n > 0 {
		return fmt.Errorf("%d containers still running after kill", n)
	}
	if sb := rs.ReadySandbox(); sb != nil {
		return fmt.Errorf("sandbox %s still ready after kill", sb.ID)
	}
	return nil
}

// SyncTerminatedPod releases what a stopped pod still holds. A pod that
// left its source loses its runtime objects too; a pod that merely
// finished keeps its exited containers (for logs and status) until then.
func (e *Engine) SyncTerminatedPod(ctx context.Context, uid types.UID, pod *v1.Pod, removed bool) error {
	if err := e.releaseVolumes(ctx, uid); err != nil {
		return err
	}
	for _, release := range e.releasers {
		if err := release(ctx, uid); err != nil {
			return err
		}
	}
	if !removed {
		return nil
	}
	defer e.pleg.Acting(uid)()
	if err := e.runtime.RemovePod(ctx, uid); err != nil {
		return fmt.Errorf("removing pod from the runtime: %w", err)
	}
	if err := e.volumes.RemovePodDir(ctx, uid); err != nil {
		return err
	}
	// Nothing left of the pod, as of now: a relist that listed it before
	// the removal must not bring it back.
	e.pleg.Observe(&container.PodStatus{UID: uid, Timestamp: e.clock.Now()})
	e.reasons.remove(uid)
	e.onPodRemoved(uid, pod)
	return nil
}

var _ podworkers.Restarter = (*Engine)(nil)

// PodRestarting implements podworkers.Restarter: a pod back in its source
// under its UID starts again from a clean slate: the earlier run's final
// status and waiting reasons are dropped (its exited containers stay in the
// runtime, so restart counts go on), and its mirror pod is reconciled.
func (e *Engine) PodRestarting(uid types.UID) {
	e.core.Status().RemovePod(uid)
	e.reasons.remove(uid)
	e.core.TriggerMirrors()
}

// inspect reads a pod from the runtime and records it with the PLEG.
func (e *Engine) inspect(ctx context.Context, uid types.UID, name, ns string) (*container.PodStatus, error) {
	rs, err := e.runtime.GetPodStatus(ctx, uid, name, ns)
	if err != nil {
		return nil, fmt.Errorf("reading pod status from the runtime: %w", err)
	}
	e.pleg.Observe(rs)
	return rs, nil
}

// computeStatus derives the pod's API status from the runtime's view.
func (e *Engine) computeStatus(pod *v1.Pod, rs *container.PodStatus, opts podstatus.Options) v1.PodStatus {
	var prev *v1.PodStatus
	if old, ok := e.core.Status().GetPodStatus(pod.UID); ok {
		prev = &old
	}
	opts.Now = e.clock.Now()
	if opts.Probes == nil && e.probes != nil {
		opts.Probes = e.probes.Result(pod.UID)
	}
	opts.RuntimeType = e.runtime.Type()
	opts.HostIPs = e.hostIPs
	opts.Features = e.features
	if rro, ok := e.runtime.(RecursiveReadOnlyRuntime); ok && podspec.PodAsksRecursiveReadOnly(pod) {
		supported, err := rro.PodSupportsRecursiveReadOnlyMounts(context.Background(), pod)
		if err != nil {
			klog.V(4).InfoS("Runtime support of recursive read-only mounts unknown", "pod", klog.KObj(pod), "err", err)
		}
		opts.RecursiveReadOnlySupported = supported
	}
	st := podstatus.Compute(pod, rs, e.reasons.get(pod.UID), prev, opts)
	e.resizeStatus(pod, rs, &st, metav1.NewTime(opts.Now))
	for _, f := range e.statusParts {
		f(pod, &st)
	}
	return st
}

// RecursiveReadOnlyRuntime is a runtime that knows whether a pod's runtime
// handler supports recursive read-only mounts (kuberuntime.Manager).
type RecursiveReadOnlyRuntime interface {
	PodSupportsRecursiveReadOnlyMounts(ctx context.Context, pod *v1.Pod) (bool, error)
}

// activeDeadlineExceeded reports whether the pod ran past
// spec.activeDeadlineSeconds, counted from its start time.
func (e *Engine) activeDeadlineExceeded(pod *v1.Pod, st v1.PodStatus) (string, string, bool) {
	if pod.Spec.ActiveDeadlineSeconds == nil || st.StartTime == nil || podstatus.IsTerminal(st.Phase) {
		return "", "", false
	}
	d := time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second
	if e.clock.Since(st.StartTime.Time) < d {
		return "", "", false
	}
	return "DeadlineExceeded", fmt.Sprintf("Pod was active on the node longer than the specified deadline"), true
}

// deadlineRetry shortens the next resync so an active deadline is noticed
// when it passes.
func (e *Engine) deadlineRetry(pod *v1.Pod, retry time.Duration) time.Duration {
	if pod.Spec.ActiveDeadlineSeconds == nil {
		return retry
	}
	st, ok := e.core.Status().GetPodStatus(pod.UID)
	if !ok || st.StartTime == nil {
		return retry
	}
	left := time.Duration(*pod.Spec.ActiveDeadlineSeconds)*time.Second - e.clock.Since(st.StartTime.Time)
	if left <= 0 {
		left = time.Millisecond
	}
	if retry == 0 || left < retry {
		return left
	}
	return retry
}

func identity(pod *v1.Pod, running *container.RunningPod) (types.UID, string, string) {
	if pod != nil {
		return pod.UID, pod.Name, pod.Namespace
	}
	return running.UID, running.Name, running.Namespace
}

// onPodRemoved runs once a pod left its source (or was deleted) and nothing
// of it remains in the runtime.
func (e *Engine) onPodRemoved(uid types.UID, pod *v1.Pod) {
	if pod != nil && podspec.IsStatic(pod) {
		e.core.Status().RemovePod(uid)
		e.core.TriggerMirrors()
		return
	}
	// An API pod: its terminal status must reach the API server before the
	// final delete, so the status entry stays until the pod leaves the
	// source; ask for the delete check now.
	e.core.Status().Sync(uid)
}
