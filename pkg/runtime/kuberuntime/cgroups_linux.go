package kuberuntime

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// podCgroupMinAge protects pod cgroups that are being set up: runc creates a
// pod's directory together with its first container's, and another kubelet
// sharing the hierarchy may be doing so right now.
const podCgroupMinAge = time.Minute

// CleanupPodCgroups removes the empty pod-level cgroup directories
// (kubepods[/burstable|/besteffort]/pod<uid>) of pods that keep does not
// claim, in every mounted cgroup hierarchy (v1 controllers and v2). runc
// creates them under the parent the kubelet names, but removes only the
// container's own directory, so without this they pile up. Only empty
// directories can be removed (rmdir), so a pod that still has a process
// is never touched. With the systemd driver the slices belong to systemd
// and are left alone. It returns how many directories it removed.
func (m *Manager) CleanupPodCgroups(keep func(types.UID) bool) int {
	if m.opts.CgroupDriver == CgroupDriverSystemd {
		return 0
	}
	removed := 0
	now := time.Now()
	for _, mnt := range cgroupMounts() {
		for _, qos := range []string{"kubepods", "kubepods/burstable", "kubepods/besteffort"} {
			dir := filepath.Join(mnt, m.opts.CgroupRoot, qos)
			entries, err := os.ReadDir(dir)
			if err != nil {
				continue
			}
			for _, e := range entries {
				if !e.IsDir() || !strings.HasPrefix(e.Name(), "pod") {
					continue
				}
				if keep(types.UID(strings.TrimPrefix(e.Name(), "pod"))) {
					continue
				}
				if info, err := e.Info(); err != nil || now.Sub(info.ModTime()) < podCgroupMinAge {
					continue
				}
				// A directory still in use (ENOTEMPTY, EBUSY) stays.
				if syscall.Rmdir(filepath.Join(dir, e.Name())) == nil {
					removed++
				}
			}
		}
	}
	return removed
}

// cgroupMounts returns the mount points of the cgroup hierarchies, v1 and v2.
func cgroupMounts() []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	return parseCgroupMounts(bufio.NewScanner(f))
}

// parseCgroupMounts picks the cgroup and cgroup2 mount points out of
// mountinfo lines.
func parseCgroupMounts(sc *bufio.Scanner) []string {
	var out []string
	for sc.Scan() {
		// ... mountpoint ... - fstype source options
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(fields) || len(fields) < 5 {
			continue
		}
		if fs := fields[sep+1]; fs == "cgroup" || fs == "cgroup2" {
			out = append(out, fields[4])
		}
	}
	return out
}
