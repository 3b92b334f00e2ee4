package machineinfo

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
	nodeutil "k8s.io/component-helpers/node/util"
)

// Read gathers the machine's facts. rootDir is the kubelet's root dir, whose
// filesystem gives the ephemeral-storage capacity. It fails only when a fact
// the node cannot be registered without (CPU count, memory) is missing;
// other gaps are listed in Info.Warnings.
func Read(rootDir string) (Info, error) {
	return readFrom(osFS{}, rootDir)
}

// fileReader is the file access Read needs, so tests can feed fixtures.
type fileReader interface {
	ReadFile(path string) ([]byte, error)
	// ReadDir returns the names in the directory, sorted.
	ReadDir(path string) ([]string, error)
}

type osFS struct{}

func (osFS) ReadFile(p string) ([]byte, error) { return os.ReadFile(p) }

func (osFS) ReadDir(p string) ([]string, error) {
	entries, err := os.ReadDir(p)
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, err
}

// hugePagesDir lists the supported huge page sizes, one directory each.
const hugePagesDir = "/sys/kernel/mm/hugepages"

// readHugePages reads every supported huge page size and its pool, as
// cAdvisor does for the upstream kubelet. A kernel without huge pages has
// no directory: no sizes and no warning.
func readHugePages(fs fileReader) ([]HugePages, error) {
	names, err := fs.ReadDir(hugePagesDir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []HugePages
	for _, name := range names {
		size, err := ParseHugePagesDir(name)
		if err != nil {
			return nil, err
		}
		b, err := fs.ReadFile(filepath.Join(hugePagesDir, name, "nr_hugepages"))
		if err != nil {
			return nil, err
		}
		n, err := ParseHugePagesCount(string(b))
		if err != nil {
			return nil, err
		}
		out = append(out, HugePages{PageSizeBytes: size, Pages: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PageSizeBytes < out[j].PageSizeBytes })
	return out, nil
}

func readFrom(fs fileReader, rootDir string) (Info, error) {
	info := Info{
		OperatingSystem: runtime.GOOS,
		Architecture:    runtime.GOARCH,
	}
	warn := func(format string, args ...any) {
		info.Warnings = append(info.Warnings, fmt.Sprintf(format, args...))
	}

	if b, err := fs.ReadFile("/sys/devices/system/cpu/online"); err == nil {
		if n, err := ParseCPUList(string(b)); err == nil {
			info.NumCPU = n
		}
	}
	if info.NumCPU == 0 {
		info.NumCPU = runtime.NumCPU()
	}

	b, err := fs.ReadFile("/proc/meminfo")
	if err != nil {
		return info, fmt.Errorf("reading memory capacity: %w", err)
	}
	if info.MemoryCapacityBytes, err = ParseMemTotal(string(b)); err != nil {
		return info, fmt.Errorf("reading memory capacity: %w", err)
	}

	if hp, err := readHugePages(fs); err != nil {
		warn("huge pages unknown: %v", err)
	} else {
		info.HugePages = hp
	}

	if rootDir != "" {
		if c, err := fsCapacity(rootDir); err != nil {
			warn("ephemeral-storage capacity of %s unknown: %v", rootDir, err)
		} else {
			info.RootFSCapacityBytes = c
		}
	}

	for _, p := range []string{"/etc/machine-id", "/var/lib/dbus/machine-id"} {
		if b, err := fs.ReadFile(p); err == nil {
			if id := NormalizeID(string(b)); validMachineID(id) {
				info.MachineID = id
				break
			}
		}
	}
	if info.MachineID == "" {
		warn("machine-id unknown: neither /etc/machine-id nor /var/lib/dbus/machine-id holds one")
	}
	if b, err := fs.ReadFile("/sys/class/dmi/id/product_uuid"); err == nil {
		info.SystemUUID = NormalizeID(string(b))
	}
	if b, err := fs.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		info.BootID = NormalizeID(string(b))
	} else {
		warn("boot ID unknown: %v", err)
	}
	if b, err := fs.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		info.KernelVersion = strings.TrimSpace(string(b))
	} else {
		var u unix.Utsname
		if err := unix.Uname(&u); err == nil {
			info.KernelVersion = unix.ByteSliceToString(u.Release[:])
		}
	}
	for _, p := range []string{"/etc/os-release", "/usr/lib/os-release"} {
		if b, err := fs.ReadFile(p); err == nil {
			info.OSImage = ParseOSRelease(string(b))
			break
		}
	}
	if info.OSImage == "" {
		info.OSImage = "Linux"
	}
	if h, err := nodeutil.GetHostname(""); err == nil {
		info.Hostname = h // trimmed and lowercased, as upstream
	} else {
		warn("hostname unknown: %v", err)
	}
	if b, err := fs.ReadFile("/proc/net/route"); err == nil {
		if iface := ParseDefaultRouteInterface(string(b)); iface != "" {
			info.DefaultRouteIPv4 = interfaceIPv4(iface)
		}
	}
	return info, nil
}

// fsCapacity is the total size in bytes of the filesystem holding path.
func fsCapacity(path string) (int64, error) {
	var st unix.Statfs_t
	p := filepath.Clean(path)
	// The root dir may not exist yet on a fresh machine: walk up to the
	// nearest existing parent, which is on the same filesystem once created.
	for {
		err := unix.Statfs(p, &st)
		if err == nil {
			return int64(st.Blocks) * int64(st.Bsize), nil
		}
		if err != unix.ENOENT || p == "/" {
			return 0, err
		}
		p = filepath.Dir(p)
	}
}

// interfaceIPv4 returns the first global-unicast IPv4 address of the named
// interface, or nil.
func interfaceIPv4(name string) net.IP {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return nil
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if ip4 := ipn.IP.To4(); ip4 != nil && ip4.IsGlobalUnicast() {
			return ip4
		}
	}
	return nil
}
