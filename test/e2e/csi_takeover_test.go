package e2e

import (
	"context"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/volume/hostfs"
	"github.com/gokubelet/kubelet/test/framework"
)

// TestCSITakeover: CSI volumes across a takeover from the upstream kubelet
// and a hand-back to it. Upstream's mock CSI driver (it stages) is
// registered through the node's plugins_registry to whichever kubelet
// runs; three static CSI PersistentVolumes (the mock's volumes 1, 2, 3).
// Twice: "attach", with a driver whose volumes need attaching (the test
// marks their VolumeAttachments attached as an external attacher would),
// which both kubelets list in the Node's volumesInUse; "noattach", with
// attachRequired: false, whose volumes neither lists (upstream 1.37
// reports only attachable volumes there).
//
//   - Under upstream, pods a (volume 1) and b (volume 2) run.
//   - This kubelet takes over: no container restarts; the pods keep being
//     synced (their readiness flips and is reported); the node still
//     reports the volumes in use (attach); nothing more is mounted than before;
//     the driver is asked nothing but, once per volume, to stage and
//     publish again at the very paths upstream used (the repeat upstream
//     itself makes after a restart: the CSI spec makes both idempotent,
//     and the hand-back below checks upstream does it).
//   - Pod a is deleted under this kubelet: NodeUnpublishVolume, then
//     NodeUnstageVolume; nothing is left of its pod directory nor of the
//     volume's staging directory, nothing is mounted there; the volume
//     leaves volumesInUse and is detached.
//   - Pod c (volume 3) is created under this kubelet, so its vol_data.json
//     files are this kubelet's.
//   - The node goes back to upstream: no restarts, volumesInUse as before;
//     pods b and c deleted under upstream are unpublished and unstaged,
//     and nothing is left: upstream read this kubelet's layout.
func TestCSITakeover(t *testing.T) {
	t.Run("attach", func(t *testing.T) { testCSITakeover(t, true) })
	t.Run("noattach", func(t *testing.T) { testCSITakeover(t, false) })
}

func testCSITakeover(t *testing.T, attach bool) {
	tn := startTakeoverNode(t, "GOKUBELET_UPSTREAM_KUBELET")
	nodeName := clusterEnv["NODE_NAME"]
	t0 := time.Now()
	t.Log("csi takeover: starting the upstream kubelet")
	tn.switchTo(t, tn.upstream)

	// A short driver name: its registration socket's path must fit a
	// unix socket address (108 bytes) under the test's temporary root.
	driver := fmt.Sprintf("tk-%d.csi.gokubelet.io", time.Now().UnixNano()%100000)
	args := []string{"-log-calls"}
	if attach {
		args = append(args, "-attach")
	}
	m := startCSIMockIn(t, filepath.Join(tn.root, "plugins_registry"), driver, args...)
	m.registered(t)
	createCSIDriver(t, driver, storagev1.CSIDriverSpec{AttachRequired: ptr.To(attach),
		VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}})
	ns := namespace(t)

	vol := map[string]*csiTakeoverVolume{}
	for _, p := range []struct{ pod, handle string }{{"a", "1"}, {"b", "2"}, {"c", "3"}} {
		claim := "claim-" + p.pod
		v := &csiTakeoverVolume{pod: p.pod, handle: p.handle}
		v.pv = staticCSIClaim(t, ns, claim, driver, p.handle)
		v.staging = filepath.Join(tn.root, "plugins", "kubernetes.io", "csi", driver, sha256Hex(p.handle), "globalmount")
		v.unique = "kubernetes.io/csi/" + driver + "^" + p.handle
		if attach {
			v.attachment = "csi-" + sha256Hex(p.handle+driver+nodeName)
		}
		vol[p.pod] = v
	}
	create := func(v *csiTakeoverVolume, who string) {
		t.Helper()
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: v.pod}, Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers:                    []v1.Container{probedContainer("main")},
			Volumes:                       []v1.Volume{{Name: "data", VolumeSource: claimSource("claim-" + v.pod)}}}}
		pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
		created := createPod(t, ns, pod)
		v.uid = string(created.UID)
		if v.attachment != "" {
			markAttached(t, v.attachment, driver, nodeName, "/dev/mock-"+v.handle)
		}
		v.target = filepath.Join(tn.root, "pods", v.uid, "volumes", "kubernetes.io~csi", v.pv, "mount")
		waitTakeoverPod(t, ns+"/"+v.pod, "running and ready under "+who, func(p *v1.Pod) bool { return running(p) && podReady(p) })
		m.servedOK(t, "NodeStageVolume", "staging_target_path", v.staging)
		m.servedOK(t, "NodePublishVolume", "target_path", v.target)
	}

	// 1. Upstream runs pods a and b.
	create(vol["a"], "upstream")
	create(vol["b"], "upstream")
	keys := []string{ns + "/a", ns + "/b"}
	for _, v := range []*csiTakeoverVolume{vol["a"], vol["b"]} {
		checkVolData(t, v, driver, nodeName)
		inUse(t, nodeName, v.unique, attach)
	}
	t.Logf("csi takeover: pods a and b running under upstream after %s", time.Since(t0).Round(time.Second))
	// handOver gives the node to next and checks what a takeover keeps:
	// the pods synced by next with no container restarted, the volumes'
	// in-use state, one idempotent stage and publish per volume at the same
	// paths, and the same mounts.
	handOver := func(next *framework.Kubelet, who, from string, keys []string, vols ...*csiTakeoverVolume) {
		t.Helper()
		before := snapshotPods(t, keys)
		mountsBefore := podMounts(t, tn.root, vols...)
		mark := m.mark()
		start := time.Now()
		tn.switchTo(t, next)
		m.registered(t)
		for _, k := range keys {
			flipReadiness(t, k, who)
		}
		t.Logf("csi takeover: %s in charge, pods synced, after %s", who, time.Since(start).Round(time.Second))
		if restarts := compareSnapshots(t, who, before, snapshotPods(t, keys)); restarts > 0 {
			t.Fatalf("%d containers restarted when %s took the node", restarts, who)
		}
		for _, v := range vols {
			inUse(t, nodeName, v.unique, attach)
		}
		checkRepeats(t, m, mark, who, vols...)
		if after := podMounts(t, tn.root, vols...); !slices.Equal(after, mountsBefore) {
			t.Errorf("mounts of the pods and volumes under %s:\n%s\nunder %s:\n%s", who, strings.Join(after, "\n"), from, strings.Join(mountsBefore, "\n"))
		}
	}

	// 2. This kubelet takes over.
	handOver(tn.ours, "this kubelet", "upstream", keys, vol["a"], vol["b"])

	// 3. Pod a, adopted, is deleted under this kubelet.
	t2 := time.Now()
	deleteAndCheckTornDown(t, m, tn.root, ns, vol["a"], nodeName)
	t.Logf("csi takeover: adopted pod a torn down by this kubelet in %s", time.Since(t2).Round(time.Second))

	// 4. Pod c is this kubelet's.
	create(vol["c"], "this kubelet")
	checkVolData(t, vol["c"], driver, nodeName)
	inUse(t, nodeName, vol["c"].unique, attach)

	// 5. Back to upstream.
	handOver(tn.upstream, "upstream", "this kubelet", []string{ns + "/b", ns + "/c"}, vol["b"], vol["c"])

	// 6. Upstream tears down pod b (adopted twice) and pod c (set up by
	// this kubelet).
	t4 := time.Now()
	deleteAndCheckTornDown(t, m, tn.root, ns, vol["b"], nodeName)
	deleteAndCheckTornDown(t, m, tn.root, ns, vol["c"], nodeName)
	t.Logf("csi takeover: pods b and c torn down by upstream in %s; whole test %s", time.Since(t4).Round(time.Second), time.Since(t0).Round(time.Second))
	if left, err := os.ReadDir(filepath.Join(tn.root, "plugins", "kubernetes.io", "csi", driver)); err != nil && !os.IsNotExist(err) {
		t.Error(err)
	} else if len(left) > 0 {
		t.Errorf("left under the driver's staging directory: %v", left)
	}
}

// csiTakeoverVolume is one pod of TestCSITakeover and its volume.
type csiTakeoverVolume struct {
	pod, handle, pv, uid string
	// staging and target: upstream's paths; unique: the volume's name in
	// the Node's volumesInUse; attachment: its VolumeAttachment's ("":
	// its driver does not attach).
	staging, target, unique, attachment string
}

// mark is the number of calls the mock has served so far.
func (m *csiMock) mark() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.calls)
}

// since returns the calls served after mark.
func (m *csiMock) since(mark int) []mockCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]mockCall(nil), m.calls[mark:]...)
}

// checkVolData checks the vol_data.json of a pod's volume and of its
// staging directory: upstream's keys and values.
func checkVolData(t *testing.T, v *csiTakeoverVolume, driver, nodeName string) {
	t.Helper()
	pub := readJSONFile(t, filepath.Join(filepath.Dir(v.target), "vol_data.json"))
	want := map[string]string{"specVolID": v.pv, "volumeHandle": v.handle, "driverName": driver, "nodeName": nodeName,
		"volumeLifecycleMode": "Persistent", "attachmentID": "csi-" + sha256Hex(v.handle+driver+nodeName)}
	for k, val := range want {
		if pub[k] != val {
			t.Errorf("pod %s: vol_data.json %s=%q, want %q (%v)", v.pod, k, pub[k], val, pub)
		}
	}
	st := readJSONFile(t, filepath.Join(filepath.Dir(v.staging), "vol_data.json"))
	if st["volumeHandle"] != v.handle || st["driverName"] != driver {
		t.Errorf("pod %s: staging vol_data.json %v", v.pod, st)
	}
}

// checkRepeats waits for the kubelet that took the node over (who) to
// publish each volume once more, as upstream does after its own restart
// (its reconstruction marks every volume found on disk uncertain, so it
// stages and publishes it again; the hand-back shows it), then holds what
// the driver was asked after mark to at most one NodeStageVolume and one
// NodePublishVolume per volume, each at the path and with the volume ID
// the volume already had (a repeat an idempotent driver answers without
// doing anything twice), each answered OK. It logs what was asked.
func checkRepeats(t *testing.T, m *csiMock, mark int, who string, vols ...*csiTakeoverVolume) {
	t.Helper()
	framework.Eventually(t, who+" publishing each volume again", func() (bool, string) {
		for _, v := range vols {
			found := false
			for _, c := range m.since(mark) {
				found = found || (c.Method == "NodePublishVolume" && c.Req["target_path"] == v.target)
			}
			if !found {
				return false, "no NodePublishVolume of pod " + v.pod + " yet"
			}
		}
		return true, ""
	})
	count := map[string]int{}
	var summary []string
	for _, c := range m.since(mark) {
		var path string
		switch c.Method {
		case "NodeStageVolume":
			path, _ = c.Req["staging_target_path"].(string)
		case "NodePublishVolume":
			path, _ = c.Req["target_path"].(string)
		default:
			// Capabilities and info: no change to any volume.
			if strings.HasPrefix(c.Method, "NodeGet") {
				continue
			}
			t.Errorf("after %s took over: unexpected %s %v", who, c.Method, c.Req)
			continue
		}
		summary = append(summary, c.Method+" "+path)
		known := false
		for _, v := range vols {
			if (c.Method == "NodeStageVolume" && path == v.staging) || (c.Method == "NodePublishVolume" && path == v.target && c.Req["staging_target_path"] == v.staging) {
				known = c.Req["volume_id"] == v.handle
			}
		}
		if !known {
			t.Errorf("after %s took over: %s at a path no volume had: %v", who, c.Method, c.Req)
		}
		if c.Code != "OK" {
			t.Errorf("after %s took over: %s answered %s: %v", who, c.Method, c.Code, c.Req)
		}
		if count[c.Method+" "+path]++; count[c.Method+" "+path] > 1 {
			t.Errorf("after %s took over: %s asked more than once for %s", who, c.Method, path)
		}
	}
	t.Logf("after %s took over, the driver was asked: %v", who, summary)
}

// podMounts lists the mount points under the pods' directories and their
// volumes' staging directories, from /proc/self/mountinfo, sorted; a path
// mounted twice (one mount stacked on another) is listed twice.
func podMounts(t *testing.T, root string, vols ...*csiTakeoverVolume) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		for _, v := range vols {
			for _, dir := range []string{filepath.Join(root, "pods", v.uid), filepath.Dir(v.staging)} {
				if f[4] == dir || strings.HasPrefix(f[4], dir+"/") {
					out = append(out, f[4])
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func readJSONFile(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

// deleteAndCheckTornDown deletes the pod and waits for the kubelet in
// charge to unpublish, then unstage its volume, and to leave nothing of
// the pod's directory and of the volume's staging directory, nothing
// mounted there, and the volume no longer in use.
func deleteAndCheckTornDown(t *testing.T, m *csiMock, root, ns string, v *csiTakeoverVolume, nodeName string) {
	t.Helper()
	if err := client.CoreV1().Pods(ns).Delete(context.Background(), v.pod, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, v.pod)
	m.servedOK(t, "NodeUnpublishVolume", "target_path", v.target)
	m.servedOK(t, "NodeUnstageVolume", "staging_target_path", v.staging)
	if u, s := m.index("NodeUnpublishVolume", "target_path", v.target), m.index("NodeUnstageVolume", "staging_target_path", v.staging); u > s {
		t.Errorf("pod %s: unstaged (call %d) before unpublishing (call %d)", v.pod, s, u)
	}
	gone(t, "pod "+v.pod+"'s CSI volume directory", filepath.Dir(v.target))
	gone(t, "pod "+v.pod+"'s volumes", filepath.Join(root, "pods", v.uid, "volumes"))
	gone(t, "the staging directory of volume "+v.handle, filepath.Dir(v.staging))
	for _, dir := range []string{filepath.Join(root, "pods", v.uid), filepath.Dir(v.staging)} {
		if mounts, err := hostfs.MountsUnder(dir); err != nil || len(mounts) > 0 {
			t.Errorf("pod %s: still mounted under %s: %v %v", v.pod, dir, mounts, err)
		}
	}
	inUse(t, nodeName, v.unique, false)
	if v.attachment == "" {
		return
	}
	framework.Eventually(t, "the attach/detach controller detaches volume "+v.handle, func() (bool, string) {
		_, err := client.StorageV1().VolumeAttachments().Get(context.Background(), v.attachment, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}
