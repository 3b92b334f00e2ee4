//go:build linux

package hostfs

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Permission bits fsGroup ownership adds, as upstream: group read-write
// (read-only for read-only volumes), plus group search and setgid on
// directories so new files inherit the group.
const (
	groupRW   = 0o660
	groupRO   = 0o440
	groupExec = 0o110
)

// NeedsOwnershipChange is the fsGroupChangePolicy OnRootMismatch test: the
// volume's root is not yet owned by gid with the group bits and setgid
// that ChangeOwnership sets.
func NeedsOwnershipChange(root string, gid int64, readOnly bool) bool {
	var st unix.Stat_t
	if err := unix.Stat(root, &st); err != nil {
		return true
	}
	if int64(st.Gid) != gid || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return true
	}
	want := uint32(groupRW | groupExec)
	if readOnly {
		want = groupRO | groupExec
	}
	return st.Mode&want != want || st.Mode&unix.S_ISGID == 0
}

// ChangeOwnership gives everything under root (root included) the group
// gid and the group permission bits above. It works on descriptors
// opened without following symlinks, relative to their parent, so a
// symlink a container planted (or swapped in meanwhile) is chowned itself
// and never followed out of the volume; it does not cross into other
// mounts. It goes on after a failed entry and reports the failures.
func ChangeOwnership(root string, gid int64, readOnly bool) error {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: root, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: root, Err: err}
	}
	mask := uint32(groupRW)
	if readOnly {
		mask = groupRO
	}
	o := &owner{gid: int(gid), mask: mask, dev: st.Dev}
	o.dir(fd, root, &st)
	return o.result()
}

type owner struct {
	gid  int
	mask uint32
	dev  uint64
	errs []error
	n    int
}

func (o *owner) fail(op, p string, err error) {
	o.n++
	if len(o.errs) < 5 {
		o.errs = append(o.errs, &os.PathError{Op: op, Path: p, Err: err})
	}
}

func (o *owner) result() error {
	if o.n == 0 {
		return nil
	}
	err := errors.Join(o.errs...)
	if o.n > len(o.errs) {
		return fmt.Errorf("%w (and %d more)", err, o.n-len(o.errs))
	}
	return err
}

// dir applies ownership to the open directory fd, then to its entries.
func (o *owner) dir(fd int, p string, st *unix.Stat_t) {
	if err := unix.Fchown(fd, -1, o.gid); err != nil {
		o.fail("chown", p, err)
	}
	if err := unix.Fchmod(fd, st.Mode&0o7777|o.mask|groupExec|unix.S_ISGID); err != nil {
		o.fail("chmod", p, err)
	}
	dup, err := unix.Dup(fd)
	if err != nil {
		o.fail("dup", p, err)
		return
	}
	f := os.NewFile(uintptr(dup), p)
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		o.fail("readdir", p, err)
	}
	for _, name := range names {
		o.entry(fd, p+"/"+name, name)
	}
}

func (o *owner) entry(parent int, p, name string) {
	var st unix.Stat_t
	if err := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if !errors.Is(err, unix.ENOENT) {
			o.fail("stat", p, err)
		}
		return
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		// The link itself gets the group; its target is never touched.
		if err := unix.Fchownat(parent, name, -1, o.gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			o.fail("lchown", p, err)
		}
		return
	case unix.S_IFDIR:
		if st.Dev != o.dev {
			return // another mount
		}
		fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) {
				o.fail("open", p, err)
			}
			return
		}
		defer unix.Close(fd)
		if err := unix.Fstat(fd, &st); err != nil {
			o.fail("fstat", p, err)
			return
		}
		o.dir(fd, p, &st)
		return
	}
	// Files, devices, sockets, fifos: an O_PATH descriptor opens none of
	// them for real and never follows a link.
	fd, err := unix.Openat(parent, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if !errors.Is(err, unix.ENOENT) {
			o.fail("open", p, err)
		}
		return
	}
	defer unix.Close(fd)
	if err := unix.Fstat(fd, &st); err != nil {
		o.fail("fstat", p, err)
		return
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return // swapped for a link since the first look
	}
	if err := unix.Fchownat(fd, "", -1, o.gid, unix.AT_EMPTY_PATH); err != nil {
		o.fail("chown", p, err)
	}
	if err := unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", fd), st.Mode&0o7777|o.mask); err != nil {
		o.fail("chmod", p, err)
	}
}
