package nodestatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gokubelet/kubelet/pkg/node/machineinfo"
)

func TestHugePagesResource(t *testing.T) {
	for size, want := range map[int64]v1.ResourceName{
		64 << 10: "hugepages-64Ki",
		2 << 20:  "hugepages-2Mi",
		32 << 20: "hugepages-32Mi",
		1 << 30:  "hugepages-1Gi",
		16 << 30: "hugepages-16Gi",
	} {
		if got := HugePagesResource(size); got != want {
			t.Errorf("HugePagesResource(%d) = %s, want %s", size, got, want)
		}
	}
}

func TestCapacityHasEverySupportedHugePageSize(t *testing.T) {
	cfg := &Config{MaxPods: 110}
	c := Capacity(cfg, machineinfo.Info{NumCPU: 2, MemoryCapacityBytes: 8 * gib, HugePages: []machineinfo.HugePages{
		{PageSizeBytes: 2 << 20, Pages: 512}, {PageSizeBytes: 1 << 30, Pages: 0},
	}})
	for name, want := range map[v1.ResourceName]string{"hugepages-2Mi": "1Gi", "hugepages-1Gi": "0", "memory": "8Gi"} {
		q, ok := c[name]
		if !ok || q.String() != want {
			t.Errorf("capacity[%s] = %v (present %v), want %s", name, q.String(), ok, want)
		}
	}
	if _, ok := Capacity(cfg, machineinfo.Info{NumCPU: 2, MemoryCapacityBytes: gib})["hugepages-2Mi"]; ok {
		t.Error("a kernel without huge pages must report no hugepages resource")
	}
}

func TestAllocatableHugePages(t *testing.T) {
	capacity := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("4"),
		v1.ResourceMemory: *resource.NewQuantity(8*gib, resource.BinarySI),
		"hugepages-2Mi":   *resource.NewQuantity(gib, resource.BinarySI),
		"hugepages-1Gi":   *resource.NewQuantity(2*gib, resource.BinarySI),
	}
	for _, tc := range []struct {
		name         string
		kube, system v1.ResourceList
		hard         map[string]string
		capacity     v1.ResourceList
		want         map[v1.ResourceName]string
	}{
		{
			name: "pools leave memory",
			want: map[v1.ResourceName]string{"memory": "5Gi", "hugepages-2Mi": "1Gi", "hugepages-1Gi": "2Gi", "cpu": "4"},
		},
		{
			name:   "reserved huge pages are not allocatable; memory loses the whole pool",
			kube:   v1.ResourceList{"hugepages-2Mi": resource.MustParse("256Mi"), "memory": resource.MustParse("1Gi")},
			system: v1.ResourceList{"hugepages-1Gi": resource.MustParse("1Gi")},
			hard:   map[string]string{"memory.available": "100Mi"},
			want:   map[v1.ResourceName]string{"memory": "3996Mi", "hugepages-2Mi": "768Mi", "hugepages-1Gi": "1Gi"},
		},
		{
			name: "empty pools change nothing",
			capacity: v1.ResourceList{
				v1.ResourceMemory: *resource.NewQuantity(8*gib, resource.BinarySI),
				"hugepages-2Mi":   *resource.NewQuantity(0, resource.BinarySI),
			},
			want: map[v1.ResourceName]string{"memory": "8Gi", "hugepages-2Mi": "0"},
		},
		{
			name: "memory never below zero",
			kube: v1.ResourceList{"memory": resource.MustParse("6Gi")},
			want: map[v1.ResourceName]string{"memory": "0", "hugepages-1Gi": "2Gi"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := capacity
			if tc.capacity != nil {
				c = tc.capacity
			}
			got := Allocatable(c, tc.kube, tc.system, mustThresholds(t, tc.hard))
			for name, want := range tc.want {
				q, ok := got[name]
				if !ok || q.String() != want {
					t.Errorf("allocatable[%s] = %s (present %v), want %s", name, q.String(), ok, want)
				}
			}
		})
	}
}
