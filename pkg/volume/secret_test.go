package volume

import (
	"context"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestSecretOnTmpfs(t *testing.T) {
	e := newEnv(t)
	e.objects.setSecret("s", map[string]string{"user": "admin", "pass": "hunter2"})
	v := vol("s", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr.To[int32](0o440),
		Items: []v1.KeyToPath{{Key: "pass", Path: "creds/pass", Mode: ptr.To[int32](0o400)}, {Key: "user", Path: "user"}}}})
	p := pod("u1", v)
	e.setUp(p)
	dir := e.volDir(p, dirSecret, "s")
	if !isTmpfs(t, dir) {
		t.Error("secret volume is not on tmpfs")
	}
	if read(t, filepath.Join(dir, "creds/pass")) != "hunter2" || read(t, filepath.Join(dir, "user")) != "admin" {
		t.Error("content")
	}
	if m := mode(t, filepath.Join(dir, "creds/pass")); m.Perm() != 0o400 {
		t.Errorf("item mode %v", m)
	}
	if m := mode(t, filepath.Join(dir, "user")); m.Perm() != 0o440 {
		t.Errorf("defaultMode %v", m)
	}
	// A second set-up does not stack another tmpfs.
	e.setUp(p)
	if n := mountsUnder(t, e.root); n != 1 {
		t.Errorf("%d mounts after two set-ups", n)
	}
	mnts, err := e.m.ContainerMounts(context.Background(), p, &p.Spec.Containers[0], nil)
	if err != nil || len(mnts) != 1 || !mnts[0].ReadOnly || mnts[0].HostPath != dir {
		t.Errorf("mounts %+v, %v: want the volume, read-only", mnts, err)
	}
}
