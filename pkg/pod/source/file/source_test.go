package file

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gokubelet/kubelet/pkg/pod/podconfig"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

func manifest(name, image string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
		"\nspec:\n  containers:\n  - name: c\n    image: " + image + "\n"
}

type harness struct {
	t       *testing.T
	updates chan podconfig.PodUpdate
	mu      sync.Mutex
	errs    []string
}

func start(t *testing.T, path string, freq time.Duration, watch bool) *harness {
	t.Helper()
	h := &harness{t: t, updates: make(chan podconfig.PodUpdate)}
	s := New(Config{Path: path, NodeName: "node1", CheckFrequency: freq, OnError: func(p string, err error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.errs = append(h.errs, filepath.Base(p)+": "+err.Error())
	}}, h.updates)
	s.disableWatch = !watch
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.Start(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
	return h
}

func (h *harness) recv() podconfig.PodUpdate {
	h.t.Helper()
	select {
	case u := <-h.updates:
		if u.Op != podconfig.SET || u.Source != podspec.SourceFile {
			h.t.Fatalf("update %s from %q, want SET from file", u.Op, u.Source)
		}
		return u
	case <-time.After(10 * time.Second):
		h.t.Fatal("no update")
		return podconfig.PodUpdate{}
	}
}

// next returns the names of the pods of the next update.
func (h *harness) next() string {
	h.t.Helper()
	var names []string
	for _, p := range h.recv().Pods {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

func (h *harness) none(wait time.Duration) {
	h.t.Helper()
	select {
	case u := <-h.updates:
		h.t.Fatalf("unexpected update with %d pods", len(u.Pods))
	case <-time.After(wait):
	}
}

func (h *harness) errors() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.errs...)
}

func write(t *testing.T, path, content string) {
	t.Helper()
	// Write then rename, as careful tools do, so no scan sees half a file.
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestWatchDirectory(t *testing.T) {
	dir := t.TempDir()
	h := start(t, dir, time.Hour, true) // only fsnotify can trigger scans
	if got := h.next(); got != "" {
		t.Fatalf("first update %q, want an empty set", got)
	}

	write(t, filepath.Join(dir, "web.yaml"), manifest("web", "img:1"))
	if got := h.next(); got != "web-node1" {
		t.Fatalf("got %q", got)
	}

	// Ignored: dotfiles, backups, subdirectories.
	write(t, filepath.Join(dir, ".hidden.yaml"), manifest("hidden", "img:1"))
	write(t, filepath.Join(dir, "web.yaml~"), manifest("backup", "img:1"))
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "sub", "deep.yaml"), manifest("deep", "img:1"))
	write(t, filepath.Join(dir, "db.json"),
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"db"},"spec":{"containers":[{"name":"c","image":"img:1"}]}}`)
	if got := h.next(); got != "db-node1,web-node1" {
		t.Fatalf("got %q", got)
	}

	if err := os.Remove(filepath.Join(dir, "db.json")); err != nil {
		t.Fatal(err)
	}
	if got := h.next(); got != "web-node1" {
		t.Fatalf("after remove got %q", got)
	}
	if errs := h.errors(); len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
}

func TestEditChangesUID(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	write(t, path, manifest("web", "img:1"))
	h := start(t, dir, time.Hour, true)
	first := h.recv()
	write(t, path, manifest("web", "img:2"))
	second := h.recv()
	if len(first.Pods) != 1 || len(second.Pods) != 1 {
		t.Fatalf("pods %d then %d", len(first.Pods), len(second.Pods))
	}
	if first.Pods[0].UID == second.Pods[0].UID {
		t.Fatalf("edited manifest kept UID %s", first.Pods[0].UID)
	}
	if second.Pods[0].Annotations[podspec.ConfigSourceAnnotation] != "file" {
		t.Fatalf("annotations %v", second.Pods[0].Annotations)
	}
}

func TestInvalidManifest(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "good.yaml"), manifest("good", "img:1"))
	write(t, filepath.Join(dir, "bad.yaml"), manifest("bad", `""`))
	h := start(t, dir, 20*time.Millisecond, false)
	if got := h.next(); got != "good-node1" {
		t.Fatalf("got %q, want the valid file's pod", got)
	}
	// The periodic recheck neither resends an unchanged set nor repeats
	// the report of unchanged invalid content.
	h.none(100 * time.Millisecond)
	errs := h.errors()
	if len(errs) != 1 || !strings.Contains(errs[0], "bad.yaml: ") || !strings.Contains(errs[0], "spec.containers[0].image: Required value") {
		t.Fatalf("errors %q: want one naming bad.yaml and the field", errs)
	}

	// A valid file turning invalid keeps its last valid pods.
	write(t, filepath.Join(dir, "good.yaml"), "apiVersion: v1\nkind: Pod\nmetadata: {name: good\n")
	h.none(100 * time.Millisecond)
	errs = h.errors()
	if len(errs) != 2 || !strings.Contains(errs[1], "good.yaml: ") || !strings.Contains(errs[1], "keeping the pods") {
		t.Fatalf("errors %q", errs)
	}

	// Fixing the bad file adds its pod.
	write(t, filepath.Join(dir, "bad.yaml"), manifest("bad", "img:1"))
	if got := h.next(); got != "bad-node1,good-node1" {
		t.Fatalf("got %q", got)
	}
}

func TestDuplicateAcrossFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), manifest("web", "img:1"))
	write(t, filepath.Join(dir, "b.yaml"), manifest("web", "img:2"))
	h := start(t, dir, time.Hour, false)
	if got := h.next(); got != "web-node1" {
		t.Fatalf("got %q", got)
	}
	errs := h.errors()
	if len(errs) != 1 || !strings.HasPrefix(errs[0], "b.yaml: ") || !strings.Contains(errs[0], "a.yaml") {
		t.Fatalf("errors %q: want b.yaml reported as repeating a.yaml", errs)
	}
}

func TestMissingDirectoryIsRetried(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	h := start(t, dir, 20*time.Millisecond, true)
	if got := h.next(); got != "" {
		t.Fatalf("got %q, want an empty first set", got)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "web.yaml"), manifest("web", "img:1"))
	if got := h.next(); got != "web-node1" {
		t.Fatalf("got %q", got)
	}
	// Removing the directory removes its pods.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if got := h.next(); got != "" {
		t.Fatalf("got %q after removing the directory", got)
	}
	if errs := h.errors(); len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
}

func TestSingleFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "only.yaml")
	write(t, filepath.Join(dir, "other.yaml"), manifest("other", "img:1"))
	write(t, path, manifest("only", "img:1"))
	h := start(t, path, time.Hour, true)
	if got := h.next(); got != "only-node1" {
		t.Fatalf("got %q", got)
	}
	write(t, path, manifest("only", "img:2"))
	if got := h.next(); got != "only-node1" {
		t.Fatalf("got %q", got)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if got := h.next(); got != "" {
		t.Fatalf("got %q after removing the file", got)
	}
}

func TestIgnored(t *testing.T) {
	for name, want := range map[string]bool{
		"web.yaml": false, "web": false, "kube-apiserver.manifest": false,
		".web.yaml": true, "web.yaml~": true, ".web.yaml.swp": true, "web.yaml.bak": true, "web.yaml.dpkg-old": true,
	} {
		if got := ignored(name); got != want {
			t.Errorf("ignored(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestRemovedAndWrittenAgainRestarts: a manifest removed and written back
// with the same content before the next scan (as the node e2e MirrorPod
// spec does, 1 ms apart) still sends its pods as gone first, so the pods
// restart, as upstream's per-event source does. A file replaced by rename
// (no removal of the manifest itself) is no removal.
func TestRemovedAndWrittenAgainRestarts(t *testing.T) {
	dir := t.TempDir()
	web, db := filepath.Join(dir, "web.yaml"), filepath.Join(dir, "db.yaml")
	write(t, web, manifest("web", "img:1"))
	write(t, db, manifest("db", "img:1"))
	updates := make(chan podconfig.PodUpdate, 4)
	s := New(Config{Path: dir, NodeName: "node1"}, updates)
	names := func() string {
		t.Helper()
		select {
		case u := <-updates:
			var out []string
			for _, p := range u.Pods {
				out = append(out, p.Name)
			}
			sort.Strings(out)
			return strings.Join(out, ",")
		default:
			return "(no update)"
		}
	}
	ctx := context.Background()
	s.scanAndSend(ctx, nil)
	if got := names(); got != "db-node1,web-node1" {
		t.Fatalf("first update %q", got)
	}
	if err := os.Remove(web); err != nil {
		t.Fatal(err)
	}
	write(t, web, manifest("web", "img:1"))
	s.scanAndSend(ctx, map[string]bool{web: true, filepath.Join(dir, ".web.yaml.tmp"): true})
	if got := names(); got != "db-node1" {
		t.Fatalf("after the removal: %q, want web gone first", got)
	}
	if got := names(); got != "db-node1,web-node1" {
		t.Fatalf("then %q, want web back", got)
	}
	if got := names(); got != "(no update)" {
		t.Fatalf("then %q", got)
	}
	// Replaced by rename: only the temporary file was renamed away.
	write(t, web, manifest("web", "img:1"))
	s.scanAndSend(ctx, map[string]bool{filepath.Join(dir, ".web.yaml.tmp"): true})
	if got := names(); got != "(no update)" {
		t.Fatalf("a rename over the manifest sent %q", got)
	}
	// Removed for good: one update, without it.
	if err := os.Remove(db); err != nil {
		t.Fatal(err)
	}
	s.scanAndSend(ctx, map[string]bool{db: true})
	if got := names(); got != "web-node1" {
		t.Fatalf("after removing db: %q", got)
	}
	if got := names(); got != "(no update)" {
		t.Fatalf("then %q: a removal sent twice", got)
	}
}
