package kubelet

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/config/kubeletconfig"
	"github.com/gokubelet/kubelet/pkg/node/machineinfo"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// fakeStatus is an in-memory StatusManager.
type fakeStatus map[types.UID]v1.PodStatus

func (f fakeStatus) SetPodStatus(p *v1.Pod, st v1.PodStatus) { f[p.UID] = st }
func (f fakeStatus) GetPodStatus(uid types.UID) (v1.PodStatus, bool) {
	st, ok := f[uid]
	return st, ok
}
func (f fakeStatus) RemovePod(uid types.UID)            { delete(f, uid) }
func (f fakeStatus) RemoveOrphans(func(types.UID) bool) {}
func (f fakeStatus) Sync(types.UID)                     {}

func TestReasonCacheKeepsOnlyCurrentReasons(t *testing.T) {
	var r reasonCache
	r.update("u", map[string]container.WaitingReason{"a": {Reason: "CrashLoopBackOff"}, "b": {Reason: "ErrImagePull"}})
	// b started this time: its old reason must go; a is untouched.
	r.update("u", map[string]container.WaitingReason{"b": {}})
	got := r.get("u")
	if len(got) != 1 || got["a"].Reason != "CrashLoopBackOff" {
		t.Fatalf("reasons = %v", got)
	}
	got["a"] = container.WaitingReason{}
	if r.get("u")["a"].Reason != "CrashLoopBackOff" {
		t.Fatalf("get returned the cache's own map")
	}
	r.remove("u")
	if len(r.get("u")) != 0 {
		t.Fatalf("remove kept reasons")
	}
}

func TestActiveDeadline(t *testing.T) {
	start := time.Unix(1000, 0)
	clk := clocktesting.NewFakeClock(start)
	k := &Kubelet{clock: clk, status: fakeStatus{}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}, Spec: v1.PodSpec{ActiveDeadlineSeconds: ptr.To[int64](30)}}
	st := v1.PodStatus{Phase: v1.PodRunning, StartTime: &metav1.Time{Time: start}}
	k.status.SetPodStatus(pod, st)

	tests := []struct {
		name      string
		elapsed   time.Duration
		retry     time.Duration
		exceeded  bool
		wantRetry time.Duration
	}{
		{"well within", 10 * time.Second, 0, false, 20 * time.Second},
		{"back-off ends before the deadline", 10 * time.Second, 5 * time.Second, false, 5 * time.Second},
		{"deadline before the back-off ends", 25 * time.Second, 60 * time.Second, false, 5 * time.Second},
		{"just past", 31 * time.Second, 0, true, time.Millisecond},
	}
	for _, tt := range tests {
		clk.SetTime(start.Add(tt.elapsed))
		reason, _, ok := k.activeDeadlineExceeded(pod, st)
		if ok != tt.exceeded || (ok && reason != "DeadlineExceeded") {
			t.Errorf("%s: exceeded=%v reason=%q", tt.name, ok, reason)
		}
		if got := k.deadlineRetry(pod, tt.retry); got != tt.wantRetry {
			t.Errorf("%s: retry = %v, want %v", tt.name, got, tt.wantRetry)
		}
	}
	// No deadline: the runtime's retry stands; a terminal pod never exceeds.
	noDeadline := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}}
	if got := k.deadlineRetry(noDeadline, 7*time.Second); got != 7*time.Second {
		t.Errorf("retry without deadline = %v", got)
	}
	if _, _, ok := k.activeDeadlineExceeded(pod, v1.PodStatus{Phase: v1.PodSucceeded, StartTime: st.StartTime}); ok {
		t.Errorf("a terminal pod exceeded its deadline")
	}
}

func TestHostIPs(t *testing.T) {
	m := machineinfo.Info{}
	if got := hostIPs(&kubeletconfig.Settings{NodeIPs: []string{"10.0.0.1"}}, m); len(got) != 1 || got[0] != "10.0.0.1" {
		t.Errorf("--node-ip not used: %v", got)
	}
	if got := hostIPs(&kubeletconfig.Settings{}, m); got != nil {
		t.Errorf("no IP known, got %v", got)
	}
}
