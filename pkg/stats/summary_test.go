package stats

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/stats/cgroups"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func uv(v uint64) *runtimeapi.UInt64Value { return &runtimeapi.UInt64Value{Value: v} }

func TestRateCache(t *testing.T) {
	c := newRateCache()
	if r := c.observe("a", cpuSample{t0, 1e9}); r != nil {
		t.Fatalf("first sample has no rate: %v", *r)
	}
	// Too soon after the first: still no base sample a second older.
	if r := c.observe("a", cpuSample{t0.Add(500 * time.Millisecond), 1.2e9}); r != nil {
		t.Fatalf("rate over 0.5s: %v", *r)
	}
	// Two seconds in, half a core used: 0.5e9 nanocores.
	if r := c.observe("a", cpuSample{t0.Add(2 * time.Second), 2e9}); r == nil || *r != 5e8 {
		t.Fatalf("rate = %v, want 5e8", r)
	}
	// A request right after still gets a rate, against the t0 sample.
	used, over := 1.1e9, 2.1
	if r, want := c.observe("a", cpuSample{t0.Add(2100 * time.Millisecond), 2.1e9}), uint64(used/over); r == nil || *r != want {
		t.Fatalf("back-to-back rate = %v, want %d (against the t0 sample)", r, want)
	}
	// A counter that went back (a restarted container) gives no rate.
	if r := c.observe("a", cpuSample{t0.Add(5 * time.Second), 1}); r != nil {
		t.Fatalf("rate across a reset: %v", *r)
	}
	c.sweep()
	c.observe("b", cpuSample{t0, 1})
	c.sweep()
	if _, ok := c.m["a"]; ok {
		t.Errorf("an ID not seen since the last sweep was kept")
	}
	if _, ok := c.m["b"]; !ok {
		t.Errorf("an ID seen was dropped")
	}
}

func TestBuildSummary(t *testing.T) {
	rate := uint64(250e6)
	node := nodeInput{
		name: "n1", boot: t0.Add(-time.Hour),
		root:     &cgroups.Stats{Time: t0, CPU: &cgroups.CPU{Usage: 9e9}, Memory: &cgroups.Memory{Usage: 3000, WorkingSet: 2000, RSS: 1000}},
		pods:     &cgroups.Stats{Time: t0, CPU: &cgroups.CPU{Usage: 4e9}, Memory: &cgroups.Memory{Usage: 800, WorkingSet: 500, Limit: 10000}},
		rootRate: &rate, memCapacity: 8000,
		meminfo: map[string]uint64{"SwapTotal": 100, "SwapFree": 60},
		net:     []Interface{{Name: "gk-test", RxBytes: 1}, {Name: "eth0", RxBytes: 10, TxBytes: 20}}, defaultIface: "eth0",
		rootFs:  &FsInfo{Capacity: 1000, Available: 400, Used: 600, Inodes: 50, InodesFree: 20},
		imageFs: &FsInfo{Capacity: 2000, Available: 1500, Used: 500, Inodes: 80, InodesFree: 70}, imageUsed: u64(123),
		maxPID: ptr64(4194304), tasks: ptr64(300),
	}
	running := &container.PodStatus{UID: "u1", Name: "web", Namespace: "ns",
		Sandboxes: []container.SandboxStatus{{ID: "sb1", State: container.SandboxReady, CreatedAt: t0.Add(-time.Minute)}},
		Containers: []container.Status{
			{ID: "c1", Name: "app", State: container.StateRunning, CreatedAt: t0.Add(-50 * time.Second)},
			{ID: "c0", Name: "app", State: container.StateExited, CreatedAt: t0.Add(-55 * time.Second)},
			{ID: "i1", Name: "init", State: container.StateExited},
		}}
	stats := &runtimeapi.PodSandboxStats{Attributes: &runtimeapi.PodSandboxAttributes{Id: "sb1"}, Linux: &runtimeapi.LinuxPodSandboxStats{
		Cpu:     &runtimeapi.CpuUsage{Timestamp: t0.UnixNano(), UsageCoreNanoSeconds: uv(3e9)},
		Memory:  &runtimeapi.MemoryUsage{Timestamp: t0.UnixNano(), WorkingSetBytes: uv(700), UsageBytes: uv(900), AvailableBytes: uv(0)},
		Network: &runtimeapi.NetworkUsage{Timestamp: t0.UnixNano(), DefaultInterface: &runtimeapi.NetworkInterfaceUsage{Name: "eth0", RxBytes: uv(5), TxBytes: uv(6)}},
		Process: &runtimeapi.ProcessUsage{ProcessCount: uv(2)},
		Containers: []*runtimeapi.ContainerStats{
			{Attributes: &runtimeapi.ContainerAttributes{Id: "c1"}, Cpu: &runtimeapi.CpuUsage{Timestamp: t0.UnixNano(), UsageCoreNanoSeconds: uv(2e9)},
				Memory:        &runtimeapi.MemoryUsage{Timestamp: t0.UnixNano(), WorkingSetBytes: uv(600)},
				WritableLayer: &runtimeapi.FilesystemUsage{Timestamp: t0.UnixNano(), UsedBytes: uv(40), InodesUsed: uv(4)}},
			{Attributes: &runtimeapi.ContainerAttributes{Id: "c0"}, Cpu: &runtimeapi.CpuUsage{UsageCoreNanoSeconds: uv(1)}},
		},
	}}
	// A pod whose newest sandbox is not ready is left out.
	stopped := &container.PodStatus{UID: "u2", Name: "gone", Namespace: "ns",
		Sandboxes: []container.SandboxStatus{{ID: "sb2", State: container.SandboxNotReady}}}
	pods := []podInput{
		{status: stopped, stats: &runtimeapi.PodSandboxStats{Attributes: &runtimeapi.PodSandboxAttributes{Id: "sb2"}}},
		{status: running, stats: stats, containerRates: map[string]*uint64{"c1": &rate},
			logs:    map[string]DiskUsage{"app": {Bytes: 8192, Inodes: 2}},
			volumes: []volumeInput{{name: "scratch", usage: DiskUsage{Bytes: 4096, Inodes: 3}, fs: FsInfo{Capacity: 1000, Available: 400, Inodes: 50, InodesFree: 20}, time: t0}}},
	}

	s := buildSummary(t0, node, pods, false)
	n := s.Node
	if n.NodeName != "n1" || !n.StartTime.Time.Equal(t0.Add(-time.Hour)) {
		t.Errorf("node identity: %+v", n)
	}
	if *n.CPU.UsageCoreNanoSeconds != 9e9 || *n.CPU.UsageNanoCores != rate {
		t.Errorf("node cpu: %+v", n.CPU)
	}
	// Available memory is the machine's capacity less the working set.
	if *n.Memory.WorkingSetBytes != 2000 || *n.Memory.AvailableBytes != 6000 {
		t.Errorf("node memory: ws=%d avail=%d", *n.Memory.WorkingSetBytes, *n.Memory.AvailableBytes)
	}
	if *n.Swap.SwapUsageBytes != 40 || *n.Swap.SwapAvailableBytes != 60 {
		t.Errorf("swap: %+v", n.Swap)
	}
	if n.Network.Name != "eth0" || *n.Network.RxBytes != 10 || len(n.Network.Interfaces) != 2 {
		t.Errorf("network: %+v", n.Network)
	}
	if *n.Fs.CapacityBytes != 1000 || *n.Fs.UsedBytes != 600 || *n.Fs.InodesUsed != 30 {
		t.Errorf("fs: %+v", n.Fs)
	}
	if *n.Runtime.ImageFs.UsedBytes != 123 || *n.Runtime.ImageFs.CapacityBytes != 2000 || *n.Runtime.ContainerFs.UsedBytes != 123 {
		t.Errorf("imagefs: %+v", n.Runtime.ImageFs)
	}
	if *n.Rlimit.MaxPID != 4194304 || *n.Rlimit.NumOfRunningProcesses != 300 {
		t.Errorf("rlimit: %+v", n.Rlimit)
	}
	if len(n.SystemContainers) != 1 || n.SystemContainers[0].Name != statsapi.SystemContainerPods || *n.SystemContainers[0].Memory.AvailableBytes != 8000-500 {
		t.Errorf("system containers: %+v", n.SystemContainers)
	}

	if len(s.Pods) != 1 {
		t.Fatalf("pods: %+v", s.Pods)
	}
	p := s.Pods[0]
	if p.PodRef != (statsapi.PodReference{Name: "web", Namespace: "ns", UID: "u1"}) || !p.StartTime.Time.Equal(t0.Add(-time.Minute)) {
		t.Errorf("pod ref: %+v %v", p.PodRef, p.StartTime)
	}
	if *p.CPU.UsageCoreNanoSeconds != 3e9 || p.CPU.UsageNanoCores != nil || *p.Memory.WorkingSetBytes != 700 || p.Memory.AvailableBytes != nil {
		t.Errorf("pod cpu/memory: %+v %+v", p.CPU, p.Memory)
	}
	if p.Network.Name != "eth0" || *p.Network.RxBytes != 5 || *p.ProcessStats.ProcessCount != 2 {
		t.Errorf("pod network/process: %+v %+v", p.Network, p.ProcessStats)
	}
	// Only the running instance is listed, with its creation time.
	if len(p.Containers) != 1 || p.Containers[0].Name != "app" || !p.Containers[0].StartTime.Time.Equal(t0.Add(-50*time.Second)) {
		t.Fatalf("containers: %+v", p.Containers)
	}
	c := p.Containers[0]
	if *c.CPU.UsageNanoCores != rate || *c.Memory.WorkingSetBytes != 600 {
		t.Errorf("container cpu/mem: %+v %+v", c.CPU, c.Memory)
	}
	if *c.Rootfs.UsedBytes != 40 || *c.Rootfs.CapacityBytes != 2000 || *c.Logs.UsedBytes != 8192 || *c.Logs.CapacityBytes != 1000 {
		t.Errorf("container fs: rootfs=%+v logs=%+v", c.Rootfs, c.Logs)
	}
	if len(p.VolumeStats) != 1 || p.VolumeStats[0].Name != "scratch" || *p.VolumeStats[0].UsedBytes != 4096 || *p.VolumeStats[0].InodesUsed != 3 {
		t.Errorf("volumes: %+v", p.VolumeStats)
	}
	// Ephemeral storage: writable layer + logs + volumes.
	if *p.EphemeralStorage.UsedBytes != 40+8192+4096 || *p.EphemeralStorage.InodesUsed != 4+2+3 {
		t.Errorf("ephemeral: %+v", p.EphemeralStorage)
	}

	// A CPU and memory summary cut from the full one is the one built
	// directly.
	if cut, direct := CPUAndMemoryOnly(s), buildSummary(t0, node, pods, true); !equality.Semantic.DeepEqual(cut, direct) {
		t.Errorf("CPUAndMemoryOnly(full) differs from the CPU and memory summary:\n%+v\n%+v", cut, direct)
	}

	// CPU and memory only: no filesystems, network or volumes.
	s = buildSummary(t0, node, pods, true)
	if s.Node.Fs != nil || s.Node.Network != nil || s.Node.Runtime != nil || s.Node.CPU == nil {
		t.Errorf("cpu/memory-only node: %+v", s.Node)
	}
	p = s.Pods[0]
	if p.Network != nil || p.VolumeStats != nil || p.EphemeralStorage != nil || p.Containers[0].Rootfs != nil || p.Containers[0].Memory == nil {
		t.Errorf("cpu/memory-only pod: %+v", p)
	}
}

func ptr64(v int64) *int64 { return &v }

func TestSandboxStatsFromContainers(t *testing.T) {
	statuses := []*container.PodStatus{
		{UID: "u1", Name: "a", Namespace: "ns", Sandboxes: []container.SandboxStatus{{ID: "sb1", State: container.SandboxReady}},
			Containers: []container.Status{{ID: "c1", State: container.StateRunning}, {ID: "c2", State: container.StateRunning}, {ID: "c3", State: container.StateExited}}},
		{UID: "u2", Sandboxes: []container.SandboxStatus{{ID: "sb2", State: container.SandboxNotReady}}},
	}
	list := []*runtimeapi.ContainerStats{
		{Attributes: &runtimeapi.ContainerAttributes{Id: "c1"}, Cpu: &runtimeapi.CpuUsage{Timestamp: 5, UsageCoreNanoSeconds: uv(10)}, Memory: &runtimeapi.MemoryUsage{Timestamp: 5, WorkingSetBytes: uv(100)}},
		{Attributes: &runtimeapi.ContainerAttributes{Id: "c2"}, Cpu: &runtimeapi.CpuUsage{Timestamp: 7, UsageCoreNanoSeconds: uv(20)}, Memory: &runtimeapi.MemoryUsage{Timestamp: 6, WorkingSetBytes: uv(200)}},
		{Attributes: &runtimeapi.ContainerAttributes{Id: "c3"}, Cpu: &runtimeapi.CpuUsage{UsageCoreNanoSeconds: uv(1000)}},
	}
	out := SandboxStatsFromContainers(list, statuses)
	if len(out) != 1 || out[0].Attributes.Id != "sb1" || out[0].Attributes.Metadata.Uid != "u1" {
		t.Fatalf("out = %+v", out)
	}
	l := out[0].Linux
	if l.Cpu.UsageCoreNanoSeconds.Value != 30 || l.Cpu.Timestamp != 7 || l.Memory.WorkingSetBytes.Value != 300 || len(l.Containers) != 2 || l.Network != nil {
		t.Errorf("linux = %+v", l)
	}
}

// TestSummaryPSI checks where pressure stall information goes: CPU and
// memory PSI on the node, the pods system container, pods and containers,
// IO stats made of the io PSI, and nothing where PSI was not read or has
// no full line.
func TestSummaryPSI(t *testing.T) {
	psi := func(some, full uint64) *cgroups.PSI {
		return &cgroups.PSI{Some: cgroups.PSIData{Total: some, Avg10: 1.25, Avg60: 0.5, Avg300: 0.07}, Full: &cgroups.PSIData{Total: full, Avg10: 0.25}}
	}
	noFull := &cgroups.PSI{Some: cgroups.PSIData{Total: 9}}
	node := nodeInput{name: "n1", boot: t0.Add(-time.Hour), memCapacity: 8000,
		root: &cgroups.Stats{Time: t0, CPU: &cgroups.CPU{Usage: 9e9}, Memory: &cgroups.Memory{Usage: 3000},
			PSI: cgroups.Pressure{CPU: psi(10, 1), Memory: psi(20, 2), IO: psi(30, 3)}},
		// cpu.pressure without a full line, no io.pressure.
		pods: &cgroups.Stats{Time: t0, CPU: &cgroups.CPU{Usage: 4e9}, Memory: &cgroups.Memory{Usage: 800},
			PSI: cgroups.Pressure{CPU: noFull, Memory: psi(21, 4)}},
	}
	pod := &container.PodStatus{UID: "u1", Name: "web", Namespace: "ns",
		Sandboxes: []container.SandboxStatus{{ID: "sb1", State: container.SandboxReady}},
		Containers: []container.Status{
			{ID: "c1", Name: "app", State: container.StateRunning},
			{ID: "c2", Name: "side", State: container.StateRunning},
		}}
	cpu := &runtimeapi.CpuUsage{Timestamp: t0.UnixNano(), UsageCoreNanoSeconds: uv(1)}
	mem := &runtimeapi.MemoryUsage{Timestamp: t0.UnixNano(), WorkingSetBytes: uv(1)}
	stats := &runtimeapi.PodSandboxStats{Attributes: &runtimeapi.PodSandboxAttributes{Id: "sb1"}, Linux: &runtimeapi.LinuxPodSandboxStats{
		Cpu: cpu, Memory: mem,
		Containers: []*runtimeapi.ContainerStats{
			{Attributes: &runtimeapi.ContainerAttributes{Id: "c1"}, Cpu: cpu, Memory: mem},
			// No memory stats from the runtime: its PSI has nowhere to go.
			{Attributes: &runtimeapi.ContainerAttributes{Id: "c2"}, Cpu: cpu},
		},
	}}
	in := podInput{status: pod, stats: stats,
		psi: cgroups.Pressure{CPU: psi(40, 4), Memory: psi(50, 5), IO: psi(60, 6)},
		// c2's cgroup had no pressure files.
		containerPSI: map[string]cgroups.Pressure{"c1": {CPU: psi(70, 7), Memory: psi(80, 8), IO: psi(90, 9)}}}

	s := buildSummary(t0, node, []podInput{in}, false)
	full := func(v *statsapi.PSIStats) uint64 {
		if v == nil {
			return 0
		}
		return v.Full.Total
	}
	ioFull := func(v *statsapi.IOStats) uint64 {
		if v == nil {
			return 0
		}
		return full(v.PSI)
	}
	n, sc, p := s.Node, s.Node.SystemContainers[0], s.Pods[0]
	app, side := p.Containers[0], p.Containers[1]
	for _, tc := range []struct {
		what      string
		got, want uint64
	}{
		{"node cpu", full(n.CPU.PSI), 1}, {"node memory", full(n.Memory.PSI), 2}, {"node io", ioFull(n.IO), 3},
		{"pods cpu (no full line)", full(sc.CPU.PSI), 0}, {"pods memory", full(sc.Memory.PSI), 4}, {"pods io (not read)", ioFull(sc.IO), 0},
		{"pod cpu", full(p.CPU.PSI), 4}, {"pod memory", full(p.Memory.PSI), 5}, {"pod io", ioFull(p.IO), 6},
		{"app cpu", full(app.CPU.PSI), 7}, {"app memory", full(app.Memory.PSI), 8}, {"app io", ioFull(app.IO), 9},
		{"side cpu", full(side.CPU.PSI), 0}, {"side io", ioFull(side.IO), 0},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: full total %d, want %d", tc.what, tc.got, tc.want)
		}
	}
	// Absent parts are nil, not zero-filled.
	if sc.CPU.PSI != nil || sc.IO != nil || side.CPU.PSI != nil || side.Memory != nil || side.IO != nil {
		t.Errorf("PSI made up: pods cpu %+v, pods io %+v, side %+v", sc.CPU.PSI, sc.IO, side)
	}
	// Every value is carried over as read.
	if want := (statsapi.PSIStats{Some: statsapi.PSIData{Total: 10, Avg10: 1.25, Avg60: 0.5, Avg300: 0.07}, Full: statsapi.PSIData{Total: 1, Avg10: 0.25}}); *n.CPU.PSI != want {
		t.Errorf("node cpu PSI = %+v, want %+v", *n.CPU.PSI, want)
	}
	if !n.IO.Time.Time.Equal(t0) || !p.IO.Time.Time.Equal(t0) {
		t.Errorf("io times: %v %v", n.IO.Time, p.IO.Time)
	}

	// A CPU and memory summary keeps CPU and memory PSI but has no IO, cut
	// or built directly.
	for _, cm := range []*statsapi.Summary{CPUAndMemoryOnly(s), buildSummary(t0, node, []podInput{in}, true)} {
		c := cm.Pods[0].Containers[0]
		if cm.Node.IO != nil || cm.Node.SystemContainers[0].IO != nil || cm.Pods[0].IO != nil || c.IO != nil {
			t.Errorf("IO in a CPU and memory summary: %+v", cm)
		}
		if full(cm.Node.CPU.PSI) != 1 || full(cm.Node.SystemContainers[0].Memory.PSI) != 4 || full(cm.Pods[0].Memory.PSI) != 5 || full(c.CPU.PSI) != 7 {
			t.Errorf("CPU and memory PSI lost: %+v", cm)
		}
	}
	if !equality.Semantic.DeepEqual(CPUAndMemoryOnly(s), buildSummary(t0, node, []podInput{in}, true)) {
		t.Errorf("CPUAndMemoryOnly(full) differs from the CPU and memory summary")
	}
	// The full summary still has its IO after the cut.
	if s.Node.IO == nil || s.Node.SystemContainers[0].Memory.PSI == nil || s.Pods[0].IO == nil || s.Pods[0].Containers[0].IO == nil {
		t.Errorf("cutting changed the full summary")
	}
}
