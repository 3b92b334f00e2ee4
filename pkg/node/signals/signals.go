// Package signals reads the node-level facts the eviction manager decides
// on, straight from the kernel, as upstream computes them (through
// cAdvisor) for its eviction signals:
//
//   - memory.available: capacity (MemTotal) less the working set of the
//     root cgroup, the working set being usage less inactive file pages
//     (cgroup v1: memory.usage_in_bytes and total_inactive_file of the root
//     memory cgroup; v2, whose root has no usage file: anon + file of the
//     root memory.stat, less inactive_file);
//   - allocatableMemory.available: the same for the kubepods cgroup
//     against node allocatable;
//   - nodefs/imagefs available bytes and free inodes: statfs of the
//     kubelet's root directory and of the runtime's image filesystem;
//   - pid.available: min(kernel.pid_max, kernel.threads-max) less the
//     number of tasks (/proc/loadavg's fourth field).
//
// The parsers are pure and table-tested; the readers are thin.
package signals

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Memory is a memory observation in bytes.
type Memory struct {
	Capacity   int64
	WorkingSet int64
	Time       time.Time
}

// Available is capacity less the working set (never below zero).
func (m Memory) Available() int64 {
	if a := m.Capacity - m.WorkingSet; a > 0 {
		return a
	}
	return 0
}

// FS is a filesystem observation.
type FS struct {
	// Device identifies the filesystem (st_dev of the path), to tell
	// whether two paths share one.
	Device     uint64
	Capacity   int64
	Available  int64
	Inodes     int64
	InodesFree int64
	Time       time.Time
}

// PIDs is a process count observation.
type PIDs struct {
	Max     int64
	Running int64
	Time    time.Time
}

// Available is Max less Running.
func (p PIDs) Available() int64 { return p.Max - p.Running }

// ParseKeyValues parses "key value" lines (memory.stat, cpu.stat); values
// that are not integers are skipped.
func ParseKeyValues(r io.Reader) (map[string]int64, error) {
	out := map[string]int64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		out[f[0]] = v
	}
	return out, sc.Err()
}

// ParseMeminfo parses /proc/meminfo into bytes per field ("MemTotal").
func ParseMeminfo(r io.Reader) (map[string]int64, error) {
	out := map[string]int64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && strings.EqualFold(f[1], "kB") {
			v *= 1024
		}
		out[name] = v
	}
	return out, sc.Err()
}

// ParseLoadavgTasks returns the number of tasks from /proc/loadavg
// ("0.10 0.20 0.30 2/345 6789": 345).
func ParseLoadavgTasks(s string) (int64, error) {
	f := strings.Fields(s)
	if len(f) < 5 {
		return 0, fmt.Errorf("loadavg: %d fields, want 5", len(f))
	}
	_, total, ok := strings.Cut(f[3], "/")
	if !ok {
		return 0, fmt.Errorf("loadavg: bad tasks field %q", f[3])
	}
	return strconv.ParseInt(total, 10, 64)
}

// ParseLimit parses a cgroup limit file's value: a number, or "max" (-1).
func ParseLimit(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "max" {
		return -1, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

// WorkingSet is usage less inactive file pages, never below zero; the
// inactive file count is total_inactive_file (v1 hierarchy totals) or
// inactive_file (v2).
func WorkingSet(usage int64, stat map[string]int64) int64 {
	inactive, ok := stat["total_inactive_file"]
	if !ok {
		inactive = stat["inactive_file"]
	}
	if inactive > usage {
		return 0
	}
	return usage - inactive
}

// CgroupWorkingSet reads the working set of the memory cgroup at dir:
// memory.usage_in_bytes (v1) or memory.current (v2), less inactive file.
// For the v2 root, which has neither, usage is anon + file of its
// memory.stat.
func CgroupWorkingSet(dir string) (int64, error) {
	stat, err := readKeyValues(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return 0, err
	}
	var usage int64
	if b, err := os.ReadFile(filepath.Join(dir, "memory.usage_in_bytes")); err == nil {
		usage, err = ParseLimit(string(b))
		if err != nil {
			return 0, fmt.Errorf("%s: %w", filepath.Join(dir, "memory.usage_in_bytes"), err)
		}
	} else if b, err := os.ReadFile(filepath.Join(dir, "memory.current")); err == nil {
		usage, err = ParseLimit(string(b))
		if err != nil {
			return 0, fmt.Errorf("%s: %w", filepath.Join(dir, "memory.current"), err)
		}
	} else {
		usage = stat["anon"] + stat["file"]
	}
	return WorkingSet(usage, stat), nil
}

// CgroupTasks counts the tasks of the cgroup at dir: pids.current when the
// pids controller is there, else the lines of its tasks or cgroup.threads
// files in the whole subtree.
func CgroupTasks(dir string) (int64, error) {
	if b, err := os.ReadFile(filepath.Join(dir, "pids.current")); err == nil {
		return ParseLimit(string(b))
	}
	var n int64
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		for _, f := range []string{"tasks", "cgroup.threads"} {
			b, err := os.ReadFile(filepath.Join(p, f))
			if err == nil {
				n += int64(strings.Count(string(b), "\n"))
				break
			}
		}
		return nil
	})
	return n, err
}

func readKeyValues(path string) (map[string]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseKeyValues(f)
}

// NodeMemory observes memory.available: MemTotal less the working set of
// the root memory cgroup at rootDir.
func NodeMemory(rootDir string) (Memory, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return Memory{}, err
	}
	mi, err := ParseMeminfo(f)
	f.Close()
	if err != nil {
		return Memory{}, err
	}
	ws, err := CgroupWorkingSet(rootDir)
	if err != nil {
		return Memory{}, err
	}
	return Memory{Capacity: mi["MemTotal"], WorkingSet: ws, Time: time.Now()}, nil
}

// Statfs observes the filesystem holding path.
func Statfs(path string) (FS, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return FS{}, err
	}
	var s syscall.Stat_t
	if err := syscall.Stat(path, &s); err != nil {
		return FS{}, err
	}
	bs := int64(st.Bsize)
	return FS{
		Device:     uint64(s.Dev),
		Capacity:   int64(st.Blocks) * bs,
		Available:  int64(st.Bavail) * bs,
		Inodes:     int64(st.Files),
		InodesFree: int64(st.Ffree),
		Time:       time.Now(),
	}, nil
}

// NodePIDs observes pid.available.
func NodePIDs() (PIDs, error) {
	max := int64(-1)
	for _, f := range []string{"/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && (max < 0 || v < max) {
			max = v
		}
	}
	if max < 0 {
		return PIDs{}, fmt.Errorf("neither kernel.pid_max nor kernel.threads-max can be read")
	}
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return PIDs{}, err
	}
	n, err := ParseLoadavgTasks(string(b))
	if err != nil {
		return PIDs{}, err
	}
	return PIDs{Max: max, Running: n, Time: time.Now()}, nil
}

// DirUsage walks dir without crossing mount points and sums the bytes
// (allocated blocks) and inodes of what it holds. A missing dir is zero.
func DirUsage(dir string) (bytes, inodes int64, err error) {
	var root syscall.Stat_t
	if err := syscall.Lstat(dir, &root); err != nil {
		if os.IsNotExist(err) {
			return 0, 0, nil
		}
		return 0, 0, err
	}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil // vanished meanwhile
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) != nil {
			return nil
		}
		if st.Dev != root.Dev {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		bytes += st.Blocks * 512
		inodes++
		return nil
	})
	return bytes, inodes, err
}
