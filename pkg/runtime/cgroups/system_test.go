package cgroups

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
)

func TestOwnCgroup(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		v             Version
		want          string
		err           bool
	}{
		{"v1, separate cpu and cpuacct mounts", "12:pids:/x\n4:memory:/kubelet\n3:cpuacct:/kubelet\n2:cpu:/kubelet\n1:name=systemd:/\n0::/kubelet\n", V1, "/kubelet", false},
		{"v1, cpu,cpuacct co-mounted", "3:cpu,cpuacct:/system\n2:memory:/system\n", V1, "/system", false},
		{"v1, cpu elsewhere than memory", "3:cpu,cpuacct:/a\n2:memory:/b\n", V1, "", true},
		{"v1 without memory", "3:cpu,cpuacct:/a\n", V1, "", true},
		{"v2", "0::/system.slice/kubelet.service\n", V2, "/system.slice/kubelet.service", false},
		{"v2 without the unified entry", "2:memory:/a\n", V2, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := OwnCgroup(strings.NewReader(tc.content), tc.v)
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("OwnCgroup = %q, %v; want %q, error %v", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestRootProcsDir(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    Layout
		want string
	}{
		{"v2", Layout{Version: V2, Unified: "/sys/fs/cgroup"}, "/sys/fs/cgroup"},
		{"v1 with devices", Layout{Version: V1, Mounts: map[string]string{"memory": "/m", "devices": "/d"}}, "/d"},
		{"v1 without devices", Layout{Version: V1, Mounts: map[string]string{"memory": "/m", "cpu": "/c"}}, "/m"},
		{"v1 with neither", Layout{Version: V1, Mounts: map[string]string{"cpu": "/c"}}, ""},
	} {
		if got := RootProcsDir(tc.l); got != tc.want {
			t.Errorf("%s: RootProcsDir = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestToMove(t *testing.T) {
	kernel := map[int]bool{2: true, 3: true}
	got := ToMove(ParsePIDs("1\n2\n3\n40\n\n41\nbad\n"), func(pid int) bool { return kernel[pid] })
	if want := []int{40, 41}; !reflect.DeepEqual(got, want) {
		t.Errorf("ToMove = %v, want %v (not PID 1, not kernel threads)", got, want)
	}
}

// systemFixture is a v1 hybrid layout and a /proc in a temporary directory;
// joins are recorded instead of written.
type systemFixture struct {
	s      *SystemCgroups
	l      Layout
	joined map[string][]int // cgroup directory -> PIDs, in order
}

func newSystemFixture(t *testing.T, cfg SystemConfig) *systemFixture {
	l := fakeV1(t)
	l.Hybrid = filepath.Join(t.TempDir(), "unified")
	proc := t.TempDir()
	f := &systemFixture{l: l, joined: map[string][]int{}}
	f.s = NewSystemCgroups(cfg, l)
	f.s.proc, f.s.self, f.s.systemd = proc, 100, false
	f.s.join = func(dir string, pid int) error {
		if pid == 41 {
			return fmt.Errorf("write: %w", syscall.ESRCH) // ended meanwhile
		}
		f.joined[dir] = append(f.joined[dir], pid)
		return nil
	}
	// The root cgroup: PID 1, a kernel thread (2), a daemon (40), one that
	// ends before it is moved (41), and the kubelet (100).
	os.WriteFile(filepath.Join(l.Mounts["memory"], "cgroup.procs"), []byte("1\n2\n40\n41\n100\n"), 0o644)
	for _, pid := range []string{"1", "2", "40", "41", "100"} {
		os.MkdirAll(filepath.Join(proc, pid), 0o755)
		if pid != "2" {
			os.Symlink("/usr/bin/true", filepath.Join(proc, pid, "exe"))
		}
	}
	os.WriteFile(filepath.Join(proc, "100", "cgroup"), []byte("4:memory:/kubelet\n2:cpu:/kubelet\n0::/kubelet\n"), 0o644)
	return f
}

func TestSystemCgroupsEnsure(t *testing.T) {
	f := newSystemFixture(t, SystemConfig{Kubelet: "/kubelet", System: "/system", Runtime: "/docker-daemon"})
	if err := f.s.Ensure(); err != nil {
		t.Fatal(err)
	}
	// Every hierarchy (each v1 mount once, and the hybrid cgroup2 tree)
	// gets the daemon in /system, then the kubelet in /kubelet.
	mounts := append(f.l.MountPoints(), f.l.Hybrid)
	if len(mounts) != 5 {
		t.Fatalf("mounts = %v", mounts)
	}
	for _, mnt := range mounts {
		if got := f.joined[filepath.Join(mnt, "system")]; !reflect.DeepEqual(got, []int{40, 100}) {
			t.Errorf("%s/system joined %v, want [40 100]", mnt, got)
		}
		if got := f.joined[filepath.Join(mnt, "kubelet")]; !reflect.DeepEqual(got, []int{100}) {
			t.Errorf("%s/kubelet joined %v, want [100]", mnt, got)
		}
	}
	// A new cpuset level can take tasks: it has its parent's CPUs.
	if b, _ := os.ReadFile(filepath.Join(f.l.Mounts["cpuset"], "system", "cpuset.cpus")); strings.TrimSpace(string(b)) != "0-1" {
		t.Errorf("system cpuset.cpus = %q", b)
	}
	// The memory charges move with the processes, so the memory of what
	// runs in a system container is counted there.
	for _, cg := range []string{"system", "kubelet"} {
		if b, _ := os.ReadFile(filepath.Join(f.l.Mounts["memory"], cg, "memory.move_charge_at_immigrate")); string(b) != "3" {
			t.Errorf("%s memory.move_charge_at_immigrate = %q, want 3", cg, b)
		}
	}
	want := map[string]string{"kubelet": "/kubelet", "misc": "/system", "runtime": "/docker-daemon"}
	if got := f.s.Names(); !reflect.DeepEqual(got, want) {
		t.Errorf("Names = %v, want %v", got, want)
	}
}

func TestSystemCgroupsUnconfigured(t *testing.T) {
	f := newSystemFixture(t, SystemConfig{})
	if err := f.s.Ensure(); err != nil {
		t.Fatal(err)
	}
	if len(f.joined) != 0 {
		t.Errorf("moved processes without kubeletCgroups or systemCgroups: %v", f.joined)
	}
	// The kubelet's own cgroup is still reported.
	if got, want := f.s.Names(), map[string]string{"kubelet": "/kubelet"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Names = %v, want %v", got, want)
	}
}

func TestSystemCgroupsKubeletInTheRootIsNotReported(t *testing.T) {
	f := newSystemFixture(t, SystemConfig{})
	os.WriteFile(filepath.Join(f.s.proc, "100", "cgroup"), []byte("4:memory:/\n2:cpu:/\n0::/\n"), 0o644)
	if err := f.s.Ensure(); err != nil {
		t.Fatal(err)
	}
	if got := f.s.Names(); len(got) != 0 {
		t.Errorf("Names = %v: the root cgroup reported as the kubelet's", got)
	}
}

func TestSystemCgroupsLeaveSystemdItsHierarchies(t *testing.T) {
	l := Layout{Version: V1, Mounts: map[string]string{"cpu": "/c", "cpuacct": "/c", "memory": "/m", "name=systemd": "/s"}, Hybrid: "/u"}
	for _, tc := range []struct {
		systemd bool
		want    []string
	}{
		{false, []string{"/c", "/m", "/s", "/u"}},
		{true, []string{"/c", "/m"}},
	} {
		s := &SystemCgroups{layout: l, systemd: tc.systemd}
		got := s.hierarchies()
		sort.Strings(got)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("systemd %v: hierarchies %v, want %v", tc.systemd, got, tc.want)
		}
	}
	if got := (&SystemCgroups{layout: Layout{Version: V2, Unified: "/sys/fs/cgroup"}, systemd: true}).hierarchies(); !reflect.DeepEqual(got, []string{"/sys/fs/cgroup"}) {
		t.Errorf("v2 hierarchies %v", got)
	}
}
