package stats

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Interface is one network interface's counters, from /proc/<pid>/net/dev.
type Interface struct {
	Name                string
	RxBytes, RxPackets  uint64
	RxErrors, RxDropped uint64
	TxBytes, TxPackets  uint64
	TxErrors, TxDropped uint64
}

// ParseNetDev parses the contents of /proc/net/dev.
func ParseNetDev(content string) []Interface {
	var out []Interface
	sc := bufio.NewScanner(strings.NewReader(content))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue // the two header lines
		}
		f := strings.Fields(rest)
		if len(f) < 16 {
			continue
		}
		n := make([]uint64, 16)
		bad := false
		for i := range n {
			v, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				bad = true
				break
			}
			n[i] = v
		}
		if bad {
			continue
		}
		// receive: bytes packets errs drop fifo frame compressed multicast;
		// transmit: bytes packets errs drop fifo colls carrier compressed.
		out = append(out, Interface{Name: strings.TrimSpace(name),
			RxBytes: n[0], RxPackets: n[1], RxErrors: n[2], RxDropped: n[3],
			TxBytes: n[8], TxPackets: n[9], TxErrors: n[10], TxDropped: n[11]})
	}
	return out
}

// ignoredInterface reports interfaces left out of a network namespace's
// stats: loopback, and the host ends of pod veths (counted in the pods).
func ignoredInterface(name string) bool {
	return name == "lo" || strings.HasPrefix(name, "veth")
}

// readNetDev reads the interfaces of the network namespace of pid (0 is
// the kubelet's own, the host's).
func readNetDev(pid int) ([]Interface, error) {
	p := "/proc/net/dev"
	if pid > 0 {
		p = fmt.Sprintf("/proc/%d/net/dev", pid)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var out []Interface
	for _, i := range ParseNetDev(string(b)) {
		if !ignoredInterface(i.Name) {
			out = append(out, i)
		}
	}
	return out, nil
}

// FsInfo is a filesystem's size and use, from statfs.
type FsInfo struct {
	Capacity, Available, Used uint64
	Inodes, InodesFree        uint64
}

// fsInfo statfs-es path.
func fsInfo(path string) (FsInfo, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return FsInfo{}, err
	}
	bs := uint64(st.Bsize)
	return FsInfo{
		Capacity:   st.Blocks * bs,
		Available:  st.Bavail * bs,
		Used:       (st.Blocks - st.Bfree) * bs,
		Inodes:     st.Files,
		InodesFree: st.Ffree,
	}, nil
}

// DiskUsage is what du reports for a tree: bytes allocated and inodes.
type DiskUsage struct {
	Bytes  uint64
	Inodes uint64
}

// du walks root without following symlinks or leaving its filesystem and
// sums allocated bytes (st_blocks, as du does) and inodes (hard links
// counted once).
func du(root string) (DiskUsage, error) {
	var rootDev uint64
	st, err := os.Lstat(root)
	if err != nil {
		return DiskUsage{}, err
	}
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		rootDev = uint64(s.Dev)
	}
	seen := map[uint64]bool{}
	var u DiskUsage
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil // vanished or unreadable: skip it, as du does
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		s, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		if uint64(s.Dev) != rootDev {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if s.Nlink > 1 && !d.IsDir() {
			if seen[s.Ino] {
				return nil
			}
			seen[s.Ino] = true
		}
		u.Inodes++
		u.Bytes += uint64(s.Blocks) * 512
		return nil
	})
	return u, err
}

// logUsage sums the files directly in dir (a container's log directory):
// allocated bytes and inodes. A missing directory is zero use.
func logUsage(dir string) (DiskUsage, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return DiskUsage{}, nil
		}
		return DiskUsage{}, err
	}
	u := DiskUsage{Inodes: 1}
	if st, err := os.Lstat(dir); err == nil {
		if s, ok := st.Sys().(*syscall.Stat_t); ok {
			u.Bytes += uint64(s.Blocks) * 512
		}
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			continue
		}
		if s, ok := info.Sys().(*syscall.Stat_t); ok {
			u.Bytes += uint64(s.Blocks) * 512
			u.Inodes++
		}
	}
	return u, nil
}

// ParseBootTime returns the btime line of /proc/stat.
func ParseBootTime(procStat string) (time.Time, error) {
	for _, line := range strings.Split(procStat, "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, err
			}
			return time.Unix(n, 0), nil
		}
	}
	return time.Time{}, fmt.Errorf("no btime in /proc/stat")
}

// BootTime is when the host booted (/proc/stat's btime), zero when it
// cannot be read.
func BootTime() time.Time {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	t, _ := ParseBootTime(string(b))
	return t
}

// ParseLoadavgTasks returns the number of tasks (threads) from
// /proc/loadavg ("0.1 0.2 0.3 2/345 6789" is 345).
func ParseLoadavgTasks(s string) (int64, error) {
	f := strings.Fields(s)
	if len(f) < 4 {
		return 0, fmt.Errorf("loadavg: %q", s)
	}
	_, total, ok := strings.Cut(f[3], "/")
	if !ok {
		return 0, fmt.Errorf("loadavg: %q", s)
	}
	return strconv.ParseInt(total, 10, 64)
}

// rlimit reads the node's task limit (the lower of pid_max and
// threads-max) and current task count.
func rlimit() (maxPID, tasks *int64) {
	for _, f := range []string{"/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"} {
		if b, err := os.ReadFile(f); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && (maxPID == nil || n < *maxPID) {
				v := n
				maxPID = &v
			}
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if n, err := ParseLoadavgTasks(string(b)); err == nil {
			tasks = &n
		}
	}
	return maxPID, tasks
}
