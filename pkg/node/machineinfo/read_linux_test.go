package machineinfo

import (
	"os"
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
