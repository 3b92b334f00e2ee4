package volume

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
	"github.com/gokubelet/kubelet/pkg/node/objects"
	"github.com/gokubelet/kubelet/pkg/volume/hostfs"
)

func mountsUnder(t *testing.T, dir string) int {
	t.Helper()
	m, err := hostfs.MountsUnder(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

func TestUnsupportedVolumeTypeIsNamed(t *testing.T) {
	e := newEnv(t)
	p := pod("u1", vol("ebs", v1.VolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}}),
		vol("scratch", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}))
	err := e.m.SetUpPod(context.Background(), p)
	var nr *NotReadyError
	if !errors.As(err, &nr) || len(nr.Volumes) != 1 || nr.Volumes[0].Type != "awsElasticBlockStore" {
		t.Fatalf("err %v", err)
	}
	if want := `unmounted volumes=[ebs]: volume "ebs" has type awsElasticBlockStore, which this node cannot provide`; err.Error() != want {
		t.Errorf("message %q\nwant %q", err, want)
	}
	if ev := e.events(); !hasEvent(ev, "Warning FailedMount", "awsElasticBlockStore") {
		t.Errorf("events %v", ev)
	}
	// The supported volume was still set up.
	if _, err := os.Stat(e.volDir(p, dirEmptyDir, "scratch")); err != nil {
		t.Error(err)
	}
}

func TestUnusedVolumesAreNotSetUp(t *testing.T) {
	e := newEnv(t)
	p := pod("u1")
	p.Spec.Volumes = []v1.Volume{vol("ebs", v1.VolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{}}), cmVol("cfg", "missing")}
	if err := e.m.SetUpPod(context.Background(), p); err != nil {
		t.Fatalf("unused volumes blocked the pod: %v", err)
	}
	// Raw block devices are refused by name.
	p.Spec.Containers[0].VolumeDevices = []v1.VolumeDevice{{Name: "ebs", DevicePath: "/dev/xvda"}}
	if err := e.m.SetUpPod(context.Background(), p); err == nil || !strings.Contains(err.Error(), "raw block device") {
		t.Errorf("volumeDevices: %v", err)
	}
}

func TestRetryDelay(t *testing.T) {
	var got []time.Duration
	for i := 1; i <= 7; i++ {
		got = append(got, retryDelay(i))
	}
	want := []time.Duration{1, 2, 4, 8, 10, 10, 10}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Fatalf("retryDelay = %v", got)
		}
	}
}

func TestObjectChangedRewritesOrResyncs(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = e.m.Start(ctx) }()
	e.objects.setCM("cfg", map[string]string{"k": "v1"})
	ready := pod("ready", cmVol("cfg", "cfg"))
	e.setUp(ready)
	waiting := pod("waiting", cmVol("cfg", "later"))
	if err := e.m.SetUpPod(ctx, waiting); err == nil {
		t.Fatal("waiting pod set up")
	}

	e.objects.setCM("cfg", map[string]string{"k": "v2"})
	e.m.ObjectChanged(objects.Ref{Kind: objects.ConfigMap, Namespace: "ns", Name: "cfg"})
	f := filepath.Join(e.volDir(ready, dirConfigMap, "cfg"), "k")
	eventually.True(t, "the volume rewritten", func() bool { b, _ := os.ReadFile(f); return string(b) == "v2" })

	e.objects.setCM("later", map[string]string{"k": "x"})
	e.m.ObjectChanged(objects.Ref{Kind: objects.ConfigMap, Namespace: "ns", Name: "later"})
	select {
	case uid := <-e.resync:
		if uid != waiting.UID {
			t.Errorf("resync of %s", uid)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting pod was not resynced")
	}
	// Objects of another namespace or kind concern nobody.
	e.m.ObjectChanged(objects.Ref{Kind: objects.Secret, Namespace: "ns", Name: "later"})
	e.m.ObjectChanged(objects.Ref{Kind: objects.ConfigMap, Namespace: "other", Name: "later"})
	select {
	case uid := <-e.resync:
		t.Errorf("unexpected resync of %s", uid)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestTearDownAndOrphans(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.objects.setSecret("s", map[string]string{"k": "v"})
	mk := func(uid string) *v1.Pod {
		p := pod(uid, vol("s", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}), vol("e", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}))
		p.Spec.Containers[0].VolumeMounts[1].SubPath = "sub"
		e.setUp(p)
		if _, err := e.m.ContainerMounts(ctx, p, &p.Spec.Containers[0], nil); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b, c := mk("a"), mk("b"), mk("c")
	if n := mountsUnder(t, e.root); n != 6 {
		t.Fatalf("%d mounts, want a tmpfs and a subPath bind mount per pod", n)
	}
	if err := e.m.TearDownPod(ctx, a.UID); err != nil {
		t.Fatal(err)
	}
	if n := mountsUnder(t, e.m.PodDir(a.UID)); n != 0 {
		t.Errorf("%d mounts left in a torn down pod", n)
	}
	if _, err := os.Stat(filepath.Join(e.m.PodDir(a.UID), "volumes")); !os.IsNotExist(err) {
		t.Errorf("volumes dir of a torn down pod: %v", err)
	}

	// After a restart (new Manager), pods nobody claims are removed whole;
	// the rest keep their volumes.
	m2 := New(e.m.opts)
	m2.CleanupOrphans(ctx, func(uid types.UID) bool { return uid == c.UID })
	for _, uid := range []types.UID{a.UID, b.UID} {
		if _, err := os.Stat(m2.PodDir(uid)); !os.IsNotExist(err) {
			t.Errorf("orphan %s: %v", uid, err)
		}
	}
	if n := mountsUnder(t, e.m.PodDir(c.UID)); n != 2 {
		t.Errorf("kept pod has %d mounts", n)
	}
}

// Regression (issue 23): removing a pod whose UID is "../../victim" ran
// RemoveAll outside the root dir.
func TestRemovePodDirStaysInsideTheRootDir(t *testing.T) {
	e := newEnv(t)
	victim := filepath.Join(e.root, "victim")
	if err := os.MkdirAll(filepath.Join(victim, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(e.root, "pods", "kept"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, uid := range []string{"../victim", "../../" + filepath.Base(e.root) + "/victim", "..", ".", "", "a/../../victim"} {
		if err := e.m.RemovePodDir(context.Background(), types.UID(uid)); err == nil {
			t.Errorf("RemovePodDir(%q) succeeded", uid)
		}
	}
	for _, dir := range []string{filepath.Join(victim, "data"), filepath.Join(e.root, "pods", "kept")} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s was removed: %v", dir, err)
		}
	}
}
