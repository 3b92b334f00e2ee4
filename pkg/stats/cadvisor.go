package stats

import (
	"os"
	"path"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/stats/cgroups"
)

// /metrics/cadvisor: a cadvisor-compatible subset, read from the cgroups
// of the node (id="/"), each pod (container="") and each running container,
// with cadvisor's label set as the upstream kubelet exports it: container,
// id (the cgroup path), image, name (the runtime's container ID),
// namespace, pod; pressure stall information as cadvisor's
// container_pressure_* series; block I/O per device (blkio or io.stat,
// devices named from /sys and the mounts); for pods and containers the
// processes in the cgroup, their file descriptors (/proc/<pid>/fd) and the
// init process's open files limit; for the root the block filesystems'
// statfs. Each scrape reads these afresh, nothing else: no process is
// started and only the cgroups' own processes are looked at in /proc.
// docs/metrics.md lists what is and is not provided.

// cadvisorLabels are the labels of every container_* series, in order.
var cadvisorLabels = []string{"container", "id", "image", "name", "namespace", "pod"}

func withLabels(extra ...string) []string {
	return append(append([]string{}, cadvisorLabels...), extra...)
}

func cdesc(name, help string, extra ...string) *metrics.Desc {
	return metrics.NewDesc(name, help, withLabels(extra...), nil, metrics.ALPHA, "")
}

var (
	cCPUTotal     = cdesc("container_cpu_usage_seconds_total", "Cumulative CPU time used, in seconds.", "cpu")
	cCPUUser      = cdesc("container_cpu_user_seconds_total", "Cumulative user CPU time, in seconds.")
	cCPUSystem    = cdesc("container_cpu_system_seconds_total", "Cumulative system CPU time, in seconds.")
	cCFSPeriods   = cdesc("container_cpu_cfs_periods_total", "Number of elapsed CFS enforcement periods.")
	cCFSThrottled = cdesc("container_cpu_cfs_throttled_periods_total", "Number of CFS periods the cgroup was throttled in.")
	cCFSThrTime   = cdesc("container_cpu_cfs_throttled_seconds_total", "Total time the cgroup was throttled, in seconds.")
	cMemUsage     = cdesc("container_memory_usage_bytes", "Memory used, page cache included, in bytes.")
	cMemMax       = cdesc("container_memory_max_usage_bytes", "Highest memory use recorded, in bytes.")
	cMemWS        = cdesc("container_memory_working_set_bytes", "Memory working set (usage less inactive file pages), in bytes.")
	cMemRSS       = cdesc("container_memory_rss", "Anonymous and swap cache memory, in bytes.")
	cMemCache     = cdesc("container_memory_cache", "Page cache memory, in bytes.")
	cMemMapped    = cdesc("container_memory_mapped_file", "Memory-mapped file pages, in bytes.")
	cMemSwap      = cdesc("container_memory_swap", "Swap used, in bytes.")
	cMemFailcnt   = cdesc("container_memory_failcnt", "Number of times memory use hit the limit.")
	cMemActive    = cdesc("container_memory_total_active_file_bytes", "Active file pages, in bytes.")
	cMemInactive  = cdesc("container_memory_total_inactive_file_bytes", "Inactive file pages, in bytes.")
	cOOM          = cdesc("container_oom_events_total", "Number of processes the OOM killer killed in the cgroup.")
	cThreads      = cdesc("container_threads", "Number of tasks (threads) in the cgroup.")
	cLastSeen     = cdesc("container_last_seen", "When the cgroup was last read, as unix time in seconds.")
	cStart        = cdesc("container_start_time_seconds", "When the container (or pod sandbox) was created, as unix time in seconds.")
	cSpecMem      = cdesc("container_spec_memory_limit_bytes", "Memory limit, in bytes (0: none).")
	cSpecShares   = cdesc("container_spec_cpu_shares", "CPU shares.")
	cSpecQuota    = cdesc("container_spec_cpu_quota", "CFS quota, in microseconds per period.")
	cSpecPeriod   = cdesc("container_spec_cpu_period", "CFS period, in microseconds.")
	cNetRxBytes   = cdesc("container_network_receive_bytes_total", "Bytes received.", "interface")
	cNetRxPackets = cdesc("container_network_receive_packets_total", "Packets received.", "interface")
	cNetRxErrors  = cdesc("container_network_receive_errors_total", "Receive errors.", "interface")
	cNetRxDropped = cdesc("container_network_receive_packets_dropped_total", "Received packets dropped.", "interface")
	cNetTxBytes   = cdesc("container_network_transmit_bytes_total", "Bytes transmitted.", "interface")
	cNetTxPackets = cdesc("container_network_transmit_packets_total", "Packets transmitted.", "interface")
	cNetTxErrors  = cdesc("container_network_transmit_errors_total", "Transmit errors.", "interface")
	cNetTxDropped = cdesc("container_network_transmit_packets_dropped_total", "Transmitted packets dropped.", "interface")
	// Pressure stall information, as cadvisor names it: waiting is the
	// "some" total, stalled the "full" one.
	cCPUWaiting  = cdesc("container_pressure_cpu_waiting_seconds_total", "Total time duration tasks in the container have waited due to CPU congestion.")
	cCPUStalled  = cdesc("container_pressure_cpu_stalled_seconds_total", "Total time duration no tasks in the container could make progress due to CPU congestion.")
	cMemWaiting  = cdesc("container_pressure_memory_waiting_seconds_total", "Total time duration tasks in the container have waited due to memory congestion.")
	cMemStalled  = cdesc("container_pressure_memory_stalled_seconds_total", "Total time duration no tasks in the container could make progress due to memory congestion.")
	cIOWaiting   = cdesc("container_pressure_io_waiting_seconds_total", "Total time duration tasks in the container have waited due to IO congestion.")
	cIOStalled   = cdesc("container_pressure_io_stalled_seconds_total", "Total time duration no tasks in the container could make progress due to IO congestion.")
	cScrapeError = metrics.NewDesc("container_scrape_error", "1 if reading the cgroups failed, else 0.", nil, nil, metrics.ALPHA, "")

	// Memory failures, events and reservations, processes, block I/O and
	// the root cgroup's filesystems with cadvisor's help texts and labels.
	cMemFailures   = cdesc("container_memory_failures_total", "Cumulative count of memory allocation failures.", "failure_type", "scope")
	cMemEventsHigh = cdesc("container_memory_events_high_total", "Cumulative count of memory.high throttle events for the container")
	cMemEventsMax  = cdesc("container_memory_events_max_total", "Cumulative count of memory.max limit hit events for the container")
	cSpecMemResv   = cdesc("container_spec_memory_reservation_limit_bytes", "Memory reservation limit for the container.")
	cSpecMemSwap   = cdesc("container_spec_memory_swap_limit_bytes", "Memory swap limit for the container.")
	cProcesses     = cdesc("container_processes", "Number of processes running inside the container.")
	cFileDescs     = cdesc("container_file_descriptors", "Number of open file descriptors for the container.")
	cSockets       = cdesc("container_sockets", "Number of open sockets for the container.")
	cThreadsMax    = cdesc("container_threads_max", "Maximum number of threads allowed inside the container, infinity if value is zero")
	cUlimitsSoft   = cdesc("container_ulimits_soft", "Soft ulimit values for the container root process. Unlimited if -1, except priority and nice", "ulimit")
	cBlkioUsage    = cdesc("container_blkio_device_usage_total", "Blkio Device bytes usage", "device", "major", "minor", "operation")
	cFsReadsBytes  = cdesc("container_fs_reads_bytes_total", "Cumulative count of bytes read", "device")
	cFsReads       = cdesc("container_fs_reads_total", "Cumulative count of reads completed", "device")
	cFsWritesBytes = cdesc("container_fs_writes_bytes_total", "Cumulative count of bytes written", "device")
	cFsWrites      = cdesc("container_fs_writes_total", "Cumulative count of writes completed", "device")
	cFsUsage       = cdesc("container_fs_usage_bytes", "Number of bytes that are consumed by the container on this filesystem.", "device")
	cFsLimit       = cdesc("container_fs_limit_bytes", "Number of bytes that can be consumed by the container on this filesystem.", "device")
	cFsInodes      = cdesc("container_fs_inodes_total", "Number of Inodes", "device")
	cFsInodesFree  = cdesc("container_fs_inodes_free", "Number of available Inodes", "device")

	machineLabels = []string{"boot_id", "machine_id", "system_uuid"}
	mCPUCores     = metrics.NewDesc("machine_cpu_cores", "Number of logical CPU cores.", machineLabels, nil, metrics.ALPHA, "")
	mMemoryBytes  = metrics.NewDesc("machine_memory_bytes", "Memory installed, in bytes.", machineLabels, nil, metrics.ALPHA, "")
	cadvisorDescs = []*metrics.Desc{cCPUTotal, cCPUUser, cCPUSystem, cCFSPeriods, cCFSThrottled, cCFSThrTime, cMemUsage, cMemMax, cMemWS, cMemRSS, cMemCache, cMemMapped, cMemSwap, cMemFailcnt, cMemActive, cMemInactive, cOOM, cThreads, cLastSeen, cStart, cSpecMem, cSpecShares, cSpecQuota, cSpecPeriod, cNetRxBytes, cNetRxPackets, cNetRxErrors, cNetRxDropped, cNetTxBytes, cNetTxPackets, cNetTxErrors, cNetTxDropped, cCPUWaiting, cCPUStalled, cMemWaiting, cMemStalled, cIOWaiting, cIOStalled,
		cMemFailures, cMemEventsHigh, cMemEventsMax, cSpecMemResv, cSpecMemSwap, cProcesses, cFileDescs, cSockets, cThreadsMax, cUlimitsSoft,
		cBlkioUsage, cFsReadsBytes, cFsReads, cFsWritesBytes, cFsWrites, cFsUsage, cFsLimit, cFsInodes, cFsInodesFree, cScrapeError, mCPUCores, mMemoryBytes}
)

// cgroupEntry is one cgroup to report.
type cgroupEntry struct {
	// labels in cadvisorLabels order.
	labels []string
	stats  cgroups.Stats
	start  time.Time
	net    []Interface
	// io is the cgroup's block I/O, devices named.
	io blockIO
	// procs are the stats of the cgroup's own processes (pods and
	// containers; nil for the root, whose processes are the host's).
	procs *ProcessStats
	// fs are the machine's block filesystems (the root cgroup only).
	fs []fsUsage
}

// deviceIO is one block device's counters by operation, with cadvisor's
// device name ("" when it has none).
type deviceIO struct {
	device       string
	major, minor uint64
	stats        map[string]uint64
}

// blockIO is cgroups.BlockIO with device names.
type blockIO struct {
	bytes, ops []deviceIO
}

// fsUsage is a filesystem's statfs, by device.
type fsUsage struct {
	device string
	info   FsInfo
}

func nameDevices(n *deviceNamer, in []cgroups.DeviceStats) []deviceIO {
	out := make([]deviceIO, 0, len(in))
	for _, d := range in {
		out = append(out, deviceIO{device: n.name(d.Major, d.Minor), major: d.Major, minor: d.Minor, stats: d.Stats})
	}
	return out
}

// scrape is what one scrape reads once for all cgroups: the machine's
// block filesystems and the device names.
type scrape struct {
	fs    []blockFs
	namer *deviceNamer
}

func (p *Provider) newScrape() *scrape {
	s := &scrape{}
	if b, err := os.ReadFile(filepath.Join(p.procRoot, "self", "mountinfo")); err == nil {
		s.fs, _ = parseBlockFilesystems(string(b))
	}
	s.namer = newDeviceNamer(p.sysRoot, s.fs)
	return s
}

// readIO reads a cgroup's block I/O and names its devices.
func (p *Provider) readIO(s *scrape, cg string) blockIO {
	io := p.cg.ReadIO(cg)
	return blockIO{bytes: nameDevices(s.namer, io.ServiceBytes), ops: nameDevices(s.namer, io.Serviced)}
}

// readProcs reads the stats of the processes in a cgroup.
func (p *Provider) readProcs(cg string) *ProcessStats {
	ps := readProcessStats(p.procRoot, p.cg.Procs(cg))
	return &ps
}

// rootFs statfs-es the machine's block filesystems.
func (p *Provider) rootFs(s *scrape) []fsUsage {
	var out []fsUsage
	for _, f := range s.fs {
		if fi, err := p.statfs()(f.Mountpoint); err == nil {
			out = append(out, fsUsage{device: f.Device, info: fi})
		}
	}
	return out
}

// ContainerCgroup is the cgroup of a container of a pod whose cgroup is
// podCgroup, as containerd names it: <pod>/<id> with cgroupfs,
// <pod>/cri-containerd-<id>.scope with systemd.
func ContainerCgroup(podCgroup, driver, id string) string {
	if driver == "systemd" {
		return path.Join(podCgroup, "cri-containerd-"+id+".scope")
	}
	return path.Join(podCgroup, id)
}

// CadvisorCollector serves /metrics/cadvisor.
type CadvisorCollector struct {
	metrics.BaseStableCollector
	p *Provider
}

// NewCadvisorRegistry returns the registry served on /metrics/cadvisor.
func NewCadvisorRegistry(p *Provider) metrics.KubeRegistry {
	r := metrics.NewKubeRegistry()
	r.CustomMustRegister(&CadvisorCollector{p: p})
	return r
}

func (c *CadvisorCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	for _, d := range cadvisorDescs {
		ch <- d
	}
}

// entries reads the cgroups to report: the root, then each pod and its
// running containers.
func (c *CadvisorCollector) entries() ([]cgroupEntry, bool) {
	p := c.p
	if p.cg == nil {
		return nil, false
	}
	var out []cgroupEntry
	ok := true
	sc := p.newScrape()
	if st, err := p.cg.Read("/"); err == nil {
		out = append(out, cgroupEntry{labels: []string{"", "/", "", "", "", ""}, stats: st, start: p.boot,
			io: p.readIO(sc, "/"), fs: p.rootFs(sc)})
	} else {
		ok = false
		klog.V(2).InfoS("Reading the root cgroup failed", "err", err)
	}
	if p.o.Pods == nil || p.o.PodCgroup == nil {
		return out, ok
	}
	for _, ps := range p.o.Pods() {
		sb := ps.ReadySandbox()
		if sb == nil {
			continue
		}
		podCg, known := p.o.PodCgroup(ps.UID)
		if !known {
			continue
		}
		st, err := p.cg.Read(podCg)
		if err != nil {
			continue // gone meanwhile, or not created by this runtime
		}
		pe := cgroupEntry{labels: []string{"", podCg, "", "", ps.Namespace, ps.Name}, stats: st, start: sb.CreatedAt,
			io: p.readIO(sc, podCg), procs: p.readProcs(podCg)}
		if !sb.HostNetwork {
			if pids := p.cg.Procs(ContainerCgroup(podCg, p.o.CgroupDriver, sb.ID)); len(pids) > 0 {
				if ifs, err := readNetDev(pids[0]); err == nil {
					pe.net = ifs
				}
			}
		}
		out = append(out, pe)
		for _, ctr := range ps.Running() {
			cg := ContainerCgroup(podCg, p.o.CgroupDriver, ctr.ID)
			cst, err := p.cg.Read(cg)
			if err != nil {
				continue
			}
			out = append(out, cgroupEntry{labels: []string{ctr.Name, cg, ctr.Image, ctr.ID, ps.Namespace, ps.Name}, stats: cst, start: ctr.CreatedAt,
				io: p.readIO(sc, cg), procs: p.readProcs(cg)})
		}
	}
	return out, ok
}

func (c *CadvisorCollector) CollectWithStability(ch chan<- metrics.Metric) {
	p := c.p
	ids := []string{p.o.BootID, p.o.MachineID, p.o.SystemUUID}
	if p.o.NumCPU > 0 {
		ch <- metrics.NewLazyConstMetric(mCPUCores, metrics.GaugeValue, float64(p.o.NumCPU), ids...)
	}
	if p.o.MemoryCapacity > 0 {
		ch <- metrics.NewLazyConstMetric(mMemoryBytes, metrics.GaugeValue, float64(p.o.MemoryCapacity), ids...)
	}
	entries, ok := c.entries()
	failed := 0.0
	if !ok {
		failed = 1
	}
	ch <- metrics.NewLazyConstMetric(cScrapeError, metrics.GaugeValue, failed)
	for _, e := range entries {
		emitCgroup(ch, e)
	}
}

// emitCgroup writes one cgroup's series.
func emitCgroup(ch chan<- metrics.Metric, e cgroupEntry) {
	t := e.stats.Time
	put := func(d *metrics.Desc, vt metrics.ValueType, v float64, extra ...string) {
		ch <- withTime(t, metrics.NewLazyConstMetric(d, vt, v, append(append([]string{}, e.labels...), extra...)...))
	}
	ch <- metrics.NewLazyConstMetric(cLastSeen, metrics.GaugeValue, float64(t.Unix()), e.labels...)
	if !e.start.IsZero() {
		ch <- metrics.NewLazyConstMetric(cStart, metrics.GaugeValue, float64(e.start.Unix()), e.labels...)
	}
	if c := e.stats.CPU; c != nil {
		put(cCPUTotal, metrics.CounterValue, float64(c.Usage)/1e9, "total")
		put(cCPUUser, metrics.CounterValue, float64(c.User)/1e9)
		put(cCPUSystem, metrics.CounterValue, float64(c.System)/1e9)
		if c.Quota > 0 {
			put(cCFSPeriods, metrics.CounterValue, float64(c.Periods))
			put(cCFSThrottled, metrics.CounterValue, float64(c.ThrottledPeriods))
			put(cCFSThrTime, metrics.CounterValue, float64(c.ThrottledTime)/1e9)
			ch <- metrics.NewLazyConstMetric(cSpecQuota, metrics.GaugeValue, float64(c.Quota), e.labels...)
		}
		if c.Period > 0 {
			ch <- metrics.NewLazyConstMetric(cSpecPeriod, metrics.GaugeValue, float64(c.Period), e.labels...)
		}
		if c.Shares > 0 {
			ch <- metrics.NewLazyConstMetric(cSpecShares, metrics.GaugeValue, float64(c.Shares), e.labels...)
		}
	}
	if m := e.stats.Memory; m != nil {
		put(cMemUsage, metrics.GaugeValue, float64(m.Usage))
		put(cMemMax, metrics.GaugeValue, float64(m.MaxUsage))
		put(cMemWS, metrics.GaugeValue, float64(m.WorkingSet))
		put(cMemRSS, metrics.GaugeValue, float64(m.RSS))
		put(cMemCache, metrics.GaugeValue, float64(m.Cache))
		put(cMemMapped, metrics.GaugeValue, float64(m.MappedFile))
		if m.HasSwap {
			put(cMemSwap, metrics.GaugeValue, float64(m.Swap))
		}
		put(cMemFailcnt, metrics.CounterValue, float64(m.Failcnt))
		put(cMemActive, metrics.GaugeValue, float64(m.ActiveFile))
		put(cMemInactive, metrics.GaugeValue, float64(m.InactiveFile))
		put(cOOM, metrics.CounterValue, float64(m.OOMKills))
		// cadvisor reports memory.stat's pgfault and pgmajfault for both
		// scopes (the cgroup's own on v1, recursive on v2).
		for _, scope := range []string{"container", "hierarchy"} {
			put(cMemFailures, metrics.CounterValue, float64(m.PageFaults), "pgfault", scope)
			put(cMemFailures, metrics.CounterValue, float64(m.MajFaults), "pgmajfault", scope)
		}
		put(cMemEventsHigh, metrics.CounterValue, float64(m.EventsHigh))
		put(cMemEventsMax, metrics.CounterValue, float64(m.EventsMax))
		ch <- metrics.NewLazyConstMetric(cSpecMem, metrics.GaugeValue, float64(m.Limit), e.labels...)
		ch <- metrics.NewLazyConstMetric(cSpecMemResv, metrics.GaugeValue, float64(m.Reservation), e.labels...)
		ch <- metrics.NewLazyConstMetric(cSpecMemSwap, metrics.GaugeValue, float64(m.SwapLimit), e.labels...)
	}
	if e.stats.Pids != nil {
		put(cThreads, metrics.GaugeValue, float64(*e.stats.Pids))
	}
	if e.stats.PidsMax != nil {
		put(cThreadsMax, metrics.GaugeValue, float64(*e.stats.PidsMax))
	}
	if ps := e.procs; ps != nil {
		put(cProcesses, metrics.GaugeValue, float64(ps.Processes))
		put(cFileDescs, metrics.GaugeValue, float64(ps.FileDescriptors))
		put(cSockets, metrics.GaugeValue, float64(ps.Sockets))
		for _, u := range ps.Ulimits {
			put(cUlimitsSoft, metrics.GaugeValue, float64(u.Soft), u.Name)
		}
	}
	for _, d := range e.io.bytes {
		for op, v := range d.stats {
			put(cBlkioUsage, metrics.CounterValue, float64(v), d.device, strconv.FormatUint(d.major, 10), strconv.FormatUint(d.minor, 10), op)
		}
	}
	// Per device name; a second device with the same name (two cadvisor
	// cannot name: "") would repeat a series, and is left out.
	for _, r := range []struct {
		list        []deviceIO
		read, write *metrics.Desc
	}{{e.io.bytes, cFsReadsBytes, cFsWritesBytes}, {e.io.ops, cFsReads, cFsWrites}} {
		seen := map[string]bool{}
		for _, d := range r.list {
			if seen[d.device] {
				continue
			}
			seen[d.device] = true
			put(r.read, metrics.CounterValue, float64(d.stats["Read"]), d.device)
			put(r.write, metrics.CounterValue, float64(d.stats["Write"]), d.device)
		}
	}
	for _, f := range e.fs {
		put(cFsUsage, metrics.GaugeValue, float64(f.info.Used), f.device)
		put(cFsLimit, metrics.GaugeValue, float64(f.info.Capacity), f.device)
		put(cFsInodes, metrics.GaugeValue, float64(f.info.Inodes), f.device)
		put(cFsInodesFree, metrics.GaugeValue, float64(f.info.InodesFree), f.device)
	}
	// PSI totals are microseconds; a part not read has no series, and a
	// file without a full line (cpu before Linux 5.13) no stalled one.
	for _, r := range []struct {
		psi              *cgroups.PSI
		waiting, stalled *metrics.Desc
	}{{e.stats.PSI.CPU, cCPUWaiting, cCPUStalled}, {e.stats.PSI.Memory, cMemWaiting, cMemStalled}, {e.stats.PSI.IO, cIOWaiting, cIOStalled}} {
		if r.psi == nil {
			continue
		}
		put(r.waiting, metrics.CounterValue, float64(r.psi.Some.Total)/1e6)
		if r.psi.Full != nil {
			put(r.stalled, metrics.CounterValue, float64(r.psi.Full.Total)/1e6)
		}
	}
	for _, i := range e.net {
		put(cNetRxBytes, metrics.CounterValue, float64(i.RxBytes), i.Name)
		put(cNetRxPackets, metrics.CounterValue, float64(i.RxPackets), i.Name)
		put(cNetRxErrors, metrics.CounterValue, float64(i.RxErrors), i.Name)
		put(cNetRxDropped, metrics.CounterValue, float64(i.RxDropped), i.Name)
		put(cNetTxBytes, metrics.CounterValue, float64(i.TxBytes), i.Name)
		put(cNetTxPackets, metrics.CounterValue, float64(i.TxPackets), i.Name)
		put(cNetTxErrors, metrics.CounterValue, float64(i.TxErrors), i.Name)
		put(cNetTxDropped, metrics.CounterValue, float64(i.TxDropped), i.Name)
	}
}
