package kubelet

// The assembly of the kubelet's monitoring: the pod startup timeline (fed
// by the CRI decorator in kuberuntime and the engine's Observer hooks),
// the Summary API provider, the metrics registries and the routes that
// serve them on the kubelet API and the read-only port. The logic lives in
// pkg/pod/timeline, pkg/stats, pkg/metrics and pkg/server/monitoring.
//
// Wiring (run.go): the timeline before the runtime (kuberuntime's
// CRIObserver) and the engine (cri.Deps.Observer); monitoringRoutes once
// both exist, before the servers are bound.

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/config/kubeletconfig"
	"github.com/gokubelet/kubelet/pkg/engine/cri"
	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/node"
	"github.com/gokubelet/kubelet/pkg/node/machineinfo"
	"github.com/gokubelet/kubelet/pkg/pod/timeline"
	"github.com/gokubelet/kubelet/pkg/runtime/kuberuntime"
	"github.com/gokubelet/kubelet/pkg/server"
	"github.com/gokubelet/kubelet/pkg/server/monitoring"
	"github.com/gokubelet/kubelet/pkg/stats"
	"github.com/gokubelet/kubelet/pkg/volume"
	volcsi "github.com/gokubelet/kubelet/pkg/volume/csi"
)

// claimVolumeStats is how the stats provider measures a claim volume:
// statfs of a local one, the driver's NodeGetVolumeStats for a CSI one
// (as upstream; measured again after each node expansion).
func claimVolumeStats(volumes *volume.Manager, c volume.ClaimVolume) stats.ClaimVolume {
	out := stats.ClaimVolume{Volume: c.Volume, Claim: c.Claim, Path: c.Path}
	if c.CSIDriver == "" {
		return out
	}
	out.Key = fmt.Sprintf("csi %s^%s at %s (expansions %d)", c.CSIDriver, c.CSIHandle, c.Path, c.Expansions)
	out.Measure = func() (stats.VolumeUsage, error) {
		u, err := volumes.CSIVolumeStats(context.Background(), c)
		var ns *volcsi.NotSupportedError
		if errors.As(err, &ns) {
			return stats.VolumeUsage{}, fmt.Errorf("%w: %v", stats.ErrUsageNotReported, err)
		}
		if err != nil {
			return stats.VolumeUsage{}, err
		}
		out := stats.VolumeUsage{Capacity: u.Bytes.Total, Available: u.Bytes.Available, Used: u.Bytes.Used}
		if u.Inodes != nil {
			out.Inodes, out.InodesFree, out.InodesUsed = u.Inodes.Total, u.Inodes.Available, u.Inodes.Used
		}
		return out, nil
	}
	return out
}

// processStart is when the kubelet process started (near enough: when
// this package was initialised), the "kubelet" system container's start.
var processStart = time.Now()

// The startup timeline hears the engine's pods.
var _ cri.Observer = (*timeline.Tracker)(nil)

// monitoringRoutes builds the stats provider and the registries (nothing
// is collected until asked) and returns the routes serving them. podCgroup
// names a pod's cgroup as the node's cgroup manager creates it, and is false
// when pods have no cgroup of their own.
func monitoringRoutes(s *kubeletconfig.Settings, core *node.Core, rt *kuberuntime.Manager, eng *cri.Engine, tl *timeline.Tracker,
	m machineinfo.Info, podCgroup func(*v1.Pod) (string, bool), systemCgroups func() map[string]string, volumes *volume.Manager,
	draClaims metrics.DRAClaimsSource) []server.Route {
	cfg := s.Config
	provider := stats.New(stats.Options{
		NodeName:   s.NodeName,
		RootDir:    s.RootDir,
		PodLogsDir: cfg.PodLogsDir,
		Runtime:    rt.RuntimeService(),
		Images:     rt.ImageService(),
		Pods:       eng.RuntimePods,
		PodCgroup: func(uid types.UID) (string, bool) {
			p, ok := core.Pods().Get(uid)
			if !ok {
				return "", false
			}
			return podCgroup(p)
		},
		SystemCgroups:  systemCgroups,
		Started:        processStart,
		VolumePeriod:   cfg.VolumeStatsAggPeriod.Duration,
		CgroupDriver:   cfg.CgroupDriver,
		CgroupRoot:     cfg.CgroupRoot,
		MemoryCapacity: uint64(m.MemoryCapacityBytes),
		NumCPU:         m.NumCPU,
		BootID:         m.BootID,
		MachineID:      m.MachineID,
		SystemUUID:     m.SystemUUID,
		ClaimVolumes: func(uid types.UID) []stats.ClaimVolume {
			var out []stats.ClaimVolume
			for _, c := range volumes.ClaimVolumes(uid) {
				out = append(out, claimVolumeStats(volumes, c))
			}
			return out
		},
	})
	routes := monitoring.Routes(monitoring.Options{
		Summary:  provider,
		Timeline: tl,
		Kubelet: metrics.NewKubeletRegistry(metrics.KubeletOptions{
			NodeName: s.NodeName, CgroupVersion: provider.CgroupVersion(), Running: eng.RuntimePods, Pods: eng.PodCounts,
			Volumes: provider.VolumeStats, DRAClaims: draClaims,
		}),
		Probes:   metrics.NewProbesRegistry(),
		Resource: stats.NewResourceRegistry(provider),
		Cadvisor: stats.NewCadvisorRegistry(provider),
	})
	for _, r := range routes {
		klog.V(2).InfoS("Monitoring endpoint ready", "path", r.Path, "subresource", r.Subresource)
	}
	return routes
}
