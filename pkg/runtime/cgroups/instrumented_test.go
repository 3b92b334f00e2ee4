package cgroups

import (
	"testing"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/metrics/metricstest"
)

// TestInstrumentedDriver: each write of the driver is timed once under
// upstream's operation name, a failed one too; reads are not.
func TestInstrumentedDriver(t *testing.T) {
	reg := metrics.NewKubeletRegistry(metrics.KubeletOptions{})
	counts := func() map[string]uint64 {
		f := metricstest.ScrapeRegistry(t, reg)
		out := map[string]uint64{}
		for _, op := range []string{"create", "update", "destroy"} {
			out[op], _ = f.Observed("kubelet_cgroup_manager_duration_seconds", map[string]string{"operation_type": op})
		}
		return out
	}
	before := counts()
	d := Instrumented(NewCgroupfs(fakeV1(t)))
	n := Name{"gk", "kubepods", "podu1"}
	shares := uint64(512)
	if err := d.Ensure(n, &Resources{CPUShares: &shares}); err != nil {
		t.Fatal(err)
	}
	if !d.Exists(n) || len(d.Children(Name{"gk", "kubepods"})) != 1 {
		t.Fatal("the cgroup was not created through the wrapper")
	}
	if err := d.Set(n, &Resources{CPUShares: &shares}); err != nil {
		t.Fatal(err)
	}
	// (A cgroup with files cannot be removed from this fake hierarchy,
	// which is a plain directory tree: a missing one is removed instead.)
	gone := Name{"gk", "kubepods", "podu2"}
	if err := d.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if err := d.Set(gone, &Resources{CPUShares: &shares}); err == nil {
		t.Fatal("Set on a missing cgroup succeeded")
	}
	after := counts()
	for op, want := range map[string]uint64{"create": 1, "update": 2, "destroy": 1} {
		if got := after[op] - before[op]; got != want {
			t.Errorf("%s timed %d times, want %d", op, got, want)
		}
	}
}
