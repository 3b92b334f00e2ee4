package volume

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestClaimVolumesListsLocalPersistentVolumes: the volumes whose usage the
// node reports are the set-up claims on local PersistentVolumes, under
// their claim's name; not hostPath ones (upstream reports none), not
// claims still waiting, and none once the pod is torn down.
func TestClaimVolumesListsLocalPersistentVolumes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	local, hp := t.TempDir(), t.TempDir()
	c := e.addClaim("data-claim", "pv-local", v1.ClaimBound)
	e.addPV("pv-local", c, v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: local}})
	c2 := e.addClaim("hp-claim", "pv-hp", v1.ClaimBound)
	e.addPV("pv-hp", c2, v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: hp}})
	e.addClaim("pending", "", v1.ClaimPending)

	p := pod("u1", pvcVol("data", "data-claim"), pvcVol("hp", "hp-claim"), pvcVol("later", "pending"),
		vol("scratch", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}))
	if got := e.m.ClaimVolumes(p.UID); len(got) != 0 {
		t.Fatalf("before set-up: %v", got)
	}
	if err := e.m.SetUpPod(ctx, p); err == nil {
		t.Fatal("a pending claim must keep the pod waiting")
	}
	want := fmt.Sprint([]ClaimVolume{{Volume: "data", Claim: "data-claim", Path: local}})
	if got := fmt.Sprint(e.m.ClaimVolumes(p.UID)); got != want {
		t.Fatalf("claim volumes = %s, want %s", got, want)
	}
	if err := e.m.TearDownPod(ctx, p.UID); err != nil {
		t.Fatal(err)
	}
	if got := e.m.ClaimVolumes(p.UID); len(got) != 0 {
		t.Fatalf("after tear-down: %v", got)
	}
}
