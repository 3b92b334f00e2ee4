package stats

import (
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/stats/cgroups"
)

// sandboxStatsFromCgroups reads the pods' and their running containers'
// CPU and memory from their cgroups, as cadvisor does for the upstream
// kubelet: all that /metrics/resource (metrics-server's scrape) needs,
// without asking the runtime. containerd answers ListPodSandboxStats by
// asking every pod's shim, which a runtime busy starting pods does late
// (DeadlineExceeded in the benchmark's batch of 100).
//
// It returns false when a pod or running container has no cgroup it can
// read (a pod the kubelet has no spec of, a runtime that names container
// cgroups otherwise, one that just exited): the caller then asks the
// runtime, so nothing is left out.
func (p *Provider) sandboxStatsFromCgroups(statuses []*container.PodStatus) ([]*runtimeapi.PodSandboxStats, bool) {
	if p.cg == nil || p.o.PodCgroup == nil {
		return nil, false
	}
	var out []*runtimeapi.PodSandboxStats
	for _, ps := range statuses {
		sb := ps.ReadySandbox()
		if sb == nil {
			continue
		}
		podCg, known := p.o.PodCgroup(ps.UID)
		if !known {
			klog.V(4).InfoS("No cgroup known for a pod; resource stats from the runtime", "pod", ps.Namespace+"/"+ps.Name)
			return nil, false
		}
		st, err := p.cg.ReadUsage(podCg)
		if err != nil {
			klog.V(4).InfoS("Reading a pod's cgroup failed; resource stats from the runtime", "cgroup", podCg, "err", err)
			return nil, false
		}
		linux := &runtimeapi.LinuxPodSandboxStats{Cpu: criCPUUsage(st), Memory: criMemoryUsage(st)}
		for _, c := range ps.Running() {
			cg := ContainerCgroup(podCg, p.o.CgroupDriver, c.ID)
			cst, err := p.cg.ReadUsage(cg)
			if err != nil {
				klog.V(4).InfoS("Reading a container's cgroup failed; resource stats from the runtime", "cgroup", cg, "err", err)
				return nil, false
			}
			linux.Containers = append(linux.Containers, &runtimeapi.ContainerStats{
				Attributes: &runtimeapi.ContainerAttributes{Id: c.ID, Metadata: &runtimeapi.ContainerMetadata{Name: c.Name}},
				Cpu:        criCPUUsage(cst), Memory: criMemoryUsage(cst)})
		}
		out = append(out, &runtimeapi.PodSandboxStats{
			Attributes: &runtimeapi.PodSandboxAttributes{Id: sb.ID, Metadata: &runtimeapi.PodSandboxMetadata{Name: ps.Name, Namespace: ps.Namespace, Uid: string(ps.UID)}},
			Linux:      linux,
		})
	}
	return out, true
}

// criCPUUsage is a cgroup's CPU usage as the CRI reports it.
func criCPUUsage(st cgroups.Stats) *runtimeapi.CpuUsage {
	if st.CPU == nil {
		return nil
	}
	return &runtimeapi.CpuUsage{Timestamp: st.Time.UnixNano(), UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: st.CPU.Usage}}
}

// criMemoryUsage is a cgroup's memory usage as the CRI reports it.
func criMemoryUsage(st cgroups.Stats) *runtimeapi.MemoryUsage {
	m := st.Memory
	if m == nil {
		return nil
	}
	return &runtimeapi.MemoryUsage{Timestamp: st.Time.UnixNano(),
		WorkingSetBytes: &runtimeapi.UInt64Value{Value: m.WorkingSet}, UsageBytes: &runtimeapi.UInt64Value{Value: m.Usage},
		RssBytes: &runtimeapi.UInt64Value{Value: m.RSS}, PageFaults: &runtimeapi.UInt64Value{Value: m.PageFaults},
		MajorPageFaults: &runtimeapi.UInt64Value{Value: m.MajFaults}}
}
