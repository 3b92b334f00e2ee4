package statuswriter

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/pod/podstatus"
)

// Start writes statuses until ctx is done: Workers writers and the
// periodic reconcile. In standalone mode it only waits for ctx.
func (m *Manager) Start(ctx context.Context) error {
	if m.queue == nil {
		<-ctx.Done()
		return nil
	}
	logger := klog.FromContext(ctx)
	logger.Info("Starting pod status manager", "workers", m.workers, "reconcilePeriod", m.period)
	var wg sync.WaitGroup
	for range m.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m.processNext(ctx) {
			}
		}()
	}
	ticker := time.NewTicker(m.period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			m.queue.ShutDown()
			wg.Wait()
			logger.Info("Stopped pod status manager")
			return nil
		case <-ticker.C:
			m.Reconcile()
		}
	}
}

func (m *Manager) processNext(ctx context.Context) bool {
	uid, quit := m.queue.Get()
	if quit {
		return false
	}
	defer m.queue.Done(uid)
	if err := m.syncPod(ctx, uid); err != nil {
		klog.FromContext(ctx).V(2).Info("Pod status write failed, will retry", "podUID", uid, "err", err)
		m.queue.AddRateLimited(uid)
		return true
	}
	m.queue.Forget(uid)
	return true
}

// Reconcile compares every cached status with the API's view and queues the
// pods whose API copy differs (or that wait for their final delete). Start
// calls it every ReconcilePeriod.
func (m *Manager) Reconcile() {
	if m.queue == nil {
		return
	}
	m.mu.Lock()
	uids := make([]types.UID, 0, len(m.pods))
	for uid := range m.pods {
		uids = append(uids, uid)
	}
	m.mu.Unlock()

	for _, uid := range uids {
		tgt, ok := m.resolver.StatusTarget(uid)
		if !ok || tgt.Pod == nil {
			continue
		}
		finished := m.resolver.PodTerminated(uid)
		m.mu.Lock()
		e, ok := m.pods[uid]
		if !ok {
			m.mu.Unlock()
			continue
		}
		now := reconciled{rv: tgt.Pod.ResourceVersion, gen: e.gen, finished: finished}
		differs := false
		if now.rv == "" || now != e.inSync {
			api := tgt.Pod.Status.DeepCopy()
			normalize(api)
			want := forAPI(api, &e.status, finished)
			differs = !inSync(api, want)
			e.inSync = reconciled{}
			if !differs {
				e.inSync = now
			}
		}
		if differs {
			// The API changed behind our back, or a write was lost: patch
			// from what the API shows, not from what we wrote.
			e.written = nil
		}
		pendingDelete := !tgt.Mirror && tgt.Pod.DeletionTimestamp != nil && !e.deleted
		m.mu.Unlock()
		if differs || pendingDelete {
			m.queue.Add(uid)
		}
	}
}

// forAPI is the status to write given the API's current one: ours, with the
// fields others own taken from the API (conditions the kubelet does not set,
// the nominated node, resource claim statuses), and a terminal phase held
// back until the pod finished terminating.
func forAPI(api, ours *v1.PodStatus, finished bool) *v1.PodStatus {
	out := ours.DeepCopy()
	out.Conditions = nil
	for _, c := range api.Conditions {
		if !podstatus.IsOwnedCondition(c.Type) {
			out.Conditions = append(out.Conditions, c)
		}
	}
	for _, c := range ours.Conditions {
		if podstatus.IsOwnedCondition(c.Type) {
			out.Conditions = append(out.Conditions, c)
		}
	}
	out.NominatedNodeName = api.NominatedNodeName
	out.ResourceClaimStatuses = api.ResourceClaimStatuses
	out.ExtendedResourceClaimStatus = api.ExtendedResourceClaimStatus
	if !finished && podstatus.IsTerminal(out.Phase) && !podstatus.IsTerminal(api.Phase) {
		out.Phase, out.Reason, out.Message = api.Phase, api.Reason, api.Message
		if out.Phase == "" {
			out.Phase = v1.PodPending
		}
	}
	return out
}

// inSync reports whether the API's status already shows want. An API server
// that does not keep observedGeneration (the feature is off there) must not
// make every pod look out of sync forever, so it is ignored when the API
// shows none.
func inSync(api, want *v1.PodStatus) bool {
	if api.ObservedGeneration == 0 {
		want = want.DeepCopy()
		want.ObservedGeneration = 0
		for i := range want.Conditions {
			want.Conditions[i].ObservedGeneration = 0
		}
	}
	return equalStatus(api, want)
}

// syncPod writes one pod's status and, when due, deletes it. A nil error
// means there is nothing to retry.
func (m *Manager) syncPod(ctx context.Context, uid types.UID) error {
	logger := klog.FromContext(ctx)
	m.mu.Lock()
	e, ok := m.pods[uid]
	if !ok {
		m.mu.Unlock()
		return nil
	}
	pod := e.pod
	ours := e.status.DeepCopy()
	written := e.written
	deleted := e.deleted
	// This sync takes the unwritten change; a change made while it runs
	// starts the next one.
	changedAt := e.changedAt
	e.changedAt = time.Time{}
	m.mu.Unlock()
	settled := false // the change was written, or has nowhere to go
	defer func() {
		if !settled && !changedAt.IsZero() {
			// Not written yet: a retry, a reconcile or the mirror pod's
			// arrival writes it, measured from the same change.
			m.mu.Lock()
			if m.pods[uid] == e && (e.changedAt.IsZero() || changedAt.Before(e.changedAt)) {
				e.changedAt = changedAt
			}
			m.mu.Unlock()
		}
	}()

	tgt, ok := m.resolver.StatusTarget(uid)
	if !ok || tgt.Pod == nil {
		logger.V(4).Info("No API object for pod status yet", "pod", klog.KObj(pod), "podUID", uid)
		return nil
	}
	target := tgt.Pod
	current := target.DeepCopy()
	if written != nil && written.UID == target.UID {
		// Our last write is newer than (or as new as) the informer's copy.
		current.Status = *written.Status.DeepCopy()
	}
	normalize(&current.Status)
	want := forAPI(&current.Status, ours, m.resolver.PodTerminated(uid))

	if !inSync(&current.Status, want) {
		patch, err := statusPatch(target.UID, &current.Status, want)
		if err != nil {
			return err
		}
		out, err := m.client.CoreV1().Pods(target.Namespace).Patch(ctx, target.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		switch {
		case apierrors.IsNotFound(err):
			logger.V(2).Info("Pod gone from the API, dropping its status write", "pod", klog.KObj(target), "podUID", target.UID)
			settled = true
			return nil
		case apierrors.IsConflict(err):
			if m.recreated(ctx, target) {
				logger.V(2).Info("Pod re-created under the same name, dropping the old pod's status write", "pod", klog.KObj(target), "podUID", target.UID)
				settled = true
				return nil
			}
			return err
		case err != nil:
			return err
		}
		logger.V(3).Info("Patched pod status", "pod", klog.KObj(target), "podUID", target.UID, "patch", string(patch))
		if !changedAt.IsZero() {
			metrics.PodStatusSyncDuration.Observe(max(0, m.now().Sub(changedAt)).Seconds())
		}
		normalize(&out.Status)
		m.mu.Lock()
		if m.pods[uid] == e {
			// Only its UID and status are needed: not the whole pod, which
			// at thousands of pods a node would otherwise hold twice.
			e.written = &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: out.UID}, Status: out.Status}
		}
		m.mu.Unlock()
		current = out
	}
	settled = true

	if tgt.Mirror || deleted {
		return nil
	}
	if current.DeletionTimestamp == nil {
		current.DeletionTimestamp = target.DeletionTimestamp
	}
	if current.DeletionTimestamp == nil || !podstatus.IsTerminal(current.Status.Phase) || !m.resolver.CanBeDeleted(pod) {
		return nil
	}
	zero := int64(0)
	uidCopy := target.UID
	err := m.client.CoreV1().Pods(target.Namespace).Delete(ctx, target.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero,
		Preconditions:      &metav1.Preconditions{UID: &uidCopy},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	logger.V(2).Info("Deleted terminated pod", "pod", klog.KObj(target), "podUID", target.UID, "err", err)
	m.mu.Lock()
	if m.pods[uid] == e {
		e.deleted = true
	}
	m.mu.Unlock()
	return nil
}

// recreated reports, after a conflict, whether the named pod now is another
// pod (or gone), which makes retrying pointless.
func (m *Manager) recreated(ctx context.Context, target *v1.Pod) bool {
	cur, err := m.client.CoreV1().Pods(target.Namespace).Get(ctx, target.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	return err == nil && cur.UID != target.UID
}

// statusPatch is a strategic merge patch from old to new status that also
// carries metadata.uid: the API server refuses the patch if the object it
// would apply to has another UID.
func statusPatch(uid types.UID, old, new *v1.PodStatus) ([]byte, error) {
	oldJSON, err := json.Marshal(v1.Pod{Status: *old})
	if err != nil {
		return nil, fmt.Errorf("encoding old status: %w", err)
	}
	newJSON, err := json.Marshal(v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: *new})
	if err != nil {
		return nil, fmt.Errorf("encoding new status: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, v1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("computing status patch: %w", err)
	}
	return patch, nil
}
