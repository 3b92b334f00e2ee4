//go:build linux

package hostfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// DiskUsage is the space the files under dir take (allocated blocks, each
// inode once), not counting other mounts below it.
func DiskUsage(dir string) (int64, error) {
	root, err := os.Lstat(dir)
	if err != nil {
		return 0, err
	}
	dev := root.Sys().(*syscall.Stat_t).Dev
	seen := map[uint64]bool{}
	var total int64
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		st := info.Sys().(*syscall.Stat_t)
		if st.Dev != dev {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if st.Nlink > 1 && !d.IsDir() {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		total += st.Blocks * 512
		return nil
	})
	return total, err
}
