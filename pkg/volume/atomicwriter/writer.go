// Package atomicwriter publishes a set of files into a directory so that a
// reader never sees a mix of old and new content: the configMap, secret,
// downwardAPI and projected volumes.
//
// The layout is upstream's, so tools that watch ..data keep working and a
// node taken over from the upstream kubelet keeps its volumes:
//
//	<dir>/..2024_05_01_10_00_00.123456789/   the files of one version
//	<dir>/..data -> ..2024_05_01_10_00_00.123456789
//	<dir>/<name> -> ..data/<name>            one link per top-level name
//
// A new version is written to a new hidden directory, then ..data is
// replaced by a rename (atomic), then links of names that are gone are
// removed, then the old version.
package atomicwriter

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

const (
	// DataLink is the symlink naming the current version's directory.
	DataLink = "..data"
	tmpLink  = "..data_tmp"

	maxNameLen = 255
	maxPathLen = 4096
)

// File is one file of a payload.
type File struct {
	Data []byte
	// Mode is the file's permission bits (0–0777).
	Mode int32
	// Owner, when set, is the uid the file is chowned to.
	Owner *int64
}

// Writer publishes payloads into one directory. It is not safe for
// concurrent use on the same directory.
type Writer struct {
	dir string
	now func() time.Time
}

// New returns a Writer for dir, which must exist.
func New(dir string) (*Writer, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	return &Writer{dir: dir, now: time.Now}, nil
}

// ValidatePath checks a payload path: relative, no ".." element, not
// starting with "..", names of at most 255 and paths of at most 4096
// bytes.
func ValidatePath(p string) error {
	switch {
	case p == "":
		return errors.New("invalid path: must not be empty")
	case path.IsAbs(p):
		return fmt.Errorf("invalid path %q: must be relative", p)
	case len(p) > maxPathLen:
		return fmt.Errorf("invalid path: must be at most %d characters", maxPathLen)
	}
	parts := strings.Split(p, "/")
	for _, e := range parts {
		if e == ".." {
			return fmt.Errorf("invalid path %q: must not contain '..'", p)
		}
		if len(e) > maxNameLen {
			return fmt.Errorf("invalid path: names must be at most %d characters", maxNameLen)
		}
	}
	if strings.HasPrefix(parts[0], "..") {
		return fmt.Errorf("invalid path %q: must not start with '..'", p)
	}
	return nil
}

// Write makes the directory show exactly payload (keys are paths relative
// to the directory). setPerms, when not nil, runs on the new version's
// directory name before it is published (ownership for fsGroup). It
// reports whether a new version was published; an unchanged payload
// writes nothing, but repairs missing links.
func (w *Writer) Write(payload map[string]File, setPerms func(versionDir string) error) (bool, error) {
	clean := make(map[string]File, len(payload))
	for p, f := range payload {
		if err := ValidatePath(p); err != nil {
			return false, err
		}
		clean[filepath.Clean(p)] = f
	}

	old, err := w.currentVersion()
	if err != nil {
		return false, err
	}
	var stale []string
	write := true
	if old != "" {
		existing, err := listTree(filepath.Join(w.dir, old))
		if err != nil {
			return false, err
		}
		stale = staleTopLevel(existing, clean)
		same, err := sameContent(filepath.Join(w.dir, old), clean)
		if err != nil {
			return false, err
		}
		write = !same || len(stale) > 0 || len(existing) != len(withParents(clean))
	}

	if write {
		version, err := w.writeVersion(clean)
		if err != nil {
			return false, err
		}
		if setPerms != nil {
			if err := setPerms(version); err != nil {
				os.RemoveAll(filepath.Join(w.dir, version))
				return false, fmt.Errorf("setting ownership: %w", err)
			}
		}
		if err := w.publish(version); err != nil {
			os.RemoveAll(filepath.Join(w.dir, version))
			return false, err
		}
	}
	if err := w.linkTopLevel(clean); err != nil {
		return write, err
	}
	for _, name := range stale {
		if err := os.Remove(filepath.Join(w.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return write, fmt.Errorf("removing stale entry %s: %w", name, err)
		}
	}
	if write {
		w.removeOldVersions()
	}
	return write, nil
}

// currentVersion is the directory ..data points to, or "" when there is
// none yet.
func (w *Writer) currentVersion() (string, error) {
	t, err := os.Readlink(filepath.Join(w.dir, DataLink))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", DataLink, err)
	}
	if !isVersionName(t) {
		return "", fmt.Errorf("%s points to %q, not a version directory", DataLink, t)
	}
	return t, nil
}

func isVersionName(n string) bool {
	return strings.HasPrefix(n, "..") && n != DataLink && n != tmpLink && !strings.Contains(n, "/") && len(n) > 2
}

// listTree returns every path under root, relative to it.
func listTree(root string) (map[string]bool, error) {
	out := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			rel, _ := filepath.Rel(root, p)
			out[rel] = true
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]bool{}, nil
	}
	return out, err
}

// withParents is the set of paths of payload with their parent
// directories.
func withParents(payload map[string]File) map[string]bool {
	out := map[string]bool{}
	for p := range payload {
		for ; p != "." && p != "/"; p = filepath.Dir(p) {
			out[p] = true
		}
	}
	return out
}

// staleTopLevel lists the top-level names of the old version that the new
// payload no longer has.
func staleTopLevel(existing map[string]bool, payload map[string]File) []string {
	want := map[string]bool{}
	for p := range payload {
		want[topLevel(p)] = true
	}
	var out []string
	for p := range existing {
		if !strings.Contains(p, "/") && !want[p] {
			out = append(out, p)
		}
	}
	return out
}

func topLevel(p string) string {
	first, _, _ := strings.Cut(p, "/")
	return first
}

// sameContent reports whether every payload file exists in dir with the
// same bytes. Modes are not compared: ownership for fsGroup widens them
// after the write.
func sameContent(dir string, payload map[string]File) (bool, error) {
	for p, f := range payload {
		full := filepath.Join(dir, p)
		st, err := os.Lstat(full)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if !st.Mode().IsRegular() {
			return false, nil
		}
		b, err := os.ReadFile(full)
		if err != nil {
			return false, err
		}
		if !bytes.Equal(b, f.Data) {
			return false, nil
		}
	}
	return true, nil
}

// writeVersion writes payload into a new hidden version directory and
// returns its name.
func (w *Writer) writeVersion(payload map[string]File) (string, error) {
	dir, err := os.MkdirTemp(w.dir, w.now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return "", fmt.Errorf("creating version directory: %w", err)
	}
	// Others must be able to traverse it, whatever the umask.
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	for p, f := range payload {
		full := filepath.Join(dir, p)
		if err := mkdirAll(dir, filepath.Dir(p)); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
		mode := os.FileMode(f.Mode) & os.ModePerm
		if err := os.WriteFile(full, f.Data, mode); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("writing %s: %w", p, err)
		}
		// The umask applied at creation; set the exact mode.
		if err := os.Chmod(full, mode); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
		if f.Owner != nil {
			if err := os.Lchown(full, int(*f.Owner), -1); err != nil {
				os.RemoveAll(dir)
				return "", fmt.Errorf("chown %s: %w", p, err)
			}
		}
	}
	return filepath.Base(dir), nil
}

// mkdirAll creates rel under root with mode 0755 whatever the umask.
func mkdirAll(root, rel string) error {
	if rel == "." {
		return nil
	}
	cur := root
	for _, e := range strings.Split(rel, "/") {
		cur = filepath.Join(cur, e)
		if err := os.Mkdir(cur, 0o755); err != nil {
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			return err
		}
		if err := os.Chmod(cur, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// publish points ..data at version with one rename.
func (w *Writer) publish(version string) error {
	tmp := filepath.Join(w.dir, tmpLink)
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Symlink(version, tmp); err != nil {
		return fmt.Errorf("creating %s: %w", tmpLink, err)
	}
	if err := os.Rename(tmp, filepath.Join(w.dir, DataLink)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("publishing %s: %w", DataLink, err)
	}
	return nil
}

// linkTopLevel makes <name> -> ..data/<name> for each top-level name; a
// new link is owned by the owner of a file under it, when that is set.
func (w *Writer) linkTopLevel(payload map[string]File) error {
	seen := map[string]bool{}
	for p, f := range payload {
		name := topLevel(p)
		if seen[name] {
			continue
		}
		seen[name] = true
		target := filepath.Join(DataLink, name)
		link := filepath.Join(w.dir, name)
		cur, err := os.Readlink(link)
		if err == nil && cur == target {
			continue
		}
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			// A wrong link or something else in the way: replace it.
			if err := os.RemoveAll(link); err != nil {
				return err
			}
		}
		if err := os.Symlink(target, link); err != nil {
			return fmt.Errorf("linking %s: %w", name, err)
		}
		if f.Owner != nil {
			if err := os.Lchown(link, int(*f.Owner), -1); err != nil {
				return fmt.Errorf("chown %s: %w", name, err)
			}
		}
	}
	return nil
}

// removeOldVersions deletes every version directory but the current one,
// including those a crashed write left behind.
func (w *Writer) removeOldVersions() {
	cur, err := w.currentVersion()
	if err != nil || cur == "" {
		return
	}
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if n := e.Name(); isVersionName(n) && n != cur && e.IsDir() {
			os.RemoveAll(filepath.Join(w.dir, n))
		}
	}
}
