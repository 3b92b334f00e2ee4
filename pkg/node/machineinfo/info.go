package machineinfo

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Info is a snapshot of the machine's facts. Zero values mean "unknown";
// Read fills what it can and reports what it could not in Warnings.
type Info struct {
	// NumCPU is the number of online logical CPUs.
	NumCPU int
	// MemoryCapacityBytes is MemTotal from /proc/meminfo.
	MemoryCapacityBytes int64
	// RootFSCapacityBytes is the size of the filesystem holding the
	// kubelet's root dir (the node's ephemeral-storage capacity).
	RootFSCapacityBytes int64
	MachineID           string
	SystemUUID          string
	BootID              string
	KernelVersion       string
	// OSImage is PRETTY_NAME from os-release ("Debian GNU/Linux 12
	// (bookworm)"), "Linux" when there is none.
	OSImage string
	// OperatingSystem and Architecture are GOOS/GOARCH spelling ("linux",
	// "amd64"), as the kubernetes.io/os and kubernetes.io/arch labels use.
	OperatingSystem string
	Architecture    string
	Hostname        string
	// DefaultRouteIPv4 is the first IPv4 address of the interface that
	// carries the IPv4 default route; nil when there is none.
	DefaultRouteIPv4 net.IP
	// HugePages are the huge page sizes the kernel supports
	// (/sys/kernel/mm/hugepages), smallest first, each with the pages
	// preallocated (nr_hugepages, possibly 0).
	HugePages []HugePages
	// Warnings name the facts that could not be read and why.
	Warnings []string
}

// HugePages is one supported huge page size and its pool.
type HugePages struct {
	PageSizeBytes int64
	Pages         int64
}

// ParseHugePagesDir returns the page size in bytes of a directory of
// /sys/kernel/mm/hugepages ("hugepages-2048kB" is 2 MiB).
func ParseHugePagesDir(name string) (int64, error) {
	kb, ok := strings.CutPrefix(name, "hugepages-")
	if ok {
		kb, ok = strings.CutSuffix(kb, "kB")
	}
	if !ok {
		return 0, fmt.Errorf("hugepages: unexpected entry %q", name)
	}
	n, err := strconv.ParseInt(kb, 10, 64)
	if err != nil || n <= 0 || n > (1<<53)/1024 {
		return 0, fmt.Errorf("hugepages: bad page size in %q", name)
	}
	return n * 1024, nil
}

// ParseHugePagesCount parses an nr_hugepages file.
func ParseHugePagesCount(content string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(content), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("hugepages: bad page count %q", strings.TrimSpace(content))
	}
	return n, nil
}

// ParseMemTotal returns MemTotal in bytes from the contents of
// /proc/meminfo.
func ParseMemTotal(meminfo string) (int64, error) {
	sc := bufio.NewScanner(strings.NewReader(meminfo))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || fields[0] != "MemTotal:" {
			continue
		}
		v, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("meminfo: bad MemTotal value %q: %w", fields[1], err)
		}
		mult := int64(1)
		if len(fields) >= 3 {
			switch strings.ToLower(fields[2]) {
			case "kb":
				mult = 1024
			case "mb":
				mult = 1024 * 1024
			case "gb":
				mult = 1024 * 1024 * 1024
			default:
				return 0, fmt.Errorf("meminfo: unknown MemTotal unit %q", fields[2])
			}
		}
		return v * mult, nil
	}
	return 0, fmt.Errorf("meminfo: no MemTotal line")
}

// ParseCPUList counts the CPUs in a kernel CPU list such as the contents of
// /sys/devices/system/cpu/online ("0-3,6,8-9\n" is 7).
func ParseCPUList(list string) (int, error) {
	list = strings.TrimSpace(list)
	if list == "" {
		return 0, fmt.Errorf("cpu list: empty")
	}
	n := 0
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, fmt.Errorf("cpu list: bad entry %q", part)
		}
		if !isRange {
			n++
			continue
		}
		b, err := strconv.Atoi(hi)
		if err != nil || b < a {
			return 0, fmt.Errorf("cpu list: bad range %q", part)
		}
		n += b - a + 1
	}
	return n, nil
}

// ParseOSRelease returns PRETTY_NAME from the contents of an os-release
// file, unquoted, or "" if it has none.
func ParseOSRelease(content string) string {
	sc := bufio.NewScanner(strings.NewReader(content))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		key, val, ok := strings.Cut(line, "=")
		if !ok || key != "PRETTY_NAME" {
			continue
		}
		val = strings.TrimSpace(val)
		if len(val) >= 2 && (val[0] == '"' || val[0] == '\'') && val[len(val)-1] == val[0] {
			val = val[1 : len(val)-1]
			// os-release uses shell-style escapes inside double quotes.
			val = strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\$`, `$`, "\\`", "`").Replace(val)
		}
		return val
	}
	return ""
}

// ParseDefaultRouteInterface returns the interface name carrying the IPv4
// default route in the contents of /proc/net/route, choosing the lowest
// metric when several do, or "" when there is none.
func ParseDefaultRouteInterface(route string) string {
	sc := bufio.NewScanner(strings.NewReader(route))
	best, bestMetric := "", int64(-1)
	first := true
	for sc.Scan() {
		if first { // header line
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 8 {
			continue
		}
		// Columns: Iface Destination Gateway Flags RefCnt Use Metric Mask ...
		if f[1] != "00000000" || f[7] != "00000000" {
			continue
		}
		flags, err := strconv.ParseUint(f[3], 16, 32)
		if err != nil || flags&0x1 == 0 { // RTF_UP
			continue
		}
		metric, err := strconv.ParseInt(f[6], 10, 64)
		if err != nil {
			continue
		}
		if bestMetric < 0 || metric < bestMetric {
			best, bestMetric = f[0], metric
		}
	}
	return best
}

// NormalizeID trims an ID file's contents (machine-id, boot_id,
// product_uuid).
func NormalizeID(content string) string {
	return strings.TrimSpace(content)
}

// validMachineID reports whether s looks like a systemd machine-id (32 hex
// digits).
func validMachineID(s string) bool {
	if len(s) != 32 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
