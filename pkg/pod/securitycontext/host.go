package securitycontext

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// HostMaskedPaths is DefaultMaskedPaths plus the thermal throttle
// directories of this machine's CPUs, which upstream masks too. It reads
// /sys once; call it at start.
func HostMaskedPaths() []string {
	out := append([]string{}, DefaultMaskedPaths...)
	dirs, _ := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/thermal_throttle")
	sort.Strings(dirs)
	return append(out, dirs...)
}

// AppArmorEnabled reports whether the kernel enforces AppArmor, and if not,
// why, in upstream's words.
func AppArmorEnabled() (bool, string) {
	b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled")
	if err != nil || !strings.HasPrefix(string(b), "Y") {
		return false, "AppArmor is not enabled on the host"
	}
	if _, err := os.Stat("/sys/kernel/security/apparmor"); err != nil {
		return false, "AppArmor is not enabled on the host"
	}
	return true, ""
}
