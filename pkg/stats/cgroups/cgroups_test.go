package cgroups

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// hybrid is mountinfo from these machines: v1 controllers, plus a cgroup2
// mount at /sys/fs/cgroup/unified carrying nothing this package reads.
const hybrid = `24 30 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
31 24 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
32 31 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
35 31 0:30 / /sys/fs/cgroup/cpu rw,nosuid,nodev,noexec,relatime shared:14 - cgroup cgroup rw,cpu
36 31 0:31 / /sys/fs/cgroup/cpuacct rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,cpuacct
37 31 0:32 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:16 - cgroup cgroup rw,memory
38 31 0:33 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:17 - cgroup cgroup rw,pids
39 31 0:34 / /sys/fs/cgroup/blkio rw,nosuid,nodev,noexec,relatime shared:18 - cgroup cgroup rw,blkio
`

func TestParseMountInfo(t *testing.T) {
	h, err := ParseMountInfo(hybrid)
	if err != nil {
		t.Fatal(err)
	}
	if h.Version != 1 || h.V1["memory"] != "/sys/fs/cgroup/memory" || h.V1["cpuacct"] != "/sys/fs/cgroup/cpuacct" || h.V1["cpu"] != "/sys/fs/cgroup/cpu" || h.V1["pids"] != "/sys/fs/cgroup/pids" || h.V1["blkio"] != "/sys/fs/cgroup/blkio" {
		t.Errorf("hybrid: %+v", h)
	}
	// The hybrid host's cgroup2 mount is no hierarchy, but PSI is read there.
	if h.Unified != "" || h.PSIRoot != "/sys/fs/cgroup/unified" {
		t.Errorf("hybrid: Unified %q, PSIRoot %q", h.Unified, h.PSIRoot)
	}
	// Co-mounted controllers (cpu,cpuacct) name one mount for both.
	co := "40 31 0:34 / /sys/fs/cgroup/cpu,cpuacct rw shared:1 - cgroup cgroup rw,cpu,cpuacct\n" +
		"41 31 0:35 / /sys/fs/cgroup/memory rw shared:2 - cgroup cgroup rw,memory\n"
	if h, _ := ParseMountInfo(co); h.V1["cpu"] != "/sys/fs/cgroup/cpu,cpuacct" || h.V1["cpuacct"] != "/sys/fs/cgroup/cpu,cpuacct" || h.PSIRoot != "" {
		t.Errorf("co-mounted: %+v", h)
	}
	v2 := "30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
	if h, err := ParseMountInfo(v2); err != nil || h.Version != 2 || h.Unified != "/sys/fs/cgroup" || h.PSIRoot != "" {
		t.Errorf("v2: %+v %v", h, err)
	}
	if _, err := ParseMountInfo("24 30 0:22 / /sys rw - sysfs sysfs rw\n"); err == nil {
		t.Errorf("no cgroups: want an error")
	}
}

func TestHelpers(t *testing.T) {
	m := ParseFlatKeyed("total_rss 100\ntotal_inactive_file 40\nbad line here\nnr_periods 7\n")
	if m["total_rss"] != 100 || m["total_inactive_file"] != 40 || m["nr_periods"] != 7 || len(m) != 3 {
		t.Errorf("ParseFlatKeyed = %v", m)
	}
	if WorkingSet(100, 40) != 60 || WorkingSet(10, 40) != 0 {
		t.Errorf("WorkingSet")
	}
	if q, p := ParseCPUMax("max 100000\n"); q != 0 || p != 100000 {
		t.Errorf("cpu.max unlimited: %d %d", q, p)
	}
	if q, p := ParseCPUMax("50000 100000"); q != 50000 || p != 100000 {
		t.Errorf("cpu.max: %d %d", q, p)
	}
	if WeightToShares(100) != 2+(99*262142)/9999 || WeightToShares(1) != 2 || WeightToShares(10000) != 262144 {
		t.Errorf("WeightToShares: %d %d %d", WeightToShares(100), WeightToShares(1), WeightToShares(10000))
	}
	mi := ParseMeminfo("MemTotal:       24576000 kB\nMemFree:  1000 kB\nHugePages_Total:       0\n")
	if mi["MemTotal"] != 24576000*1024 || mi["MemFree"] != 1024000 || mi["HugePages_Total"] != 0 {
		t.Errorf("ParseMeminfo = %v", mi)
	}
}

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadV1(t *testing.T) {
	root := t.TempDir()
	h, _ := ParseMountInfo(hybrid)
	r := &Reader{h: h, root: root}
	cg := "/kubepods/burstable/podx/ctr"
	write(t, root, "sys/fs/cgroup/cpuacct"+cg+"/cpuacct.usage", "5000000000\n")
	write(t, root, "sys/fs/cgroup/cpuacct"+cg+"/cpuacct.stat", "user 300\nsystem 100\n")
	write(t, root, "sys/fs/cgroup/cpu"+cg+"/cpu.stat", "nr_periods 10\nnr_throttled 4\nthrottled_time 2000000000\n")
	write(t, root, "sys/fs/cgroup/cpu"+cg+"/cpu.cfs_quota_us", "50000\n")
	write(t, root, "sys/fs/cgroup/cpu"+cg+"/cpu.cfs_period_us", "100000\n")
	write(t, root, "sys/fs/cgroup/cpu"+cg+"/cpu.shares", "512\n")
	write(t, root, "sys/fs/cgroup/memory"+cg+"/memory.usage_in_bytes", "1000000\n")
	write(t, root, "sys/fs/cgroup/memory"+cg+"/memory.stat", "rss 1\ntotal_rss 600000\ntotal_cache 400000\ntotal_inactive_file 300000\ntotal_active_file 100000\ntotal_mapped_file 5\npgfault 9\npgmajfault 2\ntotal_pgfault 900\ntotal_pgmajfault 200\n")
	write(t, root, "sys/fs/cgroup/memory"+cg+"/memory.limit_in_bytes", "9223372036854771712\n")
	write(t, root, "sys/fs/cgroup/memory"+cg+"/memory.max_usage_in_bytes", "2000000\n")
	write(t, root, "sys/fs/cgroup/memory"+cg+"/memory.failcnt", "4\n")
	write(t, root, "sys/fs/cgroup/memory"+cg+"/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
	write(t, root, "sys/fs/cgroup/memory"+cg+"/memory.soft_limit_in_bytes", "9223372036854771712\n")
	write(t, root, "sys/fs/cgroup/memory"+cg+"/memory.memsw.limit_in_bytes", "79998976\n")
	write(t, root, "sys/fs/cgroup/pids"+cg+"/pids.current", "7\n")
	write(t, root, "sys/fs/cgroup/pids"+cg+"/pids.max", "max\n")
	write(t, root, "sys/fs/cgroup/memory"+cg+"/cgroup.procs", "12\n13\n")

	st, err := r.Read(cg)
	if err != nil {
		t.Fatal(err)
	}
	c, m := st.CPU, st.Memory
	if c.Usage != 5e9 || c.User != 3e9 || c.System != 1e9 || c.Periods != 10 || c.ThrottledPeriods != 4 || c.ThrottledTime != 2e9 || c.Quota != 50000 || c.Period != 100000 || c.Shares != 512 {
		t.Errorf("cpu = %+v", c)
	}
	if m.Usage != 1e6 || m.WorkingSet != 700000 || m.RSS != 600000 || m.Cache != 400000 || m.InactiveFile != 300000 || m.Limit != 0 || m.MaxUsage != 2e6 || m.OOMKills != 3 || m.PageFaults != 9 || m.MajFaults != 2 || m.HasSwap {
		t.Errorf("memory = %+v", m)
	}
	// v1 has no memory.high; limit hits are memory.failcnt. An unlimited
	// soft limit is 0, as cadvisor's spec.
	if m.Failcnt != 4 || m.EventsMax != 4 || m.EventsHigh != 0 || m.Reservation != 0 || m.SwapLimit != 79998976 {
		t.Errorf("memory events and spec = %+v", m)
	}
	if st.Pids == nil || *st.Pids != 7 || st.PidsMax == nil || *st.PidsMax != 0 {
		t.Errorf("pids = %v, max %v", st.Pids, st.PidsMax)
	}
	if !r.Exists(cg) || r.Exists("/kubepods/none") {
		t.Errorf("Exists")
	}
	if p := r.Procs(cg); len(p) != 2 || p[0] != 12 {
		t.Errorf("Procs = %v", p)
	}
	if _, err := r.Read("/kubepods/none"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing cgroup: %v", err)
	}
	// ReadUsage: the usage figures alone, the same values.
	u, err := r.ReadUsage(cg)
	if err != nil {
		t.Fatal(err)
	}
	if u.CPU.Usage != 5e9 || u.CPU.User != 0 || u.CPU.Shares != 0 || u.CPU.Quota != 0 {
		t.Errorf("usage cpu = %+v", u.CPU)
	}
	if m := u.Memory; m.Usage != 1e6 || m.WorkingSet != 700000 || m.RSS != 600000 || m.PageFaults != 9 || m.MajFaults != 2 || m.MaxUsage != 0 || m.Failcnt != 0 || m.SwapLimit != 0 {
		t.Errorf("usage memory = %+v", m)
	}
	if u.Pids != nil {
		t.Errorf("usage read pids")
	}
	if _, err := r.ReadUsage("/kubepods/none"); !errors.Is(err, ErrNotFound) {
		t.Errorf("ReadUsage of a missing cgroup: %v", err)
	}
}

func TestReadV2(t *testing.T) {
	root := t.TempDir()
	r := &Reader{h: Hierarchy{Version: 2, Unified: "/sys/fs/cgroup"}, root: root}
	cg := "/kubepods.slice/pod"
	write(t, root, "sys/fs/cgroup"+cg+"/cpu.stat", "usage_usec 2000\nuser_usec 1500\nsystem_usec 500\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n")
	write(t, root, "sys/fs/cgroup"+cg+"/cpu.max", "max 100000\n")
	write(t, root, "sys/fs/cgroup"+cg+"/cpu.weight", "100\n")
	write(t, root, "sys/fs/cgroup"+cg+"/memory.current", "8192\n")
	write(t, root, "sys/fs/cgroup"+cg+"/memory.stat", "anon 4096\nfile 4096\ninactive_file 1024\nactive_file 3072\n")
	write(t, root, "sys/fs/cgroup"+cg+"/memory.max", "max\n")
	write(t, root, "sys/fs/cgroup"+cg+"/memory.swap.current", "0\n")
	write(t, root, "sys/fs/cgroup"+cg+"/memory.events", "low 0\nhigh 5\nmax 2\noom 1\noom_kill 1\n")
	write(t, root, "sys/fs/cgroup"+cg+"/memory.min", "1048576\n")
	write(t, root, "sys/fs/cgroup"+cg+"/memory.swap.max", "max\n")
	write(t, root, "sys/fs/cgroup"+cg+"/pids.current", "3\n")
	write(t, root, "sys/fs/cgroup"+cg+"/pids.max", "1024\n")
	st, err := r.Read(cg)
	if err != nil {
		t.Fatal(err)
	}
	if st.CPU.Usage != 2e6 || st.CPU.User != 1.5e6 || st.CPU.Quota != 0 || st.CPU.Period != 100000 || st.CPU.Shares == 0 {
		t.Errorf("cpu = %+v", st.CPU)
	}
	if m := st.Memory; m.Usage != 8192 || m.WorkingSet != 7168 || m.RSS != 4096 || m.Limit != 0 || !m.HasSwap || m.OOMKills != 1 || m.Failcnt != 2 {
		t.Errorf("memory = %+v", m)
	}
	// memory.events, memory.min; swap.max "max" is 0, as cadvisor's spec.
	if m := st.Memory; m.EventsHigh != 5 || m.EventsMax != 2 || m.Reservation != 1048576 || m.SwapLimit != 0 {
		t.Errorf("memory events and spec = %+v", m)
	}
	if st.Pids == nil || *st.Pids != 3 || st.PidsMax == nil || *st.PidsMax != 1024 {
		t.Errorf("pids = %v, max %v", st.Pids, st.PidsMax)
	}
	u, err := r.ReadUsage(cg)
	if err != nil {
		t.Fatal(err)
	}
	if u.CPU.Usage != 2e6 || u.CPU.Period != 0 || u.CPU.Shares != 0 {
		t.Errorf("usage cpu = %+v", u.CPU)
	}
	if m := u.Memory; m.Usage != 8192 || m.WorkingSet != 7168 || m.RSS != 4096 || m.HasSwap || m.OOMKills != 0 || m.Reservation != 0 {
		t.Errorf("usage memory = %+v", m)
	}
	if u.Pids != nil {
		t.Errorf("usage read pids")
	}
	if _, err := r.ReadUsage("/kubepods.slice/none"); !errors.Is(err, ErrNotFound) {
		t.Errorf("ReadUsage of a missing cgroup: %v", err)
	}
}

func TestReadLimit(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct {
		content string // "" is no file
		want    uint64
	}{
		{"", 0},
		{"max\n", 0},
		{"9223372036854771712\n", 0}, // v1's unlimited
		{"4611686018427387904\n", 0}, // 1<<62
		{"83886080\n", 83886080},
		{"0\n", 0},
		{"garbage\n", 0},
	} {
		p := filepath.Join(root, "limit")
		os.Remove(p)
		if tc.content != "" {
			write(t, root, "limit", tc.content)
		}
		if got := readLimit(p); got != tc.want {
			t.Errorf("readLimit(%q) = %d, want %d", tc.content, got, tc.want)
		}
	}
}
