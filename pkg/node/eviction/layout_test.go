package eviction

import (
	"errors"
	"os"
	"path/filepath"
)

// cgroupsLayoutForTest finds the root memory cgroup: v1's memory mount or
// the v2 unified root.
func cgroupsLayoutForTest() (string, error) {
	for _, d := range []string{"/sys/fs/cgroup/memory", "/sys/fs/cgroup"} {
		if _, err := os.Stat(filepath.Join(d, "memory.stat")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no root memory cgroup")
}
