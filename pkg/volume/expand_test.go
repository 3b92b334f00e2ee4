package volume

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
	plugincsi "github.com/gokubelet/kubelet/pkg/plugins/csi"
	"github.com/gokubelet/kubelet/pkg/plugins/csi/csitest"
)

// statusPatches applies claim status patches to the env's claims, and
// records them.
type statusPatches struct {
	c       *fakeClaims
	patches []string
}

func (s *statusPatches) PatchPersistentVolumeClaimStatus(_ context.Context, ns, name string, patch []byte) (*v1.PersistentVolumeClaim, error) {
	s.patches = append(s.patches, string(patch))
	old := s.c.pvcs[ns+"/"+name]
	a, _ := json.Marshal(old)
	b, err := strategicpatch.StrategicMergePatch(a, patch, &v1.PersistentVolumeClaim{})
	if err != nil {
		return nil, err
	}
	out := &v1.PersistentVolumeClaim{}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, err
	}
	s.c.pvcs[ns+"/"+name] = out
	return out.DeepCopy(), nil
}

// expandEnv: a pod whose claim "claim" (1Gi) is a CSI volume of a fake
// driver with caps, set up.
func expandEnv(t *testing.T, caps ...csipb.NodeServiceCapability_RPC_Type) (*env, *csitest.Driver, *statusPatches, *v1.Pod) {
	t.Helper()
	e := newEnv(t)
	ctx := context.Background()
	fake := csitest.Start(t, "fake.csi.example.com")
	fake.SetCapabilities(caps...)
	drivers := plugincsi.New(plugincsi.Options{})
	if err := drivers.RegisterPlugin(ctx, fake.Name, fake.Endpoint, []string{"1.0.0"}); err != nil {
		t.Fatal(err)
	}
	api := e.withCSI(drivers)
	api.drivers[fake.Name] = &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: fake.Name}, Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}}
	sp := &statusPatches{c: e.claims}
	e.m.opts.ClaimStatus = sp
	c := e.addClaim("claim", "pv1", v1.ClaimBound)
	c.ResourceVersion = "5"
	c.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	c.Spec.Resources.Requests = v1.ResourceList{v1.ResourceStorage: q("1Gi")}
	c.Status.Capacity = v1.ResourceList{v1.ResourceStorage: q("1Gi")}
	e.addPV("pv1", c, v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: fake.Name, VolumeHandle: "vol-1"}})
	e.claims.pvs["pv1"].Spec.Capacity = v1.ResourceList{v1.ResourceStorage: q("1Gi")}
	p := pod("u1", pvcVol("data", "claim"))
	e.setUp(p)
	return e, fake, sp, p
}

// grow is what the resize controller does: the PV grows, the claim's
// allocated size and NodeResizePending.
func (e *env) grow(size string) {
	e.claims.pvs["pv1"].Spec.Capacity[v1.ResourceStorage] = q(size)
	c := e.claims.pvcs["ns/claim"]
	c.Spec.Resources.Requests[v1.ResourceStorage] = q(size)
	c.Status.AllocatedResources = v1.ResourceList{v1.ResourceStorage: q(size)}
	c.Status.AllocatedResourceStatuses = map[v1.ResourceName]v1.ClaimResourceStatus{v1.ResourceStorage: v1.PersistentVolumeClaimNodeResizePending}
}

// A mounted CSI volume whose PV grew and whose claim waits for the node
// is expanded: NodeExpandVolume with the new size on the publish target,
// the claim marked in progress then finished (capacity, no status), the
// FileSystemResizeSuccessful events; the volume's stats key changes; a
// second check does nothing.
func TestOnlineExpansion(t *testing.T) {
	ctx := context.Background()
	e, fake, sp, p := expandEnv(t, csipb.NodeServiceCapability_RPC_EXPAND_VOLUME, csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS)
	cvs := e.m.ClaimVolumes(p.UID)
	if len(cvs) != 1 || cvs[0].CSIDriver != fake.Name || cvs[0].CSIHandle != "vol-1" || cvs[0].Expansions != 0 ||
		!strings.HasSuffix(cvs[0].Path, "pods/u1/volumes/kubernetes.io~csi/pv1/mount") {
		t.Fatalf("claim volumes %+v", cvs)
	}
	e.m.CheckExpansions(ctx)
	if fake.Last("NodeExpandVolume") != nil || len(sp.patches) != 0 {
		t.Fatalf("expanded a volume that did not grow: %v", sp.patches)
	}

	e.grow("2Gi")
	e.m.CheckExpansions(ctx)
	r, _ := fake.Last("NodeExpandVolume").(*csipb.NodeExpandVolumeRequest)
	if r == nil || r.GetCapacityRange().GetRequiredBytes() != 2<<30 || r.GetVolumeId() != "vol-1" || r.GetVolumePath() != cvs[0].Path {
		t.Fatalf("NodeExpandVolume %v", r)
	}
	if len(sp.patches) != 2 || sp.patches[0] != `{"metadata":{"resourceVersion":"5"},"status":{"allocatedResourceStatuses":{"storage":"NodeResizeInProgress"}}}` {
		t.Fatalf("patches %v", sp.patches)
	}
	c := e.claims.pvcs["ns/claim"]
	if got := c.Status.Capacity[v1.ResourceStorage]; got.Cmp(q("2Gi")) != 0 || c.Status.AllocatedResourceStatuses != nil {
		t.Errorf("claim status after expansion %+v", c.Status)
	}
	ev := e.events()
	if !hasEvent(ev, "Normal FileSystemResizeSuccessful", `MountVolume.NodeExpandVolume succeeded for volume "pv1"`) || len(ev) != 2 {
		t.Errorf("events %v", ev)
	}
	if cvs := e.m.ClaimVolumes(p.UID); cvs[0].Expansions != 1 {
		t.Errorf("expansions %d", cvs[0].Expansions)
	}
	n := len(fake.Methods())
	e.m.CheckExpansions(ctx)
	if len(fake.Methods()) != n || len(sp.patches) != 2 {
		t.Errorf("a second check called %v, patched %v", fake.Methods()[n:], sp.patches[2:])
	}
	// The pod goes: so does its expansion state.
	if err := e.m.TearDownPod(ctx, p.UID); err != nil {
		t.Fatal(err)
	}
	if e.m.expansionCount(p.UID, "data") != 0 {
		t.Error("expansion state kept after tear-down")
	}
}

// Failures: a driver without EXPAND_VOLUME is not called (one warning
// event, the claim untouched); one that refuses with a final error gets
// the claim a NodeResizeError condition (NodeResizeInfeasible for
// OutOfRange) and a VolumeResizeFailed event; FailedPrecondition (cannot
// grow in use) stops the tries while mounted; an uncertain error is tried
// again.
func TestOnlineExpansionFailures(t *testing.T) {
	ctx := context.Background()
	t.Run("driver without EXPAND_VOLUME", func(t *testing.T) {
		e, fake, sp, _ := expandEnv(t)
		e.grow("2Gi")
		e.m.CheckExpansions(ctx)
		e.m.CheckExpansions(ctx)
		ev := e.events()
		if fake.Last("NodeExpandVolume") != nil || len(sp.patches) != 0 || len(ev) != 1 ||
			!hasEvent(ev, "Warning VolumeResizeFailed", `does not have the node capability EXPAND_VOLUME`) {
			t.Errorf("patches %v events %v", sp.patches, ev)
		}
	})
	for _, tc := range []struct {
		name       string
		err        error
		calls      int
		condition  bool
		infeasible bool
	}{
		{"infeasible", status.Error(codes.OutOfRange, "too big"), 1, true, true},
		{"final", status.Error(codes.Internal, "disk on fire"), 2, true, false},
		{"in use", status.Error(codes.FailedPrecondition, "cannot grow in use"), 1, false, false},
		{"uncertain", status.Error(codes.DeadlineExceeded, "slow"), 2, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, fake, _, _ := expandEnv(t, csipb.NodeServiceCapability_RPC_EXPAND_VOLUME)
			fake.Fail("NodeExpandVolume", tc.err)
			e.grow("2Gi")
			e.m.CheckExpansions(ctx)
			e.m.CheckExpansions(ctx)
			if n := strings.Count(strings.Join(fake.Methods(), " "), "NodeExpandVolume"); n != tc.calls {
				t.Errorf("%d calls, want %d", n, tc.calls)
			}
			c := e.claims.pvcs["ns/claim"]
			cond := false
			for _, cd := range c.Status.Conditions {
				cond = cond || cd.Type == v1.PersistentVolumeClaimNodeResizeError
			}
			st := c.Status.AllocatedResourceStatuses[v1.ResourceStorage]
			if cond != tc.condition || (st == v1.PersistentVolumeClaimNodeResizeInfeasible) != tc.infeasible {
				t.Errorf("claim status %+v", c.Status)
			}
			if got := c.Status.Capacity[v1.ResourceStorage]; got.Cmp(q("1Gi")) != 0 {
				t.Errorf("capacity %s after a failure", got.String())
			}
			if ev := e.events(); !hasEvent(ev, "Warning VolumeResizeFailed", `MountVolume.NodeExpandVolume failed for volume "pv1"`) {
				t.Errorf("events %v", ev)
			}
		})
	}
}

// A claim grown while its volume was not mounted (NodeResizePending when
// the pod starts) is expanded right after the set-up, without waiting
// for the period.
func TestExpansionAfterSetUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, fake, _, p := expandEnv(t, csipb.NodeServiceCapability_RPC_EXPAND_VOLUME)
	if err := e.m.TearDownPod(ctx, p.UID); err != nil {
		t.Fatal(err)
	}
	e.grow("3Gi")
	done := make(chan struct{})
	go func() { e.m.expansionLoop(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	p2 := pod("u2", pvcVol("data", "claim"))
	e.setUp(p2)
	eventually.True(t, "NodeExpandVolume after the set-up", func() bool {
		r, _ := fake.Last("NodeExpandVolume").(*csipb.NodeExpandVolumeRequest)
		return r != nil && r.GetCapacityRange().GetRequiredBytes() == 3<<30 && strings.Contains(r.GetVolumePath(), "/pods/u2/")
	})
}
