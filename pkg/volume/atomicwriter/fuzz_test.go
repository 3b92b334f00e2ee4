package atomicwriter

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func fuzzPayload(keys string) map[string]File {
	p := map[string]File{}
	for _, k := range strings.Split(keys, "\n") {
		if k == "" {
			continue
		}
		// The content names the cleaned path, so keys that clean to the
		// same path carry the same content.
		p[k] = File{Data: []byte("content of " + filepath.Clean(k)), Mode: 0o644}
	}
	return p
}

// checkPublished holds the directory to what a successful Write promises:
// every payload path reads its content through the directory, the only
// top-level entries are ..data, version directories and the payload's
// top-level names, and nothing exists beside the directory.
func checkPublished(t *testing.T, base, dir string, payload map[string]File) {
	t.Helper()
	top := map[string]bool{DataLink: true}
	for k, f := range payload {
		b, err := os.ReadFile(filepath.Join(dir, k))
		if err != nil || !bytes.Equal(b, f.Data) {
			t.Fatalf("%q reads %q, %v; want %q", k, b, err, f.Data)
		}
		top[topLevel(filepath.Clean(k))] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !top[e.Name()] && !isVersionName(e.Name()) {
			t.Fatalf("unexpected entry %q in the volume (payload %v)", e.Name(), keysOf(payload))
		}
	}
	beside, _ := os.ReadDir(base)
	if len(beside) != 1 {
		t.Fatalf("entries beside the volume: %v", beside)
	}
}

func keysOf(p map[string]File) []string {
	var out []string
	for k := range p {
		out = append(out, k)
	}
	return out
}

// FuzzWrite publishes two arbitrary payloads, one after the other, into a
// volume directory: invalid paths are refused, and nothing is ever written
// outside the directory or left over from the first payload.
func FuzzWrite(f *testing.F) {
	f.Add("a\nb/c\nd/e/f", "a\nx")
	f.Add("..data\n..2024_01_01\n...dots", "./a")
	f.Add("../escape\n/abs\na/../../b", "a/./b\na//c")
	f.Add("a\na/b", "a/b/c")
	f.Add("..data/x\n..data_tmp", "z")
	f.Add(strings.Repeat("n", 300), "ok")
	f.Fuzz(func(t *testing.T, first, second string) {
		if strings.ContainsRune(first+second, 0) {
			return
		}
		base := t.TempDir()
		dir := filepath.Join(base, "vol")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		w, err := New(dir)
		if err != nil {
			t.Fatal(err)
		}
		p1, p2 := fuzzPayload(first), fuzzPayload(second)
		for k := range p1 {
			if ValidatePath(k) != nil {
				if _, err := w.Write(p1, nil); err == nil {
					t.Fatalf("invalid path %q accepted", k)
				}
				return
			}
		}
		if _, err := w.Write(p1, nil); err != nil {
			return // e.g. a file and a directory of the same name
		}
		checkPublished(t, base, dir, p1)
		if _, err := w.Write(p2, nil); err != nil {
			// A refused update leaves the first payload in place.
			checkPublished(t, base, dir, p1)
			return
		}
		checkPublished(t, base, dir, p2)
		for k := range p1 {
			if _, still := p2[k]; still {
				continue
			}
			clean := filepath.Clean(k)
			gone := true
			for k2 := range p2 {
				c2 := filepath.Clean(k2)
				if c2 == clean || strings.HasPrefix(c2, clean+"/") {
					gone = false
				}
			}
			if _, err := os.Lstat(filepath.Join(dir, k)); gone && err == nil {
				t.Fatalf("%q of the first payload is still there after the second %v", k, keysOf(p2))
			}
		}
	})
}
