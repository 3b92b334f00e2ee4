package csi

import (
	"encoding/json"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/utils/ptr"
)

// AnnotationNodeID is the Node annotation that maps each registered CSI
// driver to its node ID (a JSON object), as upstream writes it.
const AnnotationNodeID = "csi.volume.kubernetes.io/nodeid"

// NodeInfo is what a driver's NodeGetInfo says about this node.
type NodeInfo struct {
	NodeID string
	// MaxVolumes is the most volumes of the driver this node takes (0: no
	// limit stated).
	MaxVolumes int64
	// Topology is the node's accessible topology segments (labels).
	Topology map[string]string
}

// withDriverNodeID returns the annotation value with driver's node ID set
// (nodeID "" removes the driver), and whether it changed. A value that is
// not a JSON object is replaced (it was not written by a kubelet).
func withDriverNodeID(value, driver, nodeID string) (string, bool, error) {
	ids := map[string]string{}
	if value != "" {
		if err := json.Unmarshal([]byte(value), &ids); err != nil {
			ids = map[string]string{}
		}
	}
	if old, ok := ids[driver]; (nodeID == "" && !ok) || (nodeID != "" && ok && old == nodeID) {
		return value, false, nil
	}
	if nodeID == "" {
		delete(ids, driver)
	} else {
		ids[driver] = nodeID
	}
	if len(ids) == 0 {
		return "", true, nil
	}
	b, err := json.Marshal(ids) // sorted keys
	if err != nil {
		return "", false, err
	}
	return string(b), true, nil
}

// applyDriverToNode sets (info non-nil) or removes (info nil) a driver's
// node ID annotation and topology labels on node, in place, and reports
// whether anything changed. owned are the topology keys other registered
// drivers still use: removing a driver keeps those labels. A topology
// label already on the node with another value is an error, as upstream
// (two drivers, or the node's own labels, disagree about where it is).
func applyDriverToNode(node *v1.Node, driver string, info *NodeInfo, previous map[string]string, owned map[string]bool) (bool, error) {
	changed := false
	nodeID := ""
	if info != nil {
		nodeID = info.NodeID
		for k, v := range info.Topology {
			if cur, ok := node.Labels[k]; ok && cur != v {
				return false, fmt.Errorf("topology label %s=%s of driver %s conflicts with the node's %s=%s", k, v, driver, k, cur)
			}
		}
	}
	val, ch, err := withDriverNodeID(node.Annotations[AnnotationNodeID], driver, nodeID)
	if err != nil {
		return false, err
	}
	if ch {
		changed = true
		if val == "" {
			delete(node.Annotations, AnnotationNodeID)
		} else {
			if node.Annotations == nil {
				node.Annotations = map[string]string{}
			}
			node.Annotations[AnnotationNodeID] = val
		}
	}
	// Labels the driver set before and no longer states (or all of them
	// when it goes), unless another driver uses the key.
	for k := range previous {
		if info != nil {
			if _, still := info.Topology[k]; still {
				continue
			}
		}
		if owned[k] {
			continue
		}
		if _, ok := node.Labels[k]; ok {
			delete(node.Labels, k)
			changed = true
		}
	}
	if info != nil {
		for k, v := range info.Topology {
			if node.Labels[k] != v {
				if node.Labels == nil {
					node.Labels = map[string]string{}
				}
				node.Labels[k] = v
				changed = true
			}
		}
	}
	return changed, nil
}

// applyDriverToCSINode sets (info non-nil) or removes (info nil) a
// driver's entry in the CSINode's spec, in place, and reports whether
// anything changed.
func applyDriverToCSINode(cn *storagev1.CSINode, driver string, info *NodeInfo) bool {
	idx := -1
	for i := range cn.Spec.Drivers {
		if cn.Spec.Drivers[i].Name == driver {
			idx = i
			break
		}
	}
	if info == nil {
		if idx < 0 {
			return false
		}
		cn.Spec.Drivers = append(cn.Spec.Drivers[:idx], cn.Spec.Drivers[idx+1:]...)
		return true
	}
	want := storagev1.CSINodeDriver{Name: driver, NodeID: info.NodeID, TopologyKeys: topologyKeys(info.Topology)}
	if info.MaxVolumes > 0 {
		want.Allocatable = &storagev1.VolumeNodeResources{Count: ptr.To(int32(min(info.MaxVolumes, int64(^uint32(0)>>1))))}
	}
	if idx < 0 {
		cn.Spec.Drivers = append(cn.Spec.Drivers, want)
		return true
	}
	if driverEqual(cn.Spec.Drivers[idx], want) {
		return false
	}
	cn.Spec.Drivers[idx] = want
	return true
}

func topologyKeys(t map[string]string) []string {
	if len(t) == 0 {
		return nil
	}
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func driverEqual(a, b storagev1.CSINodeDriver) bool {
	if a.Name != b.Name || a.NodeID != b.NodeID || len(a.TopologyKeys) != len(b.TopologyKeys) {
		return false
	}
	for i := range a.TopologyKeys {
		if a.TopologyKeys[i] != b.TopologyKeys[i] {
			return false
		}
	}
	ac, bc := int32(-1), int32(-1)
	if a.Allocatable != nil && a.Allocatable.Count != nil {
		ac = *a.Allocatable.Count
	}
	if b.Allocatable != nil && b.Allocatable.Count != nil {
		bc = *b.Allocatable.Count
	}
	return ac == bc
}
