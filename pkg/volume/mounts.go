package volume

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/pod/envvars"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/volume/subpath"
)

var _ container.MountsFunc = (*Manager)(nil).ContainerMounts

// ContainerMounts returns the mounts of the container's volumeMounts from
// the volumes SetUpPod prepared: the volume's host path, or for a subPath
// (or subPathExpr, expanded with env) a bind mount of what it names,
// resolved so it cannot lead outside the volume. configMap, secret,
// downwardAPI and projected volumes, and claims mounted readOnly, are
// read-only whatever the volumeMount says.
func (m *Manager) ContainerMounts(ctx context.Context, pod *v1.Pod, c *v1.Container, env func(string) (string, bool)) ([]container.Mount, error) {
	m.mu.Lock()
	pv := m.pods[pod.UID]
	m.mu.Unlock()
	if pv == nil && len(c.VolumeMounts) > 0 {
		return nil, fmt.Errorf("the volumes of pod %s/%s are not set up", pod.Namespace, pod.Name)
	}
	var out []container.Mount
	for i, vm := range c.VolumeMounts {
		pv.mu.Lock()
		vs := pv.vols[vm.Name]
		var path string
		var ro, ready bool
		var img *imageVolume
		if vs != nil {
			path, ro, ready = vs.path, vs.src != nil && vs.src.readOnly(), vs.ready
			img, _ = vs.src.(*imageVolume)
		}
		pv.mu.Unlock()
		if !ready {
			return nil, fmt.Errorf("volume %q of container %q is not set up", vm.Name, c.Name)
		}
		sub := vm.SubPath
		if vm.SubPathExpr != "" {
			var err error
			if sub, err = ExpandSubPathExpr(vm.SubPathExpr, env); err != nil {
				return nil, fmt.Errorf("subPathExpr %q of volumeMount %q: %w", vm.SubPathExpr, vm.Name, err)
			}
		}
		if sub != "" {
			if err := subpath.Validate(sub); err != nil {
				return nil, fmt.Errorf("volumeMount %q of container %q: %w", vm.Name, c.Name, err)
			}
		}
		if img != nil {
			// The runtime mounts the image (and the subPath inside it);
			// always read-only, as upstream.
			mnt := container.Mount{Name: vm.Name, ContainerPath: vm.MountPath, ReadOnly: true,
				Image: img.src.Reference, PullPolicy: img.src.PullPolicy, ImageSubPath: sub}
			if vm.MountPropagation != nil {
				mnt.Propagation = *vm.MountPropagation
			}
			out = append(out, mnt)
			continue
		}
		if sub != "" {
			target := subpath.Target(m.PodDir(pod.UID), vm.Name, c.Name, i)
			p, err := subpath.Prepare(path, sub, target)
			if err != nil {
				return nil, fmt.Errorf("failed to prepare subPath for volumeMount %q of container %q: %w", vm.Name, c.Name, err)
			}
			path = p
		}
		mnt := container.Mount{Name: vm.Name, HostPath: path, ContainerPath: vm.MountPath, ReadOnly: vm.ReadOnly || ro}
		if vm.MountPropagation != nil {
			mnt.Propagation = *vm.MountPropagation
		}
		out = append(out, mnt)
	}
	return out, nil
}

var _ container.VolumeDirFunc = (*Manager)(nil).VolumeDir

// VolumeDir returns the host directory of the pod's volume name, as
// SetUpPod prepared it; an error when the pod or the volume is not set up.
func (m *Manager) VolumeDir(pod *v1.Pod, name string) (string, error) {
	m.mu.Lock()
	pv := m.pods[pod.UID]
	m.mu.Unlock()
	if pv == nil {
		return "", fmt.Errorf("the volumes of pod %s/%s are not set up", pod.Namespace, pod.Name)
	}
	pv.mu.Lock()
	defer pv.mu.Unlock()
	vs := pv.vols[name]
	if vs == nil || !vs.ready {
		return "", fmt.Errorf("volume %q is not set up", name)
	}
	if vs.path == "" {
		return "", fmt.Errorf("volume %q (%s) has no directory on the node", name, vs.src.kind())
	}
	return vs.path, nil
}

// ExpandSubPathExpr expands $(VAR) references in a subPathExpr with the
// container's environment, by envvars.Expand's rules ("$$" is a literal
// "$"). A variable that is not set or empty is an error naming every such
// variable, sorted, as upstream.
func ExpandSubPathExpr(expr string, env func(string) (string, bool)) (string, error) {
	missing := map[string]bool{}
	out := envvars.Expand(expr, func(name string) (string, bool) {
		v, ok := "", false
		if env != nil {
			v, ok = env(name)
		}
		if !ok || v == "" {
			missing[name] = true
		}
		return v, true
	})
	if len(missing) > 0 {
		names := make([]string, 0, len(missing))
		for n := range missing {
			names = append(names, n)
		}
		sort.Strings(names)
		return "", fmt.Errorf("missing value for %s", strings.Join(names, ", "))
	}
	return out, nil
}
