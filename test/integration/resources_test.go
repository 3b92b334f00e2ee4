package integration

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/runtime/cgroups"
	"github.com/gokubelet/kubelet/test/framework"
)

// cgroupRootFor gives a test kubelet a cgroup root of its own, so the
// limits it writes on kubepods never touch another kubelet's pods on this
// machine, and removes what is left of it afterwards.
func cgroupRootFor(t *testing.T) (string, cgroups.Layout) {
	t.Helper()
	l, err := cgroups.Detect()
	if err != nil {
		t.Fatal(err)
	}
	root := fmt.Sprintf("/gokubelet-itest-%d", os.Getpid())
	t.Cleanup(func() {
		for _, mnt := range l.MountPoints() {
			removeCgroupTree(filepath.Join(mnt, root))
		}
	})
	return root, l
}

// removeCgroupTree removes empty cgroup directories bottom-up.
func removeCgroupTree(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			removeCgroupTree(filepath.Join(dir, e.Name()))
		}
	}
	_ = syscall.Rmdir(dir)
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return strings.TrimSpace(string(b))
}

// A pod's cgroup carries its limits on this machine's cgroup setup, under
// its QoS level, and node allocatable is enforced on kubepods.
func TestPodCgroupsCarryTheirLimits(t *testing.T) {
	root, l := cgroupRootFor(t)
	n := startNodeWith(t, fmt.Sprintf(`cgroupRoot: %s
systemReserved:
  memory: 1Gi
  cpu: 500m
podPidsLimit: 300
`, root))
	n.writeManifest("guaranteed.yaml", manifest("guaranteed", `  containers:
  - name: main
    image: gokubelet.local/testimage:1.0
    resources:
      limits: {cpu: 250m, memory: 64Mi}
`))
	n.writeManifest("burstable.yaml", manifest("burstable", `  containers:
  - name: main
    image: gokubelet.local/testimage:1.0
    resources:
      requests: {cpu: 100m, memory: 32Mi}
      limits: {cpu: 300m, memory: 96Mi}
`))
	n.writeManifest("besteffort.yaml", manifest("besteffort", `  containers:
  - name: main
    image: gokubelet.local/testimage:1.0
`))
	uid := map[string]string{}
	for _, name := range []string{"guaranteed", "burstable", "besteffort"} {
		uid[name] = string(n.waitPod(name, "Running", isRunningReady).UID)
	}
	if l.Version != cgroups.V1 {
		t.Fatalf("this test reads v1 files; the machine runs cgroup %v", l.Version)
	}
	cpu, mem, pids := l.Mounts["cpu"], l.Mounts["memory"], l.Mounts["pids"]
	kubepods := root + "/kubepods"
	capacity := memTotal(t)
	if got := readTrim(t, filepath.Join(mem, kubepods, "memory.limit_in_bytes")); got != strconv.FormatInt(capacity-1<<30, 10) {
		t.Errorf("kubepods memory limit %s, want capacity %d less systemReserved 1Gi", got, capacity)
	}
	for _, tc := range []struct {
		dir   string
		files map[string]string
	}{
		{filepath.Join(cpu, kubepods, "besteffort"), map[string]string{"cpu.shares": "2"}},
		{filepath.Join(cpu, kubepods, "burstable"), map[string]string{"cpu.shares": "102"}},
		{filepath.Join(cpu, kubepods, "pod"+uid["guaranteed"]), map[string]string{"cpu.shares": "256", "cpu.cfs_quota_us": "25000", "cpu.cfs_period_us": "100000"}},
		{filepath.Join(mem, kubepods, "pod"+uid["guaranteed"]), map[string]string{"memory.limit_in_bytes": strconv.Itoa(64 << 20)}},
		{filepath.Join(pids, kubepods, "pod"+uid["guaranteed"]), map[string]string{"pids.max": "300"}},
		{filepath.Join(cpu, kubepods, "burstable", "pod"+uid["burstable"]), map[string]string{"cpu.shares": "102", "cpu.cfs_quota_us": "30000"}},
		{filepath.Join(mem, kubepods, "burstable", "pod"+uid["burstable"]), map[string]string{"memory.limit_in_bytes": strconv.Itoa(96 << 20)}},
		{filepath.Join(cpu, kubepods, "besteffort", "pod"+uid["besteffort"]), map[string]string{"cpu.shares": "2", "cpu.cfs_quota_us": "-1"}},
	} {
		for file, want := range tc.files {
			if got := readTrim(t, filepath.Join(tc.dir, file)); got != want {
				t.Errorf("%s/%s = %s, want %s", tc.dir, file, got, want)
			}
		}
	}
	// The runtime put the pod's containers inside its cgroup: the limit
	// binds them.
	for name, id := range uid {
		dir := filepath.Join(mem, kubepods, "pod"+id)
		if name != "guaranteed" {
			dir = filepath.Join(mem, kubepods, name, "pod"+id)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		sub := 0
		for _, e := range entries {
			if e.IsDir() {
				sub++
			}
		}
		if sub < 2 {
			t.Errorf("%s: %d container cgroups under the pod's, want the sandbox's and the container's", name, sub)
		}
	}
}

func memTotal(t *testing.T) int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024
		}
	}
	t.Fatal("no MemTotal")
	return 0
}

var criLogLine = regexp.MustCompile(`^\S+ (stdout|stderr) [FP] `)

// A chatty container's log is rotated by size and count, through the
// runtime (ReopenContainerLog), older files compressed, in the CRI log
// format throughout.
func TestContainerLogsRotate(t *testing.T) {
	n := startNodeWith(t, `containerLogMaxSize: 8Ki
containerLogMaxFiles: 3
containerLogMonitorInterval: 3s
`)
	n.writeManifest("chatty.yaml", manifest("chatty", `  containers:
  - name: main
    image: gokubelet.local/testimage:1.0
    command: ["sh", "-c", "i=0; while true; do i=$((i+1)); echo line $i 0123456789012345678901234567890123456789012345678901234567890123456789; sleep 0.005; done"]
`))
	p := n.waitPod("chatty", "Running", isRunningReady)
	dir := filepath.Join(n.logsDir, fmt.Sprintf("default_chatty-%s_%s", nodeName, p.UID), "main")
	var files []string
	framework.Eventually(t, "rotated and compressed logs", func() (bool, string) {
		entries, _ := os.ReadDir(dir)
		files = nil
		gz := 0
		for _, e := range entries {
			files = append(files, e.Name())
			if strings.HasSuffix(e.Name(), ".gz") {
				gz++
			}
		}
		return gz >= 1, fmt.Sprint(files)
	})
	sort.Strings(files)
	if len(files) > 3 {
		t.Errorf("%d log files, want at most containerLogMaxFiles 3: %v", len(files), files)
	}
	// The newest rotated file is plain and in the CRI format.
	var plain string
	for _, f := range files {
		if f != "0.log" && !strings.HasSuffix(f, ".gz") && !strings.HasSuffix(f, ".tmp") {
			plain = f
		}
	}
	if plain == "" {
		t.Fatalf("no plain rotated file: %v", files)
	}
	b, err := os.ReadFile(filepath.Join(dir, plain))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !criLogLine.MatchString(line) {
			t.Fatalf("rotated log line not in the CRI format: %q", line)
		}
	}
	// The live file keeps being written (the runtime reopened it).
	framework.Eventually(t, "the live log grows after rotation", func() (bool, string) {
		fi, err := os.Stat(filepath.Join(dir, "0.log"))
		return err == nil && fi.Size() > 0, fmt.Sprint(err)
	})
	if p, ok := n.pod("chatty"); !ok || !isRunningReady(p) {
		t.Errorf("the pod suffered from the rotation: %v", describeOrMissing(p, ok))
	}
}

var _ = v1.PodRunning

// A pod removed while the kubelet was down leaves nothing once the
// kubelet is back: no container or sandbox, no log directory, no pod
// directory, no volume mount (a tmpfs emptyDir).
func TestPodRemovedDuringDowntimeLeavesNothing(t *testing.T) {
	n := startNode(t)
	n.writeManifest("orphan.yaml", manifest("orphan", `  containers:
  - name: main
    image: gokubelet.local/testimage:1.0
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
  volumes:
  - name: scratch
    emptyDir: {medium: Memory}
`))
	p := n.waitPod("orphan", "Running", isRunningReady)
	uid := string(p.UID)
	podDir := filepath.Join(n.rootDir, "pods", uid)
	logDir := filepath.Join(n.logsDir, fmt.Sprintf("default_orphan-%s_%s", nodeName, uid))
	if !mountedUnder(t, podDir) {
		t.Fatalf("no tmpfs mounted under %s while the pod runs", podDir)
	}
	n.Stop(t)
	n.removeManifest("orphan.yaml")
	n.Start(t)
	framework.Eventually(t, "nothing of the pod left", func() (bool, string) {
		sbs, cs := runtimePod(t, uid)
		_, podErr := os.Stat(podDir)
		_, logErr := os.Stat(logDir)
		left := fmt.Sprintf("sandboxes %d containers %d podDir %v logDir %v mounted %v", len(sbs), len(cs), podErr, logErr, mountedUnder(t, podDir))
		return len(sbs) == 0 && len(cs) == 0 && os.IsNotExist(podErr) && os.IsNotExist(logErr) && !mountedUnder(t, podDir), left
	})
}

func mountedUnder(t *testing.T, dir string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			return true
		}
	}
	return false
}
