package stats

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ProcessStats is what cadvisor reports of the processes of a cgroup
// (those in its own cgroup.procs, not its descendants').
type ProcessStats struct {
	Processes       uint64
	FileDescriptors uint64
	// Sockets are the file descriptors that are sockets.
	Sockets uint64
	// Ulimits are the soft limits of the cgroup's init process; as in
	// cadvisor, only max_open_files. None without a process.
	Ulimits []Ulimit
}

// Ulimit is one resource limit's soft value, -1 when unlimited.
type Ulimit struct {
	Name string
	Soft int64
}

// readProcessStats reads, under proc (/proc), the file descriptors of each
// of pids and the limits of their init process: the one whose parent is not
// among them (started by the runtime's shim), the earliest such if
// processes were exec'd in. A process that exits meanwhile is skipped
// without a word: that is normal for a running pod.
func readProcessStats(proc string, pids []int) ProcessStats {
	out := ProcessStats{Processes: uint64(len(pids))}
	for _, pid := range pids {
		fds, socks := countFDs(filepath.Join(proc, strconv.Itoa(pid), "fd"))
		out.FileDescriptors += fds
		out.Sockets += socks
	}
	if init := initProcess(proc, pids); init > 0 {
		if b, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(init), "limits")); err == nil {
			out.Ulimits = ParseLimits(string(b))
		}
	}
	return out
}

// countFDs counts the entries of a /proc/<pid>/fd directory and those that
// are sockets. A directory gone or unreadable counts nothing.
func countFDs(dir string) (fds, sockets uint64) {
	d, err := os.Open(dir)
	if err != nil {
		return 0, 0
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		fds++
		if l, err := os.Readlink(filepath.Join(dir, n)); err == nil && strings.HasPrefix(l, "socket:") {
			sockets++
		}
	}
	return fds, sockets
}

// initProcess picks the init process of pids (see readProcessStats); 0
// when none can be read.
func initProcess(proc string, pids []int) int {
	if len(pids) == 1 {
		return pids[0]
	}
	in := make(map[int]bool, len(pids))
	for _, p := range pids {
		in[p] = true
	}
	best, bestStart := 0, uint64(0)
	for _, p := range pids {
		b, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(p), "stat"))
		if err != nil {
			continue
		}
		ppid, start, ok := ParseProcStat(string(b))
		if !ok || in[ppid] {
			continue
		}
		if best == 0 || start < bestStart {
			best, bestStart = p, start
		}
	}
	return best
}

// ParseProcStat returns the parent pid and start time (clock ticks after
// boot) from the contents of /proc/<pid>/stat. The command name, in
// parentheses, may hold spaces and parentheses itself: fields are counted
// after its last ')'.
func ParseProcStat(s string) (ppid int, start uint64, ok bool) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	// state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
	// cmajflt utime stime cutime cstime priority nice num_threads
	// itrealvalue starttime ...
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return ppid, start, true
}

// ParseLimits reads the soft limits cadvisor reports from the contents of
// /proc/<pid>/limits: "Max open files" as max_open_files ("unlimited" is
// -1). A line whose soft or hard value does not parse is left out.
func ParseLimits(s string) []Ulimit {
	const prefix = "Max open files"
	var out []Ulimit
	for _, line := range strings.Split(s, "\n") {
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		// soft hard units
		f := strings.Fields(rest)
		if len(f) != 3 {
			continue
		}
		soft, err1 := parseLimit(f[0])
		_, err2 := parseLimit(f[1])
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, Ulimit{Name: "max_open_files", Soft: soft})
	}
	return out
}

func parseLimit(s string) (int64, error) {
	if strings.EqualFold(s, "unlimited") {
		return -1, nil
	}
	return strconv.ParseInt(s, 10, 64)
}
