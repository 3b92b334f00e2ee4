package cgroups

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/klog/v2"
)

// SystemConfig names the node's own cgroups, outside the pods' hierarchy,
// as cgroupfs paths whatever the cgroup driver (as upstream's):
//   - Kubelet is kubeletCgroups: the kubelet moves itself there. Empty: it
//     stays where it was started, and that cgroup is reported.
//   - System is systemCgroups: every process of the root cgroup but PID 1
//     and kernel threads is moved there.
//   - Runtime is --runtime-cgroups: the container runtime's cgroup. The
//     kubelet only reports it; whoever starts the runtime places it.
//
// The summary reports them as the system containers "kubelet", "misc" and
// "runtime".
type SystemConfig struct {
	Kubelet, System, Runtime string
}

// systemEnsurePeriod is how often processes are moved again (upstream:
// every minute), for those started since.
const systemEnsurePeriod = time.Minute

// SystemCgroups keeps the node's own processes in the configured cgroups
// and names the cgroups the summary reports. Safe for concurrent use.
type SystemCgroups struct {
	cfg    SystemConfig
	layout Layout
	// proc is /proc (a fixture tree in tests); self is this process's PID.
	proc string
	self int
	// systemd: systemd runs this machine (/run/systemd/system exists).
	systemd bool
	// join writes pid into the cgroup directory dir (its cgroup.procs).
	join func(dir string, pid int) error

	mu      sync.Mutex
	kubelet string
}

// NewSystemCgroups returns the system cgroups of cfg over the layout.
func NewSystemCgroups(cfg SystemConfig, l Layout) *SystemCgroups {
	_, err := os.Stat("/run/systemd/system")
	return &SystemCgroups{cfg: cfg, layout: l, proc: "/proc", self: os.Getpid(), join: joinCgroup, systemd: err == nil}
}

// Names are the cgroups to report, by system container name ("kubelet",
// "misc", "runtime"); a cgroup that is not configured is absent, and so is
// the kubelet's when it runs in the root cgroup (which is the whole
// machine's; upstream reports the root as "kubelet" then).
func (s *SystemCgroups) Names() map[string]string {
	out := map[string]string{}
	s.mu.Lock()
	if s.kubelet != "" {
		out["kubelet"] = s.kubelet
	}
	s.mu.Unlock()
	if s.cfg.System != "" {
		out["misc"] = s.cfg.System
	}
	if s.cfg.Runtime != "" {
		out["runtime"] = s.cfg.Runtime
	}
	return out
}

// Start places the processes every minute until ctx ends (newly started
// ones join; one moved away is brought back), then returns nil.
func (s *SystemCgroups) Start(ctx context.Context) error {
	log := klog.FromContext(ctx)
	t := time.NewTicker(systemEnsurePeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := s.Ensure(); err != nil {
			log.Info("Warning: placing the node's own processes in their cgroups failed; retrying every minute", "kubeletCgroups", s.cfg.Kubelet, "systemCgroups", s.cfg.System, "err", err)
		}
	}
}

// Ensure moves the root cgroup's processes into System and the kubelet
// into Kubelet (after System, so that the kubelet ends in its own). Without
// Kubelet, it records the cgroup the kubelet runs in, to report it.
func (s *SystemCgroups) Ensure() error {
	var errs []error
	if s.cfg.System != "" {
		errs = append(errs, s.moveRootProcesses())
	}
	kubelet := s.cfg.Kubelet
	if kubelet != "" {
		errs = append(errs, s.move(kubelet, s.self))
	} else if own, err := s.ownCgroup(); err != nil {
		// Nothing was asked to move: the kubelet's container is just not
		// reported (as on v1 when its cpu and memory cgroups differ).
		klog.V(2).InfoS("The kubelet's own cgroup is not reported", "err", err)
	} else if own != "/" {
		// The root cgroup is the whole machine, not the kubelet's.
		kubelet = own
	}
	s.mu.Lock()
	s.kubelet = kubelet
	s.mu.Unlock()
	return errors.Join(errs...)
}

// moveRootProcesses moves what runs in the root cgroup into System.
func (s *SystemCgroups) moveRootProcesses() error {
	root := RootProcsDir(s.layout)
	if root == "" {
		return fmt.Errorf("no cgroup hierarchy to list the root cgroup's processes in")
	}
	b, err := os.ReadFile(filepath.Join(root, "cgroup.procs"))
	if err != nil {
		return fmt.Errorf("listing the root cgroup's processes: %w", err)
	}
	var errs []error
	for _, pid := range ToMove(ParsePIDs(string(b)), s.isKernel) {
		if err := s.move(s.cfg.System, pid); err != nil && !errors.Is(err, errGone) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RootProcsDir is the root cgroup whose processes systemCgroups takes: the
// unified root on v2; on v1 the devices hierarchy's, as upstream's (a
// process may sit in a cgroup of its own in another controller, such as a
// per-session memory cgroup, and is moved all the same), else the memory
// hierarchy's.
func RootProcsDir(l Layout) string {
	if l.Version == V2 {
		return l.Dir("", "/")
	}
	for _, c := range []string{"devices", "memory"} {
		if d := l.Dir(c, "/"); d != "" {
			return d
		}
	}
	return ""
}

// ParsePIDs reads a cgroup.procs file.
func ParsePIDs(content string) []int {
	var out []int
	for _, f := range strings.Fields(content) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// ToMove are the processes of the root cgroup that systemCgroups takes: all
// but PID 1 and kernel threads.
func ToMove(pids []int, isKernel func(pid int) bool) []int {
	var out []int
	for _, p := range pids {
		if p != 1 && !isKernel(p) {
			out = append(out, p)
		}
	}
	return out
}

// isKernel: a kernel thread has no executable.
func (s *SystemCgroups) isKernel(pid int) bool {
	_, err := os.Readlink(filepath.Join(s.proc, strconv.Itoa(pid), "exe"))
	return errors.Is(err, fs.ErrNotExist)
}

// errGone: the process ended before it could be moved.
var errGone = errors.New("process gone")

// hierarchies are the directories a process joins for one cgroup: each v1
// hierarchy once, and the cgroup2 tree (unified on v2, the hybrid mount
// beside v1, where the cgroup's pressure is read); under systemd, not its
// named hierarchy nor the hybrid tree.
func (s *SystemCgroups) hierarchies() []string {
	if s.layout.Version == V2 {
		return []string{s.layout.Unified}
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range sortedKeys(s.layout.Mounts) {
		// Under systemd, its named hierarchy and the hybrid cgroup2 tree
		// are how it tracks its services: not ours to rearrange.
		if s.systemd && strings.HasPrefix(c, "name=") {
			continue
		}
		if m := s.layout.Mounts[c]; !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	if s.layout.Hybrid != "" && !s.systemd {
		out = append(out, s.layout.Hybrid)
	}
	return out
}

// move creates the cgroup path where it is missing and moves pid into it
// in every hierarchy.
func (s *SystemCgroups) move(path string, pid int) error {
	var errs []error
	for _, mnt := range s.hierarchies() {
		dir := filepath.Join(mnt, path)
		var err error
		if mnt == s.layout.Mounts["cpuset"] {
			err = mkdirCpuset(mnt, path)
		} else {
			err = os.MkdirAll(dir, 0o755)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if s.layout.Version == V1 && mnt == s.layout.Mounts["memory"] {
			// A v1 memory cgroup charges a page to the cgroup that was
			// current when it was touched: without moving the charges, the
			// system container would account nothing of what its
			// processes allocated before they were moved. Best effort: a
			// kernel that dropped the knob keeps the charges where they are.
			_ = os.WriteFile(filepath.Join(dir, "memory.move_charge_at_immigrate"), []byte(moveChargeAnonAndFile), 0o644)
		}
		err = s.join(dir, pid)
		if errors.Is(err, syscall.ESRCH) {
			return errGone
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("moving PID %d into %s: %w", pid, dir, err))
		}
	}
	return errors.Join(errs...)
}

// moveChargeAnonAndFile asks a v1 memory cgroup to take the charges of a
// joining task's anonymous pages (1) and mapped file pages (2) along.
const moveChargeAnonAndFile = "3"

// joinCgroup moves pid into the cgroup at dir.
func joinCgroup(dir string, pid int) error {
	return os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
}

// ownCgroup is the kubelet's cgroup, read from /proc/self/cgroup.
func (s *SystemCgroups) ownCgroup() (string, error) {
	f, err := os.Open(filepath.Join(s.proc, strconv.Itoa(s.self), "cgroup"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	return OwnCgroup(f, s.layout.Version)
}

// OwnCgroup picks a process's cgroup from its /proc/<pid>/cgroup: the
// unified entry on v2; on v1 the memory controller's, which must be the
// cpu controller's too (one cgroup accounts for both, as upstream asks).
func OwnCgroup(r io.Reader, v Version) (string, error) {
	byController := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			byController[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			byController[c] = parts[2]
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	if v == V2 {
		if p, ok := byController[""]; ok {
			return p, nil
		}
		return "", fmt.Errorf("no unified cgroup entry")
	}
	mem, ok := byController["memory"]
	if !ok {
		return "", fmt.Errorf("no memory cgroup entry")
	}
	if cpu, ok := byController["cpu"]; ok && cpu != mem {
		return "", fmt.Errorf("the cpu cgroup %s is not the memory cgroup %s", cpu, mem)
	}
	return mem, nil
}
