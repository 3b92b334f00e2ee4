package volume

import (
	"encoding/json"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// This file holds the rules of online volume expansion on the node, as
// upstream 1.37 applies them (RecoverVolumeExpansionFailure is GA and
// locked on): when a mounted CSI volume's PersistentVolume grew past the
// size the node has it at, whether the node calls NodeExpandVolume, with
// which size, and what it writes into the claim's status. They are pure;
// expand.go does the I/O.

// Event reasons of node expansion (upstream's).
const (
	EventFileSystemResizeSuccessful = "FileSystemResizeSuccessful"
	EventFileSystemResizeFailed     = "FileSystemResizeFailed"
	EventVolumeResizeFailed         = "VolumeResizeFailed"
)

// AnnNodeExpansionNotRequired on a claim says a ReadWriteMany volume
// needs no expansion on each node once its claim has the size.
const AnnNodeExpansionNotRequired = "volume.kubernetes.io/node-expansion-not-required"

// expansionInput is what the decision reads: the claim and its
// PersistentVolume's size as the API has them, and what the node knows.
type expansionInput struct {
	PVC *v1.PersistentVolumeClaim
	// PVSize is the PersistentVolume's spec.capacity storage: the size
	// the controller grew the volume to.
	PVSize resource.Quantity
	// NodeSize is the size the node has the volume's filesystem at; zero
	// when not known yet (then the claim's status capacity, as upstream
	// after a mount or a restart).
	NodeSize resource.Quantity
	// ReadOnly: the pod mounts the claim read-only.
	ReadOnly bool
	// DriverExpands: the driver has the node capability EXPAND_VOLUME.
	DriverExpands bool
	// InUseRefused: the driver refused expanding the volume while in use
	// (FailedPrecondition): no more tries while it is mounted.
	InUseRefused bool
	// FailedFinal: an earlier NodeExpandVolume of the volume failed with
	// a final error.
	FailedFinal bool
}

type expansionAction int

const (
	// expandNothing: the node has the volume at its size.
	expandNothing expansionAction = iota
	// expandWait: the volume grew but the claim's status does not let
	// the node expand yet (the controller is not done, or failed).
	expandWait
	// expandReadOnly: the volume grew but the pod mounts it read-only:
	// its filesystem is not grown (FileSystemResizeFailed events).
	expandReadOnly
	// expandAlreadyDone: the claim already has the size (another node, or
	// the controller, finished): the node takes NewSize without a call.
	expandAlreadyDone
	// expandNotSupported: the claim waits for the node, but the driver
	// cannot grow filesystems on the node (no EXPAND_VOLUME).
	expandNotSupported
	// expandCall: call NodeExpandVolume with NewSize.
	expandCall
)

func (a expansionAction) String() string {
	return [...]string{"nothing", "wait", "read-only", "already done", "not supported", "call"}[a]
}

// expansionDecision is what to do about one volume.
type expansionDecision struct {
	Action expansionAction
	// NodeSize is the size the node has the volume at before acting
	// (the input's, or the claim's capacity when the input had none).
	NodeSize resource.Quantity
	// NewSize is the size to expand to (expandCall, expandAlreadyDone).
	NewSize resource.Quantity
	// MarkInProgress: set allocatedResourceStatuses storage to
	// NodeResizeInProgress before the call.
	MarkInProgress bool
	// UpdateClaim: after a successful call, set the claim's capacity to
	// NewSize and clear its storage resize status and resize conditions.
	UpdateClaim bool
	// InfeasibleOnFailure: a final failure marks the node expansion
	// infeasible (the user changed the request since an earlier failure,
	// so the controller can reconcile with the new size).
	InfeasibleOnFailure bool
	// Reason says why, for logs.
	Reason string
}

// decideExpansion is upstream's node expansion decision (its
// actual-state size check, nodeExpandVolume, and NodeExpander's pre-check).
func decideExpansion(in expansionInput) expansionDecision {
	pvc := in.PVC
	statusCap := pvc.Status.Capacity[v1.ResourceStorage]
	d := expansionDecision{NodeSize: in.NodeSize}
	if d.NodeSize.IsZero() {
		d.NodeSize = statusCap.DeepCopy()
	}
	switch {
	case in.InUseRefused:
		d.Reason = "the driver refused expanding the volume while it is in use; it is expanded when mounted again"
		return d
	case d.NodeSize.IsZero() || in.PVSize.IsZero():
		d.Reason = "the claim's capacity or the PersistentVolume's size is not set"
		return d
	case in.PVSize.Cmp(d.NodeSize) <= 0:
		d.Reason = "the node has the volume at the PersistentVolume's size"
		return d
	case in.ReadOnly:
		d.Action, d.Reason = expandReadOnly, "requested read-only file system"
		return d
	}

	status, hasStatus := pvc.Status.AllocatedResourceStatuses[v1.ResourceStorage]
	allocated := pvc.Status.AllocatedResources
	if !hasStatus && allocated == nil {
		// A resize controller that writes neither (older than expansion
		// recovery): upstream's legacy path expands to the
		// PersistentVolume's size and then finishes the claim.
		d.NewSize = in.PVSize.DeepCopy()
		d.UpdateClaim = true
		if !in.DriverExpands {
			d.Action, d.Reason = expandNotSupported, "the driver has no node capability EXPAND_VOLUME"
			return d
		}
		d.Action, d.Reason = expandCall, "the PersistentVolume grew (resize controller without allocatedResources)"
		return d
	}

	d.NewSize = allocated[v1.ResourceStorage].DeepCopy()
	if d.NewSize.IsZero() {
		d.NewSize = in.PVSize.DeepCopy()
	}
	request := pvc.Spec.Resources.Requests[v1.ResourceStorage]
	d.InfeasibleOnFailure = request.Cmp(d.NewSize) != 0 && in.FailedFinal
	alreadyUpdated := statusCap.Cmp(d.NewSize) >= 0 && status == ""

	allowed := false
	switch {
	case alreadyUpdated && slices.Contains(pvc.Spec.AccessModes, v1.ReadWriteMany) && !metav1.HasAnnotation(pvc.ObjectMeta, AnnNodeExpansionNotRequired):
		// A ReadWriteMany volume is expanded on every node using it.
		allowed, d.Reason = true, "a ReadWriteMany volume is expanded on each node"
	case status == v1.PersistentVolumeClaimNodeResizePending || status == v1.PersistentVolumeClaimNodeResizeInProgress:
		allowed, d.Reason = true, fmt.Sprintf("the claim's storage resize status is %s", status)
	}
	if !allowed {
		if alreadyUpdated {
			d.Action, d.Reason = expandAlreadyDone, "the claim already has the size"
			return d
		}
		d.Action = expandWait
		if status == "" {
			d.Reason = "waiting for the resize controller (no storage resize status)"
		} else {
			d.Reason = fmt.Sprintf("the claim's storage resize status is %s", status)
		}
		return d
	}
	if !in.DriverExpands {
		if alreadyUpdated {
			d.Action, d.Reason = expandAlreadyDone, "the claim already has the size and the driver does not expand on the node"
			return d
		}
		d.Action, d.Reason = expandNotSupported, "the driver has no node capability EXPAND_VOLUME"
		return d
	}
	d.Action = expandCall
	d.MarkInProgress = !alreadyUpdated
	d.UpdateClaim = !alreadyUpdated
	return d
}

// resizeConditions are the claim conditions of resizing, which a finished
// node expansion clears.
var resizeConditions = map[v1.PersistentVolumeClaimConditionType]bool{
	v1.PersistentVolumeClaimFileSystemResizePending: true,
	v1.PersistentVolumeClaimResizing:                true,
	v1.PersistentVolumeClaimControllerResizeError:   true,
	v1.PersistentVolumeClaimNodeResizeError:         true,
}

// withStorageStatus is pvc with allocatedResourceStatuses storage set to
// status ("" removes it; an empty map becomes nil).
func withStorageStatus(pvc *v1.PersistentVolumeClaim, status v1.ClaimResourceStatus) *v1.PersistentVolumeClaim {
	out := pvc.DeepCopy()
	if status == "" {
		delete(out.Status.AllocatedResourceStatuses, v1.ResourceStorage)
		if len(out.Status.AllocatedResourceStatuses) == 0 {
			out.Status.AllocatedResourceStatuses = nil
		}
		return out
	}
	if out.Status.AllocatedResourceStatuses == nil {
		out.Status.AllocatedResourceStatuses = map[v1.ResourceName]v1.ClaimResourceStatus{}
	}
	out.Status.AllocatedResourceStatuses[v1.ResourceStorage] = status
	return out
}

// expansionInProgress is the claim marked NodeResizeInProgress.
func expansionInProgress(pvc *v1.PersistentVolumeClaim) *v1.PersistentVolumeClaim {
	return withStorageStatus(pvc, v1.PersistentVolumeClaimNodeResizeInProgress)
}

// expansionFinished is the claim after its node expansion to size: that
// capacity, no storage resize status, no resize conditions.
func expansionFinished(pvc *v1.PersistentVolumeClaim, size resource.Quantity) *v1.PersistentVolumeClaim {
	out := withStorageStatus(pvc, "")
	if out.Status.Capacity == nil {
		out.Status.Capacity = v1.ResourceList{}
	}
	out.Status.Capacity[v1.ResourceStorage] = size.DeepCopy()
	var conds []v1.PersistentVolumeClaimCondition
	for _, c := range out.Status.Conditions {
		if !resizeConditions[c.Type] {
			conds = append(conds, c)
		}
	}
	out.Status.Conditions = conds
	return out
}

// expansionFailed is the claim after a final failure of its node
// expansion: a NodeResizeError condition with the error (replacing one
// of another status), and NodeResizeInfeasible when infeasible.
func expansionFailed(pvc *v1.PersistentVolumeClaim, err error, infeasible bool, now metav1.Time) *v1.PersistentVolumeClaim {
	out := pvc.DeepCopy()
	if infeasible {
		out = withStorageStatus(out, v1.PersistentVolumeClaimNodeResizeInfeasible)
	}
	cond := v1.PersistentVolumeClaimCondition{Type: v1.PersistentVolumeClaimNodeResizeError, Status: v1.ConditionTrue,
		LastTransitionTime: now, Message: fmt.Sprintf("failed to expand pvc with %v", err)}
	replaced := false
	for i, c := range out.Status.Conditions {
		if c.Type == cond.Type {
			replaced = true
			if c.Status != cond.Status {
				out.Status.Conditions[i] = cond
			}
		}
	}
	if !replaced {
		out.Status.Conditions = append(out.Status.Conditions, cond)
	}
	return out
}

// claimStatusPatch is the strategic merge patch from old to updated (a
// claim's status); withVersion adds old's resourceVersion, so the patch
// fails on a claim changed meanwhile, as an update would.
func claimStatusPatch(old, updated *v1.PersistentVolumeClaim, withVersion bool) ([]byte, error) {
	a, err := json.Marshal(old)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(updated)
	if err != nil {
		return nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(a, b, &v1.PersistentVolumeClaim{})
	if err != nil {
		return nil, err
	}
	if !withVersion {
		return patch, nil
	}
	m := map[string]any{}
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, err
	}
	meta, _ := m["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta["resourceVersion"] = old.ResourceVersion
	m["metadata"] = meta
	return json.Marshal(m)
}
