package statuswriter

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func testPod(uid types.UID, name string, policy v1.RestartPolicy) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid},
		Spec: v1.PodSpec{
			RestartPolicy: policy,
			Containers:    []v1.Container{{Name: "a", Image: "img"}},
		},
	}
}

func statusOf(phase v1.PodPhase, ready v1.ConditionStatus) v1.PodStatus {
	return v1.PodStatus{
		Phase: phase,
		Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: ready},
			{Type: v1.PodScheduled, Status: v1.ConditionTrue},
		},
	}
}

func clockAt(t *time.Time) func() time.Time { return func() time.Time { return *t } }

func TestStandaloneCache(t *testing.T) {
	now := t0
	m := NewManager(Options{Now: clockAt(&now)})
	pod := testPod("u1", "p", v1.RestartPolicyAlways)

	if _, ok := m.GetPodStatus("u1"); ok {
		t.Fatal("empty cache returned a status")
	}
	m.SetPodStatus(pod, statusOf(v1.PodRunning, v1.ConditionFalse))
	st, ok := m.GetPodStatus("u1")
	if !ok || st.Phase != v1.PodRunning {
		t.Fatalf("got %v %v", st.Phase, ok)
	}
	if st.StartTime == nil || !st.StartTime.Time.Equal(t0) {
		t.Errorf("start time %v", st.StartTime)
	}
	if c := podspec.FindCondition(st.Conditions, v1.PodReady); !c.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("ready transition %v", c.LastTransitionTime)
	}

	// Ready flips: only its transition time moves; the start time stays.
	now = t0.Add(time.Minute)
	m.SetPodStatus(pod, statusOf(v1.PodRunning, v1.ConditionTrue))
	st, _ = m.GetPodStatus("u1")
	if c := podspec.FindCondition(st.Conditions, v1.PodReady); !c.LastTransitionTime.Time.Equal(now) {
		t.Errorf("ready transition %v, want %v", c.LastTransitionTime, now)
	}
	if c := podspec.FindCondition(st.Conditions, v1.PodScheduled); !c.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("scheduled transition moved: %v", c.LastTransitionTime)
	}
	if !st.StartTime.Time.Equal(t0) {
		t.Errorf("start time moved: %v", st.StartTime)
	}

	// Returned copies do not alias the cache.
	st.Conditions[0].Status = "Bogus"
	st2, _ := m.GetPodStatus("u1")
	if st2.Conditions[0].Status == "Bogus" {
		t.Error("GetPodStatus returned an alias")
	}
}

func TestTerminalPhaseIsSticky(t *testing.T) {
	m := NewManager(Options{Now: clockAt(&t0)})
	pod := testPod("u1", "p", v1.RestartPolicyAlways)
	failed := statusOf(v1.PodFailed, v1.ConditionFalse)
	failed.Reason = "Evicted"
	m.SetPodStatus(pod, failed)
	m.SetPodStatus(pod, statusOf(v1.PodRunning, v1.ConditionTrue))
	st, _ := m.GetPodStatus("u1")
	if st.Phase != v1.PodFailed || st.Reason != "Evicted" {
		t.Errorf("phase %s reason %q", st.Phase, st.Reason)
	}
	if c := podspec.FindCondition(st.Conditions, v1.PodReady); c.Status != v1.ConditionTrue {
		t.Errorf("the rest of the update must still apply: %+v", c)
	}

	// A terminal phase in the API's copy counts too.
	api := testPod("u2", "q", v1.RestartPolicyAlways)
	api.Status.Phase = v1.PodSucceeded
	m.SetPodStatus(api, statusOf(v1.PodRunning, v1.ConditionTrue))
	if st, _ := m.GetPodStatus("u2"); st.Phase != v1.PodSucceeded {
		t.Errorf("left API terminal phase: %s", st.Phase)
	}
}

func TestIllegalContainerTransitionRefused(t *testing.T) {
	terminated := v1.ContainerStatus{Name: "a", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}}
	failed := v1.ContainerStatus{Name: "a", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}}
	running := v1.ContainerStatus{Name: "a", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
	tests := []struct {
		name    string
		policy  v1.RestartPolicy
		from    v1.ContainerStatus
		refused bool
	}{
		{"Never", v1.RestartPolicyNever, failed, true},
		{"OnFailure after success", v1.RestartPolicyOnFailure, terminated, true},
		{"OnFailure after failure", v1.RestartPolicyOnFailure, failed, false},
		{"Always", v1.RestartPolicyAlways, terminated, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewManager(Options{Now: clockAt(&t0)})
			pod := testPod("u1", "p", tc.policy)
			first := statusOf(v1.PodRunning, v1.ConditionFalse)
			first.ContainerStatuses = []v1.ContainerStatus{tc.from}
			m.SetPodStatus(pod, first)
			next := statusOf(v1.PodRunning, v1.ConditionTrue)
			next.ContainerStatuses = []v1.ContainerStatus{running}
			m.SetPodStatus(pod, next)
			st, _ := m.GetPodStatus("u1")
			if refused := st.ContainerStatuses[0].State.Running == nil; refused != tc.refused {
				t.Errorf("refused = %v, want %v", refused, tc.refused)
			}
		})
	}
}

func TestRemovePodAndOrphans(t *testing.T) {
	m := NewManager(Options{Now: clockAt(&t0)})
	for _, uid := range []types.UID{"a", "b", "c"} {
		m.SetPodStatus(testPod(uid, string(uid), v1.RestartPolicyAlways), statusOf(v1.PodPending, v1.ConditionFalse))
	}
	m.RemovePod("a")
	if _, ok := m.GetPodStatus("a"); ok {
		t.Error("RemovePod kept the pod")
	}
	m.RemoveOrphans(func(uid types.UID) bool { return uid == "b" })
	if _, ok := m.GetPodStatus("b"); !ok {
		t.Error("RemoveOrphans removed a kept pod")
	}
	if _, ok := m.GetPodStatus("c"); ok {
		t.Error("RemoveOrphans kept an orphan")
	}
}

func TestNormalizedTimesCompareEqual(t *testing.T) {
	m := NewManager(Options{Now: clockAt(&t0)})
	pod := testPod("u1", "p", v1.RestartPolicyAlways)
	st := statusOf(v1.PodRunning, v1.ConditionTrue)
	st.ContainerStatuses = []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(123 * time.Millisecond))}}}}
	m.SetPodStatus(pod, st)
	got, _ := m.GetPodStatus("u1")
	if !got.ContainerStatuses[0].State.Running.StartedAt.Time.Equal(t0) {
		t.Errorf("times must be kept at second precision: %v", got.ContainerStatuses[0].State.Running.StartedAt)
	}
}

func TestTransitionTimeBumpedOnChangeEvenIfCallerCopiedOldTime(t *testing.T) {
	now := t0
	m := NewManager(Options{Now: clockAt(&now)})
	pod := testPod("u1", "p", v1.RestartPolicyAlways)
	m.SetPodStatus(pod, statusOf(v1.PodRunning, v1.ConditionFalse))
	st, _ := m.GetPodStatus("u1")

	now = t0.Add(time.Hour)
	st.Conditions[0].Status = v1.ConditionTrue // LastTransitionTime still t0
	m.SetPodStatus(pod, st)
	got, _ := m.GetPodStatus("u1")
	if c := podspec.FindCondition(got.Conditions, v1.PodReady); !c.LastTransitionTime.Time.Equal(now) {
		t.Errorf("transition time %v, want %v", c.LastTransitionTime, now)
	}
}
