package stats

import (
	"context"
	"errors"
	"fmt"
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
	base, err := f.p.Summary(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	ephBefore := *base.Pods[0].EphemeralStorage.UsedBytes
	f = newFixture(t)
	withClaims(f)
	s, err := f.p.Summary(context.Background(), false)
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
