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
	m.unlinkContainerLog("abc")
	if _, err := os.Lstat(link); !os.IsNotExist(err) {
		t.Errorf("link not removed: %v", err)
	}
}
