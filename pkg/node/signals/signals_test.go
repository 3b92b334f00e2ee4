package signals

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParsers(t *testing.T) {
	mi, err := ParseMeminfo(strings.NewReader("MemTotal:       24684544 kB\nMemFree:        19850000 kB\nHugePages_Total:       0\nbad line\n"))
	if err != nil {
		t.Fatal(err)
	}
	if mi["MemTotal"] != 24684544*1024 || mi["HugePages_Total"] != 0 {
		t.Errorf("meminfo: %v", mi)
	}
	st, _ := ParseKeyValues(strings.NewReader("cache 100\ntotal_inactive_file 4096\nhierarchical_memory_limit 9223372036854771712\nweird a b\n"))
	if st["total_inactive_file"] != 4096 || len(st) != 3 {
		t.Errorf("memory.stat: %v", st)
	}
	for _, tc := range []struct {
		usage int64
		stat  map[string]int64
		want  int64
	}{
		{10000, map[string]int64{"total_inactive_file": 4000, "inactive_file": 1}, 6000},
		{10000, map[string]int64{"inactive_file": 1000}, 9000},
		{1000, map[string]int64{"inactive_file": 5000}, 0},
		{1000, nil, 1000},
	} {
		if got := WorkingSet(tc.usage, tc.stat); got != tc.want {
			t.Errorf("WorkingSet(%d, %v) = %d, want %d", tc.usage, tc.stat, got, tc.want)
		}
	}
	if n, err := ParseLoadavgTasks("1.36 3.49 4.53 2/3518 3715089\n"); err != nil || n != 3518 {
		t.Errorf("loadavg: %d %v", n, err)
	}
	for _, bad := range []string{"1 2 3", "1 2 3 4 5", ""} {
		if _, err := ParseLoadavgTasks(bad); err == nil {
			t.Errorf("loadavg %q: want an error", bad)
		}
	}
	if v, _ := ParseLimit("max\n"); v != -1 {
		t.Errorf("max: %d", v)
	}
	if (Memory{Capacity: 10, WorkingSet: 15}).Available() != 0 {
		t.Error("available below zero")
	}
}

func TestCgroupReaders(t *testing.T) {
	v1 := t.TempDir()
	os.WriteFile(filepath.Join(v1, "memory.usage_in_bytes"), []byte("100000\n"), 0o644)
	os.WriteFile(filepath.Join(v1, "memory.stat"), []byte("total_inactive_file 30000\ninactive_file 1\n"), 0o644)
	if ws, err := CgroupWorkingSet(v1); err != nil || ws != 70000 {
		t.Errorf("v1 working set %d %v", ws, err)
	}
	v2 := t.TempDir()
	os.WriteFile(filepath.Join(v2, "memory.current"), []byte("50000\n"), 0o644)
	os.WriteFile(filepath.Join(v2, "memory.stat"), []byte("anon 1\nfile 2\ninactive_file 10000\n"), 0o644)
	if ws, err := CgroupWorkingSet(v2); err != nil || ws != 40000 {
		t.Errorf("v2 working set %d %v", ws, err)
	}
	v2root := t.TempDir()
	os.WriteFile(filepath.Join(v2root, "memory.stat"), []byte("anon 7000\nfile 3000\ninactive_file 1000\n"), 0o644)
	if ws, err := CgroupWorkingSet(v2root); err != nil || ws != 9000 {
		t.Errorf("v2 root working set %d %v", ws, err)
	}
	if _, err := CgroupWorkingSet(filepath.Join(v1, "missing")); err == nil {
		t.Error("missing cgroup: want an error")
	}

	pids := t.TempDir()
	os.WriteFile(filepath.Join(pids, "pids.current"), []byte("7\n"), 0o644)
	if n, _ := CgroupTasks(pids); n != 7 {
		t.Errorf("pids.current: %d", n)
	}
	tasks := t.TempDir()
	os.MkdirAll(filepath.Join(tasks, "child"), 0o755)
	os.WriteFile(filepath.Join(tasks, "tasks"), []byte("1\n2\n"), 0o644)
	os.WriteFile(filepath.Join(tasks, "child", "tasks"), []byte("3\n"), 0o644)
	if n, _ := CgroupTasks(tasks); n != 3 {
		t.Errorf("tasks of the subtree: %d", n)
	}
}

func TestHostReaders(t *testing.T) {
	dir := t.TempDir()
	fs, err := Statfs(dir)
	if err != nil || fs.Capacity <= 0 || fs.Available <= 0 || fs.Available > fs.Capacity || fs.Inodes <= 0 {
		t.Errorf("statfs: %+v %v", fs, err)
	}
	os.WriteFile(filepath.Join(dir, "a"), make([]byte, 10000), 0o644)
	os.MkdirAll(filepath.Join(dir, "d"), 0o755)
	os.WriteFile(filepath.Join(dir, "d", "b"), make([]byte, 5000), 0o644)
	b, n, err := DirUsage(dir)
	if err != nil || b < 15000 || n != 4 {
		t.Errorf("DirUsage: %d bytes %d inodes %v", b, n, err)
	}
	if b, n, err := DirUsage(filepath.Join(dir, "missing")); b != 0 || n != 0 || err != nil {
		t.Errorf("missing dir: %d %d %v", b, n, err)
	}
	p, err := NodePIDs()
	if err != nil || p.Max <= 0 || p.Running <= 0 || p.Available() <= 0 {
		t.Errorf("pids: %+v %v", p, err)
	}
}
