package cgroups

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DeviceStats is one block device's counters in a cgroup, by operation
// (v1: Read, Write, Sync, Async, Discard, Total; v2: Read, Write).
type DeviceStats struct {
	Major, Minor uint64
	Stats        map[string]uint64
}

// BlockIO is a cgroup's block I/O, as cadvisor reads it: bytes and
// operations per device, counted for the cgroup and its descendants.
// Empty when the kernel counts none: no I/O yet, or (cgroup v1 on Linux
// 6.10 and later) no blkio throttling rule set on the device, without
// which the kernel keeps no blkio.throttle.* statistics.
type BlockIO struct {
	ServiceBytes []DeviceStats // bytes
	Serviced     []DeviceStats // operations
}

// v1BlkioFiles are the pairs of (operations, bytes) files a v1 cgroup may
// count in, in the order cadvisor's cgroup library tries them: the first
// pair whose operations file lists a device is used (BFQ's and CFQ's only
// count on devices with that scheduler).
var v1BlkioFiles = [][2]string{
	{"blkio.bfq.io_serviced_recursive", "blkio.bfq.io_service_bytes_recursive"},
	{"blkio.io_serviced_recursive", "blkio.io_service_bytes_recursive"},
	{"blkio.throttle.io_serviced_recursive", "blkio.throttle.io_service_bytes_recursive"},
	{"blkio.throttle.io_serviced", "blkio.throttle.io_service_bytes"},
}

// ReadIO reads the cgroup's block I/O: io.stat on v2, the blkio
// controller's files on v1. Nothing when the files are missing (the cgroup
// went away, no blkio hierarchy) or list no device.
func (r *Reader) ReadIO(cgPath string) BlockIO {
	if r.h.Version == 2 {
		b, err := os.ReadFile(filepath.Join(r.dir("", cgPath), "io.stat"))
		if err != nil {
			return BlockIO{}
		}
		return ParseIOStat(string(b))
	}
	dir := r.dir("blkio", cgPath)
	if dir == "" {
		return BlockIO{}
	}
	for _, f := range v1BlkioFiles {
		b, err := os.ReadFile(filepath.Join(dir, f[0]))
		if err != nil {
			continue
		}
		ops := ParseBlkioV1(string(b))
		if len(ops) == 0 {
			continue
		}
		out := BlockIO{Serviced: ops}
		if b, err := os.ReadFile(filepath.Join(dir, f[1])); err == nil {
			out.ServiceBytes = ParseBlkioV1(string(b))
		}
		return out
	}
	return BlockIO{}
}

// ParseBlkioV1 parses a v1 blkio statistics file:
//
//	8:0 Read 1282048
//	8:0 Write 2195456
//	Total 3477504
//
// into one entry per device, in the order the devices first appear. A line
// without an operation ("8:0 6792", the sectors files) counts as "Count",
// as cadvisor names it. Total lines and lines that do not parse are
// skipped.
func ParseBlkioV1(content string) []DeviceStats {
	var out []DeviceStats
	for _, line := range strings.Split(content, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || len(f) > 3 {
			continue
		}
		major, minor, ok := parseMajorMinor(f[0])
		if !ok {
			continue
		}
		op := "Count"
		if len(f) == 3 {
			op = f[1]
		}
		v, err := strconv.ParseUint(f[len(f)-1], 10, 64)
		if err != nil {
			continue
		}
		out = addDeviceStat(out, major, minor, op, v)
	}
	return out
}

// ParseIOStat parses a v2 io.stat file:
//
//	8:0 rbytes=90112 wbytes=8192 rios=6 wios=2 dbytes=0 dios=0
//
// as cgroup v1's layout, the way runc's cgroup library maps it and cadvisor
// reports it: rbytes and wbytes are Read and Write bytes, rios and wios
// Read and Write operations; the other keys are not reported.
func ParseIOStat(content string) BlockIO {
	var out BlockIO
	for _, line := range strings.Split(content, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		major, minor, ok := parseMajorMinor(f[0])
		if !ok {
			continue
		}
		for _, kv := range f[1:] {
			k, val, ok := strings.Cut(kv, "=")
			if !ok {
				continue
			}
			v, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				continue
			}
			switch k {
			case "rbytes":
				out.ServiceBytes = addDeviceStat(out.ServiceBytes, major, minor, "Read", v)
			case "wbytes":
				out.ServiceBytes = addDeviceStat(out.ServiceBytes, major, minor, "Write", v)
			case "rios":
				out.Serviced = addDeviceStat(out.Serviced, major, minor, "Read", v)
			case "wios":
				out.Serviced = addDeviceStat(out.Serviced, major, minor, "Write", v)
			}
		}
	}
	return out
}

func parseMajorMinor(s string) (major, minor uint64, ok bool) {
	a, b, found := strings.Cut(s, ":")
	if !found {
		return 0, 0, false
	}
	major, err1 := strconv.ParseUint(a, 10, 64)
	minor, err2 := strconv.ParseUint(b, 10, 64)
	return major, minor, err1 == nil && err2 == nil
}

func addDeviceStat(list []DeviceStats, major, minor uint64, op string, v uint64) []DeviceStats {
	for i := range list {
		if list[i].Major == major && list[i].Minor == minor {
			list[i].Stats[op] = v
			return list
		}
	}
	return append(list, DeviceStats{Major: major, Minor: minor, Stats: map[string]uint64{op: v}})
}
