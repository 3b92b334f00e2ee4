package volume

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

type registeredDrivers map[string]bool

func (r registeredDrivers) Registered(name string) bool { return r[name] }

// A CSI volume, inline or through a claim, keeps its pod waiting with a
// reason that names the driver and whether the node has it registered.
func TestCSIVolumeReasonNamesTheDriver(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	inline := pod("u1", vol("data", v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "missing.csi.example.com"}}))
	err := e.m.SetUpPod(ctx, inline)
	var nr *NotReadyError
	var ue *UnsupportedError
	if !errors.As(err, &nr) || len(nr.Volumes) != 1 || !errors.As(nr.Volumes[0].Err, &ue) || ue.Type != "csi" ||
		!strings.Contains(err.Error(), `volume "data" has type csi, which this node cannot provide (CSI driver "missing.csi.example.com" is not registered on this node)`) {
		t.Errorf("inline, driver not registered: %v", err)
	}
	if ev := <-e.rec.Events; !strings.Contains(ev, "FailedMount") || !strings.Contains(ev, `CSI driver "missing.csi.example.com" is not registered`) {
		t.Errorf("event %q", ev)
	}

	e.m.opts.CSIDrivers = registeredDrivers{"here.csi.example.com": true}
	c := e.addClaim("claim", "pv1", v1.ClaimBound)
	e.addPV("pv1", c, v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "here.csi.example.com", VolumeHandle: "vol-1"}})
	if err := e.m.SetUpPod(ctx, pod("u2", pvcVol("data", "claim"))); err == nil ||
		!strings.Contains(err.Error(), `PersistentVolume "pv1" has type csi, which this node cannot mount (CSI driver "here.csi.example.com" is registered, but this node does not set up CSI volumes yet)`) {
		t.Errorf("claim, driver registered: %v", err)
	}
}
