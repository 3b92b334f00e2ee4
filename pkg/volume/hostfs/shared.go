//go:build linux

package hostfs

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// MakeRShared makes dir the top of a recursively shared mount, unless the
// mount it lies on is shared already (on a systemd host / is): volumes set
// up below it can then be given to containers with mount propagation
// Bidirectional (runc refuses a source on a private mount: "is mounted on
// / but it is not a shared mount") and HostToContainer. When dir is not a
// mount point it is first bind-mounted onto itself, with what is mounted
// below it. The upstream kubelet does the same with its root directory at
// start; the mount stays when the kubelet exits, as upstream's does.
func MakeRShared(dir string) (changed bool, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false, err
	}
	parents, err := mountinfo.GetMounts(mountinfo.ParentsFilter(abs))
	if err != nil {
		return false, fmt.Errorf("reading mountinfo: %w", err)
	}
	m := DeepestMount(parents)
	if m == nil {
		return false, fmt.Errorf("no mount holds %s", abs)
	}
	if IsShared(m.Optional) {
		return false, nil
	}
	if m.Mountpoint != abs {
		if err := unix.Mount(abs, abs, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return false, fmt.Errorf("bind-mounting %s onto itself: %w", abs, err)
		}
	}
	if err := unix.Mount("", abs, "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		return true, fmt.Errorf("making %s rshared: %w", abs, err)
	}
	return true, nil
}

// DeepestMount is the mount with the longest mount point among mounts (the
// parents of one path: the mount that path lies on), the last one listed
// when a point is mounted over; nil for none.
func DeepestMount(mounts []*mountinfo.Info) *mountinfo.Info {
	var best *mountinfo.Info
	for _, m := range mounts {
		if best == nil || len(m.Mountpoint) >= len(best.Mountpoint) {
			best = m
		}
	}
	return best
}

// IsShared reports whether a mountinfo entry's optional fields make it a
// member of a peer group ("shared:N").
func IsShared(optional string) bool {
	for _, f := range strings.Fields(optional) {
		if strings.HasPrefix(f, "shared:") {
			return true
		}
	}
	return false
}
