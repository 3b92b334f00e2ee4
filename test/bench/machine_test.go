package main

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestBusySeconds(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b cpuTimes
		want float64
	}{
		{"busy and idle", cpuTimes{idle: 1000, total: 2000}, cpuTimes{idle: 1150, total: 2400}, 2.5},
		{"all idle", cpuTimes{idle: 1000, total: 2000}, cpuTimes{idle: 1200, total: 2200}, 0},
		{"no time passed", cpuTimes{idle: 1000, total: 2000}, cpuTimes{idle: 1000, total: 2000}, 0},
		{"counter went back", cpuTimes{idle: 1000, total: 2000}, cpuTimes{idle: 10, total: 20}, 0},
	} {
		if got := busySeconds(tc.a, tc.b); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestProcessSeconds(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b map[int]uint64
		want float64
	}{
		{"both readings", map[int]uint64{1: 100, 2: 50}, map[int]uint64{1: 250, 2: 60}, 1.6},
		{"one started meanwhile", map[int]uint64{1: 100}, map[int]uint64{1: 200, 3: 900}, 1},
		{"one ended meanwhile", map[int]uint64{1: 100, 2: 50}, map[int]uint64{1: 100}, 0},
		// A pid reused by a new process with less CPU than the old one had.
		{"pid reused", map[int]uint64{1: 500}, map[int]uint64{1: 20}, 0},
		{"none", nil, nil, 0},
	} {
		if got := processSeconds(tc.a, tc.b); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// readMachine reads the processes of the pid files it finds, and leaves out
// a pid file that names no process or holds no number.
func TestReadMachineReadsThePidFiles(t *testing.T) {
	dir := t.TempDir()
	self := os.Getpid()
	for name, content := range map[string]string{
		"etcd.pid":  strconv.Itoa(self) + "\n",
		"gone.pid":  "999999999",
		"empty.pid": "",
		"notes.txt": strconv.Itoa(self),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := readMachine(dir)
	if len(s.cp) != 1 {
		t.Fatalf("processes read: %v, want this test's only", s.cp)
	}
	if _, ok := s.cp[self]; !ok {
		t.Errorf("processes read: %v, want pid %d", s.cp, self)
	}
	if s.cpu.total == 0 {
		t.Error("no machine CPU reading")
	}
}
