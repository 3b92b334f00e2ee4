package stats

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
)

const limitsFile = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max file size             unlimited            unlimited            bytes
Max processes             unlimited            unlimited            processes
Max open files            1048576              1048576              files
Max locked memory         8388608              8388608              bytes
`

func TestParseLimits(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		want          []Ulimit
	}{
		{"kernel format", limitsFile, []Ulimit{{Name: "max_open_files", Soft: 1048576}}},
		{"unlimited", "Max open files            unlimited            unlimited            files\n", []Ulimit{{Name: "max_open_files", Soft: -1}}},
		{"soft below hard", "Max open files            1024 4096 files\n", []Ulimit{{Name: "max_open_files", Soft: 1024}}},
		{"no open files line", "Max processes             unlimited            unlimited            processes\n", nil},
		{"bad soft", "Max open files            many 4096 files\n", nil},
		{"bad hard", "Max open files            1024 many files\n", nil},
		{"missing units", "Max open files            1024 4096\n", nil},
		{"empty", "", nil},
	} {
		if got := ParseLimits(tc.content); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestParseProcStat(t *testing.T) {
	tail := " 0 0 0 0 0 0 0 0 0 0 0 0 0 20 0 1 0 123456 1000 10 18446744073709551615\n"
	for _, tc := range []struct {
		name, content string
		ppid          int
		start         uint64
		ok            bool
	}{
		{"plain", "42 (sh) S 7" + tail, 7, 123456, true},
		{"name with spaces and parens", "42 (a b) c)) S 9" + tail, 9, 123456, true},
		{"truncated", "42 (sh) S 7 0 0\n", 0, 0, false},
		{"no name", "42 sh S 7" + tail, 0, 0, false},
		{"bad ppid", "42 (sh) S x" + tail, 0, 0, false},
	} {
		ppid, start, ok := ParseProcStat(tc.content)
		if ppid != tc.ppid || start != tc.start || ok != tc.ok {
			t.Errorf("%s: %d %d %v, want %d %d %v", tc.name, ppid, start, ok, tc.ppid, tc.start, tc.ok)
		}
	}
}

// fakeProc writes /proc/<pid> with the given fd link targets, a stat with
// the parent and start time, and a limits file whose open files soft limit
// is the pid (to tell which process's limits were read).
func fakeProc(t *testing.T, proc string, pid, ppid int, start uint64, fds ...string) {
	t.Helper()
	dir := filepath.Join(proc, strconv.Itoa(pid))
	if err := os.MkdirAll(filepath.Join(dir, "fd"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, target := range fds {
		if err := os.Symlink(target, filepath.Join(dir, "fd", strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "stat"), strconv.Itoa(pid)+" (sh) S "+strconv.Itoa(ppid)+" 0 0 0 0 0 0 0 0 0 0 0 0 0 20 0 1 0 "+strconv.FormatUint(start, 10)+" 1000\n")
	writeFile(t, filepath.Join(dir, "limits"), "Max open files            "+strconv.Itoa(pid)+"                 1048576              files\n")
}

func TestReadProcessStats(t *testing.T) {
	proc := filepath.Join(t.TempDir(), "proc")
	// A container: its init (100, started by the shim, 1), a child of it,
	// and a process exec'd in later (started by the shim too).
	fakeProc(t, proc, 100, 1, 500, "/dev/null", "pipe:[11]", "socket:[12]")
	fakeProc(t, proc, 101, 100, 600, "socket:[13]", "socket:[14]")
	fakeProc(t, proc, 90, 1, 900, "/dev/pts/0") // a lower pid (wrapped), later start
	for _, tc := range []struct {
		name                string
		pids                []int
		procs, fds, sockets uint64
		ulimits             []Ulimit
	}{
		{"none", nil, 0, 0, 0, nil},
		{"one process", []int{100}, 1, 3, 1, []Ulimit{{Name: "max_open_files", Soft: 100}}},
		{"init is the earliest whose parent is outside", []int{90, 100, 101}, 3, 6, 3, []Ulimit{{Name: "max_open_files", Soft: 100}}},
		// A process gone between cgroup.procs and /proc is still counted
		// (as cadvisor: the cgroup's list), with nothing else.
		{"a process gone", []int{100, 4242}, 2, 3, 1, []Ulimit{{Name: "max_open_files", Soft: 100}}},
		{"all gone", []int{4242}, 1, 0, 0, nil},
	} {
		got := readProcessStats(proc, tc.pids)
		want := ProcessStats{Processes: tc.procs, FileDescriptors: tc.fds, Sockets: tc.sockets, Ulimits: tc.ulimits}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, want)
		}
	}
}
