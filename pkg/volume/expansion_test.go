package volume

import (
	"encoding/json"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func q(s string) resource.Quantity { return resource.MustParse(s) }

// expClaim is a claim of request size, status capacity capacity, the given
// storage resize status and allocated size ("" for none).
func expClaim(request, capacity string, status v1.ClaimResourceStatus, allocated string, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolumeClaim {
	if len(modes) == 0 {
		modes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	}
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns", ResourceVersion: "7"},
		Spec: v1.PersistentVolumeClaimSpec{AccessModes: modes,
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: q(request)}}},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, Capacity: v1.ResourceList{v1.ResourceStorage: q(capacity)}}}
	if status != "" {
		pvc.Status.AllocatedResourceStatuses = map[v1.ResourceName]v1.ClaimResourceStatus{v1.ResourceStorage: status}
	}
	if allocated != "" {
		pvc.Status.AllocatedResources = v1.ResourceList{v1.ResourceStorage: q(allocated)}
	}
	return pvc
}

func TestDecideExpansion(t *testing.T) {
	rwx := v1.ReadWriteMany
	for _, tc := range []struct {
		name string
		in   expansionInput
		// want: action, new size, node size, mark in progress, update
		// claim, infeasible on failure
		action                     expansionAction
		newSize, nodeSize          string
		inProgress, update, infeas bool
	}{
		{name: "not grown",
			in:     expansionInput{PVC: expClaim("1Gi", "1Gi", "", "1Gi"), PVSize: q("1Gi"), DriverExpands: true},
			action: expandNothing, nodeSize: "1Gi"},
		{name: "node size unknown: the claim's capacity, then the grown PV waits for the controller",
			in:     expansionInput{PVC: expClaim("2Gi", "1Gi", v1.PersistentVolumeClaimControllerResizeInProgress, "2Gi"), PVSize: q("1Gi"), DriverExpands: true},
			action: expandNothing, nodeSize: "1Gi"},
		{name: "controller done, node pending: call, mark in progress, finish the claim",
			in:     expansionInput{PVC: expClaim("2Gi", "1Gi", v1.PersistentVolumeClaimNodeResizePending, "2Gi"), PVSize: q("2Gi"), DriverExpands: true},
			action: expandCall, newSize: "2Gi", nodeSize: "1Gi", inProgress: true, update: true},
		{name: "in progress (a call cut short before): call again",
			in:     expansionInput{PVC: expClaim("2Gi", "1Gi", v1.PersistentVolumeClaimNodeResizeInProgress, "2Gi"), PVSize: q("2Gi"), NodeSize: q("1Gi"), DriverExpands: true},
			action: expandCall, newSize: "2Gi", nodeSize: "1Gi", inProgress: true, update: true},
		{name: "the allocated size is the new size, not the PV's",
			in:     expansionInput{PVC: expClaim("3Gi", "1Gi", v1.PersistentVolumeClaimNodeResizePending, "2Gi"), PVSize: q("3Gi"), DriverExpands: true},
			action: expandCall, newSize: "2Gi", nodeSize: "1Gi", inProgress: true, update: true},
		{name: "controller still resizing",
			in:     expansionInput{PVC: expClaim("2Gi", "1Gi", v1.PersistentVolumeClaimControllerResizeInProgress, "2Gi"), PVSize: q("2Gi"), NodeSize: q("1Gi"), DriverExpands: true},
			action: expandWait, newSize: "2Gi", nodeSize: "1Gi"},
		{name: "node expansion infeasible: no retry",
			in:     expansionInput{PVC: expClaim("2Gi", "1Gi", v1.PersistentVolumeClaimNodeResizeInfeasible, "2Gi"), PVSize: q("2Gi"), NodeSize: q("1Gi"), DriverExpands: true},
			action: expandWait, newSize: "2Gi", nodeSize: "1Gi"},
		{name: "no status yet and the claim is smaller: wait",
			in:     expansionInput{PVC: expClaim("2Gi", "1Gi", "", "2Gi"), PVSize: q("2Gi"), NodeSize: q("1Gi"), DriverExpands: true},
			action: expandWait, newSize: "2Gi", nodeSize: "1Gi"},
		{name: "the claim already has the size (done elsewhere): take it, no call",
			in:     expansionInput{PVC: expClaim("2Gi", "2Gi", "", "2Gi"), PVSize: q("2Gi"), NodeSize: q("1Gi"), DriverExpands: true},
			action: expandAlreadyDone, newSize: "2Gi", nodeSize: "1Gi"},
		{name: "ReadWriteMany with the claim at its size: expanded on this node too, claim left alone",
			in:     expansionInput{PVC: expClaim("2Gi", "2Gi", "", "2Gi", rwx), PVSize: q("2Gi"), NodeSize: q("1Gi"), DriverExpands: true},
			action: expandCall, newSize: "2Gi", nodeSize: "1Gi"},
		{name: "ReadWriteMany, driver without EXPAND_VOLUME: done",
			in:     expansionInput{PVC: expClaim("2Gi", "2Gi", "", "2Gi", rwx), PVSize: q("2Gi"), NodeSize: q("1Gi")},
			action: expandAlreadyDone, newSize: "2Gi", nodeSize: "1Gi"},
		{name: "node pending, driver without EXPAND_VOLUME: not supported",
			in:     expansionInput{PVC: expClaim("2Gi", "1Gi", v1.PersistentVolumeClaimNodeResizePending, "2Gi"), PVSize: q("2Gi"), NodeSize: q("1Gi")},
			action: expandNotSupported, newSize: "2Gi", nodeSize: "1Gi"},
		{name: "read-only mount",
			in:     expansionInput{PVC: expClaim("2Gi", "1Gi", v1.PersistentVolumeClaimNodeResizePending, "2Gi"), PVSize: q("2Gi"), NodeSize: q("1Gi"), ReadOnly: true, DriverExpands: true},
			action: expandReadOnly, nodeSize: "1Gi"},
		{name: "driver refused while in use",
			in:     expansionInput{PVC: expClaim("2Gi", "1Gi", v1.PersistentVolumeClaimNodeResizePending, "2Gi"), PVSize: q("2Gi"), NodeSize: q("1Gi"), InUseRefused: true, DriverExpands: true},
			action: expandNothing, nodeSize: "1Gi"},
		{name: "legacy resize controller (no status, no allocated): PV size, finish the claim",
			in:     expansionInput{PVC: expClaim("2Gi", "1Gi", "", ""), PVSize: q("2Gi"), NodeSize: q("1Gi"), DriverExpands: true},
			action: expandCall, newSize: "2Gi", nodeSize: "1Gi", update: true},
		{name: "user changed the request after a final failure: infeasible on the next failure",
			in:     expansionInput{PVC: expClaim("5Gi", "1Gi", v1.PersistentVolumeClaimNodeResizePending, "2Gi"), PVSize: q("2Gi"), NodeSize: q("1Gi"), FailedFinal: true, DriverExpands: true},
			action: expandCall, newSize: "2Gi", nodeSize: "1Gi", inProgress: true, update: true, infeas: true},
		{name: "final failure, request unchanged: not infeasible",
			in:     expansionInput{PVC: expClaim("2Gi", "1Gi", v1.PersistentVolumeClaimNodeResizePending, "2Gi"), PVSize: q("2Gi"), NodeSize: q("1Gi"), FailedFinal: true, DriverExpands: true},
			action: expandCall, newSize: "2Gi", nodeSize: "1Gi", inProgress: true, update: true},
		{name: "node already at the PV size",
			in:     expansionInput{PVC: expClaim("2Gi", "1Gi", v1.PersistentVolumeClaimNodeResizePending, "2Gi"), PVSize: q("2Gi"), NodeSize: q("2Gi"), DriverExpands: true},
			action: expandNothing, nodeSize: "2Gi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decideExpansion(tc.in)
			if d.Action != tc.action || d.MarkInProgress != tc.inProgress || d.UpdateClaim != tc.update || d.InfeasibleOnFailure != tc.infeas {
				t.Errorf("decision %s inProgress=%v update=%v infeasible=%v (%s); want %s %v %v %v",
					d.Action, d.MarkInProgress, d.UpdateClaim, d.InfeasibleOnFailure, d.Reason, tc.action, tc.inProgress, tc.update, tc.infeas)
			}
			if tc.newSize != "" && d.NewSize.Cmp(q(tc.newSize)) != 0 {
				t.Errorf("new size %s, want %s", d.NewSize.String(), tc.newSize)
			}
			if d.NodeSize.Cmp(q(tc.nodeSize)) != 0 {
				t.Errorf("node size %s, want %s", d.NodeSize.String(), tc.nodeSize)
			}
			if d.Reason == "" {
				t.Error("no reason")
			}
		})
	}
}

// The status writes: in progress sets the storage status; finished sets
// the capacity, clears the storage status and the resize conditions but
// keeps the others; failed adds a NodeResizeError condition (and
// NodeResizeInfeasible when infeasible); the patches carry the
// resourceVersion when asked to.
func TestExpansionStatusWrites(t *testing.T) {
	pvc := expClaim("2Gi", "1Gi", v1.PersistentVolumeClaimNodeResizePending, "2Gi")
	pvc.Status.Conditions = []v1.PersistentVolumeClaimCondition{
		{Type: v1.PersistentVolumeClaimFileSystemResizePending, Status: v1.ConditionTrue},
		{Type: "Other", Status: v1.ConditionTrue},
	}
	ip := expansionInProgress(pvc)
	if ip.Status.AllocatedResourceStatuses[v1.ResourceStorage] != v1.PersistentVolumeClaimNodeResizeInProgress ||
		pvc.Status.AllocatedResourceStatuses[v1.ResourceStorage] != v1.PersistentVolumeClaimNodeResizePending {
		t.Fatalf("in progress %v (original %v)", ip.Status.AllocatedResourceStatuses, pvc.Status.AllocatedResourceStatuses)
	}
	patch, err := claimStatusPatch(pvc, ip, true)
	if err != nil {
		t.Fatal(err)
	}
	if string(patch) != `{"metadata":{"resourceVersion":"7"},"status":{"allocatedResourceStatuses":{"storage":"NodeResizeInProgress"}}}` {
		t.Errorf("in progress patch %s", patch)
	}

	fin := expansionFinished(ip, q("2Gi"))
	c := fin.Status.Capacity[v1.ResourceStorage]
	if c.Cmp(q("2Gi")) != 0 || fin.Status.AllocatedResourceStatuses != nil || len(fin.Status.Conditions) != 1 || fin.Status.Conditions[0].Type != "Other" {
		t.Fatalf("finished %+v", fin.Status)
	}
	patch, err = claimStatusPatch(ip, fin, true)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		t.Fatal(err)
	}
	st := m["status"].(map[string]any)
	if st["capacity"].(map[string]any)["storage"] != "2Gi" || st["allocatedResourceStatuses"] != nil {
		t.Errorf("finished patch %s", patch)
	}
	if _, ok := st["allocatedResourceStatuses"]; !ok {
		t.Errorf("finished patch does not remove the storage status: %s", patch)
	}

	now := metav1.Unix(1000, 0)
	failed := expansionFailed(ip, errors.New("boom"), false, now)
	if failed.Status.AllocatedResourceStatuses[v1.ResourceStorage] != v1.PersistentVolumeClaimNodeResizeInProgress {
		t.Errorf("a failure that is not infeasible changed the status: %v", failed.Status.AllocatedResourceStatuses)
	}
	last := failed.Status.Conditions[len(failed.Status.Conditions)-1]
	if last.Type != v1.PersistentVolumeClaimNodeResizeError || last.Message != "failed to expand pvc with boom" {
		t.Errorf("failed conditions %+v", failed.Status.Conditions)
	}
	again := expansionFailed(failed, errors.New("boom again"), true, now)
	n := 0
	for _, c := range again.Status.Conditions {
		if c.Type == v1.PersistentVolumeClaimNodeResizeError {
			n++
		}
	}
	if n != 1 || again.Status.AllocatedResourceStatuses[v1.ResourceStorage] != v1.PersistentVolumeClaimNodeResizeInfeasible {
		t.Errorf("infeasible %+v", again.Status)
	}
	patch, err = claimStatusPatch(ip, failed, false)
	if err != nil {
		t.Fatal(err)
	}
	var fm map[string]any
	if json.Unmarshal(patch, &fm) != nil || fm["metadata"] != nil || fm["status"] == nil {
		t.Errorf("failure patch with a resourceVersion: %s", patch)
	}
}
