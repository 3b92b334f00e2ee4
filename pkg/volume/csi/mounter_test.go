package csi

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	plugincsi "github.com/gokubelet/kubelet/pkg/plugins/csi"
	"github.com/gokubelet/kubelet/pkg/plugins/csi/csitest"
)

// fakeAPI serves CSIDrivers, VolumeAttachments and Secrets from maps.
type fakeAPI struct {
	drivers map[string]*storagev1.CSIDriver
	vas     map[string]*storagev1.VolumeAttachment
	secrets map[string]*v1.Secret
}

func newFakeAPI() *fakeAPI {
	return &fakeAPI{drivers: map[string]*storagev1.CSIDriver{}, vas: map[string]*storagev1.VolumeAttachment{}, secrets: map[string]*v1.Secret{}}
}

func (f *fakeAPI) GetCSIDriver(_ context.Context, name string) (*storagev1.CSIDriver, error) {
	if d, ok := f.drivers[name]; ok {
		return d.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(storagev1.Resource("csidrivers"), name)
}

func (f *fakeAPI) GetVolumeAttachment(_ context.Context, name string) (*storagev1.VolumeAttachment, error) {
	if a, ok := f.vas[name]; ok {
		return a.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(storagev1.Resource("volumeattachments"), name)
}

func (f *fakeAPI) GetSecret(_ context.Context, ns, name string) (*v1.Secret, error) {
	if s, ok := f.secrets[ns+"/"+name]; ok {
		return s.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("secrets"), name)
}

const driverName = "fake.csi.example.com"

type mounterEnv struct {
	t       *testing.T
	root    string
	fake    *csitest.Driver
	drivers *plugincsi.Drivers
	api     *fakeAPI
	m       *Mounter
}

func newMounterEnv(t *testing.T, caps ...csipb.NodeServiceCapability_RPC_Type) *mounterEnv {
	t.Helper()
	e := &mounterEnv{t: t, root: t.TempDir(), fake: csitest.Start(t, driverName), drivers: plugincsi.New(plugincsi.Options{NodeName: "node-1"}), api: newFakeAPI()}
	e.fake.SetCapabilities(caps...)
	if err := e.drivers.RegisterPlugin(context.Background(), driverName, e.fake.Endpoint, []string{"1.0.0"}); err != nil {
		t.Fatal(err)
	}
	e.m = New(Options{RootDir: e.root, NodeName: "node-1", Drivers: e.drivers, API: e.api})
	return e
}

func (e *mounterEnv) csiDriver(mut func(*storagev1.CSIDriverSpec)) {
	d := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driverName}}
	mut(&d.Spec)
	e.api.drivers[driverName] = d
}

func mpod(uid string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + uid, Namespace: "ns", UID: types.UID(uid)}, Spec: v1.PodSpec{ServiceAccountName: "sa"}}
}

func pvWith(handle string, mut func(*v1.PersistentVolume)) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + handle}, Spec: v1.PersistentVolumeSpec{
		AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: driverName, VolumeHandle: handle}}}}
	if mut != nil {
		mut(pv)
	}
	return pv
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

var first = SetUpOptions{First: true}

// An inline volume is published straight to the pod (never staged, even
// by a driver that stages), with the pod's identity and its secret; its
// tear-down unpublishes it and leaves nothing behind.
func TestInlineVolumePublishedAndUnpublished(t *testing.T) {
	ctx := context.Background()
	e := newMounterEnv(t, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	e.csiDriver(func(s *storagev1.CSIDriverSpec) {
		s.PodInfoOnMount = ptr.To(true)
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}
	})
	e.api.secrets["ns/creds"] = &v1.Secret{Data: map[string][]byte{"user": []byte("u")}}
	pod := mpod("uid-1")
	v := Inline(pod, &v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: driverName,
		VolumeAttributes: map[string]string{"size": "1Mi"}, NodePublishSecretRef: &v1.LocalObjectReference{Name: "creds"}}}})
	res, err := e.m.SetUp(ctx, v, first)
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(e.root, "pods/uid-1/volumes/kubernetes.io~csi/data/mount")
	if res.Path != target || res.Republish {
		t.Errorf("result %+v", res)
	}
	req := e.fake.Last("NodePublishVolume").(*csipb.NodePublishVolumeRequest)
	if req.GetTargetPath() != target || req.GetStagingTargetPath() != "" || req.GetVolumeId() != EphemeralHandle("uid-1", "data") ||
		req.GetVolumeContext()["csi.storage.k8s.io/ephemeral"] != "true" || req.GetVolumeContext()["csi.storage.k8s.io/pod.name"] != "p-uid-1" ||
		req.GetVolumeContext()["size"] != "1Mi" || req.GetSecrets()["user"] != "u" ||
		req.GetVolumeCapability().GetAccessMode().GetMode() != csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER {
		t.Errorf("publish request %v", req)
	}
	data, err := readVolData(filepath.Dir(target))
	want := map[string]string{"specVolID": "data", "volumeHandle": EphemeralHandle("uid-1", "data"), "driverName": driverName,
		"nodeName": "node-1", "attachmentID": AttachmentName(EphemeralHandle("uid-1", "data"), driverName, "node-1"), "volumeLifecycleMode": "Ephemeral"}
	if err != nil || !reflect.DeepEqual(data, want) {
		t.Errorf("vol_data.json %v, %v", data, err)
	}
	if got := e.m.InUse(); len(got) != 0 {
		t.Errorf("inline volumes reported in use: %v", got)
	}

	if err := e.m.TearDownPod(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if got, want := e.fake.Methods(), []string{"NodeGetInfo", "NodeGetCapabilities", "NodePublishVolume", "NodeUnpublishVolume"}; !reflect.DeepEqual(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	if u := e.fake.Last("NodeUnpublishVolume").(*csipb.NodeUnpublishVolumeRequest); u.GetTargetPath() != target || u.GetVolumeId() != req.GetVolumeId() {
		t.Errorf("unpublish %v", u)
	}
	if exists(filepath.Dir(target)) || exists(PodVolumesDir(filepath.Join(e.root, "pods/uid-1"))) {
		t.Error("the volume's directory is left")
	}
}

// An inline volume of a driver without a CSIDriver object, or one that
// does not list Ephemeral, is refused before the driver is asked.
func TestInlineVolumeNeedsEphemeralMode(t *testing.T) {
	e := newMounterEnv(t)
	v := Inline(mpod("u"), &v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: driverName}}})
	if _, err := e.m.SetUp(context.Background(), v, first); err == nil || !strings.Contains(err.Error(), `volume mode "Ephemeral" not supported by driver `+driverName+` (no CSIDriver object)`) {
		t.Errorf("no CSIDriver: %v", err)
	}
	e.csiDriver(func(s *storagev1.CSIDriverSpec) {
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	})
	if _, err := e.m.SetUp(context.Background(), v, first); err == nil || !strings.Contains(err.Error(), `(only supports ["Persistent"])`) {
		t.Errorf("persistent-only driver: %v", err)
	}
	for _, m := range e.fake.Methods() {
		if m == "NodePublishVolume" {
			t.Error("published anyway")
		}
	}
}

// A persistent volume used by two pods is staged once; the first pod's
// tear-down only unpublishes, the last one's unstages too.
func TestPersistentVolumeStagedOncePerNode(t *testing.T) {
	ctx := context.Background()
	e := newMounterEnv(t, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	e.csiDriver(func(s *storagev1.CSIDriverSpec) {
		s.AttachRequired = ptr.To(false)
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	})
	e.api.secrets["kube-system/stage"] = &v1.Secret{Data: map[string][]byte{"key": []byte("s")}}
	pv := pvWith("vol-1", func(pv *v1.PersistentVolume) {
		pv.Spec.CSI.NodeStageSecretRef = &v1.SecretReference{Namespace: "kube-system", Name: "stage"}
		pv.Spec.CSI.FSType = "ext4"
		pv.Spec.CSI.VolumeAttributes = map[string]string{"a": "b"}
		pv.Spec.MountOptions = []string{"noatime"}
	})
	p1, p2 := mpod("uid-1"), mpod("uid-2")
	staging := StagingPath(e.root, driverName, "vol-1")
	for _, p := range []*v1.Pod{p1, p2} {
		res, err := e.m.SetUp(ctx, Persistent(p, "data", pv, false), first)
		if err != nil {
			t.Fatal(err)
		}
		if res.Path != filepath.Join(e.root, "pods", string(p.UID), "volumes/kubernetes.io~csi/pv-vol-1/mount") {
			t.Errorf("path %s", res.Path)
		}
		if req := e.fake.Last("NodePublishVolume").(*csipb.NodePublishVolumeRequest); req.GetStagingTargetPath() != staging || req.GetVolumeId() != "vol-1" ||
			req.GetVolumeCapability().GetMount().GetFsType() != "ext4" || len(req.GetVolumeContext()) != 1 {
			t.Errorf("publish %v", req)
		}
	}
	stage := e.fake.Last("NodeStageVolume").(*csipb.NodeStageVolumeRequest)
	if stage.GetStagingTargetPath() != staging || stage.GetSecrets()["key"] != "s" || stage.GetVolumeContext()["a"] != "b" ||
		!reflect.DeepEqual(stage.GetVolumeCapability().GetMount().GetMountFlags(), []string{"noatime"}) {
		t.Errorf("stage %v", stage)
	}
	if d, err := readVolData(filepath.Dir(staging)); err != nil || !reflect.DeepEqual(d, map[string]string{"volumeHandle": "vol-1", "driverName": driverName}) {
		t.Errorf("staging vol_data.json %v, %v", d, err)
	}
	// attachRequired: false: not listed in volumesInUse, as upstream
	// lists only attachable volumes.
	if got := e.m.InUse(); len(got) != 0 {
		t.Errorf("a volume that needs no attaching in use: %v", got)
	}

	if err := e.m.TearDownPod(ctx, p1.UID); err != nil {
		t.Fatal(err)
	}
	if !exists(staging) {
		t.Error("unstaged while another pod uses it")
	}
	if err := e.m.TearDownPod(ctx, p2.UID); err != nil {
		t.Fatal(err)
	}
	want := []string{"NodeGetInfo", "NodeGetCapabilities", "NodeStageVolume", "NodePublishVolume", "NodePublishVolume",
		"NodeUnpublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume"}
	if got := e.fake.Methods(); !reflect.DeepEqual(got, want) {
		t.Errorf("calls %v\nwant %v", got, want)
	}
	if u := e.fake.Last("NodeUnstageVolume").(*csipb.NodeUnstageVolumeRequest); u.GetStagingTargetPath() != staging || u.GetVolumeId() != "vol-1" {
		t.Errorf("unstage %v", u)
	}
	if exists(filepath.Dir(staging)) {
		t.Error("staging directory left")
	}
	if got := e.m.InUse(); len(got) != 0 {
		t.Errorf("still in use: %v", got)
	}

	// Used again: staged again.
	if _, err := e.m.SetUp(ctx, Persistent(mpod("uid-3"), "data", pv, false), first); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.Join(e.fake.Methods(), " "), "NodeStageVolume"); n != 2 {
		t.Errorf("staged %d times", n)
	}
}

// A driver that does not stage publishes without a staging path and is
// never asked to unstage.
func TestPersistentVolumeWithoutStaging(t *testing.T) {
	ctx := context.Background()
	e := newMounterEnv(t)
	e.csiDriver(func(s *storagev1.CSIDriverSpec) { s.AttachRequired = ptr.To(false) })
	pod := mpod("uid-1")
	if _, err := e.m.SetUp(ctx, Persistent(pod, "data", pvWith("vol-1", nil), true), first); err != nil {
		t.Fatal(err)
	}
	if req := e.fake.Last("NodePublishVolume").(*csipb.NodePublishVolumeRequest); req.GetStagingTargetPath() != "" || !req.GetReadonly() {
		t.Errorf("publish %v", req)
	}
	if err := e.m.TearDownPod(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if got, want := e.fake.Methods(), []string{"NodeGetInfo", "NodeGetCapabilities", "NodePublishVolume", "NodeUnpublishVolume"}; !reflect.DeepEqual(got, want) {
		t.Errorf("calls %v", got)
	}
	if exists(filepath.Join(e.root, "plugins")) {
		t.Error("a staging directory was made")
	}
}

// A volume whose driver attaches (no CSIDriver object, or attachRequired)
// waits for its VolumeAttachment to report attached, then stages and
// publishes with the attacher's publish context.
func TestPersistentVolumeWaitsForAttach(t *testing.T) {
	ctx := context.Background()
	e := newMounterEnv(t, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	v := Persistent(mpod("uid-1"), "data", pvWith("vol-1", nil), false)
	va := AttachmentName("vol-1", driverName, "node-1")
	_, err := e.m.SetUp(ctx, v, first)
	if err == nil || !strings.Contains(err.Error(), `waiting for volume "data" (PersistentVolume "pv-vol-1", handle "vol-1") of CSI driver "`+driverName+`" to be attached to this node (VolumeAttachment `+va+`)`) {
		t.Errorf("no VolumeAttachment: %v", err)
	}
	e.api.vas[va] = &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: va}, Status: storagev1.VolumeAttachmentStatus{
		AttachError: &storagev1.VolumeError{Message: "disk busy"}}}
	if _, err := e.m.SetUp(ctx, v, first); err == nil || !strings.Contains(err.Error(), "attaching failed (VolumeAttachment "+va+"): disk busy") {
		t.Errorf("attach error: %v", err)
	}
	if got := e.m.InUse(); len(got) != 1 {
		t.Errorf("a volume waiting for attach is in use (the controller must not detach it): %v", got)
	}
	e.api.vas[va] = &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: va}, Status: storagev1.VolumeAttachmentStatus{
		Attached: true, AttachmentMetadata: map[string]string{"device": "/dev/mock"}}}
	if _, err := e.m.SetUp(ctx, v, first); err != nil {
		t.Fatal(err)
	}
	if s := e.fake.Last("NodeStageVolume").(*csipb.NodeStageVolumeRequest); s.GetPublishContext()["device"] != "/dev/mock" {
		t.Errorf("stage %v", s)
	}
	if p := e.fake.Last("NodePublishVolume").(*csipb.NodePublishVolumeRequest); p.GetPublishContext()["device"] != "/dev/mock" {
		t.Errorf("publish %v", p)
	}
}

// A publish the driver refused leaves nothing to tear down; one that
// timed out may have happened, so tear-down unpublishes it.
func TestRefusedAndUncertainPublish(t *testing.T) {
	ctx := context.Background()
	e := newMounterEnv(t)
	e.csiDriver(func(s *storagev1.CSIDriverSpec) { s.AttachRequired = ptr.To(false) })

	e.fake.Fail("NodePublishVolume", status.Error(codes.NotFound, "no volume vol-1"))
	refused := mpod("uid-1")
	_, err := e.m.SetUp(ctx, Persistent(refused, "data", pvWith("vol-1", nil), false), first)
	if err == nil || err.Error() != `CSI driver "`+driverName+`": NodePublishVolume failed: no volume vol-1 (NotFound)` {
		t.Errorf("refused: %v", err)
	}
	if exists(filepath.Join(e.root, "pods/uid-1/volumes/kubernetes.io~csi/pv-vol-1")) {
		t.Error("a refused publish left its directory")
	}

	e.fake.Fail("NodePublishVolume", status.Error(codes.DeadlineExceeded, "slow"))
	uncertain := mpod("uid-2")
	if _, err := e.m.SetUp(ctx, Persistent(uncertain, "data", pvWith("vol-2", nil), false), first); err == nil {
		t.Fatal("timed-out publish succeeded")
	}
	if !exists(filepath.Join(e.root, "pods/uid-2/volumes/kubernetes.io~csi/pv-vol-2", VolDataFile)) {
		t.Error("an uncertain publish lost its vol_data.json")
	}
	e.fake.Fail("NodePublishVolume", nil)
	for _, p := range []*v1.Pod{refused, uncertain} {
		if err := e.m.TearDownPod(ctx, p.UID); err != nil {
			t.Fatal(err)
		}
	}
	unpublished := 0
	for _, c := range e.fake.Calls() {
		if c.Method == "NodeUnpublishVolume" {
			unpublished++
			if id := c.Req.(*csipb.NodeUnpublishVolumeRequest).GetVolumeId(); id != "vol-2" {
				t.Errorf("unpublished %s", id)
			}
		}
	}
	if unpublished != 1 {
		t.Errorf("%d unpublish calls, want 1 (the uncertain one)", unpublished)
	}
}

// A refused stage leaves no staging directory; the volume is not
// published.
func TestRefusedStage(t *testing.T) {
	e := newMounterEnv(t, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	e.csiDriver(func(s *storagev1.CSIDriverSpec) { s.AttachRequired = ptr.To(false) })
	e.fake.Fail("NodeStageVolume", status.Error(codes.InvalidArgument, "bad fsType"))
	_, err := e.m.SetUp(context.Background(), Persistent(mpod("u"), "data", pvWith("vol-1", nil), false), first)
	if err == nil || !strings.Contains(err.Error(), "NodeStageVolume failed: bad fsType (InvalidArgument)") {
		t.Errorf("refused stage: %v", err)
	}
	if exists(filepath.Dir(StagingPath(e.root, driverName, "vol-1"))) {
		t.Error("staging directory left")
	}
	if e.fake.Last("NodePublishVolume") != nil {
		t.Error("published an unstaged volume")
	}
}

// A stage that timed out may have staged: the pod's tear-down unstages
// the volume though it was never published.
func TestUncertainStageUnstagedAtTearDown(t *testing.T) {
	ctx := context.Background()
	e := newMounterEnv(t, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	e.csiDriver(func(s *storagev1.CSIDriverSpec) { s.AttachRequired = ptr.To(false) })
	e.fake.Fail("NodeStageVolume", status.Error(codes.DeadlineExceeded, "slow disk"))
	pod := mpod("uid-1")
	if _, err := e.m.SetUp(ctx, Persistent(pod, "data", pvWith("vol-1", nil), false), first); err == nil {
		t.Fatal("timed-out stage succeeded")
	}
	staging := StagingPath(e.root, driverName, "vol-1")
	if !exists(filepath.Join(filepath.Dir(staging), VolDataFile)) {
		t.Fatal("an uncertain stage lost its record")
	}
	if err := e.m.TearDownPod(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if u, ok := e.fake.Last("NodeUnstageVolume").(*csipb.NodeUnstageVolumeRequest); !ok || u.GetStagingTargetPath() != staging {
		t.Errorf("unstage %v", e.fake.Methods())
	}
	if e.fake.Last("NodeUnpublishVolume") != nil || exists(filepath.Dir(staging)) {
		t.Errorf("calls %v; staging left: %v", e.fake.Methods(), exists(filepath.Dir(staging)))
	}
	if got := e.m.InUse(); len(got) != 0 {
		t.Errorf("in use after tear-down: %v", got)
	}
}

// Tear-down needs the driver: without it the volume stays (and stays in
// use) and the error says why; once the driver is back it goes.
func TestTearDownWaitsForTheDriver(t *testing.T) {
	ctx := context.Background()
	e := newMounterEnv(t)
	e.csiDriver(func(s *storagev1.CSIDriverSpec) { s.AttachRequired = ptr.To(false) })
	pod := mpod("uid-1")
	if _, err := e.m.SetUp(ctx, Persistent(pod, "data", pvWith("vol-1", nil), false), first); err != nil {
		t.Fatal(err)
	}
	// A kubelet restarted without the driver registered yet.
	without := New(Options{RootDir: e.root, NodeName: "node-1", Drivers: plugincsi.New(plugincsi.Options{}), API: e.api})
	err := without.TearDownPod(ctx, pod.UID)
	var nr *plugincsi.NotRegisteredError
	if !errors.As(err, &nr) || !strings.Contains(err.Error(), `unpublishing volume "pv-vol-1" (handle "vol-1"): CSI driver "`+driverName+`" is not registered`) {
		t.Errorf("without the driver: %v", err)
	}
	vd := filepath.Join(e.root, "pods/uid-1/volumes/kubernetes.io~csi/pv-vol-1", VolDataFile)
	if !exists(vd) {
		t.Fatal("the volume's record was removed before it was unpublished")
	}
	if got := without.InUse(); len(got) != 1 {
		t.Errorf("a published volume found after a restart is not in use: %v", got)
	}
	e.fake.Fail("NodeUnpublishVolume", status.Error(codes.Internal, "busy"))
	if err := e.m.TearDownPod(ctx, pod.UID); err == nil || !exists(vd) {
		t.Errorf("failed unpublish: %v", err)
	}
	e.fake.Fail("NodeUnpublishVolume", nil)
	if err := e.m.TearDownPod(ctx, pod.UID); err != nil || exists(vd) {
		t.Errorf("with the driver: %v", err)
	}
}

// A driver that asks for it is republished; a refused republish keeps
// the volume.
func TestRequiresRepublish(t *testing.T) {
	ctx := context.Background()
	e := newMounterEnv(t)
	e.csiDriver(func(s *storagev1.CSIDriverSpec) {
		s.AttachRequired = ptr.To(false)
		s.RequiresRepublish = ptr.To(true)
	})
	v := Persistent(mpod("uid-1"), "data", pvWith("vol-1", nil), false)
	res, err := e.m.SetUp(ctx, v, first)
	if err != nil || !res.Republish {
		t.Fatalf("%+v, %v", res, err)
	}
	e.fake.Fail("NodePublishVolume", status.Error(codes.Internal, "token rejected"))
	if _, err := e.m.SetUp(ctx, v, SetUpOptions{}); err == nil {
		t.Error("refused republish succeeded")
	}
	if !exists(filepath.Join(filepath.Dir(res.Path), VolDataFile)) {
		t.Error("a refused republish removed the volume")
	}
}

// upstreamLayout writes what the upstream kubelet leaves on disk for a
// persistent volume it staged and published to a pod (the paths and the
// vol_data.json files of its CSI plugin, SELinux context included, as its
// JSON encoder writes them): the staging directory always, its record
// when staged, the pod's record and publish target.
func upstreamLayout(t *testing.T, root, uid, handle string, staged bool, stagingExtra string) {
	t.Helper()
	staging := StagingPath(root, driverName, handle)
	target := PublishPath(filepath.Join(root, "pods", uid), "pv-"+handle)
	for _, d := range []string{staging, target} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{filepath.Join(filepath.Dir(target), VolDataFile): `{"attachmentID":"csi-` + sha256Hex(handle+driverName+"node-1") +
		`","driverName":"` + driverName + `","nodeName":"node-1","seLinuxMountContext":"ctx","specVolID":"pv-` + handle +
		`","volumeHandle":"` + handle + `","volumeLifecycleMode":"Persistent"}` + "\n"}
	if staged {
		files[filepath.Join(filepath.Dir(staging), VolDataFile)] = `{"driverName":"` + driverName + `","seLinuxMountContext":"ctx","volumeHandle":"` + handle + `"}` + "\n"
	}
	if stagingExtra != "" {
		files[filepath.Join(staging, stagingExtra)] = "x"
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o640); err != nil {
			t.Fatal(err)
		}
	}
}

func sha256Hex(s string) string { return fmt.Sprintf("%x", sha256.Sum256([]byte(s))) }

// A volume the upstream kubelet staged and published is this kubelet's
// after a takeover: in use at once, set up again at the very same paths
// (the idempotent repeat upstream makes after its own restart) keeping
// upstream's SELinux record, and torn down, unpublished then unstaged,
// leaving nothing. For a driver that does not stage, the empty staging
// directory upstream leaves is removed too; anything in it stays.
func TestTakeoverFromUpstream(t *testing.T) {
	stage := csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME
	for _, tc := range []struct {
		name         string
		caps         []csipb.NodeServiceCapability_RPC_Type
		staged       bool
		stagingExtra string
		setUp        bool
		wantCalls    []string
		wantLeft     bool
	}{
		{name: "staged, pod synced, then deleted", caps: []csipb.NodeServiceCapability_RPC_Type{stage}, staged: true, setUp: true,
			wantCalls: []string{"NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume"}},
		{name: "staged, pod deleted before any sync", caps: []csipb.NodeServiceCapability_RPC_Type{stage}, staged: true,
			wantCalls: []string{"NodeUnpublishVolume", "NodeUnstageVolume"}},
		{name: "driver without staging, pod synced, then deleted", setUp: true,
			wantCalls: []string{"NodePublishVolume", "NodeUnpublishVolume"}},
		{name: "driver without staging, pod deleted before any sync",
			wantCalls: []string{"NodeUnpublishVolume"}},
		{name: "driver without staging, something in the staging directory", stagingExtra: "file",
			wantCalls: []string{"NodeUnpublishVolume"}, wantLeft: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newMounterEnv(t, tc.caps...)
			e.csiDriver(func(s *storagev1.CSIDriverSpec) { s.AttachRequired = ptr.To(false) })
			upstreamLayout(t, e.root, "uid-1", "vol-1", tc.staged, tc.stagingExtra)
			staging := StagingPath(e.root, driverName, "vol-1")
			target := PublishPath(filepath.Join(e.root, "pods", "uid-1"), "pv-vol-1")
			if got := e.m.InUse(); !reflect.DeepEqual(got, []v1.UniqueVolumeName{"kubernetes.io/csi/" + driverName + "^vol-1"}) {
				t.Errorf("in use before any sync: %v", got)
			}
			if tc.setUp {
				res, err := e.m.SetUp(ctx, Persistent(mpod("uid-1"), "data", pvWith("vol-1", nil), false), first)
				if err != nil || res.Path != target {
					t.Fatalf("set up: %+v, %v", res, err)
				}
				if tc.staged {
					if req := e.fake.Last("NodeStageVolume").(*csipb.NodeStageVolumeRequest); req.GetStagingTargetPath() != staging {
						t.Errorf("staged again at %s, not %s", req.GetStagingTargetPath(), staging)
					}
					if d, _ := readVolData(filepath.Dir(staging)); d["seLinuxMountContext"] != "ctx" {
						t.Errorf("staging record lost upstream's SELinux context: %v", d)
					}
				}
				if req := e.fake.Last("NodePublishVolume").(*csipb.NodePublishVolumeRequest); req.GetTargetPath() != target {
					t.Errorf("published again at %s, not %s", req.GetTargetPath(), target)
				}
				if d, _ := readVolData(filepath.Dir(target)); d["seLinuxMountContext"] != "ctx" || d[keySpecVolID] != "pv-vol-1" {
					t.Errorf("publish record: %v", d)
				}
				// Its CSIDriver read: no attaching, so no longer in use.
				if got := e.m.InUse(); len(got) != 0 {
					t.Errorf("in use once known to need no attaching: %v", got)
				}
			}
			if err := e.m.TearDownPod(ctx, "uid-1"); err != nil {
				t.Fatal(err)
			}
			var calls []string
			for _, c := range e.fake.Methods() {
				if !strings.HasPrefix(c, "NodeGet") {
					calls = append(calls, c)
				}
			}
			if !reflect.DeepEqual(calls, tc.wantCalls) {
				t.Errorf("calls %v, want %v", calls, tc.wantCalls)
			}
			if exists(filepath.Dir(target)) {
				t.Error("the pod's volume directory is left")
			}
			if left := exists(filepath.Dir(staging)); left != tc.wantLeft {
				t.Errorf("staging directory left: %v, want %v", left, tc.wantLeft)
			}
			if got := e.m.InUse(); len(got) != 0 {
				t.Errorf("in use after tear-down: %v", got)
			}
		})
	}
}
