package volume

import (
	"context"
	"os"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func pvcVol(name, claim string) v1.Volume {
	return vol(name, v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}})
}

func (e *env) addClaim(name, pvName string, phase v1.PersistentVolumeClaimPhase) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("pvc-uid-" + name)},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: pvName}, Status: v1.PersistentVolumeClaimStatus{Phase: phase}}
	e.claims.pvcs["ns/"+name] = c
	return c
}

func (e *env) addPV(name string, c *v1.PersistentVolumeClaim, src v1.PersistentVolumeSource) {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: src}}
	if c != nil {
		pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: c.Namespace, Name: c.Name, UID: c.UID}
	}
	e.claims.pvs[name] = pv
}

func TestClaimMustBeBoundToAVolumeTheNodeCanMount(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	local := t.TempDir()
	notReady := func(p *v1.Pod, want string) {
		t.Helper()
		err := e.m.SetUpPod(ctx, p)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err %v, want %q", err, want)
		}
	}
	p := pod("u1", pvcVol("data", "claim"))
	notReady(p, `PersistentVolumeClaim "claim" not found`)
	c := e.addClaim("claim", "", v1.ClaimPending)
	notReady(p, `PersistentVolumeClaim "claim" is not bound (phase Pending)`)
	c.Spec.VolumeName, c.Status.Phase = "pv1", v1.ClaimBound
	e.addPV("pv1", nil, v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: local}})
	notReady(p, `PersistentVolume "pv1" is not bound to claim "claim"`)
	e.addPV("pv1", c, v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: local}})
	p.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr.To[int64](555), FSGroupChangePolicy: ptr.To(v1.FSGroupChangeOnRootMismatch)}
	if err := e.m.SetUpPod(ctx, p); err != nil {
		t.Fatal(err)
	}
	mnts, err := e.m.ContainerMounts(ctx, p, &p.Spec.Containers[0], nil)
	if err != nil || mnts[0].HostPath != local {
		t.Fatalf("mounts %+v, %v", mnts, err)
	}
	if st := statT(t, local); st.Gid != 555 {
		t.Errorf("local volume gid %d, want the fsGroup", st.Gid)
	}

	// A volume type the node cannot mount is named.
	c2 := e.addClaim("nfs", "pv-nfs", v1.ClaimBound)
	e.addPV("pv-nfs", c2, v1.PersistentVolumeSource{NFS: &v1.NFSVolumeSource{Server: "x", Path: "/"}})
	notReady(pod("u2", pvcVol("data", "nfs")), `PersistentVolume "pv-nfs" has type nfs, which this node cannot mount`)

	// A hostPath PV, read-only through the claim.
	c3 := e.addClaim("hp", "pv-hp", v1.ClaimBound)
	e.addPV("pv-hp", c3, v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: local}})
	p3 := pod("u3", pvcVol("data", "hp"))
	p3.Spec.Volumes[0].PersistentVolumeClaim.ReadOnly = true
	if err := e.m.SetUpPod(ctx, p3); err != nil {
		t.Fatal(err)
	}
	if mnts, _ := e.m.ContainerMounts(ctx, p3, &p3.Spec.Containers[0], nil); !mnts[0].ReadOnly || mnts[0].HostPath != local {
		t.Errorf("hostPath PV mounts %+v", mnts)
	}
}

func TestEphemeralVolumeClaimMustBelongToThePod(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	dir := t.TempDir()
	p := pod("u1", vol("scratch", v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}))
	if err := e.m.SetUpPod(ctx, p); err == nil || !strings.Contains(err.Error(), `claim "p-u1-scratch"`) {
		t.Errorf("before the claim exists: %v", err)
	}
	c := e.addClaim("p-u1-scratch", "pv", v1.ClaimBound)
	e.addPV("pv", c, v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: dir}})
	if err := e.m.SetUpPod(ctx, p); err == nil || !strings.Contains(err.Error(), "not created for this pod") {
		t.Errorf("claim of someone else: %v", err)
	}
	c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID, Controller: ptr.To(true)}}
	if err := e.m.SetUpPod(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}
