//go:build linux

package subpath

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// fuzzTree is a volume full of the links a container can plant, beside a
// directory outside it that must stay untouched.
func fuzzTree(t *testing.T) (vol, outside string) {
	base := t.TempDir()
	vol, outside = filepath.Join(base, "vol"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(vol, "dir", "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(vol, "dir", "file"), []byte("x"), 0o644)
	for link, to := range map[string]string{
		"abs":         "/",
		"etc":         "/etc",
		"up":          "../outside",
		"dir/upup":    "../../outside",
		"in":          "dir",
		"dir/inside":  "sub",
		"dir/self":    ".",
		"dotdot":      "..",
		"loop":        "loop",
		"dir/abs-in":  filepath.Join(vol, "dir"),
		"dangling":    "nowhere/deeper",
		"dir/outfile": filepath.Join(outside, "f"),
	} {
		if err := os.Symlink(to, filepath.Join(vol, link)); err != nil {
			t.Fatal(err)
		}
	}
	return vol, outside
}

// listing is every path under dir (dir included), sorted. A slice, not
// lines: a subPath may create a name with a newline in it (inside the
// volume), which a newline-joined listing would split into a path that
// seems to lie outside.
func listing(t *testing.T, dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		out = append(out, p)
		return nil
	})
	sort.Strings(out)
	return out
}

// FuzzResolve resolves arbitrary subPaths in a volume full of hostile
// links: whatever resolves is beneath the volume, and nothing is ever
// created outside it.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"dir", "dir/file", "in/sub", "abs/etc", "etc/passwd", "up", "dir/upup/x", "dotdot/outside",
		"loop", "dir/abs-in/file", "dangling", "dangling/x", "new/dirs/here", "dir/self/self/sub", "dir/outfile",
		"../outside", "/etc", "a/../../outside", "dir//sub/", ".", "in/../up/new"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sub string) {
		if strings.ContainsRune(sub, 0) {
			return
		}
		vol, outside := fuzzTree(t)
		before := listing(t, filepath.Dir(vol))
		rootfd, err := unix.Open(vol, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(rootfd)
		if Validate(sub) != nil {
			return
		}
		fd, err := resolveBeneath(rootfd, sub)
		if err == nil {
			got, lerr := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
			unix.Close(fd)
			if lerr != nil {
				t.Fatal(lerr)
			}
			if got != vol && !strings.HasPrefix(got, vol+"/") {
				t.Fatalf("subPath %q resolved to %s, outside the volume %s", sub, got, vol)
			}
		}
		had := map[string]bool{}
		for _, p := range before {
			had[p] = true
		}
		for _, p := range listing(t, filepath.Dir(vol)) {
			if !had[p] && !strings.HasPrefix(p, vol+"/") {
				t.Fatalf("subPath %q created %q outside the volume", sub, p)
			}
		}
		if l := listing(t, outside); len(l) != 1 || l[0] != outside {
			t.Fatalf("subPath %q changed the outside directory: %q", sub, l)
		}
	})
}
