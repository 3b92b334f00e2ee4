// Package stats serves the node's resource usage: the Summary API
// (/stats/summary, k8s.io/kubelet/pkg/apis/stats/v1alpha1), the resource
// metrics metrics-server reads (/metrics/resource) and a cadvisor-compatible
// subset (/metrics/cadvisor).
//
// Sources: pods and containers from the CRI (ListPodSandboxStats, which
// containerd 1.6 implements: pod and container CPU and memory, pod
// network, process count, writable layer), matched with the runtime view
// the PLEG keeps, except for /metrics/resource, which reads the pod and
// container cgroups when it can (cgroupstats.go); the node from the root cgroup, /proc and statfs of the
// kubelet's root directory and the image filesystem the CRI names;
// pressure stall information (PSI) of the node, pods and containers from
// their cgroups (on a v1 hybrid host, from the cgroup2 mount's copy of the
// tree), as containerd 1.6 gives none; volume usage by walking the pod's volume directories (cached), and statfs of
// its persistent volumes (claims.go, also behind kubelet_volume_stats_*);
// container logs from their log directories. /metrics/cadvisor reads the
// pod and container cgroups directly, as cadvisor does.
//
// Collection is lazy: nothing is read until someone asks, a result is
// reused for MaxAge, and volume walks run in the background at most once
// per VolumePeriod. None of it is on the pod start path.
package stats

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/gokubelet/kubelet/pkg/node/machineinfo"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/stats/cgroups"
)

// Options configure a Provider.
type Options struct {
	NodeName string
	// RootDir is the kubelet's root directory: its filesystem is the
	// node's, and pod volumes live under it.
	RootDir string
	// PodLogsDir holds container logs (<dir>/<ns>_<name>_<uid>/<container>).
	PodLogsDir string
	// Runtime and Images are the CRI services.
	Runtime cri.RuntimeService
	Images  cri.ImageManagerService
	// Pods is the runtime's view of the pods (the PLEG's cache).
	Pods func() []*container.PodStatus
	// PodCgroup names a pod's cgroup (for /metrics/cadvisor); false for
	// pods the kubelet has no spec of.
	PodCgroup func(uid types.UID) (string, bool)
	// SystemCgroups names the node's own cgroups by system container
	// ("kubelet", "runtime", "misc"); each is reported beside "pods".
	SystemCgroups func() map[string]string
	// Started is when the kubelet started: the "kubelet" system
	// container's start time.
	Started time.Time
	// CgroupDriver (cgroupfs or systemd) and CgroupRoot place the kubepods
	// hierarchy.
	CgroupDriver string
	CgroupRoot   string
	// Machine facts.
	MemoryCapacity uint64
	NumCPU         int
	BootID         string
	MachineID      string
	SystemUUID     string

	Clock clock.Clock
	// MaxAge is how long a collected summary is served again (default 1s).
	MaxAge time.Duration
	// VolumePeriod is how often a volume is measured at most (default 1m,
	// upstream's volumeStatsAggPeriod).
	VolumePeriod time.Duration
	// VolumeWait bounds how long a request waits for a volume's first
	// measurement (default 500ms); later requests get it.
	VolumeWait time.Duration
	// CRITimeout bounds the CRI calls of one collection (default 10s).
	CRITimeout time.Duration
	// ClaimVolumes, when set, lists a pod's persistent volumes whose usage
	// is reported (claims.go).
	ClaimVolumes func(uid types.UID) []ClaimVolume
}

// Provider collects stats on demand. Safe for concurrent use.
type Provider struct {
	o            Options
	cg           *cgroups.Reader
	boot         time.Time
	defaultIface string
	vols         *volumeCache

	// mu serialises collections: a request arriving during one waits for
	// it and gets its result.
	mu    sync.Mutex
	rates *rateCache
	// cache holds the last summary of each scope and when it was collected.
	cache [scopes]cachedSummary
	// noSandboxStats: the runtime does not implement ListPodSandboxStats;
	// pod stats are summed from ListContainerStats instead.
	noSandboxStats bool
	// fsInfo replaces statfs of persistent volumes and of the machine's
	// filesystems in tests.
	fsInfo func(path string) (FsInfo, error)
	// procRoot and sysRoot are /proc and /sys (fixture trees in tests).
	procRoot, sysRoot string
}

// New returns a Provider. A host whose cgroups cannot be found still gets
// pod stats from the CRI; the node's CPU and memory are then missing, and
// a log line says why.
func New(o Options) *Provider {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.MaxAge <= 0 {
		o.MaxAge = time.Second
	}
	if o.VolumePeriod <= 0 {
		o.VolumePeriod = time.Minute
	}
	if o.VolumeWait <= 0 {
		o.VolumeWait = 500 * time.Millisecond
	}
	if o.CRITimeout <= 0 {
		o.CRITimeout = 10 * time.Second
	}
	if o.CgroupRoot == "" {
		o.CgroupRoot = "/"
	}
	p := &Provider{o: o, boot: BootTime(), rates: newRateCache(), vols: newVolumeCache(o.VolumePeriod, o.Clock), procRoot: "/proc", sysRoot: "/sys"}
	if h, err := cgroups.Detect(); err == nil {
		p.cg = cgroups.NewReader(h)
	} else {
		klog.ErrorS(err, "Cgroups not found; node CPU and memory stats and /metrics/cadvisor are unavailable")
	}
	p.defaultIface = "eth0"
	if b, err := os.ReadFile("/proc/net/route"); err == nil {
		if i := machineinfo.ParseDefaultRouteInterface(string(b)); i != "" {
			p.defaultIface = i
		}
	}
	return p
}

// CgroupVersion is the host's cgroup version, 0 when unknown.
func (p *Provider) CgroupVersion() int {
	if p.cg == nil {
		return 0
	}
	return p.cg.Version()
}

// KubepodsCgroup is the cgroup all pods live under.
func (p *Provider) KubepodsCgroup() string {
	if p.o.CgroupDriver == "systemd" {
		return path.Join("/", p.o.CgroupRoot, "kubepods.slice")
	}
	return path.Join("/", p.o.CgroupRoot, "kubepods")
}

// Summary returns the node's stats summary of the given scope. A summary
// younger than MaxAge is served again; a fresh one of a broader scope
// serves a narrower one.
func (p *Provider) Summary(ctx context.Context, scope Scope) (*statsapi.Summary, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.o.Clock.Now()
	for broader := Full; broader <= scope; broader++ {
		c := p.cache[broader]
		if c.s == nil || now.Sub(c.at) >= p.o.MaxAge {
			continue
		}
		if broader == scope {
			return c.s, nil
		}
		s := c.s
		if broader == Full {
			s = CPUAndMemoryOnly(s)
		}
		p.cache[scope] = cachedSummary{s, c.at}
		return s, nil
	}
	s, err := p.collect(ctx, now, scope)
	if err != nil {
		return nil, err
	}
	p.cache[scope] = cachedSummary{s, now}
	return s, nil
}

type cachedSummary struct {
	s  *statsapi.Summary
	at time.Time
}

// collect reads everything and assembles the summary. Caller holds p.mu.
func (p *Provider) collect(ctx context.Context, now time.Time, scope Scope) (*statsapi.Summary, error) {
	cpuMemOnly := scope != Full
	ctx, cancel := context.WithTimeout(ctx, p.o.CRITimeout)
	defer cancel()
	n := nodeInput{name: p.o.NodeName, boot: p.boot, memCapacity: p.o.MemoryCapacity, defaultIface: p.defaultIface}
	if p.cg != nil {
		if st, err := p.cg.Read("/"); err == nil {
			n.root = &st
			if st.CPU != nil {
				n.rootRate = p.rates.observe("cgroup:/", cpuSample{st.Time, st.CPU.Usage})
			}
		} else {
			klog.V(2).InfoS("Reading the root cgroup failed", "err", err)
		}
		kp := p.KubepodsCgroup()
		if st, err := p.cg.Read(kp); err == nil {
			n.pods = &st
			if st.CPU != nil {
				n.podsRate = p.rates.observe("cgroup:"+kp, cpuSample{st.Time, st.CPU.Usage})
			}
		}
	}
	if p.cg != nil && p.o.SystemCgroups != nil {
		n.system = p.readSystemCgroups(p.o.SystemCgroups())
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		n.meminfo = cgroups.ParseMeminfo(string(b))
	}

	statuses := p.o.Pods()
	// /metrics/resource reads the cgroups alone when it can; everything
	// else asks the runtime (network, writable layers, process counts).
	sandboxStats, fromCgroups := []*runtimeapi.PodSandboxStats(nil), false
	if scope == ResourceMetrics {
		sandboxStats, fromCgroups = p.sandboxStatsFromCgroups(statuses)
	}
	if !fromCgroups {
		var err error
		if sandboxStats, err = p.sandboxStats(ctx, statuses); err != nil {
			return nil, err
		}
	}
	byID := make(map[string]*runtimeapi.PodSandboxStats, len(sandboxStats))
	for _, s := range sandboxStats {
		byID[s.GetAttributes().GetId()] = s
	}
	deadline := time.Now().Add(p.o.VolumeWait)
	var pods []podInput
	for _, ps := range statuses {
		sb := ps.ReadySandbox()
		if sb == nil || byID[sb.ID] == nil {
			continue
		}
		in := podInput{status: ps, stats: byID[sb.ID], containerRates: map[string]*uint64{}}
		linux := in.stats.GetLinux()
		if c := linux.GetCpu(); c.GetUsageCoreNanoSeconds() != nil {
			in.podRate = p.rates.observe("pod:"+sb.ID, cpuSample{ts(c.Timestamp, now).Time, c.UsageCoreNanoSeconds.Value})
		}
		for _, cs := range linux.GetContainers() {
			if c := cs.GetCpu(); c.GetUsageCoreNanoSeconds() != nil {
				id := cs.GetAttributes().GetId()
				in.containerRates[id] = p.rates.observe("container:"+id, cpuSample{ts(c.Timestamp, now).Time, c.UsageCoreNanoSeconds.Value})
			}
		}
		if scope != ResourceMetrics {
			p.readPodPSI(&in)
		}
		if !cpuMemOnly {
			in.logs = map[string]DiskUsage{}
			logDir := filepath.Join(p.o.PodLogsDir, ps.Namespace+"_"+ps.Name+"_"+string(ps.UID))
			for _, c := range ps.Running() {
				if u, err := logUsage(filepath.Join(logDir, c.Name)); err == nil {
					in.logs[c.Name] = u
				}
			}
			for _, v := range listPodVolumes(p.o.RootDir, ps.UID) {
				if u, fi, at, ok := p.vols.get(v.Path, deadline); ok {
					in.volumes = append(in.volumes, volumeInput{name: v.Name, usage: u, fs: fi, time: at})
				}
			}
			in.volumes = append(in.volumes, p.claimVolumes(ps.UID, now, deadline)...)
		}
		pods = append(pods, in)
	}
	p.rates.sweep()
	if !cpuMemOnly {
		p.vols.expire()
		if ifs, err := readNetDev(0); err == nil {
			n.net = ifs
		}
		if fi, err := fsInfo(p.o.RootDir); err == nil {
			n.rootFs = &fi
		} else {
			klog.V(2).InfoS("Reading the root filesystem's usage failed", "path", p.o.RootDir, "err", err)
		}
		p.imageFs(ctx, &n)
		n.maxPID, n.tasks = rlimit()
	}
	return buildSummary(now, n, pods, cpuMemOnly), nil
}

// readSystemCgroups reads the node's own cgroups, in name order; one that
// cannot be read is left out (and logged).
func (p *Provider) readSystemCgroups(names map[string]string) []systemInput {
	var out []systemInput
	for _, name := range slices.Sorted(maps.Keys(names)) {
		path := names[name]
		st, err := p.cg.Read(path)
		if err != nil {
			klog.V(4).InfoS("Reading a system container's cgroup failed", "container", name, "cgroup", path, "err", err)
			continue
		}
		in := systemInput{name: name, stats: &st, start: p.boot}
		if name == statsapi.SystemContainerKubelet && !p.o.Started.IsZero() {
			in.start = p.o.Started
		}
		if st.CPU != nil {
			in.rate = p.rates.observe("cgroup:"+path, cpuSample{st.Time, st.CPU.Usage})
		}
		out = append(out, in)
	}
	return out
}

// readPodPSI reads the pressure of the pod's cgroup and of its running
// containers' cgroups (ContainerCgroup). A pod whose cgroup is not known
// (no spec: an orphan) has none.
func (p *Provider) readPodPSI(in *podInput) {
	if p.cg == nil || p.o.PodCgroup == nil {
		return
	}
	podCg, known := p.o.PodCgroup(in.status.UID)
	if !known {
		return
	}
	in.psi = p.cg.ReadPSI(podCg)
	in.containerPSI = map[string]cgroups.Pressure{}
	for _, c := range in.status.Running() {
		in.containerPSI[c.ID] = p.cg.ReadPSI(ContainerCgroup(podCg, p.o.CgroupDriver, c.ID))
	}
}

// imageFs fills the image filesystem: the runtime names it and counts its
// use; statfs gives its size.
func (p *Provider) imageFs(ctx context.Context, n *nodeInput) {
	if p.o.Images == nil {
		return
	}
	resp, err := p.o.Images.ImageFsInfo(ctx)
	if err != nil {
		klog.V(2).InfoS("ImageFsInfo failed", "err", err)
		return
	}
	for _, f := range resp.GetImageFilesystems() {
		mp := f.GetFsId().GetMountpoint()
		if mp == "" {
			continue
		}
		fi, err := fsInfo(mp)
		if err != nil {
			klog.V(2).InfoS("Reading the image filesystem's usage failed", "path", mp, "err", err)
			return
		}
		n.imageFs = &fi
		if f.UsedBytes != nil {
			n.imageUsed = u64(f.UsedBytes.Value)
		}
		if f.InodesUsed != nil {
			n.imageInodeUsed = u64(f.InodesUsed.Value)
		}
		return
	}
}

// sandboxStats asks the runtime for every pod's stats; a runtime without
// ListPodSandboxStats gets its pods' stats summed from ListContainerStats.
func (p *Provider) sandboxStats(ctx context.Context, statuses []*container.PodStatus) ([]*runtimeapi.PodSandboxStats, error) {
	if p.o.Runtime == nil {
		return nil, errors.New("no container runtime")
	}
	if !p.noSandboxStats {
		out, err := p.o.Runtime.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{})
		if status.Code(err) != codes.Unimplemented {
			if err != nil {
				return nil, fmt.Errorf("ListPodSandboxStats: %w", err)
			}
			return out, nil
		}
		klog.InfoS("The container runtime does not implement ListPodSandboxStats; pod stats are summed from container stats, without network")
		p.noSandboxStats = true
	}
	list, err := p.o.Runtime.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	if err != nil {
		return nil, fmt.Errorf("ListContainerStats: %w", err)
	}
	return SandboxStatsFromContainers(list, statuses), nil
}

// SandboxStatsFromContainers builds pod stats from container stats for
// runtimes without ListPodSandboxStats: each pod with a ready sandbox gets
// the sums of its running containers' CPU and memory.
func SandboxStatsFromContainers(list []*runtimeapi.ContainerStats, statuses []*container.PodStatus) []*runtimeapi.PodSandboxStats {
	byID := map[string]*runtimeapi.ContainerStats{}
	for _, cs := range list {
		byID[cs.GetAttributes().GetId()] = cs
	}
	var out []*runtimeapi.PodSandboxStats
	for _, ps := range statuses {
		sb := ps.ReadySandbox()
		if sb == nil {
			continue
		}
		linux := &runtimeapi.LinuxPodSandboxStats{}
		var cpuTS, memTS int64
		var cpu, ws, usage, rss uint64
		haveCPU, haveMem := false, false
		for _, c := range ps.Containers {
			cs := byID[c.ID]
			if cs == nil || c.State != container.StateRunning {
				continue
			}
			linux.Containers = append(linux.Containers, cs)
			if v := cs.GetCpu().GetUsageCoreNanoSeconds(); v != nil {
				cpu += v.Value
				haveCPU = true
				cpuTS = max(cpuTS, cs.GetCpu().GetTimestamp())
			}
			if m := cs.GetMemory(); m != nil {
				haveMem = true
				memTS = max(memTS, m.GetTimestamp())
				ws += m.GetWorkingSetBytes().GetValue()
				usage += m.GetUsageBytes().GetValue()
				rss += m.GetRssBytes().GetValue()
			}
		}
		if haveCPU {
			linux.Cpu = &runtimeapi.CpuUsage{Timestamp: cpuTS, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: cpu}}
		}
		if haveMem {
			linux.Memory = &runtimeapi.MemoryUsage{Timestamp: memTS, WorkingSetBytes: &runtimeapi.UInt64Value{Value: ws},
				UsageBytes: &runtimeapi.UInt64Value{Value: usage}, RssBytes: &runtimeapi.UInt64Value{Value: rss}}
		}
		out = append(out, &runtimeapi.PodSandboxStats{
			Attributes: &runtimeapi.PodSandboxAttributes{Id: sb.ID, Metadata: &runtimeapi.PodSandboxMetadata{Name: ps.Name, Namespace: ps.Namespace, Uid: string(ps.UID)}},
			Linux:      linux,
		})
	}
	return out
}
