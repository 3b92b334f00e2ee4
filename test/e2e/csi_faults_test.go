package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/plugins/csi"
	"github.com/gokubelet/kubelet/test/framework"
)

// TestCSIFaults: upstream's mock CSI driver misbehaving as real drivers do,
// with the pods that use it.
//
//   - A driver that takes calls and never answers them (a stopped
//     process): its stage is abandoned after the bounded call timeout and
//     the pod waits with a reason naming the driver and the deadline. A
//     kubelet killed while that stage is pending and started again once
//     the driver answers stages, publishes and runs the pod, and deleting
//     it unpublishes and unstages: nothing is left on disk or in the mount
//     table. The stuck driver holds up no other driver's pods.
//   - Two pods on the node share one volume: staged once, published to
//     each. The driver crashes (SIGKILL, its sockets left behind) while
//     publishing to the second: that pod waits with a reason naming the
//     driver and the gRPC error, the first keeps running untouched, and
//     once the driver is back (it registers again) the publish is retried
//     and the second pod runs. The first pod's deletion unpublishes only
//     its own target; the last one's unpublishes and then unstages.
func TestCSIFaults(t *testing.T) {
	nodeName := node(t)
	ctx := context.Background()
	ns := namespace(t)
	suffix := time.Now().UnixNano() % 100000

	// The stuck driver. A first pod warms it up (NodeGetCapabilities is
	// asked once per registration), so that the stopped driver hangs the
	// stage of the second.
	stuckName := fmt.Sprintf("mock-stuck-%d.csi.gokubelet.io", suffix)
	stuck := startCSIMock(t, stuckName, "-log-calls")
	stuck.registered(t)
	createCSIDriver(t, stuckName, storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)})
	staticCSIClaim(t, ns, "warm", stuckName, "3")
	hungPV := staticCSIClaim(t, ns, "hung", stuckName, "2")
	createPod(t, ns, volumePod("warm", claimSource("warm")))
	warmContainer := waitPod(t, ns, "warm", "running", running).Status.ContainerStatuses[0].ContainerID
	stuck.signal(t, syscall.SIGSTOP)
	hung := createPod(t, ns, volumePod("hung", claimSource("hung")))
	hungStaging := filepath.Join(rootDir, "plugins", "kubernetes.io", "csi", stuckName, sha256Hex("2"), "globalmount")
	// The kubelet writes the staging vol_data.json just before it calls
	// NodeStageVolume.
	framework.Eventually(t, "the hung volume's stage to start", func() (bool, string) {
		_, err := os.Stat(filepath.Join(filepath.Dir(hungStaging), "vol_data.json"))
		return err == nil, fmt.Sprint(err)
	})
	stageStarted := time.Now()

	// While that stage hangs, another driver's pods are served.
	t.Run("shared volume and a crash during publish", func(t *testing.T) { testCSICrashDuringPublish(t, nodeName, ns, suffix) })

	// The stage times out after the bounded call timeout, with a reason.
	framework.EventuallyWithin(t, csi.VolumeCallTimeout+framework.WaitLimit-time.Since(stageStarted), "the hung stage's timeout", func() (bool, string) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "hung", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range p.Status.ContainerStatuses {
			if w := c.State.Waiting; w != nil && w.Reason == "ContainerCreating" &&
				strings.Contains(w.Message, `CSI driver "`+stuckName+`": NodeStageVolume failed`) && strings.Contains(w.Message, "DeadlineExceeded") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", p.Status.ContainerStatuses)
	})
	if waited := time.Since(stageStarted); waited < csi.VolumeCallTimeout-5*time.Second {
		t.Errorf("the stage was given up after %v, before the %v call timeout", waited, csi.VolumeCallTimeout)
	}

	// The kubelet dies while the stage is retried, the driver comes back,
	// and the kubelet starts again: the pod runs, the warm pod was never
	// restarted.
	kubelet.Kill9(t)
	stuck.signal(t, syscall.SIGCONT)
	kubelet.Start(t)
	node(t)
	waitPod(t, ns, "hung", "running once the driver answers", running)
	if c := waitPod(t, ns, "warm", "running", running).Status.ContainerStatuses[0]; c.ContainerID != warmContainer || c.RestartCount != 0 {
		t.Errorf("the warm pod's container was replaced or restarted: %s (%d), was %s", c.ContainerID, c.RestartCount, warmContainer)
	}
	stuck.servedOK(t, "NodeStageVolume", "staging_target_path", hungStaging)
	hungTarget := filepath.Join(rootDir, "pods", string(hung.UID), "volumes", "kubernetes.io~csi", hungPV, "mount")
	stuck.servedOK(t, "NodePublishVolume", "target_path", hungTarget)

	// Deleting both pods leaves nothing behind.
	for _, p := range []string{"warm", "hung"} {
		if err := client.CoreV1().Pods(ns).Delete(ctx, p, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitGone(t, ns, "warm")
	waitGone(t, ns, "hung")
	stuck.servedOK(t, "NodeUnpublishVolume", "target_path", hungTarget)
	stuck.servedOK(t, "NodeUnstageVolume", "staging_target_path", hungStaging)
	warmStaging := filepath.Join(rootDir, "plugins", "kubernetes.io", "csi", stuckName, sha256Hex("3"), "globalmount")
	stuck.servedOK(t, "NodeUnstageVolume", "staging_target_path", warmStaging)
	gone(t, "the hung volume's staging directory", filepath.Dir(hungStaging))
	gone(t, "the warm volume's staging directory", filepath.Dir(warmStaging))
	gone(t, "the hung pod's volume directory", filepath.Dir(hungTarget))
	for _, handle := range []string{"3", "2"} {
		inUse(t, nodeName, "kubernetes.io/csi/"+stuckName+"^"+handle, false)
	}
	noMountsUnder(t, filepath.Join(rootDir, "plugins", "kubernetes.io", "csi", stuckName), filepath.Join(rootDir, "pods", string(hung.UID)))
}

func testCSICrashDuringPublish(t *testing.T, nodeName, ns string, suffix int64) {
	ctx := context.Background()
	name := fmt.Sprintf("mock-crash-%d.csi.gokubelet.io", suffix)
	m := startCSIMock(t, name, "-log-calls")
	m.registered(t)
	createCSIDriver(t, name, storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)})
	pv := staticCSIClaim(t, ns, "shared", name, "1")
	staging := filepath.Join(rootDir, "plugins", "kubernetes.io", "csi", name, sha256Hex("1"), "globalmount")

	first := createPod(t, ns, volumePod("first", claimSource("shared")))
	firstContainer := waitPod(t, ns, "first", "running", running).Status.ContainerStatuses[0].ContainerID
	firstTarget := filepath.Join(rootDir, "pods", string(first.UID), "volumes", "kubernetes.io~csi", pv, "mount")
	m.servedOK(t, "NodeStageVolume", "staging_target_path", staging)
	m.servedOK(t, "NodePublishVolume", "target_path", firstTarget)

	// The driver stops answering; the second pod's publish starts (the
	// volume is staged already: no second stage), and the driver dies
	// with the call in flight.
	m.signal(t, syscall.SIGSTOP)
	second := createPod(t, ns, volumePod("second", claimSource("shared")))
	secondTarget := filepath.Join(rootDir, "pods", string(second.UID), "volumes", "kubernetes.io~csi", pv, "mount")
	framework.Eventually(t, "the second pod's publish to start", func() (bool, string) {
		_, err := os.Stat(filepath.Join(filepath.Dir(secondTarget), "vol_data.json"))
		return err == nil, fmt.Sprint(err)
	})
	m.signal(t, syscall.SIGKILL)
	waitingFor(t, ns, "second", "ContainerCreating", `CSI driver "`+name+`"`)
	framework.Eventually(t, "kubectl describe names the driver in a FailedMount event", func() (bool, string) {
		out, errs, _ := kubectl(t, nil, "", ns, "describe", "pod", "second")
		return strings.Contains(out, "FailedMount") && strings.Contains(out, name), out + errs
	})

	// The driver is back: it registers again and the publish is retried.
	m = m.restart(t)
	m.registered(t)
	waitPod(t, ns, "second", "running once the driver is back", running)
	m.servedOK(t, "NodePublishVolume", "target_path", secondTarget)
	if i := m.index("NodeStageVolume", "staging_target_path", staging); i >= 0 {
		t.Errorf("the shared volume was staged again (call %d)", i)
	}
	if c := waitPod(t, ns, "first", "running", running).Status.ContainerStatuses[0]; c.ContainerID != firstContainer || c.RestartCount != 0 {
		t.Errorf("the first pod's container was replaced or restarted: %s (%d), was %s", c.ContainerID, c.RestartCount, firstContainer)
	}
	// The driver needs no attaching: the Node's volumesInUse does not list
	// the volume (upstream 1.37 lists only attachable volumes there).
	volume := "kubernetes.io/csi/" + name + "^1"
	inUse(t, nodeName, volume, false)

	// The first pod goes: its target only. The second still uses the
	// volume, so it stays staged.
	if err := client.CoreV1().Pods(ns).Delete(ctx, "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "first")
	m.servedOK(t, "NodeUnpublishVolume", "target_path", firstTarget)
	gone(t, "the first pod's volume directory", filepath.Dir(firstTarget))
	if i := m.index("NodeUnstageVolume", "staging_target_path", staging); i >= 0 {
		t.Errorf("unstaged a volume the second pod still uses (call %d)", i)
	}
	if i := m.index("NodeUnpublishVolume", "target_path", secondTarget); i >= 0 {
		t.Errorf("unpublished the second pod's volume when the first went (call %d)", i)
	}
	if st, err := os.Stat(secondTarget); err != nil || !st.IsDir() {
		t.Errorf("the second pod's publish target: %v", err)
	}

	if err := client.CoreV1().Pods(ns).Delete(ctx, "second", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "second")
	m.servedOK(t, "NodeUnpublishVolume", "target_path", secondTarget)
	m.servedOK(t, "NodeUnstageVolume", "staging_target_path", staging)
	if u, s := m.index("NodeUnpublishVolume", "target_path", secondTarget), m.index("NodeUnstageVolume", "staging_target_path", staging); u > s {
		t.Errorf("unstaged (call %d) before unpublishing (call %d)", s, u)
	}
	gone(t, "the second pod's volume directory", filepath.Dir(secondTarget))
	gone(t, "the staging directory", filepath.Dir(staging))
	inUse(t, nodeName, volume, false)
	noMountsUnder(t, filepath.Join(rootDir, "plugins", "kubernetes.io", "csi", name), filepath.Join(rootDir, "pods", string(second.UID)))
}

// noMountsUnder fails if the mount table has a mount point under any of
// dirs.
func noMountsUnder(t *testing.T, dirs ...string) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		for _, d := range dirs {
			if f[4] == d || strings.HasPrefix(f[4], d+"/") {
				t.Errorf("left mounted: %s", f[4])
			}
		}
	}
}
