package stats

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// nodeMountinfo is a node's mountinfo: the root on a disk, the containerd
// root on a partition of another (and bind-mounted again), a snap's
// squashfs on a loop device, and what cadvisor does not measure by statfs
// of a block device (proc, tmpfs, overlay, nfs).
const nodeMountinfo = `27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
22 27 0:21 / /proc rw,relatime - proc proc rw
30 27 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw
40 27 259:1 / /var/lib/containerd rw,relatime - xfs /dev/nvme0n1p1 rw
41 27 259:1 /kubelet /var/lib/kubelet rw,relatime - xfs /dev/nvme0n1p1 rw
42 27 7:0 / /snap/core/1 ro,relatime - squashfs /dev/loop0 ro
43 40 0:50 / /run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/rootfs rw - overlay overlay rw,lowerdir=/a,upperdir=/b,workdir=/c
44 27 0:51 / /mnt/nfs rw - nfs4 server:/export rw
45 27 8:1 / /mnt/with\040space rw - btrfs /dev/sda1 rw
`

func TestParseBlockFilesystems(t *testing.T) {
	got, err := parseBlockFilesystems(nodeMountinfo)
	if err != nil {
		t.Fatal(err)
	}
	want := []blockFs{
		{Device: "/dev/vda", Major: 254, Minor: 0, Mountpoint: "/"},
		{Device: "/dev/nvme0n1p1", Major: 259, Minor: 1, Mountpoint: "/var/lib/containerd"},
		{Device: "/dev/loop0", Major: 7, Minor: 0, Mountpoint: "/snap/core/1"},
		{Device: "/dev/sda1", Major: 8, Minor: 1, Mountpoint: "/mnt/with space"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if got, err := parseBlockFilesystems(""); err != nil || got != nil {
		t.Errorf("empty: %v %v", got, err)
	}
}

func TestDeviceNamer(t *testing.T) {
	sys := filepath.Join(t.TempDir(), "sys")
	link := func(devno, target string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(sys, "dev", "block"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(sys, "dev", "block", devno)); err != nil {
			t.Fatal(err)
		}
	}
	link("254:0", "../../devices/pci0000:00/0000:00:02.0/virtio1/block/vda")
	link("259:0", "../../devices/pci0000:00/nvme/nvme0/nvme0n1/block/nvme0n1")
	link("259:1", "../../devices/pci0000:00/nvme/nvme0/block/nvme0n1/nvme0n1p1")
	link("253:0", "../../devices/virtual/block/dm-0")
	link("7:0", "../../devices/virtual/block/loop0")
	link("7:1", "../../devices/virtual/block/loop1")
	link("259:5", "../../devices/virtual/nvme-subsystem/block/nvme0c0n1")
	writeFile(t, filepath.Join(sys, "block", "nvme0c0n1", "hidden"), "1\n")
	writeFile(t, filepath.Join(sys, "block", "vda", "hidden"), "0\n")
	fs, _ := parseBlockFilesystems(nodeMountinfo)
	n := newDeviceNamer(sys, fs)
	for _, tc := range []struct {
		major, minor uint64
		want         string
	}{
		{254, 0, "/dev/vda"},       // a disk
		{259, 0, "/dev/nvme0n1"},   // a disk
		{253, 0, "/dev/dm-0"},      // device mapper
		{259, 1, "/dev/nvme0n1p1"}, // a partition: by its mount
		{7, 0, "/dev/loop0"},       // a loop device: by its mount
		{7, 1, ""},                 // a loop device not mounted
		{259, 5, ""},               // a hidden NVMe path
		{8, 1, "/dev/sda1"},        // not in /sys (gone): by its mount
		{9, 9, ""},                 // unknown
	} {
		if got := n.name(tc.major, tc.minor); got != tc.want {
			t.Errorf("%d:%d = %q, want %q", tc.major, tc.minor, got, tc.want)
		}
	}
	// Looked up once: a link removed later does not change the name.
	os.Remove(filepath.Join(sys, "dev", "block", "254:0"))
	if got := n.name(254, 0); got != "/dev/vda" {
		t.Errorf("cached name = %q", got)
	}
}
