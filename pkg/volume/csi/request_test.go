package csi

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	plugincsi "github.com/gokubelet/kubelet/pkg/plugins/csi"
)

// Paths and names are upstream's, byte for byte (the hashes were computed
// apart from this code).
func TestPathsAndNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{StagingPath("/var/lib/kubelet", "mock.csi.example.com", "vol-1"),
			"/var/lib/kubelet/plugins/kubernetes.io/csi/mock.csi.example.com/d2e8363faaac7ae76def3b14091d8eb5755f6b92e9531627aeec833a8731cc49/globalmount"},
		{PublishPath("/var/lib/kubelet/pods/uid-1", "pv-a"), "/var/lib/kubelet/pods/uid-1/volumes/kubernetes.io~csi/pv-a/mount"},
		{PublishPath("/r/pods/u", "a/b"), "/r/pods/u/volumes/kubernetes.io~csi/a~b/mount"},
		{AttachmentName("vol-1", "mock.csi.example.com", "node-1"), "csi-950fa7da69d24fa1b3fb1e187444b7b9acf40fc4dded7a7741cac76f20224422"},
		{EphemeralHandle("uid-1", "data"), "csi-d6e418cffb6079f9b02d83af7dffbf3511ed5a26b3f106f1f3ca764ed6505c9c"},
		{UniqueVolumeName("mock.csi.example.com", "vol-1"), "kubernetes.io/csi/mock.csi.example.com^vol-1"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %s, want %s", tc.got, tc.want)
		}
	}
	for _, bad := range []string{"", "../x", "a/b", ".hidden"} {
		if checkDriverName(bad) == nil {
			t.Errorf("driver name %q accepted", bad)
		}
	}
	if err := checkDriverName("hostpath.csi.k8s.io"); err != nil {
		t.Error(err)
	}
}

// vol_data.json has upstream's keys; one written by upstream reads back.
func TestVolDataRoundTrip(t *testing.T) {
	dir := t.TempDir()
	p := Published{SpecName: "pv-a", VolumeHandle: "vol-1", Driver: "d", NodeName: "n", AttachmentID: "csi-x", Mode: storagev1.VolumeLifecyclePersistent}
	if err := writeVolData(dir, p.data()); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, VolDataFile))
	want := `{"attachmentID":"csi-x","driverName":"d","nodeName":"n","specVolID":"pv-a","volumeHandle":"vol-1","volumeLifecycleMode":"Persistent"}` + "\n"
	if string(b) != want {
		t.Errorf("vol_data.json %q, want %q", b, want)
	}
	if got, err := readPublished(dir); err != nil || got != p {
		t.Errorf("read back %+v, %v", got, err)
	}
	// An older upstream's file, without the lifecycle mode: persistent.
	os.WriteFile(filepath.Join(dir, VolDataFile), []byte(`{"driverName":"d","volumeHandle":"h","specVolID":"s"}`), 0o600)
	if got, err := readPublished(dir); err != nil || got.Mode != storagev1.VolumeLifecyclePersistent || got.VolumeHandle != "h" {
		t.Errorf("older file: %+v, %v", got, err)
	}
	os.WriteFile(filepath.Join(dir, VolDataFile), []byte(`{"specVolID":"s"}`), 0o600)
	if _, err := readPublished(dir); err == nil {
		t.Error("a file without handle and driver read")
	}
	if _, err := readPublished(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func testPod() *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1"}, Spec: v1.PodSpec{ServiceAccountName: "sa"}}
}

func csiDriver(mut func(*storagev1.CSIDriverSpec)) *storagev1.CSIDriver {
	d := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "d"}}
	mut(&d.Spec)
	return d
}

func TestPublishVolumeContext(t *testing.T) {
	pod := testPod()
	inline := Inline(pod, &v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "d", VolumeAttributes: map[string]string{"size": "1Gi"}}}})
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
		CSI: &v1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}}}}
	persistent := Persistent(pod, "data", pv, false)
	podInfo := csiDriver(func(s *storagev1.CSIDriverSpec) { s.PodInfoOnMount = ptr.To(true) })
	tokensInSecrets := csiDriver(func(s *storagev1.CSIDriverSpec) { s.ServiceAccountTokenInSecrets = ptr.To(true) })
	for _, tc := range []struct {
		name   string
		v      *Volume
		drv    *storagev1.CSIDriver
		tokens string
		want   map[string]string
	}{
		{"attributes only without a CSIDriver", inline, nil, "", map[string]string{"size": "1Gi"}},
		{"nothing at all", persistent, nil, "", nil},
		{"podInfoOnMount false", inline, csiDriver(func(s *storagev1.CSIDriverSpec) { s.PodInfoOnMount = ptr.To(false) }), "", map[string]string{"size": "1Gi"}},
		{"podInfoOnMount, inline", inline, podInfo, "", map[string]string{"size": "1Gi",
			"csi.storage.k8s.io/pod.name": "p", "csi.storage.k8s.io/pod.namespace": "ns", "csi.storage.k8s.io/pod.uid": "uid-1",
			"csi.storage.k8s.io/serviceAccount.name": "sa", "csi.storage.k8s.io/ephemeral": "true"}},
		{"podInfoOnMount, persistent", persistent, podInfo, "", map[string]string{
			"csi.storage.k8s.io/pod.name": "p", "csi.storage.k8s.io/pod.namespace": "ns", "csi.storage.k8s.io/pod.uid": "uid-1",
			"csi.storage.k8s.io/serviceAccount.name": "sa", "csi.storage.k8s.io/ephemeral": "false"}},
		{"tokens in the context", persistent, csiDriver(func(*storagev1.CSIDriverSpec) {}), `{"":{}}`, map[string]string{"csi.storage.k8s.io/serviceAccount.tokens": `{"":{}}`}},
		{"tokens in the secrets", persistent, tokensInSecrets, `{"":{}}`, nil},
	} {
		if got := publishVolumeContext(tc.v, tc.drv, tc.tokens); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// The attributes of the pod spec are not changed.
	if len(inline.Attributes) != 1 {
		t.Errorf("attributes changed: %v", inline.Attributes)
	}
	if got := publishSecrets(map[string][]byte{"k": []byte("v")}, tokensInSecrets, "T"); !reflect.DeepEqual(got, map[string]string{"k": "v", "csi.storage.k8s.io/serviceAccount.tokens": "T"}) {
		t.Errorf("secrets with tokens: %v", got)
	}
	if got := publishSecrets(nil, nil, "T"); got != nil {
		t.Errorf("secrets without: %v", got)
	}
}

func TestVolumesFromTheSpec(t *testing.T) {
	pod := testPod()
	in := Inline(pod, &v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "d", ReadOnly: ptr.To(true),
		FSType: ptr.To("ext4"), NodePublishSecretRef: &v1.LocalObjectReference{Name: "s"}}}})
	if in.Mode() != storagev1.VolumeLifecycleEphemeral || in.SpecName() != "data" || !in.ReadOnly || in.FSType != "ext4" ||
		in.PublishSecret == nil || *in.PublishSecret != (v1.SecretReference{Namespace: "ns", Name: "s"}) || in.Handle != EphemeralHandle("uid-1", "data") {
		t.Errorf("inline %+v", in)
	}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: v1.PersistentVolumeSpec{
		AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}, MountOptions: []string{"noatime"},
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h", FSType: "xfs",
			NodeStageSecretRef: &v1.SecretReference{Namespace: "other", Name: "stage"}}}}}
	p := Persistent(pod, "data", pv, true)
	if p.Mode() != storagev1.VolumeLifecyclePersistent || p.SpecName() != "pv" || !p.ReadOnly || p.Handle != "h" || p.StageSecret.Namespace != "other" ||
		p.PublishSecret != nil || !reflect.DeepEqual(p.MountOptions, []string{"noatime"}) {
		t.Errorf("persistent %+v", p)
	}
	if !strings.Contains(p.describe(), `PersistentVolume "pv"`) || !strings.Contains(p.describe(), `CSI driver "d"`) || !strings.Contains(in.describe(), `inline volume "data" of CSI driver "d"`) {
		t.Errorf("describe: %s / %s", p.describe(), in.describe())
	}
}

func TestLifecycleModeAndAttach(t *testing.T) {
	inline := &Volume{Driver: "d"}
	persistent := &Volume{Driver: "d", PV: "pv"}
	both := csiDriver(func(s *storagev1.CSIDriverSpec) {
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}
	})
	persistentOnly := csiDriver(func(s *storagev1.CSIDriverSpec) {
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	})
	ephemeralOnly := csiDriver(func(s *storagev1.CSIDriverSpec) {
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}
	})
	for _, tc := range []struct {
		v    *Volume
		drv  *storagev1.CSIDriver
		want string
	}{
		{persistent, nil, ""},
		{inline, nil, `volume mode "Ephemeral" not supported by driver d (no CSIDriver object)`},
		{inline, both, ""},
		{persistent, both, ""},
		{inline, persistentOnly, `volume mode "Ephemeral" not supported by driver d (only supports ["Persistent"])`},
		{persistent, ephemeralOnly, `volume mode "Persistent" not supported by driver d (only supports ["Ephemeral"])`},
		{persistent, csiDriver(func(*storagev1.CSIDriverSpec) {}), ""},
		{inline, csiDriver(func(*storagev1.CSIDriverSpec) {}), `volume mode "Ephemeral" not supported by driver d (only supports ["Persistent"])`},
	} {
		err := checkLifecycleMode(tc.drv, tc.v)
		if (tc.want == "" && err != nil) || (tc.want != "" && (err == nil || err.Error() != tc.want)) {
			t.Errorf("%s, %v: %v, want %q", tc.v.Mode(), tc.drv != nil, err, tc.want)
		}
	}
	for _, tc := range []struct {
		drv  *storagev1.CSIDriver
		want bool
	}{
		{nil, true},
		{both, true},
		{csiDriver(func(s *storagev1.CSIDriverSpec) { s.AttachRequired = ptr.To(true) }), true},
		{csiDriver(func(s *storagev1.CSIDriverSpec) { s.AttachRequired = ptr.To(false) }), false},
	} {
		if got := attachRequired(tc.drv); got != tc.want {
			t.Errorf("attachRequired(%+v) = %v", tc.drv, got)
		}
	}
}

func TestAccessModeAndCapability(t *testing.T) {
	multi := plugincsi.NodeCaps{SingleNodeMultiWriter: true}
	for _, tc := range []struct {
		modes []v1.PersistentVolumeAccessMode
		caps  plugincsi.NodeCaps
		want  csipb.VolumeCapability_AccessMode_Mode
	}{
		{nil, plugincsi.NodeCaps{}, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{[]v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, plugincsi.NodeCaps{}, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{[]v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, multi, csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER},
		{[]v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}, plugincsi.NodeCaps{}, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{[]v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}, multi, csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER},
		{[]v1.PersistentVolumeAccessMode{v1.ReadOnlyMany, v1.ReadWriteOnce}, plugincsi.NodeCaps{}, csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY},
		{[]v1.PersistentVolumeAccessMode{v1.ReadWriteMany}, multi, csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
	} {
		if got := accessMode(tc.modes, tc.caps); got != tc.want {
			t.Errorf("accessMode(%v, %+v) = %v, want %v", tc.modes, tc.caps, got, tc.want)
		}
	}
	v := &Volume{FSType: "ext4", MountOptions: []string{"ro"}}
	gid := int64(2000)
	c := capability(v, plugincsi.NodeCaps{VolumeMountGroup: true}, &gid)
	if m := c.GetMount(); m.GetFsType() != "ext4" || !reflect.DeepEqual(m.GetMountFlags(), []string{"ro"}) || m.GetVolumeMountGroup() != "2000" {
		t.Errorf("capability %v", c)
	}
	if m := capability(v, plugincsi.NodeCaps{}, &gid).GetMount(); m.GetVolumeMountGroup() != "" {
		t.Errorf("mount group given to a driver without VOLUME_MOUNT_GROUP: %v", m)
	}
}

func TestKubeletAppliesFSGroup(t *testing.T) {
	gid := int64(2000)
	rwo := []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	rwx := []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}
	for _, tc := range []struct {
		name    string
		v       Volume
		policy  storagev1.FSGroupPolicy
		caps    plugincsi.NodeCaps
		fsGroup *int64
		want    bool
	}{
		{"no fsGroup", Volume{FSType: "ext4", PV: "pv", AccessModes: rwo}, storagev1.FileFSGroupPolicy, plugincsi.NodeCaps{}, nil, false},
		{"driver applies it", Volume{FSType: "ext4", PV: "pv", AccessModes: rwo}, storagev1.FileFSGroupPolicy, plugincsi.NodeCaps{VolumeMountGroup: true}, &gid, false},
		{"read-only", Volume{FSType: "ext4", PV: "pv", AccessModes: rwo, ReadOnly: true}, storagev1.FileFSGroupPolicy, plugincsi.NodeCaps{}, &gid, false},
		{"policy None", Volume{FSType: "ext4", PV: "pv", AccessModes: rwo}, storagev1.NoneFSGroupPolicy, plugincsi.NodeCaps{}, &gid, false},
		{"policy File, RWX without fsType", Volume{PV: "pv", AccessModes: rwx}, storagev1.FileFSGroupPolicy, plugincsi.NodeCaps{}, &gid, true},
		{"default policy, no fsType", Volume{PV: "pv", AccessModes: rwo}, storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, plugincsi.NodeCaps{}, &gid, false},
		{"default policy, RWO with fsType", Volume{FSType: "ext4", PV: "pv", AccessModes: rwo}, storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, plugincsi.NodeCaps{}, &gid, true},
		{"default policy, RWX with fsType", Volume{FSType: "ext4", PV: "pv", AccessModes: rwx}, storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, plugincsi.NodeCaps{}, &gid, false},
		{"default policy, inline with fsType", Volume{FSType: "ext4"}, storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, plugincsi.NodeCaps{}, &gid, true},
	} {
		if got := kubeletAppliesFSGroup(&tc.v, tc.policy, tc.caps, tc.fsGroup); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := fsGroupPolicy(nil); got != storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy {
		t.Errorf("default policy %s", got)
	}
	if got := fsGroupPolicy(csiDriver(func(s *storagev1.CSIDriverSpec) { s.FSGroupPolicy = ptr.To(storagev1.FileFSGroupPolicy) })); got != storagev1.FileFSGroupPolicy {
		t.Errorf("policy %s", got)
	}
}

func TestAttachState(t *testing.T) {
	now := metav1.Now()
	va := func(mut func(*storagev1.VolumeAttachment)) *storagev1.VolumeAttachment {
		a := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-x"}}
		mut(a)
		return a
	}
	for _, tc := range []struct {
		name     string
		va       *storagev1.VolumeAttachment
		attached bool
		ctx      map[string]string
		err      string
	}{
		{"missing", nil, false, nil, ""},
		{"not yet", va(func(*storagev1.VolumeAttachment) {}), false, nil, ""},
		{"attached", va(func(a *storagev1.VolumeAttachment) {
			a.Status.Attached = true
			a.Status.AttachmentMetadata = map[string]string{"device": "/dev/x"}
		}), true, map[string]string{"device": "/dev/x"}, ""},
		{"failed", va(func(a *storagev1.VolumeAttachment) {
			a.Status.AttachError = &storagev1.VolumeError{Message: "no such disk"}
		}), false, nil, "attaching failed (VolumeAttachment csi-x): no such disk"},
		{"going", va(func(a *storagev1.VolumeAttachment) {
			a.DeletionTimestamp = &now
			a.Status.Attached = true
		}), false, nil, "VolumeAttachment csi-x is being deleted"},
	} {
		st := attachState(tc.va)
		if st.Attached != tc.attached || !reflect.DeepEqual(st.PublishContext, tc.ctx) || (tc.err == "") != (st.Err == nil) || (st.Err != nil && st.Err.Error() != tc.err) {
			t.Errorf("%s: %+v", tc.name, st)
		}
	}
}

func TestStillPublished(t *testing.T) {
	p := func(driver, handle string, mode storagev1.VolumeLifecycleMode) Published {
		return Published{Driver: driver, VolumeHandle: handle, Mode: mode}
	}
	all := []Published{
		p("a", "h1", storagev1.VolumeLifecyclePersistent),
		p("b", "h2", storagev1.VolumeLifecyclePersistent),
		p("a", "h3", storagev1.VolumeLifecycleEphemeral),
	}
	for _, tc := range []struct {
		driver, handle string
		want           bool
	}{
		{"a", "h1", true},
		{"b", "h1", false}, // same handle, other driver
		{"a", "h2", false},
		{"a", "h3", false}, // an inline volume is never staged
		{"b", "h2", true},
	} {
		if got := stillPublished(all, tc.driver, tc.handle); got != tc.want {
			t.Errorf("stillPublished(%s, %s) = %v", tc.driver, tc.handle, got)
		}
	}
	if stillPublished(nil, "a", "h1") {
		t.Error("used by nobody")
	}
}

// The Node's volumesInUse lists, once each and sorted, the volumes whose
// driver needs attaching or is not known yet not to.
func TestVolumesInUse(t *testing.T) {
	a1, a2 := wantedVolume{"attach.csi", "1"}, wantedVolume{"attach.csi", "2"}
	n1 := wantedVolume{"noattach.csi", "1"}
	u1 := wantedVolume{"unknown.csi", "1"}
	attach := map[string]bool{"attach.csi": true, "noattach.csi": false}
	for _, tc := range []struct {
		name string
		used []wantedVolume
		want []v1.UniqueVolumeName
	}{
		{"none", nil, []v1.UniqueVolumeName{}},
		{"attaching driver", []wantedVolume{a2, a1}, []v1.UniqueVolumeName{"kubernetes.io/csi/attach.csi^1", "kubernetes.io/csi/attach.csi^2"}},
		{"driver that does not attach", []wantedVolume{n1}, []v1.UniqueVolumeName{}},
		{"driver not known yet", []wantedVolume{u1}, []v1.UniqueVolumeName{"kubernetes.io/csi/unknown.csi^1"}},
		{"wanted and published: once", []wantedVolume{a1, a1, n1, u1}, []v1.UniqueVolumeName{"kubernetes.io/csi/attach.csi^1", "kubernetes.io/csi/unknown.csi^1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := volumesInUse(tc.used, attach); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
