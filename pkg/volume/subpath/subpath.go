//go:build linux

// Package subpath mounts one path inside a volume (a volumeMount's subPath)
// without ever letting it lead outside the volume.
//
// A container can write into many volumes and plant symlinks there (an
// absolute link to /etc, a "../../" chain), and can swap a directory for a
// link at any moment. So the path is resolved by the kernel with
// openat2(RESOLVE_BENEATH): every step, links included, must stay beneath
// the volume's root, or the open fails. Links that stay inside are
// followed, as upstream does (a configMap's visible files are links into
// ..data). Missing directories are created the same way, one step at a
// time. The open descriptor, not the path, is then bind-mounted (through
// /proc/self/fd) onto a kubelet-owned target, so what was checked is what
// the container gets.
package subpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gokubelet/kubelet/pkg/volume/hostfs"
)

// DirName is the directory of a pod's subPath bind mounts, as upstream:
// <podDir>/volume-subpaths/<volume>/<container>/<mount index>.
const DirName = "volume-subpaths"

// ErrEscapes is returned when a subPath resolves outside its volume.
var ErrEscapes = errors.New("resolves outside the volume")

// Target is where the bind mount of one container's volumeMount goes.
func Target(podDir, volume, container string, index int) string {
	return filepath.Join(podDir, DirName, volume, container, strconv.Itoa(index))
}

// Validate checks a subPath as written: relative and without "..".
func Validate(p string) error {
	if filepath.IsAbs(p) {
		return fmt.Errorf("subPath %q must be a relative path", p)
	}
	for _, e := range strings.Split(filepath.ToSlash(p), "/") {
		if e == ".." {
			return fmt.Errorf("subPath %q must not contain '..'", p)
		}
	}
	return nil
}

const resolve = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS

func openBeneath(rootfd int, rel string, flags uint64) (int, error) {
	for {
		fd, err := unix.Openat2(rootfd, rel, &unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Resolve: resolve})
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ELOOP) {
			return -1, ErrEscapes
		}
		return fd, err
	}
}

// Prepare bind-mounts subPath of the volume at volumeRoot onto target and
// returns target. A missing subPath is created as directories with the
// mode (and, through setgid, the group) of the volume's root. A target
// that already carries a mount of the same file is reused (a restarted
// container); one of another file is replaced.
func Prepare(volumeRoot, subPath, target string) (string, error) {
	if err := Validate(subPath); err != nil {
		return "", err
	}
	rootfd, err := unix.Open(volumeRoot, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("opening the volume: %w", &os.PathError{Op: "open", Path: volumeRoot, Err: err})
	}
	defer unix.Close(rootfd)
	fd, err := resolveBeneath(rootfd, subPath)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", err
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR

	if mounted, _ := hostfs.IsMountPoint(target); mounted {
		var cur unix.Stat_t
		if err := unix.Stat(target, &cur); err == nil && cur.Dev == st.Dev && cur.Ino == st.Ino {
			return target, nil
		}
		if err := hostfs.Unmount(target); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return "", err
	}
	if err := makeTarget(target, isDir); err != nil {
		return "", err
	}
	if err := hostfs.BindMountFd(fd, target); err != nil {
		return "", err
	}
	return target, nil
}

// makeTarget creates the mount point: a directory or an empty file, like
// what will be mounted on it.
func makeTarget(target string, isDir bool) error {
	st, err := os.Lstat(target)
	if err == nil && st.IsDir() == isDir && (isDir || st.Mode().IsRegular()) {
		return nil
	}
	if err == nil {
		if err := os.RemoveAll(target); err != nil {
			return err
		}
	}
	if isDir {
		return os.Mkdir(target, 0o750)
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	return f.Close()
}

// resolveBeneath opens subPath (validated) beneath the volume's root
// rootfd as an O_PATH descriptor, creating its missing directories; every
// step stays beneath the root or it fails with ErrEscapes.
func resolveBeneath(rootfd int, subPath string) (int, error) {
	rel := filepath.Clean(subPath)
	fd, err := openBeneath(rootfd, rel, unix.O_PATH)
	if errors.Is(err, unix.ENOENT) {
		if err = makeDirs(rootfd, rel); err != nil {
			return -1, err
		}
		fd, err = openBeneath(rootfd, rel, unix.O_PATH)
	}
	if err != nil {
		if errors.Is(err, ErrEscapes) {
			return -1, fmt.Errorf("subPath %q %w", subPath, ErrEscapes)
		}
		return -1, fmt.Errorf("opening subPath %q: %w", subPath, err)
	}
	return fd, nil
}

// makeDirs creates the missing directories of rel beneath rootfd, each
// step resolved beneath the root, with the root's mode.
func makeDirs(rootfd int, rel string) error {
	var root unix.Stat_t
	if err := unix.Fstat(rootfd, &root); err != nil {
		return err
	}
	perm := root.Mode & 0o7777
	parts := strings.Split(rel, "/")
	for i := range parts {
		prefix := strings.Join(parts[:i+1], "/")
		fd, err := openBeneath(rootfd, prefix, unix.O_PATH|unix.O_DIRECTORY)
		if err == nil {
			unix.Close(fd)
			continue
		}
		if !errors.Is(err, unix.ENOENT) {
			if errors.Is(err, ErrEscapes) {
				return fmt.Errorf("subPath %q %w", rel, ErrEscapes)
			}
			return fmt.Errorf("subPath %q: %w", rel, err)
		}
		parent := rootfd
		if i > 0 {
			pfd, err := openBeneath(rootfd, strings.Join(parts[:i], "/"), unix.O_PATH|unix.O_DIRECTORY)
			if err != nil {
				if errors.Is(err, ErrEscapes) {
					return fmt.Errorf("subPath %q %w", rel, ErrEscapes)
				}
				return err
			}
			defer unix.Close(pfd)
			parent = pfd
		}
		if err := unix.Mkdirat(parent, parts[i], perm&0o777); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("creating subPath %q: %w", prefix, err)
		}
		dfd, err := openBeneath(rootfd, prefix, unix.O_RDONLY|unix.O_DIRECTORY)
		if err != nil {
			if errors.Is(err, ErrEscapes) {
				return fmt.Errorf("subPath %q %w", rel, ErrEscapes)
			}
			return err
		}
		// The umask applied to mkdir; set the root's mode exactly.
		err = unix.Fchmod(dfd, perm)
		unix.Close(dfd)
		if err != nil {
			return err
		}
	}
	return nil
}

// CleanPod unmounts and removes every subPath bind mount of a pod.
func CleanPod(podDir string) error {
	return hostfs.RemoveAll(filepath.Join(podDir, DirName))
}
