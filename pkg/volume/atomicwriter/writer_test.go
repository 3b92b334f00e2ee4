package atomicwriter

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func files(kv ...string) map[string]File {
	out := map[string]File{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = File{Data: []byte(kv[i+1]), Mode: 0o644}
	}
	return out
}

// visible lists the directory's entries (not the hidden versions) with
// their link targets.
func visible(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, "..") && n != DataLink {
			continue
		}
		target, _ := os.Readlink(filepath.Join(dir, n))
		out = append(out, n+"->"+target)
	}
	sort.Strings(out)
	return out
}

func versions(t *testing.T, dir string) []string {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if isVersionName(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWritePublishesThroughDataLink(t *testing.T) {
	dir := t.TempDir()
	w, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	changed, err := w.Write(files("a", "1", "sub/b", "2", "sub/deep/c", "3"), nil)
	if err != nil || !changed {
		t.Fatalf("first write: changed %v, %v", changed, err)
	}
	if got, want := strings.Join(visible(t, dir), " "), "..data->"+versions(t, dir)[0]+" a->..data/a sub->..data/sub"; got != want {
		t.Errorf("entries %q, want %q", got, want)
	}
	if read(t, filepath.Join(dir, "sub/deep/c")) != "3" || read(t, filepath.Join(dir, "a")) != "1" {
		t.Error("content not readable through the links")
	}
	st, _ := os.Stat(filepath.Join(dir, versions(t, dir)[0]))
	if st.Mode().Perm() != 0o755 {
		t.Errorf("version dir mode %v, want 0755", st.Mode().Perm())
	}
}

func TestUnchangedPayloadWritesNothing(t *testing.T) {
	dir := t.TempDir()
	w, _ := New(dir)
	if _, err := w.Write(files("a", "1"), nil); err != nil {
		t.Fatal(err)
	}
	v1 := versions(t, dir)
	calls := 0
	changed, err := w.Write(files("a", "1"), func(string) error { calls++; return nil })
	if err != nil || changed || calls != 0 {
		t.Fatalf("rewrite of the same payload: changed %v, setPerms calls %d, %v", changed, calls, err)
	}
	if got := versions(t, dir); len(got) != 1 || got[0] != v1[0] {
		t.Errorf("versions %v, want %v", got, v1)
	}
	// A user-visible link removed behind our back is repaired.
	os.Remove(filepath.Join(dir, "a"))
	if _, err := w.Write(files("a", "1"), nil); err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(dir, "a")) != "1" {
		t.Error("link not repaired")
	}
}

func TestUpdateSwapsAndRemovesStaleFiles(t *testing.T) {
	dir := t.TempDir()
	w, _ := New(dir)
	if _, err := w.Write(files("a", "1", "b", "2", "sub/x", "x", "sub/y", "y"), nil); err != nil {
		t.Fatal(err)
	}
	old := versions(t, dir)[0]
	// Hold the old version open: a reader that started before the swap
	// keeps reading the old content.
	f, err := os.Open(filepath.Join(dir, "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	changed, err := w.Write(files("a", "new", "sub/x", "x"), nil)
	if err != nil || !changed {
		t.Fatalf("update: changed %v, %v", changed, err)
	}
	if got := versions(t, dir); len(got) != 1 || got[0] == old {
		t.Fatalf("versions after update %v (old %s)", got, old)
	}
	if got := " " + strings.Join(visible(t, dir), " "); !strings.Contains(got, " a->..data/a") || strings.Contains(got, " b->") {
		t.Errorf("entries %q: want a, no b", got)
	}
	if read(t, filepath.Join(dir, "a")) != "new" {
		t.Error("a not updated")
	}
	if _, err := os.Stat(filepath.Join(dir, "sub/y")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale nested file sub/y: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "b")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale link b: %v", err)
	}
	buf := make([]byte, 8)
	if n, _ := f.Read(buf); string(buf[:n]) != "2" {
		t.Errorf("open reader saw %q", buf[:n])
	}
}

func TestModesAndOwner(t *testing.T) {
	dir := t.TempDir()
	w, _ := New(dir)
	uid := int64(4321)
	old := syscallUmask(0o077)
	defer syscallUmask(old)
	payload := map[string]File{
		"ro":       {Data: []byte("r"), Mode: 0o400},
		"x/exec":   {Data: []byte("x"), Mode: 0o755},
		"owned":    {Data: []byte("o"), Mode: 0o640, Owner: &uid},
		"world/rw": {Data: []byte("w"), Mode: 0o666},
	}
	if _, err := w.Write(payload, nil); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{"ro": 0o400, "x/exec": 0o755, "owned": 0o640, "world/rw": 0o666, "x": 0o755} {
		st, err := os.Stat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v (umask must not apply)", p, st.Mode().Perm(), want)
		}
	}
	if got := ownerUID(t, filepath.Join(dir, "owned")); got != 4321 {
		t.Errorf("owner uid %d, want 4321", got)
	}
	// The user-visible link is the file's owner's too, as upstream's.
	if got := linkOwnerUID(t, filepath.Join(dir, "owned")); got != 4321 {
		t.Errorf("link owner uid %d, want 4321", got)
	}
	if got := linkOwnerUID(t, filepath.Join(dir, "ro")); got != os.Getuid() {
		t.Errorf("link of a file without an owner: uid %d, want the writer's %d", got, os.Getuid())
	}
}

func TestSetPermsSeesTheNewVersionBeforePublishing(t *testing.T) {
	dir := t.TempDir()
	w, _ := New(dir)
	var seen string
	_, err := w.Write(files("a", "1"), func(v string) error {
		seen = v
		if _, err := os.Lstat(filepath.Join(dir, DataLink)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("..data exists before setPerms returned")
		}
		return nil
	})
	if err != nil || seen == "" || versions(t, dir)[0] != seen {
		t.Fatalf("setPerms saw %q, versions %v, %v", seen, versions(t, dir), err)
	}
	// A failing setPerms publishes nothing and leaves no version behind.
	_, err = w.Write(files("a", "2"), func(string) error { return errors.New("boom") })
	if err == nil || read(t, filepath.Join(dir, "a")) != "1" || len(versions(t, dir)) != 1 {
		t.Fatalf("failed setPerms: err %v, content %q, versions %v", err, read(t, filepath.Join(dir, "a")), versions(t, dir))
	}
}

func TestCrashLeftoversAreCleaned(t *testing.T) {
	dir := t.TempDir()
	w, _ := New(dir)
	if _, err := w.Write(files("a", "1"), nil); err != nil {
		t.Fatal(err)
	}
	// A crash between writing a version and publishing it.
	os.Mkdir(filepath.Join(dir, "..2020_01_01_00_00_00.999"), 0o755)
	os.Symlink("..2020_01_01_00_00_00.999", filepath.Join(dir, tmpLink))
	if _, err := w.Write(files("a", "2"), nil); err != nil {
		t.Fatal(err)
	}
	if v := versions(t, dir); len(v) != 1 || read(t, filepath.Join(dir, "a")) != "2" {
		t.Errorf("versions %v, a=%q", v, read(t, filepath.Join(dir, "a")))
	}
}

func TestEmptyPayload(t *testing.T) {
	dir := t.TempDir()
	w, _ := New(dir)
	if _, err := w.Write(files("a", "1"), nil); err != nil {
		t.Fatal(err)
	}
	changed, err := w.Write(map[string]File{}, nil)
	if err != nil || !changed {
		t.Fatalf("changed %v, %v", changed, err)
	}
	if got := visible(t, dir); len(got) != 1 || !strings.HasPrefix(got[0], "..data->") {
		t.Errorf("entries %v, want only ..data", got)
	}
}

func TestValidatePath(t *testing.T) {
	long := strings.Repeat("n", 256)
	for _, tc := range []struct {
		p  string
		ok bool
	}{
		{"a", true}, {"a/b/c", true}, {"a/..b", true}, {".hidden", true}, {"..", false},
		{"", false}, {"/abs", false}, {"a/../b", false}, {"..data", false}, {"..x/y", false},
		{long, false}, {"a/" + long, false}, {strings.Repeat("a/", 2049), false},
	} {
		if err := ValidatePath(tc.p); (err == nil) != tc.ok {
			t.Errorf("ValidatePath(%q) = %v, want ok=%v", tc.p, err, tc.ok)
		}
	}
	w, _ := New(t.TempDir())
	if _, err := w.Write(files("../escape", "x"), nil); err == nil {
		t.Error("a payload path with .. was written")
	}
}
