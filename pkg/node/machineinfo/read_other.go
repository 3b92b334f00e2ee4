//go:build !linux

package machineinfo

import (
	"fmt"
	"runtime"
)

// Read is only implemented on Linux.
func Read(rootDir string) (Info, error) {
	return Info{OperatingSystem: runtime.GOOS, Architecture: runtime.GOARCH},
		fmt.Errorf("machineinfo: reading machine facts is not implemented on %s", runtime.GOOS)
}
