package nodestatus

import (
	"encoding/json"
	"fmt"
	"k8s.io/apimachinery/pkg/api/equality"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// ReconcileExisting brings an already registered Node in line with the one
// this kubelet would register, touching only what the kubelet owns on
// re-registration (as upstream does): the default labels (hostname, os,
// arch, zone/region/instance-type when set) and the controller-managed
// attach-detach annotation. User --node-labels, taints and spec are left as
// the cluster has them: others may have changed them since. It reports
// whether existing was changed.
func ReconcileExisting(desired, existing *v1.Node) bool {
	changed := false
	if existing.Labels == nil {
		existing.Labels = map[string]string{}
	}
	for _, key := range reconciledLabels {
		want, ok := desired.Labels[key]
		if !ok {
			continue
		}
		if existing.Labels[key] != want {
			existing.Labels[key] = want
			changed = true
		}
		if existing.Labels[key] == "" {
			delete(existing.Labels, key)
		}
	}
	want, wantSet := desired.Annotations[ControllerManagedAttachAnnotation]
	have, haveSet := existing.Annotations[ControllerManagedAttachAnnotation]
	if want != have || wantSet != haveSet {
		changed = true
		if !wantSet {
			delete(existing.Annotations, ControllerManagedAttachAnnotation)
		} else {
			if existing.Annotations == nil {
				existing.Annotations = map[string]string{}
			}
			existing.Annotations[ControllerManagedAttachAnnotation] = want
		}
	}
	return changed
}

// StatusPatch is the strategic merge patch from original to updated for the
// status subresource: metadata and status changes only (spec is ignored),
// with the node's UID as a precondition so a patch meant for a deleted Node
// never lands on a new one of the same name.
func StatusPatch(original, updated *v1.Node) ([]byte, error) {
	o := original.DeepCopy()
	u := updated.DeepCopy()
	o.ResourceVersion, u.ResourceVersion = "", ""
	u.Spec = o.Spec
	// status.addresses is declared patchStrategy=merge on "type", which is
	// not unique (two InternalIPs): a two-way merge patch of a changed list
	// is wrong. As upstream (component-helpers' PatchNodeStatus), diff
	// without it and replace the whole list instead.
	replaceAddresses := len(o.Status.Addresses) > 0 && !equality.Semantic.DeepEqual(o.Status.Addresses, u.Status.Addresses)
	if replaceAddresses {
		u.Status.Addresses = o.Status.Addresses
	}
	oldJSON, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("encoding node %s: %w", o.Name, err)
	}
	newJSON, err := json.Marshal(u)
	if err != nil {
		return nil, fmt.Errorf("encoding node %s: %w", u.Name, err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, v1.Node{})
	if err != nil {
		return nil, fmt.Errorf("computing status patch for node %s: %w", u.Name, err)
	}
	if original.UID == "" && !replaceAddresses {
		return patch, nil
	}
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, err
	}
	if replaceAddresses {
		var addrs []any
		for _, a := range updated.Status.Addresses {
			addrs = append(addrs, map[string]any{"type": string(a.Type), "address": a.Address})
		}
		addrs = append(addrs, map[string]any{"$patch": "replace"})
		st, _ := m["status"].(map[string]any)
		if st == nil {
			st = map[string]any{}
		}
		st["addresses"] = addrs
		m["status"] = st
	}
	if original.UID == "" {
		return json.Marshal(m)
	}
	meta, _ := m["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta["uid"] = string(original.UID)
	m["metadata"] = meta
	return json.Marshal(m)
}
