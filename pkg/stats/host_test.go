package stats

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
)

const netDev = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:  1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0          0
  eth0: 123456    789    1    2    0     0          0         0    65432     321    3    4    0     0       0          0
vethab12:  5  1    0    0    0     0          0         0        6       1    0    0    0     0       0          0
`

func TestParseNetDev(t *testing.T) {
	ifs := ParseNetDev(netDev)
	if len(ifs) != 3 {
		t.Fatalf("ifs = %+v", ifs)
	}
	e := ifs[1]
	if e.Name != "eth0" || e.RxBytes != 123456 || e.RxPackets != 789 || e.RxErrors != 1 || e.RxDropped != 2 || e.TxBytes != 65432 || e.TxPackets != 321 || e.TxErrors != 3 || e.TxDropped != 4 {
		t.Errorf("eth0 = %+v", e)
	}
	if !ignoredInterface("lo") || !ignoredInterface("vethab12") || ignoredInterface("eth0") {
		t.Errorf("ignoredInterface")
	}
}

func TestProcParsers(t *testing.T) {
	bt, err := ParseBootTime("cpu  1 2 3\nbtime 1700000000\nprocesses 5\n")
	if err != nil || bt.Unix() != 1700000000 {
		t.Errorf("ParseBootTime = %v %v", bt, err)
	}
	if _, err := ParseBootTime("cpu 1\n"); err == nil {
		t.Errorf("no btime: want an error")
	}
	if n, err := ParseLoadavgTasks("0.52 0.58 0.59 2/345 6789\n"); err != nil || n != 345 {
		t.Errorf("ParseLoadavgTasks = %d %v", n, err)
	}
	if _, err := ParseLoadavgTasks("garbage"); err == nil {
		t.Errorf("bad loadavg: want an error")
	}
}

func TestDiskUsage(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), make([]byte, 10000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "b"), make([]byte, 5000), 0o644); err != nil {
		t.Fatal(err)
	}
	// A hard link is one inode and counted once.
	if err := os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "sub", "a-link")); err != nil {
		t.Fatal(err)
	}
	u, err := du(dir)
	if err != nil {
		t.Fatal(err)
	}
	// dir, a, sub, b: four inodes; at least the files' sizes allocated.
	if u.Inodes != 4 || u.Bytes < 15000 {
		t.Errorf("du = %+v", u)
	}
	if _, err := du(filepath.Join(dir, "missing")); err == nil {
		t.Errorf("du of a missing dir: want an error")
	}

	logs := filepath.Join(dir, "logs")
	if u, err := logUsage(logs); err != nil || u != (DiskUsage{}) {
		t.Errorf("missing log dir = %+v %v", u, err)
	}
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logs, "0.log"), make([]byte, 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	if u, err := logUsage(logs); err != nil || u.Inodes != 2 || u.Bytes < 8192 {
		t.Errorf("logUsage = %+v %v", u, err)
	}
}

func TestListPodVolumes(t *testing.T) {
	root := t.TempDir()
	base := filepath.Join(root, "pods", "uid1", "volumes")
	for _, d := range []string{"kubernetes.io~empty-dir/cache", "kubernetes.io~empty-dir/a-scratch", "kubernetes.io~configmap/cfg", "kubernetes.io~host-path/h", "kubernetes.io~empty-dir/.hidden"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	vols := listPodVolumes(root, "uid1")
	var names []string
	for _, v := range vols {
		names = append(names, v.Name)
	}
	if len(names) != 3 || names[0] != "a-scratch" || names[1] != "cache" || names[2] != "cfg" {
		t.Errorf("volumes = %v", names)
	}
	if v := listPodVolumes(root, "nouid"); v != nil {
		t.Errorf("unknown pod: %v", v)
	}
}

func TestVolumeCache(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	c := newVolumeCache(time.Minute, clk)
	var calls atomic.Int32
	release := make(chan struct{})
	c.measure = func(p string) (DiskUsage, FsInfo, error) {
		calls.Add(1)
		<-release
		return DiskUsage{Bytes: uint64(100 * calls.Load())}, FsInfo{Capacity: 1}, nil
	}
	// The first request waits (up to its deadline) for the first walk.
	go func() { time.Sleep(10 * time.Millisecond); release <- struct{}{} }()
	u, _, _, ok := c.get("/v", time.Now().Add(5*time.Second))
	if !ok || u.Bytes != 100 {
		t.Fatalf("first get = %+v %v", u, ok)
	}
	// Within the period: served from the cache, no walk.
	if u, _, _, ok := c.get("/v", time.Now()); !ok || u.Bytes != 100 || calls.Load() != 1 {
		t.Fatalf("cached get = %+v %v calls=%d", u, ok, calls.Load())
	}
	// Stale: the old value is served at once while a new walk runs.
	clk.Step(2 * time.Minute)
	if u, _, _, ok := c.get("/v", time.Now()); !ok || u.Bytes != 100 {
		t.Fatalf("stale get = %+v %v", u, ok)
	}
	release <- struct{}{}
	eventually.True(t, "the background walk landed", func() bool {
		u, _, _, _ := c.get("/v", time.Now())
		return u.Bytes == 200
	})
	// A volume that does not answer in time is left out, not waited for.
	if _, _, _, ok := c.get("/slow", time.Now().Add(20*time.Millisecond)); ok {
		t.Fatalf("unmeasured volume reported")
	}
	release <- struct{}{}
	// Entries nobody asks about expire.
	clk.Step(10 * time.Minute)
	eventually.True(t, "the entries nobody asked about expired", func() bool {
		c.expire()
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.entries) == 0
	})
}
