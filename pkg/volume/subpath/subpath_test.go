//go:build linux

package subpath

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gokubelet/kubelet/pkg/volume/hostfs"
)

// These tests bind-mount for real (make test runs as root).

type env struct {
	base, vol, pod, outside string
}

func newEnv(t *testing.T) *env {
	base := t.TempDir()
	e := &env{base: base, vol: filepath.Join(base, "vol"), pod: filepath.Join(base, "pod"), outside: filepath.Join(base, "outside")}
	os.MkdirAll(filepath.Join(e.vol, "dir"), 0o755)
	os.WriteFile(filepath.Join(e.vol, "dir", "file"), []byte("inside"), 0o644)
	os.MkdirAll(e.outside, 0o755)
	os.WriteFile(filepath.Join(e.outside, "secret"), []byte("host"), 0o600)
	os.Mkdir(e.pod, 0o750)
	t.Cleanup(func() {
		if err := CleanPod(e.pod); err != nil {
			t.Errorf("CleanPod: %v", err)
		}
		if m, _ := hostfs.MountsUnder(base); len(m) > 0 {
			t.Errorf("mounts left: %v", m)
		}
	})
	return e
}

func (e *env) prepare(sub string, i int) (string, error) {
	return Prepare(e.vol, sub, Target(e.pod, "vol", "c", i))
}

func TestPrepareMountsDirectoriesAndFiles(t *testing.T) {
	e := newEnv(t)
	p, err := e.prepare("dir", 0)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(p, "file")); err != nil || string(b) != "inside" {
		t.Fatalf("through the mount: %q, %v", b, err)
	}
	f, err := e.prepare("dir/file", 1)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(f); string(b) != "inside" {
		t.Errorf("file subPath reads %q", b)
	}
	// Preparing again (a restarted container) reuses the mount.
	if _, err := e.prepare("dir", 0); err != nil {
		t.Fatal(err)
	}
	if m, _ := hostfs.MountsUnder(e.pod); len(m) != 2 {
		t.Errorf("mounts after re-prepare: %v", m)
	}
	// A different path at the same target replaces the mount.
	os.Mkdir(filepath.Join(e.vol, "other"), 0o755)
	os.WriteFile(filepath.Join(e.vol, "other", "o"), nil, 0o644)
	if _, err := e.prepare("other", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p, "o")); err != nil {
		t.Errorf("target not remounted to the new path: %v", err)
	}
	if m, _ := hostfs.MountsUnder(e.pod); len(m) != 2 {
		t.Errorf("mounts after replace: %v", m)
	}
}

func TestMissingSubPathIsCreatedWithTheRootsMode(t *testing.T) {
	e := newEnv(t)
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	unix.Chmod(e.vol, 0o2775)
	if _, err := e.prepare("new/nested", 0); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"new", "new/nested"} {
		st, err := os.Stat(filepath.Join(e.vol, p))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode()&(os.ModePerm|os.ModeSetgid) != 0o775|os.ModeSetgid {
			t.Errorf("%s mode %v, want the root's drwxrwsr-x", p, st.Mode())
		}
	}
}

func TestSymlinksInsideAreFollowed(t *testing.T) {
	e := newEnv(t)
	os.Symlink("dir/file", filepath.Join(e.vol, "rel"))
	os.Symlink("../dir", filepath.Join(e.vol, "dir", "self"))
	for i, sub := range []string{"rel", "dir/self/file"} {
		p, err := e.prepare(sub, i)
		if err != nil {
			t.Fatalf("%s: %v", sub, err)
		}
		if b, _ := os.ReadFile(p); string(b) != "inside" {
			t.Errorf("%s reads %q", sub, b)
		}
	}
}

func TestEscapesAreRefused(t *testing.T) {
	e := newEnv(t)
	os.Symlink(e.outside, filepath.Join(e.vol, "abs"))
	os.Symlink("../outside", filepath.Join(e.vol, "up"))
	os.Symlink(filepath.Join(e.outside, "secret"), filepath.Join(e.vol, "dir", "file-link"))
	os.Symlink("/proc/self/root/etc", filepath.Join(e.vol, "magic"))
	for i, sub := range []string{"abs", "abs/secret", "up", "up/secret", "dir/file-link", "abs/newdir", "up/new/deeper", "magic"} {
		_, err := e.prepare(sub, i)
		if !errors.Is(err, ErrEscapes) {
			t.Errorf("%s: err %v, want ErrEscapes", sub, err)
		}
	}
	if entries, _ := os.ReadDir(e.outside); len(entries) != 1 {
		t.Errorf("something was created outside the volume: %v", entries)
	}
	if m, _ := hostfs.MountsUnder(e.pod); len(m) != 0 {
		t.Errorf("mounts after refused subPaths: %v", m)
	}
	for _, bad := range []string{"/etc", "a/../../b", ".."} {
		if _, err := e.prepare(bad, 99); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestCleanPodUnmountsWithoutTouchingTheVolume(t *testing.T) {
	e := newEnv(t)
	if _, err := e.prepare("dir", 0); err != nil {
		t.Fatal(err)
	}
	if err := CleanPod(e.pod); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(e.vol, "dir", "file")); err != nil || string(b) != "inside" {
		t.Fatalf("volume content after CleanPod: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(e.pod, DirName)); !os.IsNotExist(err) {
		t.Errorf("%s left: %v", DirName, err)
	}
}
