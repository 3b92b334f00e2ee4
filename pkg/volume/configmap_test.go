package volume

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func cmVol(name, cm string) v1.Volume {
	return vol(name, v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: cm}}})
}

func TestConfigMapAllKeysAndUpdates(t *testing.T) {
	e := newEnv(t)
	e.objects.setCM("cfg", map[string]string{"a": "1", "b": "2"})
	e.objects.cms["ns/cfg"].BinaryData = map[string][]byte{"bin": {0, 1, 2}}
	p := pod("u1", cmVol("cfg", "cfg"))
	e.setUp(p)
	dir := e.volDir(p, dirConfigMap, "cfg")
	if read(t, filepath.Join(dir, "a")) != "1" || read(t, filepath.Join(dir, "bin")) != "\x00\x01\x02" {
		t.Fatal("content")
	}
	if m := mode(t, filepath.Join(dir, "a")); m.Perm() != 0o644 {
		t.Errorf("default mode %v, want 0644", m)
	}
	if isTmpfs(t, dir) {
		t.Error("configMap volume on tmpfs; upstream keeps it on disk")
	}
	if _, err := os.Lstat(filepath.Join(dir, "..data")); err != nil {
		t.Errorf("no ..data link: %v", err)
	}

	// An edit is shown on the next set-up (sync or refresh); a removed key
	// disappears.
	e.objects.setCM("cfg", map[string]string{"a": "changed", "c": "3"})
	e.setUp(p)
	if read(t, filepath.Join(dir, "a")) != "changed" || read(t, filepath.Join(dir, "c")) != "3" {
		t.Error("update not shown")
	}
	if _, err := os.Lstat(filepath.Join(dir, "b")); !os.IsNotExist(err) {
		t.Errorf("removed key b still there: %v", err)
	}
}

func TestConfigMapItemsModesAndOptional(t *testing.T) {
	e := newEnv(t)
	e.objects.setCM("cfg", map[string]string{"a": "1", "b": "2"})
	v := cmVol("cfg", "cfg")
	v.ConfigMap.DefaultMode = ptr.To[int32](0o400)
	v.ConfigMap.Items = []v1.KeyToPath{{Key: "a", Path: "path/to/a"}, {Key: "b", Path: "b-exec", Mode: ptr.To[int32](0o755)}}
	opt := cmVol("opt", "missing")
	opt.ConfigMap.Optional = ptr.To(true)
	p := pod("u1", v, opt)
	e.setUp(p)
	dir := e.volDir(p, dirConfigMap, "cfg")
	if read(t, filepath.Join(dir, "path/to/a")) != "1" {
		t.Error("item path")
	}
	if m := mode(t, filepath.Join(dir, "path/to/a")); m.Perm() != 0o400 {
		t.Errorf("defaultMode: %v", m)
	}
	if m := mode(t, filepath.Join(dir, "b-exec")); m.Perm() != 0o755 {
		t.Errorf("item mode: %v", m)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); !os.IsNotExist(err) {
		t.Error("a key not listed in items was projected")
	}
	entries, _ := os.ReadDir(e.volDir(p, dirConfigMap, "opt"))
	for _, en := range entries {
		if !strings.HasPrefix(en.Name(), "..") {
			t.Errorf("optional missing ConfigMap shows %s, want an empty volume", en.Name())
		}
	}
}

func TestConfigMapMissingBlocksThePod(t *testing.T) {
	e := newEnv(t)
	p := pod("u1", cmVol("cfg", "absent"))
	err := e.m.SetUpPod(context.Background(), p)
	var nr *NotReadyError
	if !errors.As(err, &nr) || len(nr.Volumes) != 1 || nr.Volumes[0].Volume != "cfg" || nr.Volumes[0].Type != "configMap" {
		t.Fatalf("err %v, want NotReadyError for cfg", err)
	}
	if !strings.Contains(err.Error(), `configmaps "absent" not found`) || nr.RetryAfter <= 0 {
		t.Errorf("message %q retry %v", err, nr.RetryAfter)
	}
	if ev := e.events(); !hasEvent(ev, "FailedMount", `MountVolume.SetUp failed for volume "cfg"`, "absent") {
		t.Errorf("events %v", ev)
	}
	// The same failure again: no new event.
	e.m.SetUpPod(context.Background(), p)
	if ev := e.events(); len(ev) != 0 {
		t.Errorf("repeated event %v", ev)
	}

	// A listed key the ConfigMap lacks.
	e.objects.setCM("absent", map[string]string{"x": "1"})
	p2 := pod("u2", cmVol("cfg", "absent"))
	p2.Spec.Volumes[0].ConfigMap.Items = []v1.KeyToPath{{Key: "data-4", Path: "d"}}
	if err := e.m.SetUpPod(context.Background(), p2); err == nil || !strings.Contains(err.Error(), "non-existent config key: data-4") {
		t.Errorf("missing key: %v", err)
	}
	// Once it exists, the first pod's volume is set up.
	if err := e.m.SetUpPod(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if !e.m.Ready(p.UID) || e.m.Ready(p2.UID) {
		t.Errorf("Ready: %v %v", e.m.Ready(p.UID), e.m.Ready(p2.UID))
	}
}

func TestConfigMapWithFSGroup(t *testing.T) {
	e := newEnv(t)
	e.objects.setCM("cfg", map[string]string{"a": "1"})
	v := cmVol("cfg", "cfg")
	v.ConfigMap.DefaultMode = ptr.To[int32](0o400)
	p := pod("u1", v)
	p.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr.To[int64](1001)}
	e.setUp(p)
	f := filepath.Join(e.volDir(p, dirConfigMap, "cfg"), "a")
	if st := statT(t, f); st.Gid != 1001 || st.Mode&0o777 != 0o440 {
		t.Errorf("file gid %d mode %o, want 1001 0440 (defaultMode plus group read)", st.Gid, st.Mode&0o777)
	}
	// Ownership also covers a new version.
	e.objects.setCM("cfg", map[string]string{"a": "2"})
	e.setUp(p)
	if st := statT(t, f); st.Gid != 1001 || read(t, f) != "2" {
		t.Errorf("after update gid %d", st.Gid)
	}
}

func TestRefreshFailureKeepsContent(t *testing.T) {
	e := newEnv(t)
	e.objects.setCM("cfg", map[string]string{"a": "1"})
	p := pod("u1", cmVol("cfg", "cfg"))
	e.setUp(p)
	e.objects.err = errors.New("apiserver unreachable")
	if err := e.m.SetUpPod(context.Background(), p); err != nil {
		t.Fatalf("a set-up volume failing to refresh blocked the pod: %v", err)
	}
	if read(t, filepath.Join(e.volDir(p, dirConfigMap, "cfg"), "a")) != "1" {
		t.Error("content lost")
	}
	if ev := e.events(); !hasEvent(ev, "FailedMount", "apiserver unreachable") {
		t.Errorf("events %v", ev)
	}
}

// After a kubelet restart, a volume written before keeps serving its
// content when its source cannot be read: the running pod is not blocked.
func TestRestartKeepsWrittenContentWhenTheSourceFails(t *testing.T) {
	e := newEnv(t)
	e.objects.setCM("cfg", map[string]string{"a": "1"})
	p := pod("u1", cmVol("cfg", "cfg"))
	e.setUp(p)
	e.objects.err = errors.New("forbidden")
	m2 := New(e.m.opts)
	if err := m2.SetUpPod(context.Background(), p); err != nil {
		t.Fatalf("restarted manager blocked the pod: %v", err)
	}
	mnts, err := m2.ContainerMounts(context.Background(), p, &p.Spec.Containers[0], nil)
	if err != nil || read(t, filepath.Join(mnts[0].HostPath, "a")) != "1" {
		t.Fatalf("mounts %v, %v", mnts, err)
	}
	// A pod never set up still waits.
	if err := m2.SetUpPod(context.Background(), pod("u2", cmVol("cfg", "cfg"))); err == nil {
		t.Error("a new pod was set up without its ConfigMap")
	}
}
