package timeline

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/podworkers"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// Operation types of kubelet_pod_worker_duration_seconds.
const (
	OpCreate     = "create"
	OpSync       = "sync"
	OpKill       = "kill"
	OpTerminated = "terminated"
)

// maxRemembered bounds the UIDs of removed pods remembered to recognise a
// pod started again under the same UID.
const maxRemembered = 1024

// InstrumentHandler decorates a pod worker handler: each step is timed in
// kubelet_pod_worker_duration_seconds, a pod's first sync is its
// WorkerStarted moment (and counts its containers), a pod started again
// under the UID of a pod already removed counts in
// kubelet_restarted_pods_total, and a removed pod's timeline is dropped.
func (t *Tracker) InstrumentHandler(h podworkers.Handler) podworkers.Handler {
	return &handler{h: h, t: t, synced: map[types.UID]bool{}, removed: map[types.UID]time.Time{}}
}

type handler struct {
	h podworkers.Handler
	t *Tracker

	mu      sync.Mutex
	synced  map[types.UID]bool
	removed map[types.UID]time.Time
}

func (d *handler) SyncPod(ctx context.Context, pod *v1.Pod) (bool, time.Duration, error) {
	start := d.t.clock.Now()
	d.mu.Lock()
	first := !d.synced[pod.UID]
	d.synced[pod.UID] = true
	_, restarted := d.removed[pod.UID]
	delete(d.removed, pod.UID)
	d.mu.Unlock()
	op := OpSync
	if first {
		op = OpCreate
		d.t.WorkerStarted(pod, start)
		metrics.ContainersPerPodCount.Observe(float64(len(pod.Spec.Containers)))
		if restarted {
			static := ""
			if podspec.IsStatic(pod) {
				static = "true"
			}
			metrics.RestartedPodTotal.WithLabelValues(static).Inc()
		}
	}
	terminal, retry, err := d.h.SyncPod(ctx, pod)
	metrics.PodWorkerDuration.WithLabelValues(op).Observe(d.t.clock.Since(start).Seconds())
	return terminal, retry, err
}

func (d *handler) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, running *container.RunningPod, gracePeriod *int64, statusFn func(*v1.PodStatus)) error {
	start := d.t.clock.Now()
	err := d.h.SyncTerminatingPod(ctx, pod, running, gracePeriod, statusFn)
	metrics.PodWorkerDuration.WithLabelValues(OpKill).Observe(d.t.clock.Since(start).Seconds())
	return err
}

func (d *handler) SyncTerminatedPod(ctx context.Context, uid types.UID, pod *v1.Pod, removed bool) error {
	start := d.t.clock.Now()
	err := d.h.SyncTerminatedPod(ctx, uid, pod, removed)
	metrics.PodWorkerDuration.WithLabelValues(OpTerminated).Observe(d.t.clock.Since(start).Seconds())
	if err == nil && removed {
		d.t.Forget(uid)
		d.mu.Lock()
		if d.synced[uid] {
			delete(d.synced, uid)
			d.remember(uid, start)
		}
		d.mu.Unlock()
	}
	return err
}

var _ podworkers.Restarter = (*handler)(nil)

// PodRestarting implements podworkers.Restarter: the pod's timeline starts
// again, and its next sync counts as a pod restarted under its UID.
func (d *handler) PodRestarting(uid types.UID) {
	d.t.Forget(uid)
	d.mu.Lock()
	if d.synced[uid] {
		delete(d.synced, uid)
		d.remember(uid, d.t.clock.Now())
	}
	d.mu.Unlock()
	if r, ok := d.h.(podworkers.Restarter); ok {
		r.PodRestarting(uid)
	}
}

// remember notes a removed pod's UID, forgetting the oldest beyond
// maxRemembered. Caller holds d.mu.
func (d *handler) remember(uid types.UID, at time.Time) {
	if len(d.removed) >= maxRemembered {
		var oldest types.UID
		var when time.Time
		for u, t := range d.removed {
			if oldest == "" || t.Before(when) {
				oldest, when = u, t
			}
		}
		delete(d.removed, oldest)
	}
	d.removed[uid] = at
}
