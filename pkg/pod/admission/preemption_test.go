package admission

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// guaranteed sets requests and equal limits.
func guaranteed(kv ...string) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Requests = list(kv...)
		p.Spec.Containers[0].Resources.Limits = list(kv...)
	}
}

func TestPreemption(t *testing.T) {
	critical := mkPod("crit", req("cpu", "1"), priority(2000001000))
	cpu := func(m int64) []Shortage { return []Shortage{{Resource: v1.ResourceCPU, Amount: m}} }
	for _, tc := range []struct {
		name  string
		pods  []*v1.Pod
		short []Shortage
		want  string // the chosen pods' UIDs, in order, or the error's start
	}{
		{"a best-effort pod goes before the others, for the pod count",
			[]*v1.Pod{mkPod("g", guaranteed("cpu", "1", "memory", "1Gi")), mkPod("be"), mkPod("bu", req("cpu", "100m"))},
			[]Shortage{{Resource: v1.ResourcePods, Amount: 1}}, "be"},
		{"a burstable pod that covers it all before guaranteed ones",
			[]*v1.Pod{mkPod("g", guaranteed("cpu", "2", "memory", "1Gi")), mkPod("bu", req("cpu", "700m"))},
			cpu(600), "bu"},
		{"within a class, the one pod that covers it before two that would",
			[]*v1.Pod{mkPod("s1", req("cpu", "300m")), mkPod("s2", req("cpu", "300m")), mkPod("big", req("cpu", "1"))},
			cpu(600), "big"},
		{"closest first, then what is left",
			[]*v1.Pod{mkPod("s1", req("cpu", "200m")), mkPod("m", req("cpu", "500m"))},
			cpu(600), "m s1"},
		{"guaranteed pods only for what the others cannot cover",
			[]*v1.Pod{mkPod("be"), mkPod("bu", req("cpu", "300m")), mkPod("g", guaranteed("cpu", "800m", "memory", "1Gi"))},
			cpu(1000), "bu g"},
		{"on a tie, the smaller memory request",
			[]*v1.Pod{mkPod("large", req("cpu", "1", "memory", "2Gi")), mkPod("small", req("cpu", "1", "memory", "1Gi"))},
			cpu(600), "small"},
		{"critical pods and the preemptor itself are never chosen",
			[]*v1.Pod{critical, mkPod("static", req("cpu", "2"), annotate(podspec.ConfigSourceAnnotation, podspec.SourceFile)),
				mkPod("same-priority", req("cpu", "2"), priority(2000001000)), mkPod("bu", req("cpu", "100m"))},
			cpu(600), "no set of running pods found to reclaim resources: [cpu: 500]"},
		{"a critical pod of lower priority can be chosen",
			[]*v1.Pod{mkPod("cluster-critical", req("cpu", "2"), priority(2000000000))},
			cpu(600), "cluster-critical"},
		{"nothing to preempt",
			nil, cpu(1), "no set of running pods found to reclaim resources: [cpu: 1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Preemption(critical, tc.pods, tc.short)
			var s string
			if err != nil {
				s = err.Error()
			} else {
				uids := make([]string, len(got))
				for i, p := range got {
					uids[i] = string(p.UID)
				}
				s = strings.Join(uids, " ")
			}
			if s != tc.want {
				t.Errorf("Preemption = %q, want %q", s, tc.want)
			}
		})
	}

	// A pod that is not critical preempts only pods of lower priority.
	mid := mkPod("mid", req("cpu", "1"), priority(100))
	got, err := Preemption(mid, []*v1.Pod{mkPod("low", req("cpu", "1"), priority(10)), mkPod("high", req("cpu", "1"), priority(1000)), mkPod("none", req("cpu", "1"))}, cpu(500))
	if err != nil || len(got) != 1 || got[0].UID != "low" {
		t.Errorf("priority 100 preempts %v, %v; want the priority 10 pod", got, err)
	}
}
