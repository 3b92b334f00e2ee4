package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
)

// hostPath: a path of the node, used where it is, after the check its
// type asks for (creating it for DirectoryOrCreate and FileOrCreate).
type hostPath struct {
	src *v1.HostPathVolumeSource
}

func (h *hostPath) kind() string      { return "hostPath" }
func (h *hostPath) describe() string  { return fmt.Sprintf("hostPath %q", h.src.Path) }
func (h *hostPath) pluginDir() string { return "" }
func (h *hostPath) readOnly() bool    { return false }
func (h *hostPath) refreshed() bool   { return false }

func (h *hostPath) setUp(ctx context.Context, s *setup) (string, error) {
	if err := checkHostPath(h.src.Path, h.src.Type); err != nil {
		return "", err
	}
	return h.src.Path, nil
}

// checkHostPath enforces a hostPath type, creating the path where the type
// says so.
func checkHostPath(p string, t *v1.HostPathType) error {
	typ := v1.HostPathUnset
	if t != nil {
		typ = *t
	}
	if !filepath.IsAbs(p) {
		return fmt.Errorf("hostPath %q is not an absolute path", p)
	}
	st, err := os.Stat(p)
	switch typ {
	case v1.HostPathUnset:
		return nil
	case v1.HostPathDirectoryOrCreate:
		if errors.Is(err, os.ErrNotExist) {
			return os.MkdirAll(p, 0o755)
		}
		if err == nil && !st.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is not a directory", p)
		}
		return err
	case v1.HostPathFileOrCreate:
		if errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_RDONLY, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}
		if err == nil && st.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is a directory, not a file", p)
		}
		return err
	}
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("hostPath type check failed: %s does not exist (type %s)", p, typ)
	}
	if err != nil {
		return err
	}
	mode := st.Mode()
	var ok bool
	var what string
	switch typ {
	case v1.HostPathDirectory:
		ok, what = mode.IsDir(), "a directory"
	case v1.HostPathFile:
		ok, what = mode.IsRegular(), "a file"
	case v1.HostPathSocket:
		ok, what = mode&os.ModeSocket != 0, "a socket"
	case v1.HostPathCharDev:
		ok, what = mode&os.ModeDevice != 0 && mode&os.ModeCharDevice != 0, "a character device"
	case v1.HostPathBlockDev:
		ok, what = mode&os.ModeDevice != 0 && mode&os.ModeCharDevice == 0, "a block device"
	default:
		return fmt.Errorf("hostPath type %q is not a known type", typ)
	}
	if !ok {
		return fmt.Errorf("hostPath type check failed: %s is not %s", p, what)
	}
	return nil
}
