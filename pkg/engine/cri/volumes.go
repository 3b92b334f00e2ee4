package cri

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/pod/podstatus"
	"github.com/gokubelet/kubelet/pkg/pod/podworkers"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/volume"
)

// The volume manager (pkg/volume) in the engine's pod lifecycle:
//
//   - SyncPod: prepareVolumes before the runtime's SyncPod registers the
//     pod's objects with the core (so ConfigMaps and Secrets of env vars
//     and volumes can be read) and sets up its volumes, or the pod waits
//     with the reason.
//   - SyncTerminatedPod: releaseVolumes once nothing runs; removePodDir
//     once the pod left its source.
//   - housekeeping: volumeHousekeeping removes the directories of pods
//     that are gone.
//   - the manager's callbacks: Resync (an object a pod waits for changed)
//     and Evict (a disk-backed emptyDir grew past its sizeLimit).

// volumeHousekeepingEvery: orphaned pod directories are looked for every
// this many housekeeping passes (30s).
const volumeHousekeepingEvery = 15

// reasonEvicted is the status reason of an evicted pod, as upstream.
const reasonEvicted = "Evicted"

// volumeState is the engine's bookkeeping around the volume manager.
type volumeState struct {
	// waiting holds, per pod, the waiting reasons set while its volumes
	// were not ready, to clear them once they are.
	mu      sync.Mutex
	waiting map[types.UID]map[string]container.WaitingReason
	// cleaning is set while an orphan sweep runs in the background.
	cleaning atomic.Bool
}

// Resync syncs a pod again (the volume manager's callback: an object the
// pod waits for has changed).
func (e *Engine) Resync(uid types.UID) {
	if p, ok := e.core.Pods().Get(uid); ok {
		e.dispatch(context.Background(), p)
	}
}

// Evict stops a pod for good, Failed with reason Evicted and msg, as
// upstream's eviction manager does.
func (e *Engine) Evict(uid types.UID, msg string) {
	p, ok := e.core.Pods().Get(uid)
	if !ok {
		return
	}
	klog.Background().Info("Evicting pod", "pod", klog.KObj(p), "reason", msg)
	e.core.Recorder().Event(p, v1.EventTypeWarning, reasonEvicted, msg)
	e.workers.UpdatePod(podworkers.Update{Type: podworkers.UpdateKill, Pod: p, KillStatus: func(st *v1.PodStatus) {
		st.Phase, st.Reason, st.Message = v1.PodFailed, reasonEvicted, msg
	}})
}

// prepareVolumes registers the objects the pod references and sets up its
// volumes. While a volume cannot be set up, the pod's containers that have
// not started wait (ContainerCreating, or PodInitializing with init
// containers) with the reason as message, and it returns true with when
// to try again.
func (e *Engine) prepareVolumes(ctx context.Context, pod *v1.Pod, rs *container.PodStatus) (bool, time.Duration) {
	e.core.Objects().RegisterPod(pod)
	err := e.volumes.SetUpPod(ctx, pod)
	var nr *volume.NotReadyError
	if !errors.As(err, &nr) {
		e.clearVolumeWaiting(pod.UID)
		return false, 0
	}
	reason := podstatus.ReasonContainerCreating
	if len(pod.Spec.InitContainers) > 0 {
		reason = podstatus.ReasonPodInitializing
	}
	w := container.WaitingReason{Reason: reason, Message: nr.Error()}
	set := map[string]container.WaitingReason{}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if rs == nil || rs.Latest(c.Name) == nil {
				set[c.Name] = w
			}
		}
	}
	e.reasons.update(pod.UID, set)
	e.vols.mu.Lock()
	e.vols.waiting[pod.UID] = set
	e.vols.mu.Unlock()
	e.setStatus(pod, e.computeStatus(pod, rs, podstatus.Options{}))
	return true, nr.RetryAfter
}

// clearVolumeWaiting drops the waiting reasons prepareVolumes set, unless
// something else replaced them since.
func (e *Engine) clearVolumeWaiting(uid types.UID) {
	e.vols.mu.Lock()
	set := e.vols.waiting[uid]
	delete(e.vols.waiting, uid)
	e.vols.mu.Unlock()
	if len(set) == 0 {
		return
	}
	cur := e.reasons.get(uid)
	clear := map[string]container.WaitingReason{}
	for name, w := range set {
		if cur[name] == w {
			clear[name] = container.WaitingReason{}
		}
	}
	e.reasons.update(uid, clear)
}

// releaseVolumes tears down a stopped pod's volumes and forgets its
// objects and tokens.
func (e *Engine) releaseVolumes(ctx context.Context, uid types.UID) error {
	e.core.Objects().UnregisterPod(uid)
	e.core.Tokens().DeletePodTokens(uid)
	e.vols.mu.Lock()
	delete(e.vols.waiting, uid)
	e.vols.mu.Unlock()
	return e.volumes.TearDownPod(ctx, uid)
}

// volumeHousekeeping removes, in the background, the directories of pods
// that are gone: not desired, no worker, nothing in the runtime (deleted
// while the kubelet was down, or a removal that failed). Called from
// housekeeping, which runs only once every source has reported.
func (e *Engine) volumeHousekeeping(ctx context.Context) {
	if e.housekeepingRuns%volumeHousekeepingEvery != 0 || !e.vols.cleaning.CompareAndSwap(false, true) {
		return
	}
	inRuntime := map[types.UID]bool{}
	for _, s := range e.pleg.Pods() {
		inRuntime[s.UID] = true
	}
	go func() {
		defer e.vols.cleaning.Store(false)
		e.volumes.CleanupOrphans(klog.NewContext(ctx, logger(ctx).WithName("volumes")), func(uid types.UID) bool {
			_, working := e.workers.Get(uid)
			return inRuntime[uid] || working || e.core.Pods().Has(uid)
		})
	}()
}
