package kuberuntime

import (
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// EmptyDirPath is where an emptyDir volume of a pod lives on the host.
func EmptyDirPath(rootDir string, uid, name string) string {
	return filepath.Join(rootDir, "pods", uid, "volumes", "kubernetes.io~empty-dir", name)
}

// volumeMounts turns the container's mounts of emptyDir and hostPath
// volumes into CRI mounts. Mounts of other volume types are left to the
// ContainerOptions hook; a mount of a volume nobody provides is an error.
func (m *Manager) volumeMounts(pod *v1.Pod, c *v1.Container) ([]*runtimeapi.Mount, error) {
	vols := map[string]*v1.Volume{}
	for i := range pod.Spec.Volumes {
		vols[pod.Spec.Volumes[i].Name] = &pod.Spec.Volumes[i]
	}
	var out []*runtimeapi.Mount
	for _, vm := range c.VolumeMounts {
		v := vols[vm.Name]
		if v == nil {
			return nil, fmt.Errorf("volume %q of container %q is not in the pod spec", vm.Name, c.Name)
		}
		var host string
		switch {
		case v.EmptyDir != nil:
			// medium: Memory gets a plain directory too (no tmpfs mount
			// yet); sizeLimit is not enforced.
			host = EmptyDirPath(m.opts.RootDir, string(pod.UID), vm.Name)
			if err := os.MkdirAll(host, 0o777); err != nil {
				return nil, fmt.Errorf("creating emptyDir %q: %w", vm.Name, err)
			}
			_ = os.Chmod(host, 0o777)
		case v.HostPath != nil:
			host = v.HostPath.Path
			if err := prepareHostPath(host, v.HostPath.Type); err != nil {
				return nil, fmt.Errorf("hostPath volume %q: %w", vm.Name, err)
			}
		default:
			continue // provided by the ContainerOptions hook, if at all
		}
		if vm.SubPath != "" {
			host = filepath.Join(host, vm.SubPath)
			if err := os.MkdirAll(host, 0o777); err != nil {
				return nil, fmt.Errorf("creating subPath %q: %w", vm.SubPath, err)
			}
		}
		mnt := &runtimeapi.Mount{ContainerPath: vm.MountPath, HostPath: host, Readonly: vm.ReadOnly}
		if vm.MountPropagation != nil {
			switch *vm.MountPropagation {
			case v1.MountPropagationHostToContainer:
				mnt.Propagation = runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER
			case v1.MountPropagationBidirectional:
				mnt.Propagation = runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL
			}
		}
		out = append(out, mnt)
	}
	return out, nil
}

func prepareHostPath(p string, t *v1.HostPathType) error {
	typ := v1.HostPathUnset
	if t != nil {
		typ = *t
	}
	st, err := os.Stat(p)
	switch typ {
	case v1.HostPathUnset:
		return nil
	case v1.HostPathDirectoryOrCreate:
		if os.IsNotExist(err) {
			return os.MkdirAll(p, 0o755)
		}
		if err == nil && !st.IsDir() {
			return fmt.Errorf("%s exists and is not a directory", p)
		}
		return err
	case v1.HostPathFileOrCreate:
		if os.IsNotExist(err) {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}
		if err == nil && st.IsDir() {
			return fmt.Errorf("%s exists and is a directory", p)
		}
		return err
	}
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	mode := st.Mode()
	ok := true
	switch typ {
	case v1.HostPathDirectory:
		ok = mode.IsDir()
	case v1.HostPathFile:
		ok = mode.IsRegular()
	case v1.HostPathSocket:
		ok = mode&os.ModeSocket != 0
	case v1.HostPathCharDev:
		ok = mode&os.ModeCharDevice != 0
	case v1.HostPathBlockDev:
		ok = mode&os.ModeDevice != 0 && mode&os.ModeCharDevice == 0
	}
	if !ok {
		return fmt.Errorf("%s is not of type %s", p, typ)
	}
	return nil
}
