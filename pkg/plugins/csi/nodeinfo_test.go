package csi

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestWithDriverNodeID(t *testing.T) {
	for _, tc := range []struct {
		name, value, driver, nodeID string
		want                        string
		changed                     bool
	}{
		{"first driver", "", "a.csi", "n1", `{"a.csi":"n1"}`, true},
		{"second driver, keys sorted", `{"b.csi":"x"}`, "a.csi", "n1", `{"a.csi":"n1","b.csi":"x"}`, true},
		{"unchanged", `{"a.csi":"n1"}`, "a.csi", "n1", `{"a.csi":"n1"}`, false},
		{"new node ID", `{"a.csi":"n0"}`, "a.csi", "n1", `{"a.csi":"n1"}`, true},
		{"removed, others stay", `{"a.csi":"n1","b.csi":"x"}`, "a.csi", "", `{"b.csi":"x"}`, true},
		{"removed, last", `{"a.csi":"n1"}`, "a.csi", "", "", true},
		{"removing an absent one", `{"b.csi":"x"}`, "a.csi", "", `{"b.csi":"x"}`, false},
		{"garbage is replaced", `not json`, "a.csi", "n1", `{"a.csi":"n1"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed, err := withDriverNodeID(tc.value, tc.driver, tc.nodeID)
			if err != nil || got != tc.want || changed != tc.changed {
				t.Errorf("= %q %v %v, want %q %v", got, changed, err, tc.want, tc.changed)
			}
		})
	}
}

func TestApplyDriverToNode(t *testing.T) {
	node := func(labels, ann map[string]string) *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels, Annotations: ann}}
	}
	for _, tc := range []struct {
		name     string
		node     *v1.Node
		info     *NodeInfo
		previous map[string]string
		owned    map[string]bool
		want     *v1.Node
		changed  bool
		err      string
	}{
		{name: "register: annotation and topology labels",
			node:    node(map[string]string{"kubernetes.io/hostname": "n"}, nil),
			info:    &NodeInfo{NodeID: "id-1", Topology: map[string]string{"topology.a.csi/zone": "z1"}},
			want:    node(map[string]string{"kubernetes.io/hostname": "n", "topology.a.csi/zone": "z1"}, map[string]string{AnnotationNodeID: `{"a.csi":"id-1"}`}),
			changed: true},
		{name: "registered again with the same facts: nothing to write",
			node: node(map[string]string{"topology.a.csi/zone": "z1"}, map[string]string{AnnotationNodeID: `{"a.csi":"id-1"}`}),
			info: &NodeInfo{NodeID: "id-1", Topology: map[string]string{"topology.a.csi/zone": "z1"}}, previous: map[string]string{"topology.a.csi/zone": "z1"},
			want: node(map[string]string{"topology.a.csi/zone": "z1"}, map[string]string{AnnotationNodeID: `{"a.csi":"id-1"}`})},
		{name: "a label the driver no longer states goes",
			node: node(map[string]string{"topology.a.csi/zone": "z1", "topology.a.csi/rack": "r"}, map[string]string{AnnotationNodeID: `{"a.csi":"id-1"}`}),
			info: &NodeInfo{NodeID: "id-1", Topology: map[string]string{"topology.a.csi/zone": "z1"}}, previous: map[string]string{"topology.a.csi/zone": "z1", "topology.a.csi/rack": "r"},
			want: node(map[string]string{"topology.a.csi/zone": "z1"}, map[string]string{AnnotationNodeID: `{"a.csi":"id-1"}`}), changed: true},
		{name: "deregister: its annotation entry and labels go, another driver's stay",
			node:     node(map[string]string{"topology.a.csi/zone": "z1", "shared/zone": "z"}, map[string]string{AnnotationNodeID: `{"a.csi":"id-1","b.csi":"id-2"}`}),
			previous: map[string]string{"topology.a.csi/zone": "z1", "shared/zone": "z"}, owned: map[string]bool{"shared/zone": true},
			want: node(map[string]string{"shared/zone": "z"}, map[string]string{AnnotationNodeID: `{"b.csi":"id-2"}`}), changed: true},
		{name: "deregister the last: the annotation goes",
			node: node(nil, map[string]string{AnnotationNodeID: `{"a.csi":"id-1"}`, "other": "x"}),
			want: node(nil, map[string]string{"other": "x"}), changed: true},
		{name: "a topology label that disagrees with the node's is refused",
			node: node(map[string]string{"topology.kubernetes.io/zone": "z9"}, nil),
			info: &NodeInfo{NodeID: "id-1", Topology: map[string]string{"topology.kubernetes.io/zone": "z1"}},
			err:  "conflicts with the node's topology.kubernetes.io/zone=z9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.node.DeepCopy()
			changed, err := applyDriverToNode(n, "a.csi", tc.info, tc.previous, tc.owned)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				if !reflect.DeepEqual(n, tc.node) {
					t.Errorf("a refused change changed the node: %+v", n.ObjectMeta)
				}
				return
			}
			if err != nil || changed != tc.changed || !reflect.DeepEqual(n.Labels, tc.want.Labels) || !reflect.DeepEqual(n.Annotations, tc.want.Annotations) {
				t.Errorf("= %v %v, labels %v annotations %v; want %v, labels %v annotations %v", changed, err, n.Labels, n.Annotations, tc.changed, tc.want.Labels, tc.want.Annotations)
			}
		})
	}
}

func TestApplyDriverToCSINode(t *testing.T) {
	cn := &storagev1.CSINode{Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "b.csi", NodeID: "x"}}}}
	info := &NodeInfo{NodeID: "id-1", MaxVolumes: 16, Topology: map[string]string{"z": "1", "a": "2"}}
	if !applyDriverToCSINode(cn, "a.csi", info) {
		t.Fatal("adding a driver changed nothing")
	}
	want := storagev1.CSINodeDriver{Name: "a.csi", NodeID: "id-1", TopologyKeys: []string{"a", "z"}, Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](16)}}
	if len(cn.Spec.Drivers) != 2 || !reflect.DeepEqual(cn.Spec.Drivers[1], want) {
		t.Fatalf("drivers = %+v", cn.Spec.Drivers)
	}
	if applyDriverToCSINode(cn, "a.csi", info) {
		t.Error("the same facts again changed the CSINode")
	}
	if !applyDriverToCSINode(cn, "a.csi", &NodeInfo{NodeID: "id-1"}) || cn.Spec.Drivers[1].Allocatable != nil || cn.Spec.Drivers[1].TopologyKeys != nil {
		t.Errorf("no limit and no topology: %+v", cn.Spec.Drivers[1])
	}
	if !applyDriverToCSINode(cn, "a.csi", nil) || len(cn.Spec.Drivers) != 1 || cn.Spec.Drivers[0].Name != "b.csi" {
		t.Errorf("removed: %+v", cn.Spec.Drivers)
	}
	if applyDriverToCSINode(cn, "a.csi", nil) {
		t.Error("removing an absent driver changed the CSINode")
	}
}

func TestHighestVersion(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"1.0.0"}, "1.0.0"},
		{[]string{"0.3.0", "1.2.0", "1.10.1", "v1.9"}, "1.10.1"},
		{[]string{"2.0.0", "1.0"}, "1.0"},
		{[]string{"0.3.0", "x"}, ""},
		{nil, ""},
	} {
		got, err := highestVersion(tc.in)
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("highestVersion(%v) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
