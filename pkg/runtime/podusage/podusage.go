// Package podusage measures what pods use on the node, for the eviction
// manager's ranking and local storage limits: memory working set and task
// count from the pod's cgroup, the bytes and inodes of its log directory
// and of its directory under the kubelet's root (volumes on the node's
// filesystem, never crossing into tmpfs or other mounts), and the
// containers' writable layers and memory from the runtime's container
// stats (one CRI call for all pods).
package podusage

import (
	"context"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/node/eviction"
	"github.com/gokubelet/kubelet/pkg/node/signals"
)

// CRI labels naming a container's pod and name (upstream's).
const (
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
)

// Cgroups locates a pod's cgroup directories.
type Cgroups interface {
	PodDir(controller string, pod *v1.Pod) string
}

// Provider measures pods.
type Provider struct {
	// RootDir is the kubelet's root (pod directories under pods/).
	RootDir string
	// LogDir gives a pod's log directory.
	LogDir  func(pod *v1.Pod) string
	Cgroups Cgroups
	// Runtime gives the containers' stats; nil leaves writable layers and
	// per-container memory out.
	Runtime cri.RuntimeService
}

// Usage measures pods now and returns their figures.
func (p *Provider) Usage(ctx context.Context, pods []*v1.Pod) eviction.UsageFunc {
	ctrs := p.containerStats(ctx)
	out := map[types.UID]eviction.PodUsage{}
	ok := map[types.UID]bool{}
	for _, pod := range pods {
		var u eviction.PodUsage
		measured := false
		if p.Cgroups != nil {
			if dir := p.Cgroups.PodDir("memory", pod); dir != "" {
				if ws, err := signals.CgroupWorkingSet(dir); err == nil {
					u.Memory, measured = ws, true
				}
			}
			if dir := p.Cgroups.PodDir("pids", pod); dir != "" {
				if n, err := signals.CgroupTasks(dir); err == nil {
					u.Processes = n
				}
			}
		}
		u.Containers = map[string]eviction.ContainerUsage{}
		for name, cu := range ctrs[pod.UID] {
			u.Rootfs += cu.rootfs
			u.RootfsInodes += cu.rootfsInodes
			c := eviction.ContainerUsage{Memory: cu.memory, Rootfs: cu.rootfs}
			u.Containers[name] = c
			if !measured {
				u.Memory += cu.memory
			}
		}
		if p.LogDir != nil {
			logDir := p.LogDir(pod)
			u.Logs, u.LogsInodes, _ = signals.DirUsage(logDir)
			for name, c := range u.Containers {
				c.Logs, _, _ = signals.DirUsage(filepath.Join(logDir, name))
				u.Containers[name] = c
			}
		}
		if p.RootDir != "" {
			u.Volumes, u.VolumesInodes, _ = signals.DirUsage(filepath.Join(p.RootDir, "pods", string(pod.UID)))
		}
		out[pod.UID] = u
		ok[pod.UID] = measured || len(ctrs[pod.UID]) > 0
	}
	return func(pod *v1.Pod) (eviction.PodUsage, bool) {
		u, found := out[pod.UID]
		return u, found && ok[pod.UID]
	}
}

type containerFigures struct {
	memory, rootfs, rootfsInodes int64
}

// containerStats reads every container's stats in one call, by pod and
// container name (the running instance wins over exited ones).
func (p *Provider) containerStats(ctx context.Context) map[types.UID]map[string]containerFigures {
	out := map[types.UID]map[string]containerFigures{}
	if p.Runtime == nil {
		return out
	}
	stats, err := p.Runtime.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Listing container stats failed; writable layers are not counted", "err", err)
		return out
	}
	for _, s := range stats {
		labels := s.GetAttributes().GetLabels()
		uid := types.UID(labels[labelPodUID])
		name := labels[labelContainerName]
		if uid == "" || name == "" {
			continue
		}
		f := containerFigures{
			memory:       int64(s.GetMemory().GetWorkingSetBytes().GetValue()),
			rootfs:       int64(s.GetWritableLayer().GetUsedBytes().GetValue()),
			rootfsInodes: int64(s.GetWritableLayer().GetInodesUsed().GetValue()),
		}
		if out[uid] == nil {
			out[uid] = map[string]containerFigures{}
		}
		prev := out[uid][name]
		out[uid][name] = containerFigures{
			memory:       max(prev.memory, f.memory),
			rootfs:       prev.rootfs + f.rootfs,
			rootfsInodes: prev.rootfsInodes + f.rootfsInodes,
		}
	}
	return out
}
