package admission

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

func withResources(req, lim v1.ResourceList) *v1.Pod {
	return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}}}}
}

func TestInputRefusesWhatCannotBeUsed(t *testing.T) {
	q := resource.MustParse
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		reason string // "" admits
		msg    string
	}{
		{name: "ordinary", pod: withResources(v1.ResourceList{"cpu": q("500m"), "memory": q("1Gi")}, v1.ResourceList{"cpu": q("64"), "memory": q("1Ti")})},
		{name: "at the bounds", pod: withResources(nil, v1.ResourceList{"cpu": MaxCPU, "memory": MaxBytes})},
		{name: "cpu 1e18 (attack: overflows the CFS quota)", pod: withResources(nil, v1.ResourceList{"cpu": q("1e18")}), reason: ReasonQuantityTooLarge, msg: `container "c": limits cpu is 1e18, more than a cgroup can hold`},
		{name: "memory 1e30 (attack: overflows int64)", pod: withResources(v1.ResourceList{"memory": q("1e30")}, nil), reason: ReasonQuantityTooLarge, msg: `container "c": requests memory is 1e30`},
		{name: "hugepages beyond", pod: withResources(nil, v1.ResourceList{"hugepages-2Mi": q("16Ei")}), reason: ReasonQuantityTooLarge},
		{name: "negative", pod: withResources(v1.ResourceList{"memory": q("-1")}, nil), reason: ReasonQuantityTooLarge, msg: "cannot be negative"},
		{name: "init container", pod: &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "i", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{"cpu": q("2M")}}}}}}, reason: ReasonQuantityTooLarge, msg: `init container "i"`},
		{name: "ephemeral container", pod: &v1.Pod{Spec: v1.PodSpec{EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "e", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{"memory": q("1e20")}}}}}}}, reason: ReasonQuantityTooLarge},
		{name: "pod-level resources", pod: &v1.Pod{Spec: v1.PodSpec{Resources: &v1.ResourceRequirements{Limits: v1.ResourceList{"memory": q("1e30")}}}}, reason: ReasonQuantityTooLarge, msg: "pod: limits memory"},
		{name: "overhead", pod: &v1.Pod{Spec: v1.PodSpec{Overhead: v1.ResourceList{"cpu": q("1e9")}}}, reason: ReasonQuantityTooLarge, msg: "pod: overhead cpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.pod.UID = "uid-1"
			res := Input(tc.pod)
			if tc.reason == "" {
				if !res.Admit {
					t.Fatalf("refused: %+v", res)
				}
				return
			}
			if res.Admit || res.Reason != tc.reason || !strings.Contains(res.Message, tc.msg) {
				t.Errorf("got %+v, want reason %s and a message with %q", res, tc.reason, tc.msg)
			}
		})
	}
	res := Input(&v1.Pod{})
	if res.Admit || res.Reason != ReasonInvalidUID {
		t.Errorf("pod without a UID: %+v", res)
	}
	res = Input(withUID("../../victim"))
	if res.Admit || res.Reason != ReasonInvalidUID || !strings.Contains(res.Message, "../../victim") {
		t.Errorf("uid ../../victim: %+v", res)
	}
}

func withUID(uid string) *v1.Pod {
	p := withResources(nil, nil)
	p.UID = types.UID(uid)
	return p
}
