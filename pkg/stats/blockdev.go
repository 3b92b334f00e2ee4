package stats

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/sys/mountinfo"
)

// blockFs is a mounted filesystem on a block device, named as cadvisor
// names the machine's filesystems: by the mount's source.
type blockFs struct {
	Device       string
	Major, Minor uint64
	Mountpoint   string
}

// blockFsTypes are the filesystem kinds cadvisor measures through statfs
// (its vfs and btrfs plugins). Its tmpfs, overlay, nfs and zfs kinds are not
// listed here: the root cgroup's container_fs_* cover block devices.
var blockFsTypes = map[string]bool{
	"xfs": true, "btrfs": true, "squashfs": true, "f2fs": true, "jfs": true, "reiserfs": true,
	"hfs": true, "hfsplus": true, "ntfs": true, "vfat": true, "fat": true, "msdos": true,
	"exfat": true, "udf": true, "iso9660": true,
}

// parseBlockFilesystems lists the block-device filesystems of a mountinfo
// file, the first mount of each source (later ones are bind mounts of it),
// in file order.
func parseBlockFilesystems(content string) ([]blockFs, error) {
	mounts, err := mountinfo.GetMountsFromReader(strings.NewReader(content), func(m *mountinfo.Info) (skip, stop bool) {
		return !(strings.HasPrefix(m.FSType, "ext") || blockFsTypes[m.FSType]), false
	})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []blockFs
	for _, m := range mounts {
		if seen[m.Source] {
			continue
		}
		seen[m.Source] = true
		out = append(out, blockFs{Device: m.Source, Major: uint64(m.Major), Minor: uint64(m.Minor), Mountpoint: m.Mountpoint})
	}
	return out, nil
}

// deviceNamer names block devices by major:minor as cadvisor does: a disk
// (a /sys/block entry other than loop, ram and sr devices and hidden NVMe
// paths) is /dev/<name>, else a mounted filesystem on the device by its
// source, else "". Names are looked up once per namer.
type deviceNamer struct {
	sys   string // /sys
	fs    []blockFs
	names map[[2]uint64]string
}

func newDeviceNamer(sys string, fs []blockFs) *deviceNamer {
	return &deviceNamer{sys: sys, fs: fs, names: map[[2]uint64]string{}}
}

func (n *deviceNamer) name(major, minor uint64) string {
	key := [2]uint64{major, minor}
	if s, ok := n.names[key]; ok {
		return s
	}
	s := n.disk(major, minor)
	if s == "" {
		for _, f := range n.fs {
			if f.Major == major && f.Minor == minor {
				s = f.Device
				break
			}
		}
	}
	n.names[key] = s
	return s
}

// disk is /dev/<name> when major:minor is a whole disk cadvisor lists.
// /sys/dev/block/<major>:<minor> links to .../block/<disk> for a disk and
// to .../block/<disk>/<partition> for a partition.
func (n *deviceNamer) disk(major, minor uint64) string {
	target, err := os.Readlink(filepath.Join(n.sys, "dev", "block", fmt.Sprintf("%d:%d", major, minor)))
	if err != nil || filepath.Base(filepath.Dir(target)) != "block" {
		return ""
	}
	name := filepath.Base(target)
	for _, p := range []string{"loop", "ram", "sr"} {
		if strings.HasPrefix(name, p) {
			return ""
		}
	}
	if b, err := os.ReadFile(filepath.Join(n.sys, "block", name, "hidden")); err == nil && strings.TrimSpace(string(b)) == "1" {
		return ""
	}
	return "/dev/" + name
}
