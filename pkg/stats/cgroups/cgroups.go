// Package cgroups reads CPU, memory and pids usage and pressure stall
// information (PSI) of a cgroup from the cgroup filesystem, on cgroup v1
// (one hierarchy per controller, as on these machines, hybrid mounts
// included) and v2 (the unified hierarchy). The version is detected from
// /proc/self/mountinfo, never assumed.
//
// Paths given to Read are cgroup paths ("/", "/kubepods",
// "/kubepods/besteffort/pod<uid>/<container id>"), relative to each
// hierarchy's root.
package cgroups

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Hierarchy says where the controllers this package reads are mounted.
type Hierarchy struct {
	// Version is 1 or 2.
	Version int
	// V1 maps a v1 controller (cpu, cpuacct, memory, pids, blkio) to its
	// mount.
	V1 map[string]string
	// Unified is the cgroup2 mount that carries the controllers (v2).
	Unified string
	// PSIRoot is, on a v1 host that also mounts cgroup2 (hybrid, at
	// /sys/fs/cgroup/unified), that mount: it carries no controllers, but
	// runc puts every cgroup's processes at the same path there too, and
	// its directories have the pressure files. Empty on v2 (Unified has
	// them) and on v1 without a cgroup2 mount.
	PSIRoot string
}

// ParseMountInfo finds the cgroup mounts in the contents of
// /proc/self/mountinfo. A cgroup2 mount counts as the hierarchy only when no
// v1 hierarchy carries the memory or cpu controllers (a hybrid host mounts
// an almost empty cgroup2 at /sys/fs/cgroup/unified); on such a host it is
// kept as PSIRoot.
func ParseMountInfo(content string) (Hierarchy, error) {
	h := Hierarchy{V1: map[string]string{}}
	var unified string
	sc := bufio.NewScanner(strings.NewReader(content))
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+3 > len(fields) {
			continue
		}
		mnt, fstype, super := fields[4], fields[sep+1], fields[sep+3]
		switch fstype {
		case "cgroup2":
			if unified == "" {
				unified = mnt
			}
		case "cgroup":
			for _, opt := range strings.Split(super, ",") {
				switch opt {
				case "cpu", "cpuacct", "memory", "pids", "blkio":
					if _, dup := h.V1[opt]; !dup {
						h.V1[opt] = mnt
					}
				}
			}
		}
	}
	switch {
	case h.V1["memory"] != "" || h.V1["cpuacct"] != "":
		h.Version = 1
		h.PSIRoot = unified
	case unified != "":
		h.Version, h.V1 = 2, nil
		h.Unified = unified
	default:
		return h, errors.New("no cgroup v1 memory/cpuacct hierarchy and no cgroup2 mount found")
	}
	return h, nil
}

// Detect reads /proc/self/mountinfo.
func Detect() (Hierarchy, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Hierarchy{}, err
	}
	return ParseMountInfo(string(b))
}

// CPU is cumulative CPU usage, in nanoseconds.
type CPU struct {
	Usage, User, System uint64
	// Throttling (CFS bandwidth): periods, throttled periods, throttled
	// time.
	Periods, ThrottledPeriods, ThrottledTime uint64
	// Quota is the CFS quota in microseconds per period; 0 when unlimited.
	Quota, Period uint64
	// Shares is cpu.shares (v1) or cpu.weight converted to shares (v2).
	Shares uint64
}

// Memory is memory usage, in bytes.
type Memory struct {
	Usage, MaxUsage, WorkingSet uint64
	RSS, Cache, MappedFile      uint64
	ActiveFile, InactiveFile    uint64
	Swap                        uint64
	// HasSwap: swap accounting is available.
	HasSwap               bool
	PageFaults, MajFaults uint64
	Failcnt, OOMKills     uint64
	// EventsHigh and EventsMax count the times usage went over memory.high
	// (and was throttled) and hit memory.max: memory.events on v2. v1 has
	// no memory.high (EventsHigh is 0) and counts limit hits in
	// memory.failcnt (EventsMax).
	EventsHigh, EventsMax uint64
	// Limit is the memory limit; 0 when unlimited.
	Limit uint64
	// Reservation is memory.soft_limit_in_bytes (v1) or memory.min (v2),
	// SwapLimit memory.memsw.limit_in_bytes (v1: memory and swap) or
	// memory.swap.max (v2: swap alone), as cadvisor reads them; 0 when
	// unlimited or not there (no swap accounting).
	Reservation, SwapLimit uint64
}

// Stats is one reading of a cgroup. Nil parts could not be read.
type Stats struct {
	Time   time.Time
	CPU    *CPU
	Memory *Memory
	// Pids is the number of tasks (threads) in the cgroup.
	Pids *uint64
	// PidsMax is pids.max, 0 when unlimited ("max").
	PidsMax *uint64
	// PSI is the cgroup's pressure stall information.
	PSI Pressure
}

// Reader reads cgroups of one hierarchy.
type Reader struct {
	h    Hierarchy
	root string // prefix for tests; "" in production
}

// NewReader reads from the detected hierarchy.
func NewReader(h Hierarchy) *Reader { return &Reader{h: h} }

// NewReaderAt reads a hierarchy whose mounts are under dir (a fixture tree
// in tests).
func NewReaderAt(h Hierarchy, dir string) *Reader { return &Reader{h: h, root: dir} }

// Version is the cgroup version read (1 or 2).
func (r *Reader) Version() int { return r.h.Version }

func (r *Reader) dir(controller, cgPath string) string {
	if r.h.Version == 2 {
		return filepath.Join(r.root, r.h.Unified, cgPath)
	}
	mnt := r.h.V1[controller]
	if mnt == "" {
		return ""
	}
	return filepath.Join(r.root, mnt, cgPath)
}

// Exists reports whether the cgroup exists (its memory or cpu directory).
func (r *Reader) Exists(cgPath string) bool {
	for _, c := range []string{"memory", "cpuacct"} {
		if d := r.dir(c, cgPath); d != "" {
			if st, err := os.Stat(d); err == nil && st.IsDir() {
				return true
			}
		}
	}
	return false
}

// ErrNotFound is returned by Read for a cgroup that does not exist.
var ErrNotFound = errors.New("cgroup not found")

// Read reads the cgroup's CPU, memory and pids usage. memTotal is the
// machine's memory, used for the root of a v2 hierarchy (which has no
// memory.current) through /proc/meminfo.
func (r *Reader) Read(cgPath string) (Stats, error) {
	st, err := r.read(cgPath, true)
	if err == nil {
		st.PSI = r.ReadPSI(cgPath)
	}
	return st, err
}

// ReadUsage reads only what a resource scrape needs: cumulative CPU
// usage, and memory usage, working set, RSS and page faults (three files
// per cgroup instead of about fifteen). The other fields are zero and
// there is no pressure.
func (r *Reader) ReadUsage(cgPath string) (Stats, error) {
	return r.read(cgPath, false)
}

func (r *Reader) read(cgPath string, full bool) (Stats, error) {
	st := Stats{Time: time.Now()}
	var err error
	if r.h.Version == 2 {
		err = r.readV2(cgPath, &st, full)
	} else {
		err = r.readV1(cgPath, &st, full)
	}
	return st, err
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, nil
	}
	return strconv.ParseUint(s, 10, 64)
}

// readLimit reads a limit file as cadvisor's spec does: "max", a v1
// "unlimited" (a huge page-rounded number) and a missing or unreadable
// file are 0.
func readLimit(path string) uint64 {
	v, err := readUint(path)
	if err != nil || v >= unlimitedV1 {
		return 0
	}
	return v
}

// readPids reads pids.current and pids.max ("max" is 0) from dir.
func readPids(dir string, st *Stats) {
	if n, err := readUint(filepath.Join(dir, "pids.current")); err == nil {
		st.Pids = &n
	}
	if n, err := readUint(filepath.Join(dir, "pids.max")); err == nil {
		st.PidsMax = &n
	}
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// ParseFlatKeyed parses "key value" lines (memory.stat, cpu.stat,
// memory.events, memory.oom_control).
func ParseFlatKeyed(content string) map[string]uint64 {
	out := map[string]uint64{}
	for _, line := range strings.Split(content, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out
}

func readFlat(path string) (map[string]uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseFlatKeyed(string(b)), nil
}

// userHZ is the unit of cpuacct.stat (USER_HZ, 100 on Linux).
const userHZ = 100

// unlimitedV1 is above any real memory limit: v1 reports "no limit" as a
// huge page-rounded number.
const unlimitedV1 = 1 << 62

func (r *Reader) readV1(cgPath string, st *Stats, full bool) error {
	cpuacct := r.dir("cpuacct", cgPath)
	mem := r.dir("memory", cgPath)
	if cpuacct == "" && mem == "" {
		return fmt.Errorf("cgroup v1: no cpuacct or memory hierarchy")
	}
	found := false
	if cpuacct != "" {
		if usage, err := readUint(filepath.Join(cpuacct, "cpuacct.usage")); err == nil {
			found = true
			c := &CPU{Usage: usage}
			if full {
				if s, err := readFlat(filepath.Join(cpuacct, "cpuacct.stat")); err == nil {
					c.User = s["user"] * (1e9 / userHZ)
					c.System = s["system"] * (1e9 / userHZ)
				}
			}
			if cpuDir := r.dir("cpu", cgPath); full && cpuDir != "" {
				if s, err := readFlat(filepath.Join(cpuDir, "cpu.stat")); err == nil {
					c.Periods, c.ThrottledPeriods, c.ThrottledTime = s["nr_periods"], s["nr_throttled"], s["throttled_time"]
				}
				if q, err := readInt(filepath.Join(cpuDir, "cpu.cfs_quota_us")); err == nil && q > 0 {
					c.Quota = uint64(q)
				}
				if p, err := readUint(filepath.Join(cpuDir, "cpu.cfs_period_us")); err == nil {
					c.Period = p
				}
				if sh, err := readUint(filepath.Join(cpuDir, "cpu.shares")); err == nil {
					c.Shares = sh
				}
			}
			st.CPU = c
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if mem != "" {
		if usage, err := readUint(filepath.Join(mem, "memory.usage_in_bytes")); err == nil {
			found = true
			m := &Memory{Usage: usage}
			s, _ := readFlat(filepath.Join(mem, "memory.stat"))
			m.RSS, m.Cache, m.MappedFile = s["total_rss"], s["total_cache"], s["total_mapped_file"]
			m.ActiveFile, m.InactiveFile = s["total_active_file"], s["total_inactive_file"]
			// The cgroup's own faults, not total_pgfault: cadvisor's container
			// data, which upstream's summary reports on cgroup v1 (the node
			// e2e Summary spec bounds the "pods" container's at 1e6 there;
			// on v2 memory.stat's pgfault is recursive).
			m.PageFaults, m.MajFaults = s["pgfault"], s["pgmajfault"]
			if sw, ok := s["total_swap"]; ok {
				m.Swap, m.HasSwap = sw, true
			}
			m.WorkingSet = WorkingSet(usage, m.InactiveFile)
			st.Memory = m
			if full {
				readMemoryLimitsV1(mem, m)
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if pids := r.dir("pids", cgPath); full && pids != "" {
		readPids(pids, st)
	}
	if !found {
		return ErrNotFound
	}
	return nil
}

// readMemoryLimitsV1 reads what a full v1 reading adds to the usage: peak,
// limit hits, limits and OOM kills.
func readMemoryLimitsV1(mem string, m *Memory) {
	m.MaxUsage, _ = readUint(filepath.Join(mem, "memory.max_usage_in_bytes"))
	m.Failcnt, _ = readUint(filepath.Join(mem, "memory.failcnt"))
	if l, err := readUint(filepath.Join(mem, "memory.limit_in_bytes")); err == nil && l < unlimitedV1 {
		m.Limit = l
	}
	m.EventsMax = m.Failcnt
	m.Reservation = readLimit(filepath.Join(mem, "memory.soft_limit_in_bytes"))
	m.SwapLimit = readLimit(filepath.Join(mem, "memory.memsw.limit_in_bytes"))
	if oc, err := readFlat(filepath.Join(mem, "memory.oom_control")); err == nil {
		m.OOMKills = oc["oom_kill"]
	}
}

func (r *Reader) readV2(cgPath string, st *Stats, full bool) error {
	dir := r.dir("", cgPath)
	if _, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return ErrNotFound
		}
		return err
	}
	if s, err := readFlat(filepath.Join(dir, "cpu.stat")); err == nil {
		c := &CPU{Usage: s["usage_usec"] * 1000, User: s["user_usec"] * 1000, System: s["system_usec"] * 1000,
			Periods: s["nr_periods"], ThrottledPeriods: s["nr_throttled"], ThrottledTime: s["throttled_usec"] * 1000}
		if full {
			if b, err := os.ReadFile(filepath.Join(dir, "cpu.max")); err == nil {
				c.Quota, c.Period = ParseCPUMax(string(b))
			}
			if w, err := readUint(filepath.Join(dir, "cpu.weight")); err == nil {
				c.Shares = WeightToShares(w)
			}
		}
		st.CPU = c
	}
	ms, _ := readFlat(filepath.Join(dir, "memory.stat"))
	if usage, err := readUint(filepath.Join(dir, "memory.current")); err == nil {
		m := &Memory{Usage: usage}
		m.RSS, m.Cache, m.MappedFile = ms["anon"], ms["file"], ms["file_mapped"]
		m.ActiveFile, m.InactiveFile = ms["active_file"], ms["inactive_file"]
		m.PageFaults, m.MajFaults = ms["pgfault"], ms["pgmajfault"]
		m.WorkingSet = WorkingSet(usage, m.InactiveFile)
		st.Memory = m
		if full {
			readMemoryLimitsV2(dir, m)
		}
	} else if cgPath == "/" || cgPath == "" {
		// The v2 root has no memory.current: use the machine's view.
		if b, err := os.ReadFile("/proc/meminfo"); err == nil {
			mi := ParseMeminfo(string(b))
			used := mi["MemTotal"] - mi["MemFree"]
			m := &Memory{Usage: used, RSS: ms["anon"], Cache: ms["file"], MappedFile: ms["file_mapped"],
				ActiveFile: mi["Active(file)"], InactiveFile: mi["Inactive(file)"], PageFaults: ms["pgfault"], MajFaults: ms["pgmajfault"]}
			m.WorkingSet = WorkingSet(used, m.InactiveFile)
			st.Memory = m
		}
	}
	if full {
		readPids(dir, st)
	}
	if st.CPU == nil && st.Memory == nil {
		return ErrNotFound
	}
	return nil
}

// readMemoryLimitsV2 reads what a full v2 reading adds to the usage: peak,
// swap, limits and memory events.
func readMemoryLimitsV2(dir string, m *Memory) {
	m.MaxUsage, _ = readUint(filepath.Join(dir, "memory.peak"))
	if sw, err := readUint(filepath.Join(dir, "memory.swap.current")); err == nil {
		m.Swap, m.HasSwap = sw, true
	}
	if l, err := readUint(filepath.Join(dir, "memory.max")); err == nil {
		m.Limit = l
	}
	if ev, err := readFlat(filepath.Join(dir, "memory.events")); err == nil {
		m.OOMKills, m.Failcnt = ev["oom_kill"], ev["max"]
		m.EventsHigh, m.EventsMax = ev["high"], ev["max"]
	}
	m.Reservation = readLimit(filepath.Join(dir, "memory.min"))
	m.SwapLimit = readLimit(filepath.Join(dir, "memory.swap.max"))
}

// WorkingSet is cadvisor's working set: usage less inactive file pages,
// never below zero.
func WorkingSet(usage, inactiveFile uint64) uint64 {
	if inactiveFile > usage {
		return 0
	}
	return usage - inactiveFile
}

// ParseCPUMax parses cpu.max ("max 100000" or "50000 100000") into quota
// (0 = unlimited) and period, in microseconds.
func ParseCPUMax(s string) (quota, period uint64) {
	f := strings.Fields(s)
	if len(f) >= 1 && f[0] != "max" {
		quota, _ = strconv.ParseUint(f[0], 10, 64)
	}
	if len(f) >= 2 {
		period, _ = strconv.ParseUint(f[1], 10, 64)
	}
	return quota, period
}

// WeightToShares converts a v2 cpu.weight (1-10000) to v1 shares
// (2-262144), the inverse of the conversion runc applies.
func WeightToShares(w uint64) uint64 {
	if w == 0 {
		return 0
	}
	return 2 + ((w-1)*262142)/9999
}

// ParseMeminfo parses /proc/meminfo into bytes per key.
func ParseMeminfo(content string) map[string]uint64 {
	out := map[string]uint64{}
	for _, line := range strings.Split(content, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && strings.EqualFold(f[1], "kB") {
			n *= 1024
		}
		out[k] = n
	}
	return out
}

// Procs returns the pids in the cgroup (its cgroup.procs), for reading a
// process's view (its network namespace). Empty when none.
func (r *Reader) Procs(cgPath string) []int {
	dir := r.dir("memory", cgPath)
	if r.h.Version == 2 {
		dir = r.dir("", cgPath)
	}
	if dir == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}
