package virtual

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/errdefs"
	"github.com/gokubelet/kubelet/pkg/pod/envvars"
	"github.com/gokubelet/kubelet/pkg/pod/podstatus"
)

// syncPod brings the provider in line with the API for one key, and hands
// the provider's status on. It returns an error to be retried with
// back-off, or a positive duration to be looked at again then.
//
// The states of a key, in order of precedence:
//
//	no API pod            delete what the provider runs under the key, forget
//	another incarnation   delete the older one from the provider first
//	being deleted         provider delete; once gone (or grace over): a
//	                      terminal status, and the status writer's final delete
//	failed by the engine  nothing (waits for its deletion)
//	not in the provider   create (environment resolved)
//	changed since given   update
//	always                the provider's status, completed, to the writer
func (e *Engine) syncPod(ctx context.Context, key string) (time.Duration, error) {
	api := e.apiPod(key)
	e.mu.Lock()
	st := e.pods[key]
	if st == nil && api != nil {
		st = &podState{key: key, uid: api.UID}
		e.pods[key] = st
		e.byUID[api.UID] = st
	}
	e.mu.Unlock()
	if st == nil {
		return 0, nil
	}
	if api == nil {
		return e.syncGone(ctx, st)
	}
	if st.uid != api.UID {
		done, err := e.retireOld(ctx, st)
		if err != nil || !done {
			return e.cfg.DeleteCheckInterval, err
		}
		e.restart(st, api.UID)
	}
	if api.DeletionTimestamp != nil {
		return e.syncDeleting(ctx, api, st)
	}
	e.mu.Lock()
	failed, created, lost := st.failed, st.created, st.lost
	e.mu.Unlock()
	if lost && !failed {
		e.markLost(ctx, api, st)
		return 0, nil
	}
	if failed {
		return 0, nil
	}
	if !created {
		if podstatus.IsTerminal(api.Status.Phase) {
			// Ended before (by an earlier run of the kubelet): nothing runs.
			e.mu.Lock()
			st.terminated, st.failed = true, true
			e.mu.Unlock()
			return 0, nil
		}
		return e.create(ctx, api, st)
	}
	if h := podHash(api); h != st.hash {
		if after, err := e.update(ctx, api, st, h); err != nil || after > 0 {
			return after, err
		}
	}
	e.applyStatus(api, st)
	return 0, nil
}

// create resolves the pod's environment and creates it in the provider.
func (e *Engine) create(ctx context.Context, api *v1.Pod, st *podState) (time.Duration, error) {
	log := klog.FromContext(ctx)
	pod, missing, err := e.env.resolve(ctx, api, e.keepRefs)
	e.reportMissing(api, missing)
	if err != nil {
		var ce *configError
		if errors.As(err, &ce) || errdefs.IsRetryable(err) {
			return e.failed(ctx, api, st, ReasonConfigError, err, false)
		}
		return e.failed(ctx, api, st, ReasonConfigError, err, true)
	}
	cctx, cancel := context.WithTimeout(ctx, providerCallTimeout)
	err = e.prov.CreatePod(cctx, pod)
	cancel()
	if err != nil {
		return e.failed(ctx, api, st, ReasonCreateFailed, err, errdefs.IsInvalid(err) || errdefs.IsTerminal(err))
	}
	log.V(2).Info("Created pod in the provider", "podUID", api.UID, "provider", e.cfg.ProviderType)
	e.mu.Lock()
	st.created, st.createdAt, st.hash, st.missing = true, e.now(), podHash(api), 0
	e.mu.Unlock()
	e.applyStatus(api, st)
	return 0, nil
}

// update gives the provider a changed spec or metadata. A change the
// provider cannot apply (invalid, terminal) is reported once and not
// retried; the pod keeps running as it was.
func (e *Engine) update(ctx context.Context, api *v1.Pod, st *podState, h uint64) (time.Duration, error) {
	pod, missing, err := e.env.resolve(ctx, api, e.keepRefs)
	e.reportMissing(api, missing)
	if err == nil {
		cctx, cancel := context.WithTimeout(ctx, providerCallTimeout)
		err = e.prov.UpdatePod(cctx, pod)
		cancel()
	}
	switch {
	case err == nil:
	case errdefs.IsNotFound(err):
		// Gone meanwhile: the next list reports it lost.
		klog.FromContext(ctx).V(2).Info("Provider does not have the pod to update", "err", err)
	case errdefs.IsInvalid(err) || errdefs.IsTerminal(err):
		e.event(api, v1.EventTypeWarning, ReasonUpdateFailed, "provider %s cannot apply the change: %v", e.cfg.ProviderType, err)
	default:
		e.event(api, v1.EventTypeWarning, ReasonUpdateFailed, "provider %s: %v (will retry)", e.cfg.ProviderType, err)
		return 0, err
	}
	e.mu.Lock()
	st.hash = h
	e.mu.Unlock()
	return 0, nil
}

// failed shows a provider failure on the pod: a Warning event and a status
// (waiting reason while retried; Failed when terminal). A non-terminal
// failure is returned to be retried with back-off.
func (e *Engine) failed(ctx context.Context, api *v1.Pod, st *podState, reason string, err error, terminal bool) (time.Duration, error) {
	if ctx.Err() != nil {
		// The kubelet is stopping: the call was cut short, not refused.
		return 0, nil
	}
	msg := err.Error()
	if terminal {
		klog.FromContext(ctx).Info("Provider refused the pod; it fails", "reason", reason, "err", err)
		e.event(api, v1.EventTypeWarning, reason, "provider %s: %s", e.cfg.ProviderType, msg)
	} else {
		klog.FromContext(ctx).Info("Provider failure, will retry", "reason", reason, "err", err)
		e.event(api, v1.EventTypeWarning, reason, "provider %s: %s (will retry)", e.cfg.ProviderType, msg)
	}
	e.mu.Lock()
	last := st.last
	e.mu.Unlock()
	s := failureStatus(api, last, reason, msg, terminal, e.cfg.HostIPs, e.now())
	e.setStatus(api, st, s)
	if terminal {
		e.mu.Lock()
		st.failed, st.terminated = true, true
		e.mu.Unlock()
		return 0, nil
	}
	return 0, err
}

// applyStatus hands the provider's latest status of this incarnation on
// to the status writer (unless it was handed on already, and the
// conditions others own — readiness gates — are still those it was
// computed with).
func (e *Engine) applyStatus(api *v1.Pod, st *podState) {
	e.mu.Lock()
	obs, applied, last := st.observed, st.applied, st.last
	e.mu.Unlock()
	if obs == nil || obs.UID != api.UID {
		return
	}
	if obs == applied && last != nil && sameOthersConditions(last.Conditions, api.Status.Conditions) {
		return
	}
	s := apiStatus(api, &obs.Status, last, e.cfg.HostIPs, e.now())
	e.setStatus(api, st, s)
	e.mu.Lock()
	st.applied = obs
	if runsNothing(&obs.Status) {
		st.terminated = true
	}
	e.mu.Unlock()
}

func (e *Engine) setStatus(api *v1.Pod, st *podState, s v1.PodStatus) {
	e.core.Status().SetPodStatus(api, s)
	e.mu.Lock()
	st.last = &s
	e.mu.Unlock()
}

// syncDeleting: provider delete, then — once the provider no longer has
// the pod, or the grace period (the deletion timestamp) passed — a
// terminal status; the status writer then deletes the API object.
func (e *Engine) syncDeleting(ctx context.Context, api *v1.Pod, st *podState) (time.Duration, error) {
	e.mu.Lock()
	created, gone, sent, finalized := st.created, st.gone, st.deleteSent, st.finalized
	e.mu.Unlock()
	if finalized {
		e.core.Status().Sync(api.UID)
		return 0, nil
	}
	if !created || gone {
		e.finalize(api, st)
		return 0, nil
	}
	now := e.now()
	deadline := api.DeletionTimestamp.Time
	if !sent {
		cctx, cancel := context.WithTimeout(ctx, providerCallTimeout)
		err := e.prov.DeletePod(cctx, api)
		cancel()
		switch {
		case errdefs.IsNotFound(err):
			e.mu.Lock()
			st.gone = true
			e.mu.Unlock()
			e.finalize(api, st)
			return 0, nil
		case err != nil && ctx.Err() != nil:
			return 0, nil
		case err != nil:
			if !now.Before(deadline) {
				// The grace period is over: the API object goes; what the
				// provider still has is cleaned up as an orphan.
				e.event(api, v1.EventTypeWarning, ReasonDeleteFailed, "provider %s: %v (grace period over; cleaning up later)", e.cfg.ProviderType, err)
				e.finalize(api, st)
				return 0, nil
			}
			e.event(api, v1.EventTypeWarning, ReasonDeleteFailed, "provider %s: %v (will retry)", e.cfg.ProviderType, err)
			return 0, err
		}
		e.mu.Lock()
		st.deleteSent = true
		e.mu.Unlock()
		klog.FromContext(ctx).V(2).Info("Deleting pod in the provider", "podUID", api.UID, "gracePeriod", api.DeletionGracePeriodSeconds)
	}
	cctx, cancel := context.WithTimeout(ctx, providerCallTimeout)
	p, err := e.prov.GetPod(cctx, api.Namespace, api.Name)
	cancel()
	switch {
	case errdefs.IsNotFound(err), err == nil && p.UID != api.UID:
		e.mu.Lock()
		st.gone = true
		e.mu.Unlock()
		e.finalize(api, st)
		return 0, nil
	case err == nil:
		e.mu.Lock()
		st.observed = p
		e.mu.Unlock()
		e.applyStatus(api, st)
	}
	if !now.Before(deadline) {
		e.finalize(api, st)
		return 0, nil
	}
	return min(e.cfg.DeleteCheckInterval, deadline.Sub(now)+10*time.Millisecond), nil
}

// finalize writes the terminal status of a deleted pod and lets the
// status writer delete it.
func (e *Engine) finalize(api *v1.Pod, st *podState) {
	e.mu.Lock()
	var last *v1.PodStatus
	if st.observed != nil && st.observed.UID == api.UID {
		last = apiStatusPtr(api, &st.observed.Status, st.last, e.cfg.HostIPs, e.now())
	} else if st.last != nil {
		last = st.last
	}
	st.terminated, st.finalized = true, true
	e.mu.Unlock()
	e.setStatus(api, st, terminatedStatus(api, last, "", "", e.cfg.HostIPs, e.now()))
	e.core.Status().Sync(api.UID)
}

func apiStatusPtr(api *v1.Pod, provided, prev *v1.PodStatus, hostIPs []string, now time.Time) *v1.PodStatus {
	s := apiStatus(api, provided, prev, hostIPs, now)
	return &s
}

// markLost fails a pod the provider no longer runs.
func (e *Engine) markLost(ctx context.Context, api *v1.Pod, st *podState) {
	klog.FromContext(ctx).Info("Provider lost the pod; it fails", "podUID", api.UID, "provider", e.cfg.ProviderType)
	e.event(api, v1.EventTypeWarning, ReasonPodLost, "%s (provider %s)", msgPodLost, e.cfg.ProviderType)
	e.mu.Lock()
	last := st.last
	st.failed, st.terminated, st.gone = true, true, true
	e.mu.Unlock()
	e.setStatus(api, st, terminatedStatus(api, last, ReasonPodLost, msgPodLost, e.cfg.HostIPs, e.now()))
}

// syncGone handles a key the API no longer has: whatever the provider runs
// under it (a pod deleted at once, or an orphan found by a list) is
// deleted from the provider; then the key is forgotten.
func (e *Engine) syncGone(ctx context.Context, st *podState) (time.Duration, error) {
	e.mu.Lock()
	created, gone := st.created, st.gone
	victim := st.observed
	uid := st.uid
	e.mu.Unlock()
	if created && !gone {
		if victim == nil {
			ns, name, _ := strings.Cut(st.key, "/")
			victim = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid}}
		}
		cctx, cancel := context.WithTimeout(ctx, providerCallTimeout)
		err := e.prov.DeletePod(cctx, victim)
		cancel()
		if err != nil && !errdefs.IsNotFound(err) {
			klog.FromContext(ctx).Error(err, "Deleting a pod the API no longer has from the provider, will retry", "podUID", victim.UID)
			return 0, err
		}
		klog.FromContext(ctx).V(2).Info("Deleted a pod the API no longer has from the provider", "podUID", victim.UID)
	}
	e.forget(st)
	return 0, nil
}

// retireOld deletes the older incarnation of a key from the provider and
// reports whether it is gone.
func (e *Engine) retireOld(ctx context.Context, st *podState) (bool, error) {
	e.mu.Lock()
	created, gone, sent, old := st.created, st.gone, st.deleteSent, st.observed
	uid := st.uid
	e.mu.Unlock()
	if !created || gone {
		return true, nil
	}
	ns, name, _ := strings.Cut(st.key, "/")
	if old == nil || old.UID != uid {
		old = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid}}
	}
	if !sent {
		cctx, cancel := context.WithTimeout(ctx, providerCallTimeout)
		err := e.prov.DeletePod(cctx, old)
		cancel()
		if errdefs.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		e.mu.Lock()
		st.deleteSent = true
		e.mu.Unlock()
	}
	cctx, cancel := context.WithTimeout(ctx, providerCallTimeout)
	p, err := e.prov.GetPod(cctx, ns, name)
	cancel()
	if errdefs.IsNotFound(err) || (err == nil && p.UID != uid) {
		return true, nil
	}
	return false, nil
}

// restart makes st follow a new incarnation.
func (e *Engine) restart(st *podState, uid types.UID) {
	e.mu.Lock()
	old := st.uid
	delete(e.byUID, old)
	observed := st.observed
	*st = podState{key: st.key, uid: uid}
	if observed != nil && observed.UID == uid {
		st.observed, st.created = observed, true
	}
	e.byUID[uid] = st
	e.mu.Unlock()
	e.core.Status().RemovePod(old)
}

// forget drops a key whose pod left the API and the provider.
func (e *Engine) forget(st *podState) {
	e.mu.Lock()
	if e.pods[st.key] == st {
		delete(e.pods, st.key)
	}
	if e.byUID[st.uid] == st {
		delete(e.byUID, st.uid)
	}
	e.mu.Unlock()
	e.core.Status().RemovePod(st.uid)
}

// reportMissing tells, with an event each, of the references of the pod's
// environment to ConfigMaps, Secrets and keys that do not exist
// (missingEvent): once per attempt to create or update the pod in the
// provider, so a pod waiting for a mandatory one repeats it at the
// back-off's pace (the event recorder counts repeats).
func (e *Engine) reportMissing(pod *v1.Pod, missing []envvars.Missing) {
	for _, m := range missing {
		typ, reason, msg := missingEvent(m)
		e.event(pod, typ, reason, "%s", msg)
	}
}

func (e *Engine) event(pod *v1.Pod, typ, reason, format string, args ...any) {
	e.core.Recorder().Eventf(pod, typ, reason, format, args...)
}

// podHash identifies what the provider was given: spec, labels and
// annotations.
func podHash(p *v1.Pod) uint64 {
	h := fnv.New64a()
	b, _ := json.Marshal(struct {
		Spec        *v1.PodSpec
		Labels      map[string]string
		Annotations map[string]string
	}{&p.Spec, p.Labels, p.Annotations})
	_, _ = h.Write(b)
	return h.Sum64()
}
