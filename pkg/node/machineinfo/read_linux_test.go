package machineinfo

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

type mapFS map[string]string

func (m mapFS) ReadFile(p string) ([]byte, error) {
	if s, ok := m[p]; ok {
		return []byte(s), nil
	}
	return nil, os.ErrNotExist
}

// ReadDir lists the entries directly under p, sorted.
func (m mapFS) ReadDir(p string) ([]string, error) {
	seen := map[string]bool{}
	for k := range m {
		rest, ok := strings.CutPrefix(k, p+"/")
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(rest, "/")
		seen[name] = true
	}
	if len(seen) == 0 {
		return nil, os.ErrNotExist
	}
	var out []string
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

func TestReadFromFixtures(t *testing.T) {
	fs := mapFS{
		"/sys/devices/system/cpu/online":  "0-3\n",
		"/proc/meminfo":                   "MemTotal: 2048 kB\n",
		"/etc/machine-id":                 "0123456789abcdef0123456789abcdef\n",
		"/sys/class/dmi/id/product_uuid":  "EC2A-UUID\n",
		"/proc/sys/kernel/random/boot_id": "b00t-1d\n",
		"/proc/sys/kernel/osrelease":      "6.1.0-test\n",
		"/usr/lib/os-release":             "PRETTY_NAME=\"Test OS 1\"\n",
	}
	info, err := readFrom(fs, "")
	if err != nil {
		t.Fatal(err)
	}
	if info.NumCPU != 4 || info.MemoryCapacityBytes != 2048*1024 {
		t.Errorf("cpu/mem = %d/%d", info.NumCPU, info.MemoryCapacityBytes)
	}
	if info.MachineID != "0123456789abcdef0123456789abcdef" || info.SystemUUID != "EC2A-UUID" ||
		info.BootID != "b00t-1d" || info.KernelVersion != "6.1.0-test" || info.OSImage != "Test OS 1" {
		t.Errorf("ids wrong: %+v", info)
	}
}

func TestReadFromMissingMemoryFails(t *testing.T) {
	if _, err := readFrom(mapFS{}, ""); err == nil || !strings.Contains(err.Error(), "memory") {
		t.Fatalf("want memory error, got %v", err)
	}
}

func TestReadFromWarnsOnMissingIDs(t *testing.T) {
	info, err := readFrom(mapFS{"/proc/meminfo": "MemTotal: 1 kB\n"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if info.OSImage != "Linux" || info.NumCPU == 0 {
		t.Errorf("defaults not applied: %+v", info)
	}
	joined := strings.Join(info.Warnings, "\n")
	if !strings.Contains(joined, "machine-id") || !strings.Contains(joined, "boot ID") {
		t.Errorf("warnings = %q", joined)
	}
}

func TestReadThisMachine(t *testing.T) {
	info, err := Read(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if info.NumCPU < 1 || info.MemoryCapacityBytes <= 0 || info.RootFSCapacityBytes <= 0 {
		t.Errorf("implausible info: %+v", info)
	}
}

func TestReadHugePages(t *testing.T) {
	base := mapFS{"/proc/meminfo": "MemTotal: 2048 kB\n"}
	with := func(extra map[string]string) mapFS {
		fs := mapFS{}
		for k, v := range base {
			fs[k] = v
		}
		for k, v := range extra {
			fs[k] = v
		}
		return fs
	}
	for _, tc := range []struct {
		name     string
		fs       mapFS
		want     string
		warnings int
	}{
		{"no hugepages support", base, "[]", 0},
		{"supported sizes, empty pools reported too", with(map[string]string{
			"/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages":    "0\n",
			"/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages": "2\n",
		}), "[{2097152 0} {1073741824 2}]", 0},
		{"unreadable count is a warning, not a failure", with(map[string]string{
			"/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages": "0\n",
		}), "[]", 1},
		{"bad count", with(map[string]string{
			"/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages": "lots\n",
		}), "[]", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := readFrom(tc.fs, "")
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(info.HugePages); got != tc.want {
				t.Errorf("HugePages = %s, want %s", got, tc.want)
			}
			n := 0
			for _, w := range info.Warnings {
				if strings.Contains(w, "huge pages") {
					n++
				}
			}
			if n != tc.warnings {
				t.Errorf("huge page warnings = %d (%v), want %d", n, info.Warnings, tc.warnings)
			}
		})
	}
}
