package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/test/framework"
)

// expansionWait bounds the wait for a node expansion: the kubelet checks
// mounted CSI claims every sync period (syncFrequency, 1m by default, as
// upstream re-reads claims on its pod syncs), after the resizer's work.
const expansionWait = 3 * time.Minute

// TestCSIOnlineExpansion: a claim of a StorageClass with
// allowVolumeExpansion, provisioned by the real csi-provisioner against
// upstream's mock driver (hack/csi-mock -node-expansion: its node service
// has EXPAND_VOLUME and GET_VOLUME_STATS, its controller answers
// ControllerExpandVolume with node_expansion_required), is used by a
// running pod. Its usage in /stats/summary and kubelet_volume_stats_* is
// the driver's NodeGetVolumeStats (the mock reports the volume's capacity
// as its total). The claim is grown from 1Gi to 2Gi: the real
// csi-resizer expands the volume (ControllerExpandVolume) and leaves the
// claim NodeResizePending; the kubelet calls NodeExpandVolume on the
// pod's publish target with the new size, writes the claim's capacity and
// clears its allocatedResourceStatuses, and records
// FileSystemResizeSuccessful; the container is not restarted, and the
// stats and the metric report the new capacity.
func TestCSIOnlineExpansion(t *testing.T) {
	// Mostly waiting for the sidecars' leader election and the resize:
	// beside the other waiting tests.
	nodeName := parallelOnSharedKubelet(t)
	ctx := context.Background()
	driver := fmt.Sprintf("mock-exp-%d.csi.gokubelet.io", time.Now().UnixNano()%100000)
	m := startCSIMock(t, driver, "-log-calls", "-node-expansion")
	m.registered(t)
	createCSIDriver(t, driver, storagev1.CSIDriverSpec{AttachRequired: ptr.To(false),
		VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}})

	startCSISidecar(t, "GOKUBELET_CSI_PROVISIONER", "csi-provisioner", m.sidecarArgs()...)
	startCSISidecar(t, "GOKUBELET_CSI_RESIZER", "csi-resizer", m.sidecarArgs()...)
	sc := csiStorageClass(t, driver, true)
	ns := namespace(t)
	// Registered after the sidecars, so it runs before they stop: the pod
	// and the claim go and the provisioner deletes the volume; a
	// PersistentVolume still there then (the mock's volumes live in its
	// memory only) loses its finalizers, so no run leaves one behind.
	t.Cleanup(func() {
		bg := context.Background()
		_ = client.CoreV1().Pods(ns).DeleteCollection(bg, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = client.CoreV1().PersistentVolumeClaims(ns).DeleteCollection(bg, metav1.DeleteOptions{}, metav1.ListOptions{})
		left := func() []v1.PersistentVolume {
			var out []v1.PersistentVolume
			if pvs, err := client.CoreV1().PersistentVolumes().List(bg, metav1.ListOptions{}); err == nil {
				for _, pv := range pvs.Items {
					if pv.Spec.StorageClassName == sc {
						out = append(out, pv)
					}
				}
			}
			return out
		}
		deadline := time.Now().Add(framework.WaitLimit)
		for time.Now().Before(deadline) && len(left()) > 0 {
			time.Sleep(time.Second)
		}
		for _, pv := range left() {
			t.Logf("PersistentVolume %s still there after %s: removing it with its finalizers", pv.Name, framework.WaitLimit)
			_, _ = client.CoreV1().PersistentVolumes().Patch(bg, pv.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			_ = client.CoreV1().PersistentVolumes().Delete(bg, pv.Name, metav1.DeleteOptions{})
		}
	})

	const claim = "data"
	small, big := resource.MustParse("1Gi"), resource.MustParse("2Gi")
	if _, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim},
		Spec: v1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(sc), AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: small}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pvName string
	framework.Eventually(t, "claim provisioned and bound", func() (bool, string) {
		pvc, err := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pvName = pvc.Spec.VolumeName
		return pvc.Status.Phase == v1.ClaimBound && pvName != "", fmt.Sprintf("phase %s, volume %q", pvc.Status.Phase, pvName)
	})
	pv, err := client.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	handle := pv.Spec.CSI.VolumeHandle

	p := createPod(t, ns, volumePod("app", claimSource(claim)))
	before := waitPod(t, ns, p.Name, "running", running).Status.ContainerStatuses[0]
	target := filepath.Join(rootDir, "pods", string(p.UID), "volumes", "kubernetes.io~csi", pvName, "mount")
	m.servedOK(t, "NodePublishVolume", "target_path", target)

	// The volume's usage is the driver's: NodeGetVolumeStats on the
	// publish target, the mock's capacity as the total.
	waitVolumeStats(t, ns, p.Name, claim, small.Value(), time.Minute)
	if st := m.servedOK(t, "NodeGetVolumeStats", "volume_path", target); st["volume_id"] != handle {
		t.Errorf("NodeGetVolumeStats %v", st)
	}

	// Grow the claim.
	patch := fmt.Sprintf(`{"spec":{"resources":{"requests":{"storage":%q}}}}`, big.String())
	if _, err := client.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, claim, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyWithin(t, framework.WaitLimit, "ControllerExpandVolume by csi-resizer", func() (bool, string) {
		for _, c := range m.served("ControllerExpandVolume") {
			if c.Code == "OK" && fmt.Sprint(mapAt(c.Req, "capacity_range")["required_bytes"]) == fmt.Sprint(float64(big.Value())) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", m.served("ControllerExpandVolume"))
	})
	if pvc, err := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{}); err == nil {
		t.Logf("after ControllerExpandVolume: claim status capacity %s, allocatedResources %v, allocatedResourceStatuses %v",
			pvc.Status.Capacity.Storage(), pvc.Status.AllocatedResources, pvc.Status.AllocatedResourceStatuses)
	}
	grown := time.Now()
	var expand map[string]any
	framework.EventuallyWithin(t, expansionWait, "NodeExpandVolume by the kubelet", func() (bool, string) {
		for _, c := range m.served("NodeExpandVolume") {
			if c.Code == "OK" && c.Req["volume_path"] == target {
				expand = c.Req
				return true, ""
			}
		}
		pvc, _ := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
		return false, fmt.Sprintf("calls %+v, claim status %+v", m.served("NodeExpandVolume"), pvc.Status)
	})
	t.Logf("NodeExpandVolume within %s of the controller's expansion", time.Since(grown).Round(time.Second))
	if expand["volume_id"] != handle || fmt.Sprint(mapAt(expand, "capacity_range")["required_bytes"]) != fmt.Sprint(float64(big.Value())) {
		t.Errorf("NodeExpandVolume %v, want volume %s with %d bytes", expand, handle, big.Value())
	}
	staging := filepath.Join(rootDir, "plugins", "kubernetes.io", "csi", driver, sha256Hex(handle), "globalmount")
	if expand["staging_target_path"] != staging {
		t.Errorf("NodeExpandVolume staging_target_path %v, want %s (the mock stages)", expand["staging_target_path"], staging)
	}
	framework.EventuallyWithin(t, framework.WaitLimit, "the claim at its new capacity with no resize status", func() (bool, string) {
		pvc, err := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := pvc.Status.Capacity[v1.ResourceStorage]
		return c.Cmp(big) == 0 && len(pvc.Status.AllocatedResourceStatuses) == 0, fmt.Sprintf("%+v", pvc.Status)
	})
	framework.Eventually(t, "FileSystemResizeSuccessful events on the pod and the claim", func() (bool, string) {
		evs, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FileSystemResizeSuccessful"})
		if err != nil {
			return false, err.Error()
		}
		kinds := sets.New[string]()
		for _, e := range evs.Items {
			if e.Source.Host == nodeName || e.ReportingInstance == nodeName {
				kinds.Insert(e.InvolvedObject.Kind)
			}
		}
		return kinds.Has("Pod") && kinds.Has("PersistentVolumeClaim"), fmt.Sprint(sets.List(kinds))
	})

	// The container kept running through it.
	after := waitPod(t, ns, p.Name, "running", running).Status.ContainerStatuses[0]
	if after.RestartCount != 0 || after.ContainerID != before.ContainerID {
		t.Errorf("container %s restarts %d, was %s", after.ContainerID, after.RestartCount, before.ContainerID)
	}
	if calls := m.served("NodeUnpublishVolume"); len(calls) > 0 {
		t.Errorf("NodeUnpublishVolume during an online expansion: %+v", calls)
	}
	// Stats and metrics: measured again after the expansion.
	waitVolumeStats(t, ns, p.Name, claim, big.Value(), framework.WaitLimit)
}

// waitVolumeStats waits for /stats/summary to report the pod's volume
// "data" with its claim and capacity, and kubelet_volume_stats_* the
// same capacity for the claim.
func waitVolumeStats(t *testing.T, ns, pod, claim string, capacity int64, limit time.Duration) {
	t.Helper()
	framework.EventuallyWithin(t, limit, fmt.Sprintf("/stats/summary: volume data of claim %s with capacity %d", claim, capacity), func() (bool, string) {
		var s statsapi.Summary
		if err := kubeletJSON("/stats/summary", &s); err != nil {
			return false, err.Error()
		}
		ps := findPod(&s, ns, pod)
		if ps == nil {
			return false, "pod not in the summary"
		}
		for _, v := range ps.VolumeStats {
			if v.Name == "data" {
				ok := v.PVCRef != nil && v.PVCRef.Name == claim && v.PVCRef.Namespace == ns && val(v.CapacityBytes) == uint64(capacity)
				return ok, fmt.Sprintf("%+v capacity %d", v.PVCRef, val(v.CapacityBytes))
			}
		}
		return false, fmt.Sprintf("no volume data in %+v", ps.VolumeStats)
	})
	framework.EventuallyWithin(t, limit, fmt.Sprintf("kubelet_volume_stats_capacity_bytes of claim %s = %d", claim, capacity), func() (bool, string) {
		f, err := scrape("/metrics")
		if err != nil {
			return false, err.Error()
		}
		sel := map[string]string{"namespace": ns, "persistentvolumeclaim": claim}
		if n := len(f.Find("kubelet_volume_stats_capacity_bytes", sel)); n != 1 {
			return false, fmt.Sprintf("%d series", n)
		}
		got := f.Sum("kubelet_volume_stats_capacity_bytes", sel)
		return got == float64(capacity), fmt.Sprint(got)
	})
}
