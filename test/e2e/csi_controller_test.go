package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/test/framework"
)

// lockedBuffer collects a process's output while it runs.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startUntilTestEnds starts bin with args as a local process writing to
// out, and stops it when the test ends: SIGTERM, then SIGKILL after grace.
// out is logged if the test fails (framework.LogOnFailure, under name).
// exited is closed when the process has exited.
func startUntilTestEnds(t *testing.T, name string, out *lockedBuffer, grace time.Duration, bin string, args ...string) (cmd *osexec.Cmd, exited <-chan struct{}) {
	t.Helper()
	cmd = osexec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(grace):
			_ = cmd.Process.Kill()
			<-done
		}
		framework.LogOnFailure(t, name, out.String())
	})
	return cmd, done
}

// startCSISidecar runs one of the CSI controller sidecars built by
// hack/build-csi-sidecars.sh (its path in the environment variable env) as
// a local process with args, until the test ends; its log is kept if the
// test fails (framework.LogOnFailure).
func startCSISidecar(t *testing.T, env, name string, args ...string) {
	t.Helper()
	bin := os.Getenv(env)
	if bin == "" {
		t.Fatalf("%s is not set: run through make test (hack/test.sh builds %s with hack/build-csi-sidecars.sh)", env, name)
	}
	out := &lockedBuffer{}
	cmd, exited := startUntilTestEnds(t, name, out, 10*time.Second, bin, args...)
	// A sidecar that exits at once (a flag it does not know, a driver it
	// cannot reach) says why here rather than as a provisioning timeout.
	select {
	case <-exited:
		t.Fatalf("%s exited at start: %s\n%s", name, cmd.ProcessState, framework.Tail(out.String(), 40))
	case <-time.After(time.Second):
	}
}

// sidecarArgs are the arguments of a CSI controller sidecar serving the
// mock's Controller service, as the cluster admin.
func (m *csiMock) sidecarArgs() []string {
	return []string{"--csi-address", m.endpoint, "--kubeconfig", filepath.Join(clusterDir, "admin.kubeconfig"),
		"--leader-election=false", "--v=3"}
}

// csiStorageClass creates a StorageClass named after driver whose volumes
// it provisions (bound at once, deleted with their claims; expandable with
// expand) until the test ends.
func csiStorageClass(t *testing.T, driver string, expand bool) string {
	t.Helper()
	if _, err := client.StorageV1().StorageClasses().Create(context.Background(), &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: driver},
		Provisioner: driver, ReclaimPolicy: ptr.To(v1.PersistentVolumeReclaimDelete), AllowVolumeExpansion: ptr.To(expand),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate)}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.StorageV1().StorageClasses().Delete(context.Background(), driver, metav1.DeleteOptions{})
	})
	return driver
}

// TestCSIProvisionerAndAttacher: the CSI controller side is the real one.
// Upstream's mock CSI driver (hack/csi-mock, with -attach so its node
// service wants the attacher's publish context) serves its Controller
// service to the real csi-provisioner and csi-attacher, run as local
// processes with the cluster admin's kubeconfig (hack/build-csi-sidecars.sh).
// Three claims of a StorageClass naming the driver are provisioned
// (CreateVolume) and bound; the attach/detach controller creates each
// pod's VolumeAttachment and the attacher attaches it
// (ControllerPublishVolume); the kubelet stages with the attacher's
// publish context and publishes, and the three pods run, through a kill
// -9 and restart of the kubelet with no container restarted and nothing
// unpublished. Deleting the pods unpublishes, unstages and detaches and
// leaves nothing on disk; deleting the claims deletes the volumes
// (DeleteVolume) and their PersistentVolumes.
//
// The mock driver keeps no data (its volumes are entries in memory and
// their mounts are plain directories), so the issue's "a second pod sees
// the data the first wrote" cannot be checked with it: the test checks
// the calls and the state on disk and in the API instead.
func TestCSIProvisionerAndAttacher(t *testing.T) {
	nodeName := node(t)
	ctx := context.Background()
	driver := fmt.Sprintf("mock-ctl-%d.csi.gokubelet.io", time.Now().UnixNano()%100000)
	m := startCSIMock(t, driver, "-log-calls", "-attach")
	m.registered(t)
	createCSIDriver(t, driver, storagev1.CSIDriverSpec{AttachRequired: ptr.To(true),
		VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}})

	startCSISidecar(t, "GOKUBELET_CSI_PROVISIONER", "csi-provisioner", m.sidecarArgs()...)
	startCSISidecar(t, "GOKUBELET_CSI_ATTACHER", "csi-attacher", m.sidecarArgs()...)
	sc := csiStorageClass(t, driver, false)
	ns := namespace(t)
	// Registered after the sidecars, so it runs before they stop: on a
	// failure, the pods and claims go and the provisioner gets the chance
	// to delete its volumes (their PersistentVolumes carry its finalizer);
	// what is still there then (the volumes only ever lived in the mock's
	// memory) is removed with its finalizers, so a failed run leaves no
	// PersistentVolume or VolumeAttachment in the cluster.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		bg := context.Background()
		_ = client.CoreV1().Pods(ns).DeleteCollection(bg, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = client.CoreV1().PersistentVolumeClaims(ns).DeleteCollection(bg, metav1.DeleteOptions{}, metav1.ListOptions{})
		deadline := time.Now().Add(framework.WaitLimit)
		for time.Now().Before(deadline) {
			if pvs, err := client.CoreV1().PersistentVolumes().List(bg, metav1.ListOptions{}); err == nil {
				left := 0
				for _, pv := range pvs.Items {
					if pv.Spec.StorageClassName == sc {
						left++
					}
				}
				if left == 0 {
					return
				}
			}
			time.Sleep(time.Second)
		}
		t.Logf("PersistentVolumes of StorageClass %s still there after %s: removing them and the driver's VolumeAttachments with their finalizers", sc, framework.WaitLimit)
		noFinalizers := []byte(`{"metadata":{"finalizers":null}}`)
		if vas, err := client.StorageV1().VolumeAttachments().List(bg, metav1.ListOptions{}); err == nil {
			for _, va := range vas.Items {
				if va.Spec.Attacher == driver {
					_, _ = client.StorageV1().VolumeAttachments().Patch(bg, va.Name, types.MergePatchType, noFinalizers, metav1.PatchOptions{})
					_ = client.StorageV1().VolumeAttachments().Delete(bg, va.Name, metav1.DeleteOptions{})
				}
			}
		}
		if pvs, err := client.CoreV1().PersistentVolumes().List(bg, metav1.ListOptions{}); err == nil {
			for _, pv := range pvs.Items {
				if pv.Spec.StorageClassName == sc {
					_, _ = client.CoreV1().PersistentVolumes().Patch(bg, pv.Name, types.MergePatchType, noFinalizers, metav1.PatchOptions{})
					_ = client.CoreV1().PersistentVolumes().Delete(bg, pv.Name, metav1.DeleteOptions{})
				}
			}
		}
	})

	// Three claims: the provisioner creates a volume for each
	// (CreateVolume named after the PersistentVolume, with the claim's
	// size) and a PersistentVolume the controller binds it to.
	const n = 3
	size := resource.MustParse("1Gi")
	claims := make([]string, n)
	for i := range claims {
		claims[i] = fmt.Sprintf("data-%d", i)
		if _, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &v1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: claims[i]},
			Spec: v1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(sc), AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: size}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pvs := make([]*v1.PersistentVolume, n)
	for i, claim := range claims {
		framework.Eventually(t, "claim "+claim+" provisioned and bound", func() (bool, string) {
			pvc, err := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if pvc.Status.Phase != v1.ClaimBound || pvc.Spec.VolumeName == "" {
				return false, fmt.Sprintf("phase %s, volume %q, annotations %v", pvc.Status.Phase, pvc.Spec.VolumeName, pvc.Annotations)
			}
			pv, err := client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			pvs[i] = pv
			return pv.Status.Phase == v1.VolumeBound, fmt.Sprintf("PersistentVolume %s phase %s", pv.Name, pv.Status.Phase)
		})
		pv := pvs[i]
		if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != driver || pv.Spec.CSI.VolumeHandle == "" || pv.Spec.ClaimRef == nil ||
			pv.Spec.ClaimRef.Name != claim || pv.Spec.StorageClassName != sc || pv.Annotations["pv.kubernetes.io/provisioned-by"] != driver {
			t.Fatalf("PersistentVolume %s of claim %s: %+v, annotations %v", pv.Name, claim, pv.Spec, pv.Annotations)
		}
		create := m.servedOK(t, "CreateVolume", "name", pv.Name)
		if got := fmt.Sprint(mapAt(create, "capacity_range")["required_bytes"]); got != fmt.Sprint(float64(size.Value())) {
			t.Errorf("CreateVolume %s asked for %s bytes, want %d: %v", pv.Name, got, size.Value(), create)
		}
	}
	for i := range pvs {
		for j := range i {
			if pvs[i].Spec.CSI.VolumeHandle == pvs[j].Spec.CSI.VolumeHandle {
				t.Fatalf("claims %s and %s got the same volume %s", claims[i], claims[j], pvs[i].Spec.CSI.VolumeHandle)
			}
		}
	}

	// The pods: the attach/detach controller creates each
	// VolumeAttachment, the attacher publishes the volume to the node (the
	// mock's node ID is the driver name) and marks it attached with the
	// mock's publish context, the kubelet stages with that context and
	// publishes, and the pod runs.
	pods := make([]*v1.Pod, n)
	vaNames := make([]string, n)
	targets := make([]string, n)
	stagings := make([]string, n)
	for i, claim := range claims {
		name := fmt.Sprintf("pod-%d", i)
		handle := pvs[i].Spec.CSI.VolumeHandle
		pods[i] = createPod(t, ns, volumePod(name, claimSource(claim)))
		vaNames[i] = "csi-" + sha256Hex(handle+driver+nodeName)
		var va *storagev1.VolumeAttachment
		framework.Eventually(t, "VolumeAttachment "+vaNames[i]+" attached by csi-attacher", func() (bool, string) {
			var err error
			va, err = client.StorageV1().VolumeAttachments().Get(ctx, vaNames[i], metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return va.Status.Attached, fmt.Sprintf("%+v", va.Status)
		})
		if va.Spec.Attacher != driver || va.Spec.NodeName != nodeName || va.Spec.Source.PersistentVolumeName == nil ||
			*va.Spec.Source.PersistentVolumeName != pvs[i].Name || va.Status.AttachmentMetadata["device"] != "/dev/mock" {
			t.Errorf("VolumeAttachment %s: %+v %+v", va.Name, va.Spec, va.Status)
		}
		publish := m.servedOK(t, "ControllerPublishVolume", "volume_id", handle)
		if publish["node_id"] != driver {
			t.Errorf("ControllerPublishVolume %v: node_id is not the node's CSI node ID %q", publish, driver)
		}
		waitPod(t, ns, name, "running", running)
		stagings[i] = filepath.Join(rootDir, "plugins", "kubernetes.io", "csi", driver, sha256Hex(handle), "globalmount")
		stage := m.servedOK(t, "NodeStageVolume", "staging_target_path", stagings[i])
		if stage["volume_id"] != handle || strMap(stage["publish_context"])["device"] != "/dev/mock" {
			t.Errorf("NodeStageVolume without the attacher's publish context: %v", stage)
		}
		targets[i] = filepath.Join(rootDir, "pods", string(pods[i].UID), "volumes", "kubernetes.io~csi", pvs[i].Name, "mount")
		if pub := m.servedOK(t, "NodePublishVolume", "target_path", targets[i]); pub["volume_id"] != handle || pub["staging_target_path"] != stagings[i] {
			t.Errorf("NodePublishVolume %v", pub)
		}
		inUse(t, nodeName, "kubernetes.io/csi/"+driver+"^"+handle, true)
	}

	// A kubelet killed and started again keeps the pods, their containers
	// and their volumes: nothing restarts, nothing is unpublished,
	// unstaged or detached, and the volumes stay in use.
	containers := map[string]string{}
	for _, p := range pods {
		containers[p.Name] = waitPod(t, ns, p.Name, "running", running).Status.ContainerStatuses[0].ContainerID
	}
	kubelet.Kill9(t)
	kubelet.Start(t)
	node(t)
	m.registered(t)
	for i, p := range pods {
		got := waitPod(t, ns, p.Name, "running after a kubelet restart", running)
		if c := got.Status.ContainerStatuses[0]; c.RestartCount != 0 || c.ContainerID != containers[p.Name] {
			t.Errorf("pod %s after a kubelet restart: container %s restarts %d, was %s", p.Name, c.ContainerID, c.RestartCount, containers[p.Name])
		}
		inUse(t, nodeName, "kubernetes.io/csi/"+driver+"^"+pvs[i].Spec.CSI.VolumeHandle, true)
		if st, err := os.Stat(targets[i]); err != nil || !st.IsDir() {
			t.Errorf("publish target of %s after a kubelet restart: %v", p.Name, err)
		}
	}
	for _, method := range []string{"NodeUnpublishVolume", "NodeUnstageVolume", "ControllerUnpublishVolume"} {
		if calls := m.served(method); len(calls) > 0 {
			t.Errorf("%s while the pods run: %+v", method, calls)
		}
	}
	for _, va := range vaNames {
		got, err := client.StorageV1().VolumeAttachments().Get(ctx, va, metav1.GetOptions{})
		if err != nil || !got.Status.Attached || got.DeletionTimestamp != nil {
			t.Errorf("VolumeAttachment %s after a kubelet restart: %v %+v", va, err, got)
		}
	}

	// Deleting the pods: each volume is unpublished, then unstaged, then
	// detached (ControllerUnpublishVolume, the VolumeAttachment deleted),
	// and nothing is left on disk.
	for _, p := range pods {
		if err := client.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range pods {
		handle := pvs[i].Spec.CSI.VolumeHandle
		waitGone(t, ns, p.Name)
		m.servedOK(t, "NodeUnpublishVolume", "target_path", targets[i])
		m.servedOK(t, "NodeUnstageVolume", "staging_target_path", stagings[i])
		m.servedOK(t, "ControllerUnpublishVolume", "volume_id", handle)
		u := m.index("NodeUnpublishVolume", "target_path", targets[i])
		s := m.index("NodeUnstageVolume", "staging_target_path", stagings[i])
		d := m.index("ControllerUnpublishVolume", "volume_id", handle)
		if u > s || s > d {
			t.Errorf("volume %s: unpublished (call %d), unstaged (call %d), detached (call %d): out of order", handle, u, s, d)
		}
		framework.Eventually(t, "VolumeAttachment "+vaNames[i]+" deleted", func() (bool, string) {
			_, err := client.StorageV1().VolumeAttachments().Get(ctx, vaNames[i], metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
		inUse(t, nodeName, "kubernetes.io/csi/"+driver+"^"+handle, false)
		gone(t, "pod "+p.Name+"'s CSI volume directory", filepath.Join(rootDir, "pods", string(p.UID), "volumes", "kubernetes.io~csi"))
	}
	// The driver's directory itself stays, empty, as upstream's does.
	driverDir := filepath.Join(rootDir, "plugins", "kubernetes.io", "csi", driver)
	framework.Eventually(t, "nothing left in "+driverDir, func() (bool, string) {
		entries, err := os.ReadDir(driverDir)
		if os.IsNotExist(err) {
			return true, ""
		}
		return err == nil && len(entries) == 0, fmt.Sprint(entries, err)
	})

	// Deleting the claims: the provisioner deletes each volume and its
	// PersistentVolume (reclaim policy Delete).
	for _, claim := range claims {
		if err := client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, claim, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, pv := range pvs {
		m.servedOK(t, "DeleteVolume", "volume_id", pv.Spec.CSI.VolumeHandle)
		framework.Eventually(t, "PersistentVolume "+pv.Name+" deleted", func() (bool, string) {
			got, err := client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
			if err == nil {
				return false, fmt.Sprintf("phase %s, finalizers %v", got.Status.Phase, got.Finalizers)
			}
			return apierrors.IsNotFound(err), err.Error()
		})
	}

	t.Run("generic ephemeral volume", func(t *testing.T) { testCSIGenericEphemeral(t, m, nodeName, ns, sc) })
}

// testCSIGenericEphemeral: a pod's generic ephemeral volume of the CSI
// StorageClass sc. The ephemeral volume controller creates its claim, owned
// by the pod; the provisioner provisions it and the attacher attaches it;
// the kubelet stages and publishes it and the pod runs. Deleting the pod
// unpublishes, unstages and detaches the volume, and the garbage collector
// deletes the claim with its pod, so the provisioner deletes the volume.
func testCSIGenericEphemeral(t *testing.T, m *csiMock, nodeName, ns, sc string) {
	ctx := context.Background()
	pod := volumePod("scratch", v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{
		Spec: v1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(sc), AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}}}})
	created := createPod(t, ns, pod)
	waitPod(t, ns, "scratch", "running", running)
	pvc, err := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "scratch-data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(pvc, created) || pvc.Spec.VolumeName == "" {
		t.Fatalf("the ephemeral claim: owners %+v, volume %q", pvc.OwnerReferences, pvc.Spec.VolumeName)
	}
	pv, err := client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	handle := pv.Spec.CSI.VolumeHandle
	staging := filepath.Join(rootDir, "plugins", "kubernetes.io", "csi", m.name, sha256Hex(handle), "globalmount")
	target := filepath.Join(rootDir, "pods", string(created.UID), "volumes", "kubernetes.io~csi", pv.Name, "mount")
	m.servedOK(t, "ControllerPublishVolume", "volume_id", handle)
	m.servedOK(t, "NodeStageVolume", "staging_target_path", staging)
	if pub := m.servedOK(t, "NodePublishVolume", "target_path", target); strMap(pub["volume_context"])["csi.storage.k8s.io/ephemeral"] == "true" {
		t.Errorf("a generic ephemeral volume is a persistent volume to the driver: %v", pub)
	}
	inUse(t, nodeName, "kubernetes.io/csi/"+m.name+"^"+handle, true)

	if err := client.CoreV1().Pods(ns).Delete(ctx, "scratch", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "scratch")
	m.servedOK(t, "NodeUnpublishVolume", "target_path", target)
	m.servedOK(t, "NodeUnstageVolume", "staging_target_path", staging)
	m.servedOK(t, "ControllerUnpublishVolume", "volume_id", handle)
	inUse(t, nodeName, "kubernetes.io/csi/"+m.name+"^"+handle, false)
	gone(t, "the pod's CSI volume directory", filepath.Dir(target))
	m.servedOK(t, "DeleteVolume", "volume_id", handle)
	framework.Eventually(t, "the ephemeral claim and its PersistentVolume deleted", func() (bool, string) {
		_, cerr := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "scratch-data", metav1.GetOptions{})
		_, verr := client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(cerr) && apierrors.IsNotFound(verr), fmt.Sprint(cerr, verr)
	})
}

// mapAt is the JSON object at key of a logged request (empty if none).
func mapAt(req map[string]any, key string) map[string]any {
	m, _ := req[key].(map[string]any)
	return m
}
