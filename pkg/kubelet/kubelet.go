package kubelet

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/clock"

	"github.com/gokubelet/kubelet/pkg/config/kubeletconfig"
	"github.com/gokubelet/kubelet/pkg/node/machineinfo"
	"github.com/gokubelet/kubelet/pkg/pod/podconfig"
	"github.com/gokubelet/kubelet/pkg/pod/podmanager"
	"github.com/gokubelet/kubelet/pkg/pod/podworkers"
	"github.com/gokubelet/kubelet/pkg/pod/prober"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/runtime/pleg"
)

// Timings of the loops around the pod workers. The relist period and the
// health threshold follow upstream; housekeeping only cleans up, so its
// period bounds how long an orphan lingers, not pod start latency.
const (
	plegRelistPeriod    = time.Second
	plegChannelCapacity = 1000
	housekeepingPeriod  = 2 * time.Second
	// cgroupCleanupEvery: pod cgroups are swept every this many
	// housekeeping runs (a minute).
	cgroupCleanupEvery = 30
	// syncLoopThreshold is how long the sync loop may go without an
	// iteration before healthz fails.
	syncLoopThreshold = 2 * time.Minute
	// shutdownWait bounds how long a stopping kubelet waits for pod worker
	// steps under way (a runtime call is never abandoned midway lightly).
	shutdownWait = 15 * time.Second
)

// kubeletClock is the clock the kubelet's loops need: tickers for the
// PLEG and housekeeping, timers for pod worker resyncs.
type kubeletClock interface {
	clock.WithTicker
	AfterFunc(d time.Duration, f func()) clock.Timer
}

// StatusManager keeps the pods' computed API status and, in a cluster,
// writes it to the API server.
type StatusManager interface {
	SetPodStatus(pod *v1.Pod, st v1.PodStatus)
	GetPodStatus(uid types.UID) (v1.PodStatus, bool)
	RemovePod(uid types.UID)
	// RemoveOrphans drops the statuses of pods keep does not claim.
	RemoveOrphans(keep func(types.UID) bool)
	// Sync asks for the pod's status (or final delete) to be written now.
	Sync(uid types.UID)
}

// Kubelet is the assembled node.
type Kubelet struct {
	settings *kubeletconfig.Settings
	cfg      *kubeletv1beta1.KubeletConfiguration
	nodeName string
	hostIPs  []string
	clock    kubeletClock

	runtime  container.Runtime
	pods     *podmanager.Manager
	workers  *podworkers.Workers
	pleg     *pleg.PLEG
	status   StatusManager
	recorder record.EventRecorder
	merger   *podconfig.Merger
	// sources are the pod sources configured; orphans are only killed once
	// every one has reported.
	sources []string

	reasons reasonCache
	// probes runs liveness, readiness and startup probes.
	probes *prober.Manager
	// cluster is nil in standalone mode.
	cluster *clusterParts
	// obs is the monitoring (stats, metrics, startup timeline); see wire_stats.go.
	obs *observability

	// housekeepingRuns counts housekeeping passes (sync loop only).
	housekeepingRuns int

	// loopHeartbeat is the unix nano time of the last sync loop iteration.
	loopHeartbeat atomic.Int64
}

// reasonCache keeps, per pod, the waiting reasons of the last sync.
type reasonCache struct {
	mu sync.Mutex
	m  map[types.UID]map[string]container.WaitingReason
}

func (r *reasonCache) update(uid types.UID, reasons map[string]container.WaitingReason) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[types.UID]map[string]container.WaitingReason{}
	}
	cur := r.m[uid]
	if cur == nil {
		cur = map[string]container.WaitingReason{}
		r.m[uid] = cur
	}
	for name, w := range reasons {
		if w.Reason == "" {
			delete(cur, name)
		} else {
			cur[name] = w
		}
	}
}

func (r *reasonCache) get(uid types.UID) map[string]container.WaitingReason {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]container.WaitingReason{}
	for k, v := range r.m[uid] {
		out[k] = v
	}
	return out
}

func (r *reasonCache) remove(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, uid)
}

// hostIPs picks the node's IPs: --node-ip, else the default-route IPv4.
func hostIPs(s *kubeletconfig.Settings, m machineinfo.Info) []string {
	if len(s.NodeIPs) > 0 {
		return s.NodeIPs
	}
	if m.DefaultRouteIPv4 != nil {
		return []string{m.DefaultRouteIPv4.String()}
	}
	return nil
}

// prepareDirs creates the kubelet's root directory layout.
func prepareDirs(rootDir string) error {
	for _, d := range []string{rootDir, filepath.Join(rootDir, "pods")} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return fmt.Errorf("creating kubelet directory: %w", err)
		}
	}
	return nil
}

// heartbeat records a sync loop iteration.
func (k *Kubelet) heartbeat() { k.loopHeartbeat.Store(k.clock.Now().UnixNano()) }

// syncLoopHealthy fails when the sync loop has stalled.
func (k *Kubelet) syncLoopHealthy() error {
	last := time.Unix(0, k.loopHeartbeat.Load())
	if age := k.clock.Since(last); age > syncLoopThreshold {
		return fmt.Errorf("sync loop last iterated %v ago; threshold is %v", age.Round(time.Second), syncLoopThreshold)
	}
	return nil
}

// hostPortAddr joins a host and port from the configuration.
func hostPortAddr(host string, port int32) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// logger is the kubelet's root logger.
func logger(ctx context.Context) klog.Logger { return klog.FromContext(ctx) }
