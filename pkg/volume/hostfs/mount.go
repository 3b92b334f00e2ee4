//go:build linux

// Package hostfs holds the host filesystem operations of the volume
// manager: mount points, tmpfs, removal that never crosses a mount, and
// fsGroup ownership that never follows a symlink a container planted.
package hostfs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// IsMountPoint reports whether p is the root of a mount (bind mounts of
// the same filesystem included). p itself is not followed if it is a
// symlink.
func IsMountPoint(p string) (bool, error) {
	var stx unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, unix.STATX_BASIC_STATS, &stx)
	if err != nil {
		return false, &os.PathError{Op: "statx", Path: p, Err: err}
	}
	if stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 {
		return stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, nil
	}
	// Kernels before 5.8 do not report the attribute: ask mountinfo.
	abs, err := filepath.Abs(p)
	if err != nil {
		return false, err
	}
	mounts, err := mountPoints()
	if err != nil {
		return false, err
	}
	for _, m := range mounts {
		if m == abs {
			return true, nil
		}
	}
	return false, nil
}

// MountsUnder returns the mount points at or below dir, deepest first (the
// order to unmount them in).
func MountsUnder(dir string) ([]string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	all, err := mountPoints()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range all {
		if m == abs || strings.HasPrefix(m, abs+"/") {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return strings.Count(out[i], "/") > strings.Count(out[j], "/") || (strings.Count(out[i], "/") == strings.Count(out[j], "/") && out[i] > out[j])
	})
	return dedupe(out), nil
}

func dedupe(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// mountPoints lists the mount points of this mount namespace.
func mountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		out = append(out, unescapeMountinfo(fields[4]))
	}
	return out, sc.Err()
}

// unescapeMountinfo decodes the octal escapes (\040 for a space) of a
// mountinfo path.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// MountTmpfs mounts a tmpfs on dir, of at most sizeBytes when positive.
// It asks for noswap (kernel 6.4+) so memory-backed volumes, secrets
// above all, never reach the disk, and mounts without it where the kernel
// does not know the option.
func MountTmpfs(dir string, sizeBytes int64) error {
	var opts []string
	if sizeBytes > 0 {
		opts = append(opts, "size="+strconv.FormatInt(sizeBytes, 10))
	}
	err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, strings.Join(append(opts, "noswap"), ","))
	if errors.Is(err, unix.EINVAL) {
		err = unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, strings.Join(opts, ","))
	}
	if err != nil {
		return &os.PathError{Op: "mount tmpfs", Path: dir, Err: err}
	}
	return nil
}

// BindMountFd bind-mounts the file or directory open as fd onto target.
// Mounting the descriptor, not a path, means what was checked is what gets
// mounted, even if the path was swapped for a symlink since.
func BindMountFd(fd int, target string) error {
	src := fmt.Sprintf("/proc/self/fd/%d", fd)
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return &os.PathError{Op: "bind mount", Path: target, Err: err}
	}
	return nil
}

// Unmount unmounts p; a busy mount is detached instead.
func Unmount(p string) error {
	err := unix.Unmount(p, unix.UMOUNT_NOFOLLOW)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(p, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
	}
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "unmount", Path: p, Err: err}
	}
	return nil
}

// UnmountAll unmounts every mount at or below dir, deepest first.
func UnmountAll(dir string) error {
	mounts, err := MountsUnder(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range mounts {
		if err := Unmount(m); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RemoveAll removes dir and everything below it, after unmounting what is
// mounted there, and refuses to remove anything while a mount remains (so
// a bind mount of a host directory is never emptied).
func RemoveAll(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := UnmountAll(dir); err != nil {
		return err
	}
	left, err := MountsUnder(dir)
	if err != nil {
		return err
	}
	if len(left) > 0 {
		return fmt.Errorf("not removing %s: still mounted at %s", dir, strings.Join(left, ", "))
	}
	return os.RemoveAll(dir)
}
