package stats

import (
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/stats/cgroups"
)

// This file turns what was read (CRI stats, cgroups, /proc, statfs, du)
// into the Summary API's types. Everything here is pure; provider.go does
// the reading.

// minRateInterval is the least time between two CPU samples a rate
// (usageNanoCores) is computed from.
const minRateInterval = time.Second

type cpuSample struct {
	t     time.Time
	usage uint64
}

// rateCache turns cumulative CPU usage samples into usage rates. It keeps
// two samples per ID and computes each rate against the newest stored
// sample at least minRateInterval older, so back-to-back requests still get
// a rate over a meaningful interval.
type rateCache struct {
	m    map[string][2]cpuSample // [older, newer]
	seen map[string]bool
}

func newRateCache() *rateCache {
	return &rateCache{m: map[string][2]cpuSample{}, seen: map[string]bool{}}
}

// observe records s for id and returns the usage rate in nanocores, or
// nil without a usable earlier sample (the first sample of an ID, or a
// counter that went backwards: a restarted container).
func (c *rateCache) observe(id string, s cpuSample) *uint64 {
	c.seen[id] = true
	e := c.m[id]
	var base *cpuSample
	for _, cand := range []cpuSample{e[1], e[0]} {
		if !cand.t.IsZero() && s.t.Sub(cand.t) >= minRateInterval {
			cand := cand
			base = &cand
			break
		}
	}
	if e[1].t.IsZero() || s.t.Sub(e[1].t) >= minRateInterval {
		e[0], e[1] = e[1], s
	}
	c.m[id] = e
	if base == nil || s.usage < base.usage {
		return nil
	}
	v := uint64(float64(s.usage-base.usage) / s.t.Sub(base.t).Seconds())
	return &v
}

// sweep forgets the IDs not observed since the last sweep.
func (c *rateCache) sweep() {
	for id := range c.m {
		if !c.seen[id] {
			delete(c.m, id)
		}
	}
	c.seen = map[string]bool{}
}

// nodeInput is what was read about the node.
type nodeInput struct {
	name string
	boot time.Time
	// root and pods are the root and kubepods cgroups (nil: unreadable);
	// their usage rates come with them.
	root, pods         *cgroups.Stats
	rootRate, podsRate *uint64
	// system are the node's own cgroups (kubelet, runtime, misc).
	system      []systemInput
	memCapacity uint64
	// meminfo gives swap.
	meminfo map[string]uint64
	// net: the host's interfaces; defaultIface is the one reported inline.
	net          []Interface
	defaultIface string
	rootFs       *FsInfo
	// imageFs is the image filesystem's statfs, with the runtime's own
	// count of used bytes and inodes when it gave one.
	imageFs                   *FsInfo
	imageUsed, imageInodeUsed *uint64
	maxPID, tasks             *int64
}

// systemInput is one system container's cgroup as read.
type systemInput struct {
	name  string
	stats *cgroups.Stats
	rate  *uint64
	start time.Time
}

// podInput is what was read about one running pod.
type podInput struct {
	// status is the runtime's view (identity, sandbox and containers).
	status *container.PodStatus
	// stats is the runtime's stats of the pod's sandbox.
	stats *runtimeapi.PodSandboxStats
	// podRate and containerRates are CPU usage rates by ID.
	podRate        *uint64
	containerRates map[string]*uint64
	// psi and containerPSI (by container ID) are the pressure of the pod's
	// and its containers' cgroups (the CRI gives none).
	psi          cgroups.Pressure
	containerPSI map[string]cgroups.Pressure
	// logs: container name -> usage of its log directory.
	logs    map[string]DiskUsage
	volumes []volumeInput
}

type volumeInput struct {
	name  string
	usage DiskUsage
	fs    FsInfo
	time  time.Time
	// claim names the PersistentVolumeClaim of a persistent volume (in the
	// pod's namespace): its usage is its filesystem's (fs), as upstream's
	// statfs metrics, and it is no ephemeral storage.
	claim string
	// driver: usage and fs are the volume driver's answer (used bytes
	// and inodes as it said them), not statfs.
	driver bool
}

func u64(v uint64) *uint64 { return &v }

func ts(ns int64, fallback time.Time) metav1.Time {
	if ns <= 0 {
		return metav1.NewTime(fallback)
	}
	return metav1.NewTime(time.Unix(0, ns))
}

// statsPSI converts one pressure file; nil when it was not read, or gave
// no full line (the Summary API's full is not optional, and a zero would
// claim no stall).
func statsPSI(p *cgroups.PSI) *statsapi.PSIStats {
	if p == nil || p.Full == nil {
		return nil
	}
	conv := func(d cgroups.PSIData) statsapi.PSIData {
		return statsapi.PSIData{Total: d.Total, Avg10: d.Avg10, Avg60: d.Avg60, Avg300: d.Avg300}
	}
	return &statsapi.PSIStats{Full: conv(*p.Full), Some: conv(p.Some)}
}

// setPSI puts a cgroup's CPU and memory pressure on its CPU and memory
// stats, where there are any.
func setPSI(cpu *statsapi.CPUStats, mem *statsapi.MemoryStats, p cgroups.Pressure) {
	if cpu != nil {
		cpu.PSI = statsPSI(p.CPU)
	}
	if mem != nil {
		mem.PSI = statsPSI(p.Memory)
	}
}

// ioStats is a cgroup's IO pressure; nil without it (the Summary API's IO
// stats carry nothing else).
func ioStats(p *cgroups.PSI, t time.Time) *statsapi.IOStats {
	psi := statsPSI(p)
	if psi == nil {
		return nil
	}
	return &statsapi.IOStats{Time: metav1.NewTime(t), PSI: psi}
}

// cgroupCPU and cgroupMemory convert a cgroup reading, its pressure
// included; memCapacity bounds available memory when the cgroup has no
// limit of its own.
func cgroupCPU(s *cgroups.Stats, rate *uint64) *statsapi.CPUStats {
	if s == nil || s.CPU == nil {
		return nil
	}
	return &statsapi.CPUStats{Time: metav1.NewTime(s.Time), UsageCoreNanoSeconds: u64(s.CPU.Usage), UsageNanoCores: rate, PSI: statsPSI(s.PSI.CPU)}
}

func cgroupMemory(s *cgroups.Stats, memCapacity uint64) *statsapi.MemoryStats {
	if s == nil || s.Memory == nil {
		return nil
	}
	m := s.Memory
	out := &statsapi.MemoryStats{Time: metav1.NewTime(s.Time), UsageBytes: u64(m.Usage), WorkingSetBytes: u64(m.WorkingSet),
		RSSBytes: u64(m.RSS), PageFaults: u64(m.PageFaults), MajorPageFaults: u64(m.MajFaults), PSI: statsPSI(s.PSI.Memory)}
	limit := m.Limit
	if limit == 0 || (memCapacity > 0 && limit > memCapacity) {
		limit = memCapacity
	}
	if limit > 0 {
		avail := uint64(0)
		if limit > m.WorkingSet {
			avail = limit - m.WorkingSet
		}
		out.AvailableBytes = &avail
	}
	return out
}

func networkStats(ifaces []Interface, def string, t time.Time) *statsapi.NetworkStats {
	if len(ifaces) == 0 {
		return nil
	}
	out := &statsapi.NetworkStats{Time: metav1.NewTime(t)}
	for _, i := range ifaces {
		is := statsapi.InterfaceStats{Name: i.Name, RxBytes: u64(i.RxBytes), RxErrors: u64(i.RxErrors), TxBytes: u64(i.TxBytes), TxErrors: u64(i.TxErrors)}
		out.Interfaces = append(out.Interfaces, is)
		if i.Name == def {
			out.InterfaceStats = is
		}
	}
	if out.InterfaceStats.Name == "" {
		out.InterfaceStats = out.Interfaces[0]
	}
	return out
}

func fsStats(fi *FsInfo, used, inodesUsed *uint64, t time.Time) *statsapi.FsStats {
	if fi == nil {
		return nil
	}
	out := &statsapi.FsStats{Time: metav1.NewTime(t), AvailableBytes: u64(fi.Available), CapacityBytes: u64(fi.Capacity),
		Inodes: u64(fi.Inodes), InodesFree: u64(fi.InodesFree)}
	if used != nil {
		out.UsedBytes = used
	} else {
		out.UsedBytes = u64(fi.Used)
	}
	if inodesUsed != nil {
		out.InodesUsed = inodesUsed
	} else if fi.Inodes >= fi.InodesFree {
		out.InodesUsed = u64(fi.Inodes - fi.InodesFree)
	}
	return out
}

// buildNode assembles the node's stats.
func buildNode(now time.Time, n nodeInput, cpuMemOnly bool) statsapi.NodeStats {
	out := statsapi.NodeStats{NodeName: n.name, StartTime: metav1.NewTime(n.boot),
		CPU: cgroupCPU(n.root, n.rootRate), Memory: cgroupMemory(n.root, n.memCapacity)}
	if total, ok := n.meminfo["SwapTotal"]; ok {
		free := n.meminfo["SwapFree"]
		used := uint64(0)
		if total > free {
			used = total - free
		}
		out.Swap = &statsapi.SwapStats{Time: metav1.NewTime(now), SwapAvailableBytes: u64(free), SwapUsageBytes: u64(used)}
	}
	if n.pods != nil {
		pods := statsapi.ContainerStats{
			Name: statsapi.SystemContainerPods, StartTime: metav1.NewTime(n.boot),
			CPU: cgroupCPU(n.pods, n.podsRate), Memory: cgroupMemory(n.pods, n.memCapacity)}
		if !cpuMemOnly {
			pods.IO = ioStats(n.pods.PSI.IO, n.pods.Time)
		}
		out.SystemContainers = append(out.SystemContainers, pods)
	}
	for _, sys := range n.system {
		// No memory capacity: a system container is not limited by node
		// allocatable, so it has no available bytes unless its cgroup
		// has a limit of its own.
		c := statsapi.ContainerStats{Name: sys.name, StartTime: metav1.NewTime(sys.start),
			CPU: cgroupCPU(sys.stats, sys.rate), Memory: cgroupMemory(sys.stats, 0)}
		if !cpuMemOnly {
			c.IO = ioStats(sys.stats.PSI.IO, sys.stats.Time)
		}
		out.SystemContainers = append(out.SystemContainers, c)
	}
	if cpuMemOnly {
		return out
	}
	if n.root != nil {
		out.IO = ioStats(n.root.PSI.IO, n.root.Time)
	}
	out.Network = networkStats(n.net, n.defaultIface, now)
	out.Fs = fsStats(n.rootFs, nil, nil, now)
	if n.imageFs != nil {
		img := fsStats(n.imageFs, n.imageUsed, n.imageInodeUsed, now)
		ctr := *img
		out.Runtime = &statsapi.RuntimeStats{ImageFs: img, ContainerFs: &ctr}
	}
	if n.maxPID != nil || n.tasks != nil {
		out.Rlimit = &statsapi.RlimitStats{Time: metav1.NewTime(now), MaxPID: n.maxPID, NumOfRunningProcesses: n.tasks}
	}
	return out
}

// criCPU and criMemory convert the runtime's stats; rate is the kubelet's
// own usage rate (nil until it has two samples).
func criCPU(c *runtimeapi.CpuUsage, rate *uint64, now time.Time) *statsapi.CPUStats {
	if c == nil {
		return nil
	}
	out := &statsapi.CPUStats{Time: ts(c.GetTimestamp(), now), UsageNanoCores: rate}
	if c.UsageCoreNanoSeconds != nil {
		out.UsageCoreNanoSeconds = u64(c.UsageCoreNanoSeconds.Value)
	}
	return out
}

func criMemory(m *runtimeapi.MemoryUsage, now time.Time) *statsapi.MemoryStats {
	if m == nil {
		return nil
	}
	out := &statsapi.MemoryStats{Time: ts(m.GetTimestamp(), now)}
	if m.WorkingSetBytes != nil {
		out.WorkingSetBytes = u64(m.WorkingSetBytes.Value)
	}
	if m.UsageBytes != nil {
		out.UsageBytes = u64(m.UsageBytes.Value)
	}
	if m.RssBytes != nil {
		out.RSSBytes = u64(m.RssBytes.Value)
	}
	if m.PageFaults != nil {
		out.PageFaults = u64(m.PageFaults.Value)
	}
	if m.MajorPageFaults != nil {
		out.MajorPageFaults = u64(m.MajorPageFaults.Value)
	}
	// available_bytes is only meaningful under a limit; containerd sends an
	// empty value without one, so it is not passed on.
	if m.AvailableBytes != nil && m.AvailableBytes.Value > 0 {
		out.AvailableBytes = u64(m.AvailableBytes.Value)
	}
	return out
}

func criNetwork(n *runtimeapi.NetworkUsage, now time.Time) *statsapi.NetworkStats {
	if n == nil || n.DefaultInterface == nil {
		return nil
	}
	conv := func(i *runtimeapi.NetworkInterfaceUsage) statsapi.InterfaceStats {
		out := statsapi.InterfaceStats{Name: i.Name}
		if i.RxBytes != nil {
			out.RxBytes = u64(i.RxBytes.Value)
		}
		if i.RxErrors != nil {
			out.RxErrors = u64(i.RxErrors.Value)
		}
		if i.TxBytes != nil {
			out.TxBytes = u64(i.TxBytes.Value)
		}
		if i.TxErrors != nil {
			out.TxErrors = u64(i.TxErrors.Value)
		}
		return out
	}
	out := &statsapi.NetworkStats{Time: ts(n.GetTimestamp(), now), InterfaceStats: conv(n.DefaultInterface)}
	out.Interfaces = append(out.Interfaces, out.InterfaceStats)
	for _, i := range n.Interfaces {
		if i.Name != n.DefaultInterface.Name {
			out.Interfaces = append(out.Interfaces, conv(i))
		}
	}
	return out
}

// buildPod assembles one pod's stats, or false when the pod has no ready
// sandbox with stats.
func buildPod(now time.Time, in podInput, rootFs, imageFs *FsInfo, cpuMemOnly bool) (statsapi.PodStats, bool) {
	sb := in.status.ReadySandbox()
	if sb == nil || in.stats == nil || in.stats.GetAttributes().GetId() != sb.ID {
		return statsapi.PodStats{}, false
	}
	out := statsapi.PodStats{
		PodRef:     statsapi.PodReference{Name: in.status.Name, Namespace: in.status.Namespace, UID: string(in.status.UID)},
		StartTime:  metav1.NewTime(sb.CreatedAt),
		Containers: []statsapi.ContainerStats{},
	}
	linux := in.stats.GetLinux()
	out.CPU = criCPU(linux.GetCpu(), in.podRate, now)
	out.Memory = criMemory(linux.GetMemory(), now)
	setPSI(out.CPU, out.Memory, in.psi)
	if !cpuMemOnly {
		out.IO = ioStats(in.psi.IO, now)
		out.Network = criNetwork(linux.GetNetwork(), now)
		if p := linux.GetProcess(); p != nil && p.ProcessCount != nil {
			out.ProcessStats = &statsapi.ProcessStats{ProcessCount: u64(p.ProcessCount.Value)}
		}
	}
	byID := map[string]*runtimeapi.ContainerStats{}
	for _, cs := range linux.GetContainers() {
		byID[cs.GetAttributes().GetId()] = cs
	}
	var ephUsed, ephInodes uint64
	for _, c := range in.status.Containers {
		cs := byID[c.ID]
		if c.State != container.StateRunning || cs == nil {
			continue
		}
		st := statsapi.ContainerStats{Name: c.Name, StartTime: metav1.NewTime(c.CreatedAt),
			CPU: criCPU(cs.Cpu, in.containerRates[c.ID], now), Memory: criMemory(cs.Memory, now)}
		psi := in.containerPSI[c.ID]
		setPSI(st.CPU, st.Memory, psi)
		if !cpuMemOnly {
			st.IO = ioStats(psi.IO, now)
			if wl := cs.WritableLayer; wl != nil && imageFs != nil {
				var used, inodes *uint64
				if wl.UsedBytes != nil {
					used = u64(wl.UsedBytes.Value)
					ephUsed += wl.UsedBytes.Value
				}
				if wl.InodesUsed != nil {
					inodes = u64(wl.InodesUsed.Value)
					ephInodes += wl.InodesUsed.Value
				}
				st.Rootfs = fsStats(imageFs, used, inodes, time.Unix(0, wl.Timestamp))
				if used == nil {
					st.Rootfs.UsedBytes = nil
				}
			}
			if lu, ok := in.logs[c.Name]; ok && rootFs != nil {
				st.Logs = fsStats(rootFs, u64(lu.Bytes), u64(lu.Inodes), now)
				ephUsed += lu.Bytes
				ephInodes += lu.Inodes
			}
		}
		out.Containers = append(out.Containers, st)
	}
	sort.Slice(out.Containers, func(i, j int) bool { return out.Containers[i].Name < out.Containers[j].Name })
	if cpuMemOnly {
		return out, true
	}
	for _, v := range in.volumes {
		fi := v.fs
		if v.claim != "" || v.driver {
			// A persistent volume, or one its driver measures (an
			// inline CSI volume, reported without a claim): no
			// ephemeral storage.
			vs := statsapi.VolumeStats{Name: v.name, FsStats: *v.claimFsStats()}
			if v.claim != "" {
				vs.PVCRef = &statsapi.PVCReference{Name: v.claim, Namespace: in.status.Namespace}
			}
			out.VolumeStats = append(out.VolumeStats, vs)
			continue
		}
		vs := statsapi.VolumeStats{Name: v.name, FsStats: *fsStats(&fi, u64(v.usage.Bytes), u64(v.usage.Inodes), v.time)}
		out.VolumeStats = append(out.VolumeStats, vs)
		ephUsed += v.usage.Bytes
		ephInodes += v.usage.Inodes
	}
	if rootFs != nil {
		out.EphemeralStorage = fsStats(rootFs, u64(ephUsed), u64(ephInodes), now)
	}
	return out, true
}

// buildSummary assembles the Summary: the node, then every pod with a
// ready sandbox, ordered by namespace and name.
func buildSummary(now time.Time, n nodeInput, pods []podInput, cpuMemOnly bool) *statsapi.Summary {
	s := &statsapi.Summary{Node: buildNode(now, n, cpuMemOnly), Pods: []statsapi.PodStats{}}
	for _, p := range pods {
		if ps, ok := buildPod(now, p, n.rootFs, n.imageFs, cpuMemOnly); ok {
			s.Pods = append(s.Pods, ps)
		}
	}
	sort.Slice(s.Pods, func(i, j int) bool {
		a, b := s.Pods[i].PodRef, s.Pods[j].PodRef
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return s
}

// CPUAndMemoryOnly is s without what a CPU-and-memory summary leaves out
// (filesystems, network, IO, volumes, logs, ephemeral storage, process and
// rlimit stats); s is not changed.
func CPUAndMemoryOnly(s *statsapi.Summary) *statsapi.Summary {
	n := s.Node
	out := &statsapi.Summary{
		Node: statsapi.NodeStats{NodeName: n.NodeName, StartTime: n.StartTime, CPU: n.CPU, Memory: n.Memory, Swap: n.Swap,
			SystemContainers: cpuAndMemoryContainers(n.SystemContainers)},
		Pods: make([]statsapi.PodStats, 0, len(s.Pods)),
	}
	for _, p := range s.Pods {
		out.Pods = append(out.Pods, statsapi.PodStats{PodRef: p.PodRef, StartTime: p.StartTime, CPU: p.CPU, Memory: p.Memory, Swap: p.Swap,
			Containers: cpuAndMemoryContainers(p.Containers)})
	}
	return out
}

func cpuAndMemoryContainers(cs []statsapi.ContainerStats) []statsapi.ContainerStats {
	out := make([]statsapi.ContainerStats, 0, len(cs))
	for _, c := range cs {
		out = append(out, statsapi.ContainerStats{Name: c.Name, StartTime: c.StartTime, CPU: c.CPU, Memory: c.Memory, Swap: c.Swap})
	}
	return out
}
