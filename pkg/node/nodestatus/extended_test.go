package nodestatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SetStatus keeps extended resources someone else advertised on the Node,
// drops what the kubelet owns and no longer reports, and lays the device
// plugins' capacity and allocatable over the machine's.
func TestSetStatusExtendedResources(t *testing.T) {
	q := resource.MustParse
	node := &v1.Node{Status: v1.NodeStatus{
		Capacity: v1.ResourceList{
			v1.ResourceCPU:                 q("8"),
			"example.com/dongle":           q("4"), // an administrator's
			"hugepages-1Gi":                q("1Gi"),
			"example.com/device":           q("9"), // the device plugin's, now 2
			"requests.example.com/invalid": q("1"),
		},
	}}
	facts := Facts{
		Capacity: v1.ResourceList{v1.ResourceCPU: q("8"), v1.ResourceMemory: q("1Gi"), v1.ResourcePods: q("110")},
		Devices: DeviceResources{
			Capacity:    v1.ResourceList{"example.com/device": q("2")},
			Allocatable: v1.ResourceList{"example.com/device": q("1")},
		},
	}
	SetStatus(node, &Config{}, facts, metav1.Now())
	c, a := node.Status.Capacity, node.Status.Allocatable
	check := func(list v1.ResourceList, name v1.ResourceName, want string) {
		t.Helper()
		got, ok := list[name]
		if want == "" {
			if ok {
				t.Errorf("%s = %s, want it gone", name, got.String())
			}
			return
		}
		if !ok || got.Cmp(q(want)) != 0 {
			t.Errorf("%s = %s (present %v), want %s", name, got.String(), ok, want)
		}
	}
	check(c, "example.com/dongle", "4")
	check(a, "example.com/dongle", "4")
	check(c, "example.com/device", "2")
	check(a, "example.com/device", "1")
	check(c, "hugepages-1Gi", "") // native: the machine's facts own it
	check(c, "requests.example.com/invalid", "")
	check(c, v1.ResourceCPU, "8")
	if _, ok := facts.Capacity["example.com/dongle"]; ok {
		t.Error("SetStatus wrote into the facts' map")
	}
}
