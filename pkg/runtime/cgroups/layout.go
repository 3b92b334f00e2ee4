package cgroups

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Version is the cgroup version the node's hierarchy uses.
type Version int

const (
	// V1: one hierarchy per controller (or group of controllers).
	V1 Version = 1
	// V2: the unified hierarchy.
	V2 Version = 2
)

func (v Version) String() string { return fmt.Sprintf("v%d", int(v)) }

// Layout is where the cgroup controllers are mounted.
type Layout struct {
	Version Version
	// Mounts maps each v1 controller (cpu, cpuacct, memory, pids, cpuset,
	// name=systemd, ...) to its mount point. Empty on v2.
	Mounts map[string]string
	// Unified is the cgroup2 mount point on v2 (/sys/fs/cgroup).
	Unified string
	// Hybrid is, on v1, a cgroup2 mount beside the controllers
	// (/sys/fs/cgroup/unified): it has no controllers but keeps each
	// cgroup's pressure (PSI). Empty when there is none, and on v2.
	Hybrid string
}

// Detect reads the mounts of this process (/proc/self/mountinfo).
func Detect() (Layout, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return Layout{}, err
	}
	defer f.Close()
	return ParseMountinfo(f)
}

// ParseMountinfo finds the cgroup mounts in mountinfo lines. A cgroup2
// mount counts as the unified hierarchy only when no v1 controller is
// mounted (a hybrid machine keeps its controllers on v1). When a
// controller is mounted twice, the shorter mount point wins.
func ParseMountinfo(r io.Reader) (Layout, error) {
	l := Layout{Mounts: map[string]string{}}
	var unified []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
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
		mnt := unescapeMount(fields[4])
		switch fields[sep+1] {
		case "cgroup2":
			unified = append(unified, mnt)
		case "cgroup":
			for _, opt := range strings.Split(fields[sep+3], ",") {
				if !isController(opt) {
					continue
				}
				if prev, ok := l.Mounts[opt]; !ok || len(mnt) < len(prev) {
					l.Mounts[opt] = mnt
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Layout{}, err
	}
	if len(l.Mounts) > 0 {
		l.Version = V1
		l.Hybrid = shortest(unified)
		return l, nil
	}
	if len(unified) > 0 {
		l.Version = V2
		l.Unified = shortest(unified)
		l.Mounts = nil
		return l, nil
	}
	return Layout{}, fmt.Errorf("no cgroup filesystem is mounted")
}

// shortest is the shortest of the paths ("" when there is none).
func shortest(paths []string) string {
	out := ""
	for _, p := range paths {
		if out == "" || len(p) < len(out) {
			out = p
		}
	}
	return out
}

// isController tells v1 controller names (and named hierarchies such as
// name=systemd) from plain mount options.
func isController(opt string) bool {
	switch opt {
	case "cpu", "cpuacct", "cpuset", "memory", "pids", "devices", "freezer", "blkio",
		"hugetlb", "net_cls", "net_prio", "perf_event", "rdma", "misc":
		return true
	}
	return strings.HasPrefix(opt, "name=")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			ok := true
			for _, c := range s[i+1 : i+4] {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + byte(c-'0')
			}
			if ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Dir is the directory of the cgroup at path (a cgroupfs path such as
// /kubepods/burstable/pod<uid>) for one controller: the controller's mount
// on v1 ("" when it is not mounted), the unified tree on v2.
func (l Layout) Dir(controller, path string) string {
	if l.Version == V2 {
		return filepath.Join(l.Unified, path)
	}
	mnt, ok := l.Mounts[controller]
	if !ok {
		return ""
	}
	return filepath.Join(mnt, path)
}

// MountPoints are the distinct hierarchies' mount points (each v1 mount
// once, or the unified mount).
func (l Layout) MountPoints() []string {
	if l.Version == V2 {
		return []string{l.Unified}
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range sortedKeys(l.Mounts) {
		m := l.Mounts[c]
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}
