package kubelet

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/node/machineinfo"
	"github.com/gokubelet/kubelet/pkg/node/objects"
	"github.com/gokubelet/kubelet/pkg/pod/podstatus"
	"github.com/gokubelet/kubelet/pkg/pod/podworkers"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/volume"
)

// The volume manager and the API objects it (and env resolution) reads,
// wired into the kubelet:
//
//   - Run: newVolumeParts after connecting; kuberuntime's Options.Mounts is
//     k.vols.volumes.ContainerMounts; start runs the loops.
//   - SyncPod: prepareVolumes before the runtime's SyncPod: the pod's
//     objects are registered (so ConfigMaps and Secrets of env vars and
//     volumes can be read) and its volumes set up, or the pod waits.
//   - SyncTerminatedPod: releaseVolumes once nothing runs; removePodDir
//     once the pod left its source.
//   - housekeeping: volumeHousekeeping removes the directories of pods
//     that are gone.

// volumeHousekeepingEvery: orphaned pod directories are looked for every
// this many housekeeping passes (30s).
const volumeHousekeepingEvery = 15

type volumeParts struct {
	// objects serves ConfigMaps and Secrets (volumes and env); tokens
	// service account tokens.
	objects *objects.Manager
	tokens  *objects.Tokens
	volumes *volume.Manager

	// waiting holds, per pod, the waiting reasons set while its volumes
	// were not ready, to clear them once they are.
	mu      sync.Mutex
	waiting map[types.UID]map[string]container.WaitingReason

	cleaning atomic.Bool
}

// newVolumeParts builds the object access and the volume manager. client
// is nil in standalone mode: configMap, secret, projected and claim
// volumes then wait with a reason.
func (k *Kubelet) newVolumeParts(ctx context.Context, client kubernetes.Interface, machine machineinfo.Info) *volumeParts {
	vp := &volumeParts{waiting: map[types.UID]map[string]container.WaitingReason{}}
	vp.tokens = objects.NewTokens(client, k.clock)
	var claims volume.ClaimGetter
	if client != nil {
		claims = volume.ClientClaims(client)
	}
	var vm *volume.Manager
	vp.objects = objects.New(objects.Options{Client: client, OnChange: func(r objects.Ref) { vm.ObjectChanged(r) }})
	vm = volume.New(volume.Options{
		RootDir:         k.settings.RootDir,
		Objects:         vp.objects,
		Tokens:          vp.tokens,
		Claims:          claims,
		NodeAllocatable: func() v1.ResourceList { return k.nodeAllocatable(machine) },
		Recorder:        k.recorder,
		Clock:           k.clock,
		Resync: func(uid types.UID) {
			if p, ok := k.pods.Get(uid); ok {
				k.dispatch(ctx, p)
			}
		},
		Evict:         func(uid types.UID, msg string) { k.evictPod(ctx, uid, msg) },
		RefreshPeriod: k.cfg.SyncFrequency.Duration,
	})
	vp.volumes = vm
	return vp
}

// evictPod stops a pod for good, Failed with reason Evicted, as
// upstream's eviction manager does (here: an emptyDir past its sizeLimit).
func (k *Kubelet) evictPod(ctx context.Context, uid types.UID, msg string) {
	p, ok := k.pods.Get(uid)
	if !ok {
		return
	}
	logger(ctx).Info("Evicting pod", "pod", klog.KObj(p), "reason", msg)
	k.recorder.Event(p, v1.EventTypeWarning, reasonEvicted, msg)
	k.workers.UpdatePod(podworkers.Update{Type: podworkers.UpdateKill, Pod: p, KillStatus: func(st *v1.PodStatus) {
		st.Phase, st.Reason, st.Message = v1.PodFailed, reasonEvicted, msg
	}})
}

const reasonEvicted = "Evicted"

// start runs the watches' owner, the token cache and the volume refresh.
func (vp *volumeParts) start(goRun func(string, func(context.Context))) {
	goRun("objects", vp.objects.Run)
	goRun("tokens", vp.tokens.Run)
	goRun("volumes", vp.volumes.Run)
}

// nodeAllocatable is what the API server has as the Node's allocatable
// resources, or the machine's capacity before that (and standalone).
func (k *Kubelet) nodeAllocatable(m machineinfo.Info) v1.ResourceList {
	if k.cluster != nil {
		if n := k.cluster.node(); n != nil && len(n.Status.Allocatable) > 0 {
			return n.Status.Allocatable
		}
	}
	return v1.ResourceList{
		v1.ResourceCPU:    *resource.NewQuantity(int64(m.NumCPU), resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(m.MemoryCapacityBytes, resource.BinarySI),
	}
}

// prepareVolumes registers the objects the pod references and sets up its
// volumes. While a volume cannot be set up, the pod's containers that have
// not started wait (ContainerCreating, or PodInitializing with init
// containers) with the reason as message, and it returns true with when
// to try again.
func (k *Kubelet) prepareVolumes(ctx context.Context, pod *v1.Pod, rs *container.PodStatus) (bool, time.Duration) {
	vp := k.vols
	vp.objects.RegisterPod(pod)
	err := vp.volumes.SetUpPod(ctx, pod)
	var nr *volume.NotReadyError
	if !errors.As(err, &nr) {
		vp.clearWaiting(k, pod.UID)
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
	k.reasons.update(pod.UID, set)
	vp.mu.Lock()
	vp.waiting[pod.UID] = set
	vp.mu.Unlock()
	k.status.SetPodStatus(pod, k.computeStatus(pod, rs, podstatus.Options{}))
	return true, nr.RetryAfter
}

// clearWaiting drops the waiting reasons prepareVolumes set, unless
// something else replaced them since.
func (vp *volumeParts) clearWaiting(k *Kubelet, uid types.UID) {
	vp.mu.Lock()
	set := vp.waiting[uid]
	delete(vp.waiting, uid)
	vp.mu.Unlock()
	if len(set) == 0 {
		return
	}
	cur := k.reasons.get(uid)
	clear := map[string]container.WaitingReason{}
	for name, w := range set {
		if cur[name] == w {
			clear[name] = container.WaitingReason{}
		}
	}
	k.reasons.update(uid, clear)
}

// releaseVolumes tears down a stopped pod's volumes and forgets its
// objects and tokens.
func (k *Kubelet) releaseVolumes(ctx context.Context, uid types.UID) error {
	vp := k.vols
	vp.objects.UnregisterPod(uid)
	vp.tokens.DeletePodTokens(uid)
	vp.mu.Lock()
	delete(vp.waiting, uid)
	vp.mu.Unlock()
	return vp.volumes.TearDownPod(ctx, uid)
}

// removePodDir removes a departed pod's directory under the root dir.
func (k *Kubelet) removePodDir(ctx context.Context, uid types.UID) error {
	return k.vols.volumes.RemovePodDir(ctx, uid)
}

// volumeHousekeeping removes, in the background, the directories of pods
// that are gone: not desired, no worker, nothing in the runtime (deleted
// while the kubelet was down, or a removal that failed). Called from
// housekeeping, which runs it only once every source has reported.
func (k *Kubelet) volumeHousekeeping(ctx context.Context) {
	if k.housekeepingRuns%volumeHousekeepingEvery != 0 || !k.vols.cleaning.CompareAndSwap(false, true) {
		return
	}
	inRuntime := map[types.UID]bool{}
	for _, s := range k.pleg.Pods() {
		inRuntime[s.UID] = true
	}
	go func() {
		defer k.vols.cleaning.Store(false)
		k.vols.volumes.CleanupOrphans(klog.NewContext(ctx, logger(ctx).WithName("volumes")), func(uid types.UID) bool {
			_, working := k.workers.Get(uid)
			return inRuntime[uid] || working || k.pods.Has(uid)
		})
	}()
}
