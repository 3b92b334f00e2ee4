//go:build linux

package hostfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// These tests mount and chown for real (make test runs as root).

func TestTmpfsMountSizeAndRemoval(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	os.Mkdir(dir, 0o777)
	if err := MountTmpfs(dir, 10<<20); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Unmount(dir) })
	if ok, err := IsMountPoint(dir); err != nil || !ok {
		t.Fatalf("IsMountPoint after mount = %v, %v", ok, err)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Type != unix.TMPFS_MAGIC || int64(fs.Blocks)*fs.Bsize != 10<<20 {
		t.Errorf("statfs type %x size %d, want tmpfs of 10Mi", fs.Type, int64(fs.Blocks)*fs.Bsize)
	}
	os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644)
	if err := RemoveAll(filepath.Dir(dir)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("volume dir still there: %v", err)
	}
	if ok, _ := IsMountPoint(filepath.Dir(filepath.Dir(dir))); ok {
		t.Error("temp dir parent reported as a mount point")
	}
}

func TestRemoveAllNeverEmptiesABindMountedHostDir(t *testing.T) {
	base := t.TempDir()
	host := filepath.Join(base, "host")
	os.Mkdir(host, 0o755)
	os.WriteFile(filepath.Join(host, "precious"), []byte("keep"), 0o644)
	pod := filepath.Join(base, "pod")
	target := filepath.Join(pod, "a", "b")
	os.MkdirAll(target, 0o755)
	if err := unix.Mount(host, target, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Unmount(target) })
	if ok, _ := IsMountPoint(target); !ok {
		t.Fatal("bind mount of the same filesystem not seen as a mount point")
	}
	if m, _ := MountsUnder(pod); len(m) != 1 || m[0] != target {
		t.Fatalf("MountsUnder = %v", m)
	}
	if err := RemoveAll(pod); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(host, "precious")); err != nil || string(b) != "keep" {
		t.Fatalf("host file after RemoveAll: %q, %v", b, err)
	}
	if _, err := os.Stat(pod); !os.IsNotExist(err) {
		t.Errorf("pod dir not removed: %v", err)
	}
}

func stat(t *testing.T, p string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestChangeOwnership(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	os.WriteFile(outside, []byte("host"), 0o600)
	vol := filepath.Join(base, "vol")
	os.MkdirAll(filepath.Join(vol, "sub"), 0o700)
	os.WriteFile(filepath.Join(vol, "f"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(vol, "sub", "x"), []byte("x"), 0o700)
	unix.Chmod(filepath.Join(vol, "sub", "x"), 0o4700)
	os.Symlink(outside, filepath.Join(vol, "link"))
	os.Chmod(vol, 0o755)

	if !NeedsOwnershipChange(vol, 1234, false) {
		t.Error("a fresh volume needs no change?")
	}
	if err := ChangeOwnership(vol, 1234, false); err != nil {
		t.Fatal(err)
	}
	for p, mode := range map[string]uint32{
		"":      0o775 | unix.S_ISGID,
		"sub":   0o770 | unix.S_ISGID,
		"f":     0o660,
		"sub/x": 0o760 | unix.S_ISUID,
	} {
		st := stat(t, filepath.Join(vol, p))
		if st.Gid != 1234 || st.Mode&0o7777 != mode {
			t.Errorf("%q: gid %d mode %o, want 1234 %o", p, st.Gid, st.Mode&0o7777, mode)
		}
	}
	if st := stat(t, filepath.Join(vol, "link")); st.Gid != 1234 {
		t.Errorf("link gid %d", st.Gid)
	}
	if st := stat(t, outside); st.Gid == 1234 || st.Mode&0o777 != 0o600 {
		t.Errorf("the link's target outside the volume changed: gid %d mode %o", st.Gid, st.Mode&0o777)
	}
	if NeedsOwnershipChange(vol, 1234, false) {
		t.Error("OnRootMismatch: root already right, still needs change")
	}
	if !NeedsOwnershipChange(vol, 99, false) {
		t.Error("other gid: no change needed?")
	}

	ro := filepath.Join(base, "ro")
	os.Mkdir(ro, 0o700)
	os.WriteFile(filepath.Join(ro, "k"), []byte("x"), 0o400)
	if err := ChangeOwnership(ro, 7, true); err != nil {
		t.Fatal(err)
	}
	if st := stat(t, filepath.Join(ro, "k")); st.Mode&0o777 != 0o440 || st.Gid != 7 {
		t.Errorf("read-only file: mode %o gid %d, want 0440 7", st.Mode&0o777, st.Gid)
	}
	if st := stat(t, ro); st.Mode&0o7777 != 0o750|unix.S_ISGID {
		t.Errorf("read-only dir: mode %o", st.Mode&0o7777)
	}
}

func TestUnescapeMountinfo(t *testing.T) {
	if got := unescapeMountinfo(`/a\040b\011c\134`); got != "/a b\tc\\" {
		t.Errorf("got %q", got)
	}
}

func TestDiskUsage(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a"), make([]byte, 1<<20), 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "b"), make([]byte, 1<<20), 0o644)
	os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "sub", "a-again"))
	mnt := filepath.Join(dir, "mnt")
	os.Mkdir(mnt, 0o755)
	if err := MountTmpfs(mnt, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Unmount(mnt) })
	os.WriteFile(filepath.Join(mnt, "big"), make([]byte, 4<<20), 0o644)
	got, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Two 1 MiB files (the hard link once), a few directory blocks, not
	// the 4 MiB on the other mount.
	if got < 2<<20 || got > 2<<20+256<<10 {
		t.Errorf("DiskUsage = %d, want about 2 MiB", got)
	}
}

func TestDeepestMountAndIsShared(t *testing.T) {
	mounts := []*mountinfo.Info{
		{ID: 1, Mountpoint: "/", Optional: ""},
		{ID: 2, Mountpoint: "/var", Optional: "shared:3"},
		{ID: 3, Mountpoint: "/var/lib", Optional: "master:1"},
		{ID: 4, Mountpoint: "/var/lib", Optional: "shared:7 master:1"},
	}
	if m := DeepestMount(mounts); m == nil || m.ID != 4 {
		t.Errorf("deepest = %+v, want the last mount over /var/lib", m)
	}
	if m := DeepestMount(mounts[:2]); m == nil || m.ID != 2 {
		t.Errorf("deepest = %+v, want /var", m)
	}
	if DeepestMount(nil) != nil {
		t.Error("deepest of none is not nil")
	}
	for opt, want := range map[string]bool{"": false, "master:1": false, "shared:3": true, "shared:7 master:1": true, "propagate_from:2": false} {
		if got := IsShared(opt); got != want {
			t.Errorf("IsShared(%q) = %v, want %v", opt, got, want)
		}
	}
}

// A directory on a private mount becomes an rshared mount point, with what
// was mounted below it still there; a second call changes nothing.
func TestMakeRShared(t *testing.T) {
	root := filepath.Join(t.TempDir(), "kubelet")
	sub := filepath.Join(root, "pods", "vol")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	// Whatever / is here, make the test's parent private so the call has
	// something to do.
	parent := filepath.Dir(root)
	if err := unix.Mount(parent, parent, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { UnmountAll(parent) })
	if err := unix.Mount("", parent, "", unix.MS_PRIVATE, ""); err != nil {
		t.Fatal(err)
	}
	if err := MountTmpfs(sub, 1<<20); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(sub, "f"), []byte("x"), 0o644)

	changed, err := MakeRShared(root)
	if err != nil || !changed {
		t.Fatalf("MakeRShared = %v, %v; want a change", changed, err)
	}
	info, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(root))
	if err != nil || len(info) == 0 || !IsShared(info[len(info)-1].Optional) {
		t.Fatalf("%s after MakeRShared: %+v, %v; want a shared mount point", root, info, err)
	}
	if b, err := os.ReadFile(filepath.Join(sub, "f")); err != nil || string(b) != "x" {
		t.Errorf("the tmpfs below is not visible through the bind: %q, %v", b, err)
	}
	if changed, err := MakeRShared(root); err != nil || changed {
		t.Errorf("second MakeRShared = %v, %v; want no change", changed, err)
	}
}
