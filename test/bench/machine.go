package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The floor starts pods straight through CRI with the control plane idle;
// a kubelet's pods come through the API server, the scheduler and etcd,
// which share this machine's CPUs with the runtime. So beside the kubelet's
// own CPU, each workload's window records what the whole machine and the
// control plane spent, for the kubelets and for the floor alike: the part of
// the distance to the floor that is CPU taken from the runtime has a
// figure.

// machineSample is one reading of the machine's CPU and of each control
// plane process's.
type machineSample struct {
	cpu cpuTimes
	// cp is utime+stime in clock ticks per control plane pid.
	cp map[int]uint64
}

// readMachine reads /proc/stat and the processes whose pid files are in
// runDir (hack/cluster.sh's: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and the add-ons). A process that is not there is left out.
func readMachine(runDir string) machineSample {
	s := machineSample{cp: map[int]uint64{}}
	s.cpu, _ = readCPUTimes()
	files, _ := filepath.Glob(filepath.Join(runDir, "*.pid"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		if t, err := ParseProcStatCPU(string(stat)); err == nil {
			s.cp[pid] = t
		}
	}
	return s
}

// busySeconds is the CPU time the machine spent working (not idle or
// waiting for I/O) between two readings, over all CPUs.
func busySeconds(a, b cpuTimes) float64 {
	if b.total <= a.total {
		return 0
	}
	return float64((b.total-b.idle)-(a.total-a.idle)) / clockTicks
}

// processSeconds is the CPU time the processes of both readings spent
// between them. One that started or ended in between (kube-proxy restarts
// when its Node is deleted) is left out rather than guessed.
func processSeconds(a, b map[int]uint64) float64 {
	var ticks uint64
	for pid, t1 := range b {
		if t0, ok := a[pid]; ok && t1 >= t0 {
			ticks += t1 - t0
		}
	}
	return float64(ticks) / clockTicks
}

// recordMachine adds the machine's and the control plane's CPU between two
// readings to kind's figures of workload wl.
func (b *bench) recordMachine(kind, wl string, m0, m1 machineSample) {
	b.res.add(kind, wl, "cpu_machine", busySeconds(m0.cpu, m1.cpu))
	b.res.add(kind, wl, "cpu_cp", processSeconds(m0.cp, m1.cp))
}
