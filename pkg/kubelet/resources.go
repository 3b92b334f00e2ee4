package kubelet

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/gokubelet/kubelet/pkg/engine/cri"
	"github.com/gokubelet/kubelet/pkg/node"
	"github.com/gokubelet/kubelet/pkg/node/eviction"
	"github.com/gokubelet/kubelet/pkg/node/machineinfo"
	"github.com/gokubelet/kubelet/pkg/node/nodestatus"
	"github.com/gokubelet/kubelet/pkg/node/shutdown"
	"github.com/gokubelet/kubelet/pkg/runnable"
	"github.com/gokubelet/kubelet/pkg/runtime/cgroups"
	"github.com/gokubelet/kubelet/pkg/runtime/gc"
	"github.com/gokubelet/kubelet/pkg/runtime/kuberuntime"
	"github.com/gokubelet/kubelet/pkg/runtime/logrotate"
	"github.com/gokubelet/kubelet/pkg/runtime/podusage"
)

// The node's resource parts: the cgroup hierarchy (QoS levels, node
// allocatable, pod cgroups), the eviction manager, the container and image
// garbage collectors and the container log rotation.
//
// Wiring (run.go): newNodeResources before the runtime, which takes the
// pods' cgroup parents from it; attach once the engine exists (the
// eviction manager's pods, the collectors' view of them, pressure
// admission); addTo the engine stage; hostFacts reads pressure from it.
type nodeResources struct {
	cfg     *kubeletv1beta1.KubeletConfiguration
	rootDir string
	cgroups *cgroups.Manager
	// system keeps the node's own processes in kubeletCgroups and
	// systemCgroups and names the system containers the summary reports.
	system *cgroups.SystemCgroups
	// allocatableMemory is the kubepods cgroup's memory (capacity less
	// the reservations), the allocatableMemory.available capacity.
	allocatableMemory int64

	thresholds []eviction.Threshold
	eviction   *eviction.Manager
	containers *gc.ContainerGC
	images     *gc.ImageGC
	logs       *logrotate.Manager
	shutdown   *shutdown.Manager
}

// newNodeResources builds the cgroup manager from the configuration, sets
// the hierarchy up (kubepods with node allocatable, burstable,
// besteffort) and parses the eviction thresholds.
func newNodeResources(ctx context.Context, cfg *kubeletv1beta1.KubeletConfiguration, rootDir, runtimeCgroups string, ncfg *nodestatus.Config, m machineinfo.Info) (*nodeResources, error) {
	thresholds, err := eviction.Parse(eviction.Config{
		Hard: cfg.EvictionHard, Soft: cfg.EvictionSoft, SoftGracePeriod: cfg.EvictionSoftGracePeriod,
		MinimumReclaim: cfg.EvictionMinimumReclaim, EnforceNodeAllocatable: cfg.EnforceNodeAllocatable,
	})
	if err != nil {
		return nil, fmt.Errorf("eviction thresholds: %w", err)
	}
	perQOS := cfg.CgroupsPerQOS == nil || *cfg.CgroupsPerQOS
	cm, err := cgroups.New(cgroups.Config{
		Driver:               cfg.CgroupDriver,
		Root:                 cfg.CgroupRoot,
		PerQOS:               perQOS,
		Enforce:              cfg.EnforceNodeAllocatable,
		KubeReserved:         ncfg.KubeReserved,
		SystemReserved:       ncfg.SystemReserved,
		KubeReservedCgroup:   cfg.KubeReservedCgroup,
		SystemReservedCgroup: cfg.SystemReservedCgroup,
		Pod: cgroups.PodOptions{
			CFSQuota:    cfg.CPUCFSQuota == nil || *cfg.CPUCFSQuota,
			QuotaPeriod: uint64(cfg.CPUCFSQuotaPeriod.Duration.Microseconds()),
			PidsLimit:   derefInt64(cfg.PodPidsLimit),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	capacity := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewQuantity(int64(m.NumCPU), resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(m.MemoryCapacityBytes, resource.BinarySI),
	}
	if pids := maxPIDs(); pids > 0 {
		capacity[cgroups.ResourcePID] = *resource.NewQuantity(pids, resource.DecimalSI)
	}
	if err := cm.Setup(ctx, capacity); err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	alloc := cm.NodeAllocatable(capacity)
	r := &nodeResources{cfg: cfg, rootDir: rootDir, cgroups: cm, thresholds: thresholds}
	layout, err := cgroups.Detect()
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	// The kubelet moves itself (and, with systemCgroups, the other
	// processes of the root cgroup) before any pod starts; the loop in
	// addTo repeats it every minute.
	r.system = cgroups.NewSystemCgroups(cgroups.SystemConfig{Kubelet: cfg.KubeletCgroups, System: cfg.SystemCgroups, Runtime: runtimeCgroups}, layout)
	if err := r.system.Ensure(); err != nil {
		klog.FromContext(ctx).Info("Warning: placing the node's own processes in their cgroups failed; retrying every minute",
			"kubeletCgroups", cfg.KubeletCgroups, "systemCgroups", cfg.SystemCgroups, "err", err)
	}
	if perQOS {
		r.allocatableMemory = alloc.Memory().Value()
	}
	return r, nil
}

// attach builds the parts that act on pods, now that the engine and the
// runtime exist.
func (r *nodeResources) attach(ctx context.Context, core *node.Core, eng *cri.Engine, rt *kuberuntime.Manager) error {
	cfg := r.cfg
	r.cgroups.ActivePods = eng.ActivePods
	r.containers = &gc.ContainerGC{
		Runtime: rt.RuntimeService(), Policy: gc.DefaultContainerPolicy, State: eng.PodGCState,
		PodLogsDir: cfg.PodLogsDir, LogSymlinkDir: rt.LogSymlinkDir(), Ready: eng.SourcesReady,
	}
	var sandboxImage struct {
		sync.Once
		name string
	}
	r.images = &gc.ImageGC{
		Images: rt.ImageService(), Runtime: rt.RuntimeService(),
		Policy: gc.ImagePolicy{
			HighThresholdPercent: int(deref(cfg.ImageGCHighThresholdPercent)),
			LowThresholdPercent:  int(deref(cfg.ImageGCLowThresholdPercent)),
			MinAge:               cfg.ImageMinimumGCAge.Duration,
			MaxAge:               cfg.ImageMaximumGCAge.Duration,
		},
		Protected: func(ctx context.Context) []string {
			sandboxImage.Do(func() { sandboxImage.name = gc.SandboxImage(ctx, rt.RuntimeService()) })
			if sandboxImage.name == "" {
				return nil
			}
			return []string{sandboxImage.name}
		},
		InUse: func(context.Context) []string {
			var refs []string
			for _, p := range eng.ActivePods() {
				for _, v := range p.Spec.Volumes {
					if v.Image != nil && v.Image.Reference != "" {
						refs = append(refs, v.Image.Reference)
					}
				}
			}
			return refs
		},
		Recorder: core.Recorder(), NodeRef: core.NodeRef(),
	}
	maxSize, err := resource.ParseQuantity(cfg.ContainerLogMaxSize)
	if err != nil {
		return fmt.Errorf("containerLogMaxSize: %w", err)
	}
	interval := 10 * time.Second
	if cfg.ContainerLogMonitorInterval != nil {
		interval = cfg.ContainerLogMonitorInterval.Duration
	}
	r.logs = &logrotate.Manager{
		Runtime:  rt.RuntimeService(),
		Policy:   logrotate.Policy{MaxSize: maxSize.Value(), MaxFiles: int(deref(cfg.ContainerLogMaxFiles))},
		Interval: interval,
		Workers:  int(deref(cfg.ContainerLogMaxWorkers)),
	}
	observer := &eviction.HostObserver{
		MemoryRoot: r.cgroups.Driver().Dir("memory", cgroups.Name{}),
		RootDir:    r.rootDir,
		ImageFs:    func(ctx context.Context) (string, error) { return gc.ImageFsMountpoint(ctx, rt.ImageService()) },
	}
	if r.allocatableMemory > 0 {
		observer.Kubepods = r.cgroups.KubepodsDir("memory")
		observer.Allocatable = func() int64 { return r.allocatableMemory }
	}
	usage := &podusage.Provider{
		RootDir: r.rootDir,
		LogDir: func(p *v1.Pod) string {
			return kuberuntime.PodLogDir(cfg.PodLogsDir, p.Namespace, p.Name, string(p.UID))
		},
		Cgroups: r.cgroups,
		Runtime: rt.RuntimeService(),
	}
	r.eviction = eviction.New(eviction.Options{
		Thresholds:         r.thresholds,
		TransitionPeriod:   cfg.EvictionPressureTransitionPeriod.Duration,
		MaxPodGracePeriod:  int64(cfg.EvictionMaxPodGracePeriod),
		LocalStorageLimits: cfg.LocalStorageCapacityIsolation == nil || *cfg.LocalStorageCapacityIsolation,
		Observer:           observer,
		Pods:               eng,
		Usage:              usage.Usage,
		Reclaim:            r.reclaimers,
		Recorder:           core.Recorder(),
		NodeRef:            core.NodeRef(),
	})
	eng.AddAdmitHandler(r.eviction.Admit)
	r.shutdown = shutdown.New(shutdown.Options{
		GracePeriod:             cfg.ShutdownGracePeriod.Duration,
		GracePeriodCriticalPods: cfg.ShutdownGracePeriodCriticalPods.Duration,
		Pods:                    eng,
		Recorder:                core.Recorder(),
		NodeRef:                 core.NodeRef(),
	})
	eng.AddAdmitHandler(r.shutdown.Admit)
	klog.FromContext(ctx).Info("Node resource management configured", "evictionThresholds", fmt.Sprint(r.thresholds),
		"imageGC", fmt.Sprintf("%d%%/%d%%", r.images.Policy.HighThresholdPercent, r.images.Policy.LowThresholdPercent),
		"containerLogMaxSize", cfg.ContainerLogMaxSize, "containerLogMaxFiles", deref(cfg.ContainerLogMaxFiles))
	return nil
}

// reclaimers are what the eviction manager tries before evicting pods for
// a disk signal, as upstream: dead containers, then unused images; with a
// dedicated image filesystem, nodefs pressure has nothing to reclaim
// (logs and volumes belong to pods).
func (r *nodeResources) reclaimers(s eviction.Signal, dedicatedImageFs bool) []eviction.Reclaimer {
	switch s {
	case eviction.NodeFsAvailable, eviction.NodeFsInodesFree:
		if dedicatedImageFs {
			return nil
		}
	case eviction.ImageFsAvailable, eviction.ImageFsInodesFree, eviction.ContainerFsAvailable, eviction.ContainerFsInodesFree:
	default:
		return nil
	}
	return []eviction.Reclaimer{r.containers.DeleteAllUnusedContainers, r.images.DeleteUnusedImages}
}

// pressure is what the Node's pressure conditions report.
func (r *nodeResources) pressure() nodestatus.Pressure {
	if r == nil || r.eviction == nil {
		return nodestatus.Pressure{}
	}
	c := r.eviction.Conditions()
	return nodestatus.Pressure{
		Memory: eviction.Has(c, v1.NodeMemoryPressure),
		Disk:   eviction.Has(c, v1.NodeDiskPressure),
		PID:    eviction.Has(c, v1.NodePIDPressure),
	}
}

// addTo starts the resource loops with the engine's.
func (r *nodeResources) addTo(stage *runnable.Stage) {
	stage.Add("cgroups", r.cgroups).
		Add("system-cgroups", r.system).
		Add("eviction", r.eviction).
		Add("container-gc", r.containers).
		Add("image-gc", r.images).
		Add("log-rotation", r.logs).
		Add("shutdown", r.shutdown)
}

// readinessErrors are the node's own reasons not to be Ready: a shutdown
// under way.
func (r *nodeResources) readinessErrors() []string {
	if r == nil || r.shutdown == nil || !r.shutdown.ShuttingDown() {
		return nil
	}
	return []string{shutdown.NotReadyMessage}
}

// maxPIDs is the system-wide task limit: the smaller of kernel.pid_max and
// kernel.threads-max, as upstream counts the node's pid capacity.
func maxPIDs() int64 {
	var out int64 = -1
	for _, f := range []string{"/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err == nil && (out < 0 || v < out) {
			out = v
		}
	}
	return out
}

func derefInt64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
