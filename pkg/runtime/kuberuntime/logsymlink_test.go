package kuberuntime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestContainerLogSymlink(t *testing.T) {
	if got := logSymlinkPath("/var/log/containers", "web", "ns", "app", "abc"); got != "/var/log/containers/web_ns_app-abc.log" {
		t.Errorf("link path %s", got)
	}
	long := logSymlinkPath("/d", strings.Repeat("p", 250), "ns", "c", "id")
	if len(filepath.Base(long)) != 255 || !strings.HasSuffix(long, ".log") {
		t.Errorf("long name not cut to 255 bytes: %d", len(filepath.Base(long)))
	}

	dir := t.TempDir()
	m := &Manager{opts: Options{ContainerLogSymlinkDir: filepath.Join(dir, "containers")}}
	logPath := filepath.Join(dir, "0.log")
	// No log yet: no dangling link.
	if err := m.linkContainerLog("web", "ns", "app", "abc", logPath); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(m.opts.ContainerLogSymlinkDir); len(entries) != 0 {
		t.Errorf("a link was made to a missing log: %v", entries)
	}
	os.WriteFile(logPath, []byte("hello\n"), 0o644)
	if err := m.linkContainerLog("web", "ns", "app", "abc", logPath); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(m.opts.ContainerLogSymlinkDir, "web_ns_app-abc.log")
	if b, err := os.ReadFile(link); err != nil || string(b) != "hello\n" {
		t.Errorf("link does not lead to the log: %q %v", b, err)
	}
	other := filepath.Join(m.opts.ContainerLogSymlinkDir, "web_ns_side-abd.log")
	os.Symlink(logPath, other)
	m.unlinkContainerLog("web", "ns", "app", "abc")
	if _, err := os.Lstat(other); err != nil {
		t.Errorf("another container's link was removed: %v", err)
	}
	if _, err := os.Lstat(link); !os.IsNotExist(err) {
		t.Errorf("link not removed: %v", err)
	}
}

// A link cut to 255 bytes is removed too: it is found by its name, not by a
// pattern on the container ID its cut name no longer ends with.
func TestContainerLogSymlinkLongName(t *testing.T) {
	dir := t.TempDir()
	m := &Manager{opts: Options{ContainerLogSymlinkDir: dir}}
	logPath := filepath.Join(dir, "0.log")
	os.WriteFile(logPath, []byte("x\n"), 0o644)
	pod, id := strings.Repeat("p", 200), strings.Repeat("f", 64)
	if err := m.linkContainerLog(pod, "ns", "app", id, logPath); err != nil {
		t.Fatal(err)
	}
	link := logSymlinkPath(dir, pod, "ns", "app", id)
	if _, err := os.Lstat(link); err != nil {
		t.Fatalf("no link: %v", err)
	}
	m.unlinkContainerLog(pod, "ns", "app", id)
	if _, err := os.Lstat(link); !os.IsNotExist(err) {
		t.Errorf("cut link not removed: %v", err)
	}
}
