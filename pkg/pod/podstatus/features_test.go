package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gokubelet/kubelet/pkg/config/features"
)

// PodReadyToStartContainersCondition off: the kubelet sets no such
// condition (and drops one it set before, as it owns the type); on, it
// does.
func TestPodReadyToStartContainersConditionGate(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "i"}}},
		Status:     v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.PodReadyToStartContainers, Status: v1.ConditionTrue}}},
	}
	for _, tc := range []struct {
		gates features.Gates
		want  bool
	}{
		{features.Gates{}, true},
		{features.Gates{}.With(features.PodReadyToStartContainersCondition, false), false},
	} {
		st := Compute(pod, nil, nil, nil, Options{Features: tc.gates})
		got := false
		for _, c := range st.Conditions {
			if c.Type == v1.PodReadyToStartContainers {
				got = true
			}
		}
		if got != tc.want {
			t.Errorf("gate %v: condition present %v, want %v (%v)", tc.gates.Enabled(features.PodReadyToStartContainersCondition), got, tc.want, st.Conditions)
		}
	}
}
