package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/test/framework"
)

// createCSIDriver creates the CSIDriver object of a driver for the test.
func createCSIDriver(t *testing.T, name string, spec storagev1.CSIDriverSpec) {
	t.Helper()
	if _, err := client.StorageV1().CSIDrivers().Create(context.Background(), &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.StorageV1().CSIDrivers().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// staticCSIClaim creates a PersistentVolume of driver with volumeHandle
// handle and a claim in ns bound to it by name.
func staticCSIClaim(t *testing.T, ns, claim, driver, handle string, mut ...func(*v1.CSIPersistentVolumeSource)) string {
	t.Helper()
	ctx := context.Background()
	pvName := "e2e-csi-" + claim + "-" + ns
	size := v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName}, Spec: v1.PersistentVolumeSpec{
		StorageClassName: "", AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, Capacity: size,
		PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
		PersistentVolumeSource:        v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle}}}}
	for _, f := range mut {
		f(pv.Spec.CSI)
	}
	if _, err := client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.CoreV1().PersistentVolumes().Delete(context.Background(), pvName, metav1.DeleteOptions{})
	})
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim}, Spec: v1.PersistentVolumeClaimSpec{
		StorageClassName: ptr.To(""), VolumeName: pvName, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		Resources: v1.VolumeResourceRequirements{Requests: size}}}
	if _, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return pvName
}

// volumePod runs the test server with the volume mounted at /data.
func volumePod(name string, src v1.VolumeSource) *v1.Pod {
	p := testPod(name)
	p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
	p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: src}}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	return p
}

func claimSource(claim string) v1.VolumeSource {
	return v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}
}

func sha256Hex(s string) string { return fmt.Sprintf("%x", sha256.Sum256([]byte(s))) }

// servedOK waits for the mock to have answered method OK for a request
// whose field key is want, and returns that request.
func (m *csiMock) servedOK(t *testing.T, method, key, want string) map[string]any {
	t.Helper()
	var found map[string]any
	framework.Eventually(t, fmt.Sprintf("%s with %s=%s", method, key, want), func() (bool, string) {
		calls := m.served(method)
		for _, c := range calls {
			if c.Req[key] == want && c.Code == "OK" {
				found = c.Req
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", calls)
	})
	return found
}

// index is the position of the first call of method with key=want among
// all calls the mock served (-1: none).
func (m *csiMock) index(method, key, want string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, c := range m.calls {
		if c.Method == method && c.Req[key] == want {
			return i
		}
	}
	return -1
}

func strMap(v any) map[string]string {
	out := map[string]string{}
	if m, ok := v.(map[string]any); ok {
		for k, val := range m {
			out[k], _ = val.(string)
		}
	}
	return out
}

func inUse(t *testing.T, nodeName, volume string, want bool) {
	t.Helper()
	framework.Eventually(t, fmt.Sprintf("volumesInUse has %s: %v", volume, want), func() (bool, string) {
		n, err := client.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		has := slices.Contains(n.Status.VolumesInUse, v1.UniqueVolumeName(volume))
		return has == want, fmt.Sprint(n.Status.VolumesInUse)
	})
}

func gone(t *testing.T, what, path string) {
	t.Helper()
	framework.Eventually(t, what+" removed", func() (bool, string) {
		_, err := os.Lstat(path)
		return os.IsNotExist(err), fmt.Sprint(err)
	})
}

// TestCSIVolumes: upstream's mock CSI driver on the real node. A static
// CSI PersistentVolume is staged and published at upstream's paths with
// upstream's volume context and its stage and publish secrets, and its
// pod runs, across a kubelet restart; deleting it unpublishes, then
// unstages. An inline ephemeral volume is published with the pod's
// identity; the mock fails it (an upstream mock bug), so its pod waits
// with the driver's error while the other pod runs. A driver that needs
// attaching keeps its pod waiting, with a reason, until the volume's
// VolumeAttachment says attached; its publish context reaches the driver.
func TestCSIVolumes(t *testing.T) {
	nodeName := node(t)
	ctx := context.Background()
	driver := fmt.Sprintf("mock-vol-%d.csi.gokubelet.io", time.Now().UnixNano()%100000)
	m := startCSIMock(t, driver, "-log-calls")
	m.registered(t)
	createCSIDriver(t, driver, storagev1.CSIDriverSpec{AttachRequired: ptr.To(false), PodInfoOnMount: ptr.To(true),
		VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}})
	ns := namespace(t)
	// Secrets the volumes name: the kubelet reads them as the node (the
	// Node authorizer allows what its pods' volumes reference).
	for name, val := range map[string]string{"inline-creds": "i", "stage-creds": "s", "publish-creds": "p"} {
		if _, err := client.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name},
			StringData: map[string]string{"key": val}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// An inline ephemeral volume: the kubelet publishes it straight to
	// the pod, with the pod's identity in the volume context. The v1.37.2
	// mock fails every inline publish (its NodePublishVolume dereferences
	// a nil volume for ephemeral requests; hack/csi-mock answers that
	// panic with Internal): the pod waits with the driver's error, an
	// event says so, nothing is left on disk, and the driver's failure
	// touches no other pod (the claimed pod below runs).
	inline := createPod(t, ns, volumePod("inline", v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: driver,
		VolumeAttributes: map[string]string{"purpose": "e2e"}, NodePublishSecretRef: &v1.LocalObjectReference{Name: "inline-creds"}}}))
	inlineDir := filepath.Join(rootDir, "pods", string(inline.UID), "volumes", "kubernetes.io~csi", "data")
	var req map[string]any
	framework.Eventually(t, "the inline volume's NodePublishVolume", func() (bool, string) {
		for _, c := range m.served("NodePublishVolume") {
			if c.Req["target_path"] == filepath.Join(inlineDir, "mount") {
				req = c.Req
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", m.served("NodePublishVolume"))
	})
	vc := strMap(req["volume_context"])
	wantCtx := map[string]string{"purpose": "e2e", "csi.storage.k8s.io/ephemeral": "true", "csi.storage.k8s.io/pod.name": "inline",
		"csi.storage.k8s.io/pod.namespace": ns, "csi.storage.k8s.io/pod.uid": string(inline.UID), "csi.storage.k8s.io/serviceAccount.name": "default"}
	for k, v := range wantCtx {
		if vc[k] != v {
			t.Errorf("inline publish: volume context %s=%q, want %q (%v)", k, vc[k], v, vc)
		}
	}
	if req["volume_id"] != "csi-"+sha256Hex(string(inline.UID)+"data") || req["staging_target_path"] != nil || strMap(req["secrets"])["key"] != "i" {
		t.Errorf("inline publish request %v", req)
	}
	waitingFor(t, ns, "inline", "ContainerCreating", `CSI driver "`+driver+`": NodePublishVolume failed: mock driver panicked`, "(Internal)")
	framework.Eventually(t, "kubectl describe shows the FailedMount event", func() (bool, string) {
		out, errs, _ := kubectl(t, nil, "", ns, "describe", "pod", "inline")
		return strings.Contains(out, "FailedMount") && strings.Contains(out, "NodePublishVolume failed"), out + errs
	})
	if _, err := os.Lstat(inlineDir); !os.IsNotExist(err) {
		t.Errorf("a refused publish left %s: %v", inlineDir, err)
	}

	// A static PersistentVolume (the mock's volume "1"): staged, then
	// published from the staging path.
	pvName := staticCSIClaim(t, ns, "claim", driver, "1", func(src *v1.CSIPersistentVolumeSource) {
		src.NodeStageSecretRef = &v1.SecretReference{Namespace: ns, Name: "stage-creds"}
		src.NodePublishSecretRef = &v1.SecretReference{Namespace: ns, Name: "publish-creds"}
	})
	claimed := createPod(t, ns, volumePod("claimed", claimSource("claim")))
	waitPod(t, ns, "claimed", "running", running)
	staging := filepath.Join(rootDir, "plugins", "kubernetes.io", "csi", driver, sha256Hex("1"), "globalmount")
	stage := m.servedOK(t, "NodeStageVolume", "staging_target_path", staging)
	if stage["volume_id"] != "1" || strMap(stage["secrets"])["key"] != "s" {
		t.Errorf("stage request %v", stage)
	}
	claimedTarget := filepath.Join(rootDir, "pods", string(claimed.UID), "volumes", "kubernetes.io~csi", pvName, "mount")
	pub := m.servedOK(t, "NodePublishVolume", "target_path", claimedTarget)
	if pub["staging_target_path"] != staging || pub["volume_id"] != "1" || strMap(pub["volume_context"])["csi.storage.k8s.io/ephemeral"] != "false" ||
		strMap(pub["secrets"])["key"] != "p" {
		t.Errorf("persistent publish request %v", pub)
	}
	if st, err := os.Stat(claimedTarget); err != nil || !st.IsDir() {
		t.Errorf("the mock's publish target: %v", err)
	}
	var volData map[string]string
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(claimedTarget), "vol_data.json")); err != nil || json.Unmarshal(b, &volData) != nil ||
		volData["driverName"] != driver || volData["volumeHandle"] != "1" || volData["volumeLifecycleMode"] != "Persistent" ||
		volData["specVolID"] != pvName || volData["nodeName"] != nodeName || volData["attachmentID"] != "csi-"+sha256Hex("1"+driver+nodeName) {
		t.Errorf("vol_data.json %v, %v", volData, err)
	}
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(staging), "vol_data.json")); err != nil || !strings.Contains(string(b), `"volumeHandle":"1"`) {
		t.Errorf("staging vol_data.json %s, %v", b, err)
	}
	// The driver needs no attaching (attachRequired: false): as upstream
	// 1.37, whose volume manager reports only attachable volumes, the
	// Node's volumesInUse does not list the volume (the attaching driver
	// of testCSIAttach, and TestCSIProvisionerAndAttacher, check one that
	// is listed).
	volume := "kubernetes.io/csi/" + driver + "^1"
	inUse(t, nodeName, volume, false)

	// A kubelet killed and started again finds the published volume on
	// disk, and tears it down when the pod goes. (It lists it in use
	// until the pod's sync has read the CSIDriver again.)
	kubelet.Kill9(t)
	kubelet.Start(t)
	node(t)
	m.registered(t)
	waitPod(t, ns, "claimed", "running after a kubelet restart", running)
	inUse(t, nodeName, volume, false)

	// Deleting the pods unpublishes both volumes, then unstages the
	// persistent one, and leaves nothing on disk.
	for _, p := range []string{"inline", "claimed"} {
		if err := client.CoreV1().Pods(ns).Delete(ctx, p, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitGone(t, ns, "inline")
	waitGone(t, ns, "claimed")
	m.servedOK(t, "NodeUnpublishVolume", "target_path", claimedTarget)
	m.servedOK(t, "NodeUnstageVolume", "staging_target_path", staging)
	if u, s := m.index("NodeUnpublishVolume", "target_path", claimedTarget), m.index("NodeUnstageVolume", "staging_target_path", staging); u > s {
		t.Errorf("unstaged (call %d) before unpublishing (call %d)", s, u)
	}
	// The inline volume was never published: nothing to unpublish.
	if i := m.index("NodeUnpublishVolume", "target_path", filepath.Join(inlineDir, "mount")); i >= 0 {
		t.Errorf("unpublished the inline volume the driver refused (call %d)", i)
	}
	gone(t, "the inline volume's directory", inlineDir)
	gone(t, "the persistent volume's directory", filepath.Dir(claimedTarget))
	gone(t, "the staging directory", filepath.Dir(staging))
	inUse(t, nodeName, volume, false)

	t.Run("attach", func(t *testing.T) { testCSIAttach(t, nodeName) })
}

// markAttached waits for the attach/detach controller to create the
// VolumeAttachment vaName of driver to nodeName and marks it attached with
// the publish context device=device, as an external attacher would (the
// test is the cluster's admin).
func markAttached(t *testing.T, vaName, driver, nodeName, device string) {
	t.Helper()
	ctx := context.Background()
	var va *storagev1.VolumeAttachment
	framework.Eventually(t, "the attach/detach controller creates VolumeAttachment "+vaName, func() (bool, string) {
		var err error
		va, err = client.StorageV1().VolumeAttachments().Get(ctx, vaName, metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	if va.Spec.NodeName != nodeName || va.Spec.Attacher != driver {
		t.Errorf("VolumeAttachment %+v", va.Spec)
	}
	va.Status = storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"device": device}}
	if _, err := client.StorageV1().VolumeAttachments().UpdateStatus(ctx, va, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// testCSIAttach: the mock started with -attach stages and publishes only
// with the attacher's publish context. No external attacher runs here:
// the test, as the cluster's admin, marks the VolumeAttachment the
// attach/detach controller created attached.
func testCSIAttach(t *testing.T, nodeName string) {
	ctx := context.Background()
	driver := fmt.Sprintf("mock-att-%d.csi.gokubelet.io", time.Now().UnixNano()%100000)
	m := startCSIMock(t, driver, "-log-calls", "-attach")
	m.registered(t)
	createCSIDriver(t, driver, storagev1.CSIDriverSpec{AttachRequired: ptr.To(true),
		VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}})
	ns := namespace(t)
	staticCSIClaim(t, ns, "claim", driver, "1")
	createPod(t, ns, volumePod("attached", claimSource("claim")))
	vaName := "csi-" + sha256Hex("1"+driver+nodeName)
	waitingFor(t, ns, "attached", "ContainerCreating", "to be attached to this node (VolumeAttachment "+vaName+")", driver)
	inUse(t, nodeName, "kubernetes.io/csi/"+driver+"^1", true)

	markAttached(t, vaName, driver, nodeName, "/dev/mock-e2e")
	waitPod(t, ns, "attached", "running", running)
	stage := m.servedOK(t, "NodeStageVolume", "volume_id", "1")
	if strMap(stage["publish_context"])["device"] != "/dev/mock-e2e" {
		t.Errorf("stage without the attacher's publish context: %v", stage)
	}
	if err := client.CoreV1().Pods(ns).Delete(ctx, "attached", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "attached")
	m.servedOK(t, "NodeUnpublishVolume", "volume_id", "1")
	m.servedOK(t, "NodeUnstageVolume", "volume_id", "1")
	// With the volume no longer in use, the controller detaches it.
	framework.Eventually(t, "the VolumeAttachment deleted", func() (bool, string) {
		_, err := client.StorageV1().VolumeAttachments().Get(ctx, vaName, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}
