package stats

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	compbase "k8s.io/component-base/metrics"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/metrics/metricstest"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// withClaims gives the fixture's pod (u1) a local persistent volume
// "data" of claim "data-claim" at a fake filesystem.
func withClaims(f *fixture) {
	f.p.o.ClaimVolumes = func(uid types.UID) []ClaimVolume {
		if uid != "u1" {
			return nil
		}
		return []ClaimVolume{{Volume: "data", Claim: "data-claim", Path: "/mnt/disks/ssd1"}, {Volume: "broken", Claim: "gone", Path: "/nowhere"}}
	}
	f.p.fsInfo = func(p string) (FsInfo, error) {
		if p != "/mnt/disks/ssd1" {
			return FsInfo{}, errors.New("no such file or directory")
		}
		return FsInfo{Capacity: 10000, Available: 3000, Used: 6000, Inodes: 100, InodesFree: 40}, nil
	}
}

// TestSummaryPersistentVolume: a pod's persistent volume is in its
// volume stats with its claim (pvcRef) and its filesystem's usage, and is
// not ephemeral storage; one that cannot be measured is left out.
func TestSummaryPersistentVolume(t *testing.T) {
	f := newFixture(t)
	base, err := f.p.Summary(context.Background(), Full)
	if err != nil {
		t.Fatal(err)
	}
	ephBefore := *base.Pods[0].EphemeralStorage.UsedBytes
	f = newFixture(t)
	withClaims(f)
	s, err := f.p.Summary(context.Background(), Full)
	if err != nil {
		t.Fatal(err)
	}
	p := s.Pods[0]
	var got []string
	for _, v := range p.VolumeStats {
		ref := "-"
		if v.PVCRef != nil {
			ref = v.PVCRef.Namespace + "/" + v.PVCRef.Name
		}
		got = append(got, fmt.Sprintf("%s:%s:%d/%d/%d:%d/%d/%d", v.Name, ref, *v.CapacityBytes, *v.AvailableBytes, *v.UsedBytes, *v.Inodes, *v.InodesFree, *v.InodesUsed))
	}
	if len(got) != 2 || got[1] != "data:ns/data-claim:10000/3000/6000:100/40/60" || got[0][:len("scratch:-:")] != "scratch:-:" {
		t.Fatalf("volume stats = %v", got)
	}
	if eph := *p.EphemeralStorage.UsedBytes; eph != ephBefore {
		t.Errorf("ephemeral storage %d counts the persistent volume (without it: %d)", eph, ephBefore)
	}
}

// TestVolumeStatsMetrics: kubelet_volume_stats_* have upstream's names and
// labels, one series set per claim (a claim two pods use is reported
// once), only for pods with a ready sandbox, and no CRI call.
func TestVolumeStatsMetrics(t *testing.T) {
	f := newFixture(t)
	withClaims(f)
	other := &container.PodStatus{UID: "u1", Name: "web-2", Namespace: "ns",
		Sandboxes: []container.SandboxStatus{{ID: "sb9", State: container.SandboxReady}}}
	stopped := &container.PodStatus{UID: "u1", Name: "old", Namespace: "other",
		Sandboxes: []container.SandboxStatus{{ID: "sb8", State: container.SandboxNotReady}}}
	f.p.o.Pods = func() []*container.PodStatus { return []*container.PodStatus{f.pod, other, stopped} }
	calls := len(f.rt.GetCalls())
	r := metrics.NewKubeletRegistry(metrics.KubeletOptions{Volumes: f.p.VolumeStats})
	fam, err := metricstest.ScrapeHandler(compbase.HandlerFor(r, compbase.HandlerOpts{}), "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.rt.GetCalls()) != calls {
		t.Errorf("a scrape called the runtime")
	}
	sel := map[string]string{"namespace": "ns", "persistentvolumeclaim": "data-claim"}
	for name, want := range map[string]float64{
		"kubelet_volume_stats_capacity_bytes":  10000,
		"kubelet_volume_stats_available_bytes": 3000,
		"kubelet_volume_stats_used_bytes":      6000,
		"kubelet_volume_stats_inodes":          100,
		"kubelet_volume_stats_inodes_free":     40,
		"kubelet_volume_stats_inodes_used":     60,
	} {
		if n := len(fam.Find(name, nil)); n != 1 {
			t.Errorf("%s: %d series, want 1 (one claim)", name, n)
		}
		if got := fam.Sum(name, sel); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
		if labels := fmt.Sprint(fam.LabelNames(name)); labels != "[namespace persistentvolumeclaim]" {
			t.Errorf("%s labels = %s", name, labels)
		}
	}
}

// TestDriverReportedVolumes: a claim volume whose driver reports its usage
// (CSI NodeGetVolumeStats) is reported with the driver's numbers, not
// statfs, in the Summary and in kubelet_volume_stats_*; a driver without
// the capability, or one that fails, leaves the volume out (and the stats
// path goes on); a new Key (the volume grew) measures again at once, and
// within a period the driver is asked once.
func TestDriverReportedVolumes(t *testing.T) {
	f := newFixture(t)
	var asked atomic.Int32
	capacity := atomic.Uint64{}
	capacity.Store(1 << 30)
	key := atomic.Value{}
	key.Store("csi/v1#0")
	f.p.o.ClaimVolumes = func(uid types.UID) []ClaimVolume {
		if uid != "u1" {
			return nil
		}
		return []ClaimVolume{
			{Volume: "csi", Claim: "csi-claim", Path: "/var/lib/kubelet/pods/u1/volumes/kubernetes.io~csi/pv1/mount", Key: key.Load().(string),
				Measure: func() (VolumeUsage, error) {
					asked.Add(1)
					return VolumeUsage{Capacity: capacity.Load(), Available: 700, Used: 300, Inodes: 0, InodesFree: 0, InodesUsed: 0}, nil
				}},
			{Volume: "nostats", Claim: "nostats-claim", Path: "/x", Key: "csi/v2#0",
				Measure: func() (VolumeUsage, error) { return VolumeUsage{}, fmt.Errorf("driver d: %w", ErrUsageNotReported) }},
			{Volume: "failing", Claim: "failing-claim", Path: "/y", Key: "csi/v3#0",
				Measure: func() (VolumeUsage, error) { return VolumeUsage{}, errors.New("NodeGetVolumeStats failed: boom") }},
			{Volume: "inline", Path: "/z", Key: "csi/v4#0",
				Measure: func() (VolumeUsage, error) {
					return VolumeUsage{Capacity: 5000, Available: 1000, Used: 4000, Inodes: 10, InodesFree: 4, InodesUsed: 6}, nil
				}},
		}
	}
	base, err := newFixture(t).p.Summary(context.Background(), Full)
	if err != nil {
		t.Fatal(err)
	}
	ephBefore := *base.Pods[0].EphemeralStorage.UsedBytes
	f.p.fsInfo = func(string) (FsInfo, error) {
		t.Error("statfs of a volume its driver measures")
		return FsInfo{}, errors.New("no")
	}
	var inline string
	var eph uint64
	summary := func() []string {
		t.Helper()
		f.p.cache[Full] = cachedSummary{}
		s, err := f.p.Summary(context.Background(), Full)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, v := range s.Pods[0].VolumeStats {
			if v.PVCRef == nil {
				if v.Name == "inline" {
					inline = fmt.Sprintf("%d/%d/%d:%d/%d/%d", *v.CapacityBytes, *v.AvailableBytes, *v.UsedBytes, *v.Inodes, *v.InodesFree, *v.InodesUsed)
				}
				continue
			}
			got = append(got, fmt.Sprintf("%s:%s:%d/%d/%d:%d/%d/%d", v.Name, v.PVCRef.Name, *v.CapacityBytes, *v.AvailableBytes, *v.UsedBytes, *v.Inodes, *v.InodesFree, *v.InodesUsed))
		}
		eph = *s.Pods[0].EphemeralStorage.UsedBytes
		return got
	}
	if got := summary(); len(got) != 1 || got[0] != "csi:csi-claim:1073741824/700/300:0/0/0" {
		t.Fatalf("volume stats = %v", got)
	}
	// An inline CSI volume: the driver's numbers, no claim, and no
	// ephemeral storage.
	if inline != "5000/1000/4000:10/4/6" || eph != ephBefore {
		t.Errorf("inline volume %q, ephemeral storage %d (without the volumes %d)", inline, eph, ephBefore)
	}
	// Within the period: the cached answer, the driver is not asked again.
	if got := summary(); len(got) != 1 || asked.Load() != 1 {
		t.Fatalf("second summary %v, driver asked %d times", got, asked.Load())
	}
	scrape := func() float64 {
		t.Helper()
		r := metrics.NewKubeletRegistry(metrics.KubeletOptions{Volumes: f.p.VolumeStats})
		fam, err := metricstest.ScrapeHandler(compbase.HandlerFor(r, compbase.HandlerOpts{}), "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		if n := len(fam.Find("kubelet_volume_stats_capacity_bytes", nil)); n != 1 {
			t.Errorf("kubelet_volume_stats_capacity_bytes: %d series, want 1 (the volumes without stats are left out)", n)
		}
		if used := fam.Sum("kubelet_volume_stats_used_bytes", map[string]string{"persistentvolumeclaim": "csi-claim"}); used != 300 {
			t.Errorf("used bytes %v", used)
		}
		return fam.Sum("kubelet_volume_stats_capacity_bytes", map[string]string{"namespace": "ns", "persistentvolumeclaim": "csi-claim"})
	}
	if c := scrape(); c != 1<<30 {
		t.Errorf("capacity metric %v", c)
	}
	// The volume grew: a new key is measured at once.
	capacity.Store(2 << 30)
	key.Store("csi/v1#1")
	if got := summary(); len(got) != 1 || got[0] != "csi:csi-claim:2147483648/700/300:0/0/0" {
		t.Fatalf("after growth: %v", got)
	}
	if c := scrape(); c != 2<<30 {
		t.Errorf("capacity metric after growth %v", c)
	}
}
