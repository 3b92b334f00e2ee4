package volume

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestContainerMountsSubPaths(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.objects.setCM("cfg", map[string]string{"key": "value"})
	p := pod("u1", vol("work", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}), cmVol("cfg", "cfg"))
	prop := v1.MountPropagationHostToContainer
	c := &p.Spec.Containers[0]
	c.VolumeMounts = []v1.VolumeMount{
		{Name: "work", MountPath: "/work", MountPropagation: &prop},
		{Name: "work", MountPath: "/logs", SubPathExpr: "logs/$(POD_NAME)"},
		{Name: "cfg", MountPath: "/etc/key", SubPath: "key"},
		{Name: "cfg", MountPath: "/etc/cfg", ReadOnly: false},
	}
	e.setUp(p)
	envs := map[string]string{"POD_NAME": "web-1"}
	mnts, err := e.m.ContainerMounts(ctx, p, c, func(k string) (string, bool) { v, ok := envs[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	work := e.volDir(p, dirEmptyDir, "work")
	if mnts[0].HostPath != work || mnts[0].Propagation != prop || mnts[0].ReadOnly {
		t.Errorf("plain mount %+v", mnts[0])
	}
	if _, err := os.Stat(filepath.Join(work, "logs", "web-1")); err != nil {
		t.Errorf("subPathExpr directory not created: %v", err)
	}
	if !strings.Contains(mnts[1].HostPath, "volume-subpaths/work/c/1") {
		t.Errorf("subPath mount source %s", mnts[1].HostPath)
	}
	if read(t, mnts[2].HostPath) != "value" || !mnts[2].ReadOnly {
		t.Errorf("configMap key subPath: %+v", mnts[2])
	}
	if !mnts[3].ReadOnly {
		t.Error("configMap volume mounted writable")
	}

	// A missing variable, or a subPath leading out of the volume, keeps the
	// container from being created with a message naming the subPath.
	c.VolumeMounts = []v1.VolumeMount{{Name: "work", MountPath: "/x", SubPathExpr: "$(NOPE)/x"}}
	if _, err := e.m.ContainerMounts(ctx, p, c, nil); err == nil || !strings.Contains(err.Error(), "missing value for NOPE") {
		t.Errorf("missing variable: %v", err)
	}
	os.Symlink("/etc", filepath.Join(work, "planted"))
	c.VolumeMounts = []v1.VolumeMount{{Name: "work", MountPath: "/x", SubPath: "planted"}}
	_, err = e.m.ContainerMounts(ctx, p, c, nil)
	if err == nil || !strings.Contains(err.Error(), "subPath") || !strings.Contains(err.Error(), "outside the volume") {
		t.Errorf("planted symlink: %v", err)
	}
	c.VolumeMounts = []v1.VolumeMount{{Name: "work", MountPath: "/x", SubPath: "../../etc"}}
	if _, err := e.m.ContainerMounts(ctx, p, c, nil); err == nil || !strings.Contains(err.Error(), "subPath") {
		t.Errorf("backstepping subPath: %v", err)
	}
	// A volume that is not set up.
	c.VolumeMounts = []v1.VolumeMount{{Name: "other", MountPath: "/o"}}
	if _, err := e.m.ContainerMounts(ctx, p, c, nil); err == nil {
		t.Error("mount of an unknown volume")
	}
}

func TestExpandSubPathExpr(t *testing.T) {
	env := func(k string) (string, bool) {
		v, ok := map[string]string{"A": "a", "EMPTY": ""}[k]
		return v, ok
	}
	for _, tc := range []struct{ in, want, err string }{
		{"x/$(A)/y", "x/a/y", ""},
		{"$$(A)", "$(A)", ""},
		{"$(A)$(A)", "aa", ""},
		{"$(EMPTY)", "", "missing value for EMPTY"},
		{"$(B)/$(C)", "", "missing value for B, C"},
		{"$(A", "$(A", ""},
		{"a$b", "a$b", ""},
		{"a$", "a$", ""},
		// Missing names once each, sorted, as upstream (this function
		// listed them in order, repeated).
		{"$(C)/$(B)/$(C)", "", "missing value for B, C"},
		// An unterminated "$(" is kept and scanning goes on, as upstream's
		// expansion (this function copied the rest verbatim).
		{"$(A$$", "$(A$", ""},
	} {
		got, err := ExpandSubPathExpr(tc.in, env)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("%q: %q, %v; want %q, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// An image volume is nothing on the host: its mount carries the reference,
// its pull policy and the subPath (checked like any other) for the runtime
// manager, read-only whatever the volumeMount says.
func TestContainerMountsImageVolume(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := pod("u1", vol("tools", v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "example.com/tools:1", PullPolicy: v1.PullNever}}))
	c := &p.Spec.Containers[0]
	prop := v1.MountPropagationHostToContainer
	c.VolumeMounts = []v1.VolumeMount{
		{Name: "tools", MountPath: "/tools", MountPropagation: &prop},
		{Name: "tools", MountPath: "/bin/tool", SubPathExpr: "bin/$(TOOL)"},
	}
	e.setUp(p)
	envs := map[string]string{"TOOL": "jq"}
	mnts, err := e.m.ContainerMounts(ctx, p, c, func(k string) (string, bool) { v, ok := envs[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if len(mnts) != 2 {
		t.Fatalf("mounts %+v", mnts)
	}
	if mnts[0].Propagation != prop || mnts[1].Propagation != "" {
		t.Errorf("mountPropagation not passed on as the volumeMount sets it: %q, %q", mnts[0].Propagation, mnts[1].Propagation)
	}
	for i, want := range []string{"", "bin/jq"} {
		m := mnts[i]
		if m.Image != "example.com/tools:1" || m.PullPolicy != v1.PullNever || m.HostPath != "" || !m.ReadOnly || m.ImageSubPath != want {
			t.Errorf("mount %d: %+v, want the image with subPath %q, read-only", i, m, want)
		}
	}
	if _, err := os.Stat(filepath.Join(e.m.PodDir(p.UID), "volumes")); err == nil {
		entries, _ := os.ReadDir(filepath.Join(e.m.PodDir(p.UID), "volumes"))
		if len(entries) != 0 {
			t.Errorf("an image volume made something on the host: %v", entries)
		}
	}
	if _, err := e.m.VolumeDir(p, "tools"); err == nil || !strings.Contains(err.Error(), "no directory on the node") {
		t.Errorf("VolumeDir of an image volume: %v", err)
	}
	c.VolumeMounts = []v1.VolumeMount{{Name: "tools", MountPath: "/x", SubPath: "../etc"}}
	if _, err := e.m.ContainerMounts(ctx, p, c, nil); err == nil || !strings.Contains(err.Error(), "subPath") {
		t.Errorf("backstepping subPath in an image volume: %v", err)
	}
}
