package podspec

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func rl(pairs ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[v1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func withResources(req, lim v1.ResourceList) v1.Container {
	return v1.Container{Name: "c", Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}
}

func TestComputeQOSClass(t *testing.T) {
	tests := []struct {
		name   string
		init   []v1.Container
		apps   []v1.Container
		podRes *v1.ResourceRequirements
		expect v1.PodQOSClass
	}{
		{"nothing", nil, []v1.Container{withResources(nil, nil)}, nil, v1.PodQOSBestEffort},
		{"zero quantities", nil, []v1.Container{withResources(rl("cpu", "0"), nil)}, nil, v1.PodQOSBestEffort},
		{"other resources only", nil, []v1.Container{withResources(rl("ephemeral-storage", "1Gi"), nil)}, nil, v1.PodQOSBestEffort},
		{"requests only", nil, []v1.Container{withResources(rl("cpu", "100m"), nil)}, nil, v1.PodQOSBurstable},
		{"equal", nil, []v1.Container{withResources(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))}, nil, v1.PodQOSGuaranteed},
		{"limits only default requests", nil, []v1.Container{withResources(nil, rl("cpu", "1", "memory", "1Gi"))}, nil, v1.PodQOSGuaranteed},
		{"explicit lower request", nil, []v1.Container{withResources(rl("cpu", "500m", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))}, nil, v1.PodQOSBurstable},
		{"memory limit missing", nil, []v1.Container{withResources(rl("cpu", "1"), rl("cpu", "1"))}, nil, v1.PodQOSBurstable},
		{"one guaranteed one besteffort", nil, []v1.Container{
			withResources(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi")),
			withResources(nil, nil),
		}, nil, v1.PodQOSBurstable},
		{"init container counts", []v1.Container{withResources(rl("cpu", "1"), nil)},
			[]v1.Container{withResources(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))}, nil, v1.PodQOSBurstable},
		{"pod-level guaranteed", nil, []v1.Container{withResources(nil, nil)},
			&v1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "1Gi"), Limits: rl("cpu", "1", "memory", "1Gi")}, v1.PodQOSGuaranteed},
		{"pod-level burstable", nil, []v1.Container{withResources(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))},
			&v1.ResourceRequirements{Requests: rl("cpu", "1")}, v1.PodQOSBurstable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: tc.init, Containers: tc.apps, Resources: tc.podRes}}
			if got := ComputeQOSClass(pod); got != tc.expect {
				t.Errorf("ComputeQOSClass = %s, want %s", got, tc.expect)
			}
		})
	}
	pod := &v1.Pod{Status: v1.PodStatus{QOSClass: v1.PodQOSGuaranteed}}
	if got := QOSClass(pod); got != v1.PodQOSGuaranteed {
		t.Errorf("QOSClass must keep the status' class, got %s", got)
	}
}

func TestWithDefaultedRequests(t *testing.T) {
	lim := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")}
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a", Resources: v1.ResourceRequirements{
		Limits: lim, Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}}}}}}
	got := WithDefaultedRequests(pod)
	if got == pod {
		t.Fatal("a pod that needs defaulting came back unchanged")
	}
	r := got.Spec.Containers[0].Resources.Requests
	if r.Cpu().String() != "100m" || r.Memory().String() != "1Gi" {
		t.Errorf("requests %v: an explicit request must stay, a missing one must be the limit", r)
	}
	if _, ok := pod.Spec.Containers[0].Resources.Requests[v1.ResourceMemory]; ok {
		t.Error("the input pod was modified")
	}
	if WithDefaultedRequests(got) != got {
		t.Error("a defaulted pod was copied again")
	}
}
