package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	plugincsi "github.com/gokubelet/kubelet/pkg/plugins/csi"
	"github.com/gokubelet/kubelet/pkg/plugins/csi/csitest"
	volcsi "github.com/gokubelet/kubelet/pkg/volume/csi"
)

// csiAPI serves CSIDrivers and VolumeAttachments from maps, secrets from
// the env's objects.
type csiAPI struct {
	e       *env
	drivers map[string]*storagev1.CSIDriver
}

func (a *csiAPI) GetCSIDriver(_ context.Context, name string) (*storagev1.CSIDriver, error) {
	if d, ok := a.drivers[name]; ok {
		return d.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(storagev1.Resource("csidrivers"), name)
}

func (a *csiAPI) GetVolumeAttachment(_ context.Context, name string) (*storagev1.VolumeAttachment, error) {
	return nil, apierrors.NewNotFound(storagev1.Resource("volumeattachments"), name)
}

func (a *csiAPI) GetSecret(ctx context.Context, ns, name string) (*v1.Secret, error) {
	return a.e.objects.GetSecret(ctx, ns, name)
}

// withCSI gives the env's manager the node's CSI drivers.
func (e *env) withCSI(drivers volcsi.Drivers) *csiAPI {
	api := &csiAPI{e: e, drivers: map[string]*storagev1.CSIDriver{}}
	e.m.opts.CSIDrivers, e.m.opts.CSIAPI, e.m.opts.NodeName = drivers, api, "node-1"
	e.m.csi = volcsi.New(volcsi.Options{RootDir: e.root, NodeName: "node-1", Drivers: drivers, API: api, Tokens: e.tokens})
	return api
}

// A CSI volume, inline or through a claim, of a driver the node does not
// have keeps its pod waiting with a reason that names the driver.
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

	e.withCSI(plugincsi.New(plugincsi.Options{}))
	c := e.addClaim("claim", "pv1", v1.ClaimBound)
	e.addPV("pv1", c, v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "gone.csi.example.com", VolumeHandle: "vol-1"}})
	if err := e.m.SetUpPod(ctx, pod("u2", pvcVol("data", "claim"))); err == nil ||
		!strings.Contains(err.Error(), `PersistentVolume "pv1" has type csi, which this node cannot mount (CSI driver "gone.csi.example.com" is not registered on this node)`) {
		t.Errorf("claim, driver not registered: %v", err)
	}
}

// Inline and claimed CSI volumes are published and mounted by the pod's
// containers from the publish target; a driver's failure is the pod's
// reason and a FailedMount event, and affects no other pod; tear-down
// unpublishes and unstages.
func TestCSIVolumesSetUpAndTornDown(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	fake := csitest.Start(t, "fake.csi.example.com")
	fake.SetCapabilities(csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	drivers := plugincsi.New(plugincsi.Options{})
	if err := drivers.RegisterPlugin(ctx, fake.Name, fake.Endpoint, []string{"1.0.0"}); err != nil {
		t.Fatal(err)
	}
	api := e.withCSI(drivers)
	api.drivers[fake.Name] = &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: fake.Name}, Spec: storagev1.CSIDriverSpec{
		AttachRequired: ptr.To(false), PodInfoOnMount: ptr.To(true),
		VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}}}
	c := e.addClaim("claim", "pv1", v1.ClaimBound)
	e.addPV("pv1", c, v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: fake.Name, VolumeHandle: "vol-1"}})
	e.addClaim("bad", "pv2", v1.ClaimBound)
	e.addPV("pv2", e.claims.pvcs["ns/bad"], v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: fake.Name, VolumeHandle: "vol-2"}})

	p := pod("u1",
		vol("inline", v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: fake.Name, ReadOnly: ptr.To(true)}}),
		pvcVol("data", "claim"),
		vol("scratch", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}))
	e.setUp(p)
	// The stats list both CSI volumes (measured by their driver), the
	// inline one without a claim.
	var listed []string
	for _, c := range e.m.ClaimVolumes(p.UID) {
		listed = append(listed, fmt.Sprintf("%s:%s:%s:%s:%s", c.Volume, c.Claim, c.CSIDriver, c.CSIHandle, strings.TrimPrefix(c.Path, e.root)))
	}
	if want := []string{
		"data:claim:fake.csi.example.com:vol-1:/pods/u1/volumes/kubernetes.io~csi/pv1/mount",
		"inline::fake.csi.example.com:" + volcsi.EphemeralHandle("u1", "inline") + ":/pods/u1/volumes/kubernetes.io~csi/inline/mount",
	}; !slices.Equal(listed, want) {
		t.Errorf("claim volumes %v, want %v", listed, want)
	}
	mnts, err := e.m.ContainerMounts(ctx, p, &p.Spec.Containers[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	hostPaths := map[string]string{}
	readOnly := map[string]bool{}
	for _, m := range mnts {
		hostPaths[m.ContainerPath] = m.HostPath
		readOnly[m.ContainerPath] = m.ReadOnly
	}
	if hostPaths["/v/inline"] != filepath.Join(e.root, "pods/u1/volumes/kubernetes.io~csi/inline/mount") || !readOnly["/v/inline"] ||
		hostPaths["/v/data"] != filepath.Join(e.root, "pods/u1/volumes/kubernetes.io~csi/pv1/mount") || readOnly["/v/data"] {
		t.Errorf("mounts %+v", mnts)
	}

	// A volume the driver refuses: the pod waits, with the driver's
	// words; the other pod is not touched.
	fake.Fail("NodeStageVolume", status.Error(codes.NotFound, "volume vol-2 does not exist"))
	err = e.m.SetUpPod(ctx, pod("u2", pvcVol("data", "bad")))
	if err == nil || !strings.Contains(err.Error(), `volume "data" (persistentVolumeClaim "bad"): CSI driver "fake.csi.example.com": NodeStageVolume failed: volume vol-2 does not exist (NotFound)`) {
		t.Errorf("refused stage: %v", err)
	}
	if !hasEvent(e.events(), "FailedMount", `MountVolume.SetUp failed for volume "data"`, "NodeStageVolume failed: volume vol-2 does not exist") {
		t.Error("no FailedMount event for the refused stage")
	}
	if !e.m.Ready(p.UID) {
		t.Error("the first pod is no longer ready")
	}

	if err := e.m.TearDownPod(ctx, p.UID); err != nil {
		t.Fatal(err)
	}
	methods := strings.Join(fake.Methods(), " ")
	if strings.Count(methods, "NodeUnpublishVolume") != 2 || strings.Count(methods, "NodeUnstageVolume") != 1 {
		t.Errorf("calls %s", methods)
	}
	if _, err := os.Stat(filepath.Join(e.root, "pods/u1/volumes")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("volumes left: %v", err)
	}
}

// A CSI volume whose driver is gone keeps its directory (the next
// tear-down finds it); the pod's other volumes go anyway.
func TestCSITearDownWithoutTheDriverKeepsOnlyItsVolume(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	fake := csitest.Start(t, "fake.csi.example.com")
	drivers := plugincsi.New(plugincsi.Options{})
	if err := drivers.RegisterPlugin(ctx, fake.Name, fake.Endpoint, []string{"1.0.0"}); err != nil {
		t.Fatal(err)
	}
	api := e.withCSI(drivers)
	api.drivers[fake.Name] = &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: fake.Name}, Spec: storagev1.CSIDriverSpec{
		VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}}}
	p := pod("u1", vol("inline", v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: fake.Name}}),
		vol("scratch", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}))
	e.setUp(p)
	drivers.DeRegisterPlugin(ctx, fake.Name, fake.Endpoint)
	err := e.m.TearDownPod(ctx, p.UID)
	if err == nil || !strings.Contains(err.Error(), `CSI driver "fake.csi.example.com" is not registered on this node`) {
		t.Errorf("tear-down without the driver: %v", err)
	}
	if _, err := os.Stat(e.volDir(p, "kubernetes.io~csi", "inline")); err != nil {
		t.Errorf("CSI volume directory: %v", err)
	}
	if _, err := os.Stat(e.volDir(p, dirEmptyDir, "scratch")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("emptyDir left: %v", err)
	}
	if err := drivers.RegisterPlugin(ctx, fake.Name, fake.Endpoint, []string{"1.0.0"}); err != nil {
		t.Fatal(err)
	}
	if err := e.m.RemovePodDir(ctx, p.UID); err != nil {
		t.Fatal(err)
	}
	if fake.Last("NodeUnpublishVolume") == nil {
		t.Error("never unpublished")
	}
}
