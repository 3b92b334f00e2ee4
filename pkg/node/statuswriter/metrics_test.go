package statuswriter

import (
	"errors"
	"math"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/metrics/metricstest"
)

// TestStatusSyncDuration: kubelet_pod_status_sync_duration_seconds runs
// from the first change a write carries to the write's success, across
// coalesced changes, a pod with no API object yet and a failed write.
func TestStatusSyncDuration(t *testing.T) {
	reg := metrics.NewKubeletRegistry(metrics.KubeletOptions{})
	read := func() (uint64, float64) {
		return metricstest.ScrapeRegistry(t, reg).Observed("kubelet_pod_status_sync_duration_seconds", nil)
	}
	observed := func(what string, count0 uint64, sum0 float64, want time.Duration) {
		t.Helper()
		count, sum := read()
		if count != count0+1 || math.Abs(sum-sum0-want.Seconds()) > 1e-9 {
			t.Errorf("%s: %d observations of %vs in all, want 1 of %v", what, count-count0, sum-sum0, want)
		}
	}
	notObserved := func(what string, count0 uint64) {
		t.Helper()
		if count, _ := read(); count != count0 {
			t.Errorf("%s: %d observations, want none", what, count-count0)
		}
	}

	pod := testPod("u1", "p", v1.RestartPolicyAlways)
	c := fake.NewSimpleClientset(pod)
	r := newFakeResolver(c)
	now := t0
	m := NewManager(Options{Client: c, Resolver: r, Now: clockAt(&now), ReconcilePeriod: time.Hour, RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond})

	// A change while the pod has no API object to write to, another two
	// seconds later, then the object: one write, three seconds after the
	// first change.
	count0, sum0 := read()
	m.SetPodStatus(pod, statusOf(v1.PodPending, v1.ConditionFalse))
	drain(t, m)
	notObserved("no API object", count0)
	now = now.Add(2 * time.Second)
	m.SetPodStatus(pod, statusOf(v1.PodRunning, v1.ConditionFalse))
	now = now.Add(time.Second)
	r.set(func(r *fakeResolver) { r.targets["u1"] = types.NamespacedName{Namespace: "ns", Name: "p"} })
	m.Sync("u1")
	holds(t, m, "a patch", func() bool { return len(actionsOf(c, "patch")) == 1 })
	observed("coalesced changes", count0, sum0, 3*time.Second)

	// An unchanged status is not a change.
	count0, _ = read()
	m.SetPodStatus(pod, statusOf(v1.PodRunning, v1.ConditionFalse))
	drain(t, m)
	notObserved("unchanged status", count0)

	// A failed write keeps the change's time for the retry.
	failed := false
	c.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if !failed {
			failed = true
			return true, nil, errors.New("etcd unavailable")
		}
		return false, nil, nil
	})
	count0, sum0 = read()
	m.SetPodStatus(pod, statusOf(v1.PodRunning, v1.ConditionTrue))
	now = now.Add(500 * time.Millisecond)
	holds(t, m, "a second patch", func() bool { return failed && len(actionsOf(c, "patch")) == 3 })
	observed("a retried write", count0, sum0, 500*time.Millisecond)
}
