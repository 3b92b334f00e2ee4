package kuberuntime

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// volumeMounts turns the container's volumeMounts into CRI mounts, as the
// volume manager (Options.Mounts) prepared them. Without a volume manager
// a container that mounts a volume cannot be created. A recursiveReadOnly
// request is resolved (ResolveRecursiveReadOnly) before any volume is
// prepared, against what the pod's runtime handler reports; a refusal is
// the container's error (CreateContainerConfigError), as upstream.
func (m *Manager) volumeMounts(ctx context.Context, pod *v1.Pod, c *v1.Container, env func(string) (string, bool)) ([]*runtimeapi.Mount, error) {
	if len(c.VolumeMounts) == 0 {
		return nil, nil
	}
	rro, err := m.recursiveReadOnlyMounts(ctx, pod, c)
	if err != nil {
		return nil, err
	}
	if m.opts.Mounts == nil {
		return nil, fmt.Errorf("volume %q of container %q: this runtime manager has no volume manager", c.VolumeMounts[0].Name, c.Name)
	}
	mounts, err := m.opts.Mounts(ctx, pod, c, env)
	if err != nil {
		return nil, err
	}
	if rro != nil && len(mounts) != len(c.VolumeMounts) {
		// MountsFunc promises one mount per volumeMount, in order; without
		// that the recursive flag could land on the wrong mount.
		return nil, fmt.Errorf("container %q: the volume manager returned %d mounts for %d volumeMounts", c.Name, len(mounts), len(c.VolumeMounts))
	}
	out := make([]*runtimeapi.Mount, 0, len(mounts))
	for i, mt := range mounts {
		cm := criMount(mt)
		if rro != nil && rro[i] {
			cm.RecursiveReadOnly = true
		}
		out = append(out, cm)
	}
	return out, nil
}

// recursiveReadOnlyMounts resolves the recursiveReadOnly of each of c's
// volumeMounts (by index), or returns nil when none asks for it: only then
// is the runtime asked what its handler supports.
func (m *Manager) recursiveReadOnlyMounts(ctx context.Context, pod *v1.Pod, c *v1.Container) ([]bool, error) {
	asked := false
	for _, vm := range c.VolumeMounts {
		if vm.RecursiveReadOnly != nil && *vm.RecursiveReadOnly != v1.RecursiveReadOnlyDisabled {
			asked = true
			break
		}
	}
	if !asked {
		return nil, nil
	}
	handler, err := m.runtimeHandler(ctx, pod)
	if err != nil {
		return nil, err
	}
	supported, err := m.SupportsRecursiveReadOnlyMounts(ctx, handler)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(c.VolumeMounts))
	for i, vm := range c.VolumeMounts {
		if out[i], err = ResolveRecursiveReadOnly(vm, supported); err != nil {
			return nil, fmt.Errorf("failed to resolve recursive read-only mode: %w", err)
		}
	}
	return out, nil
}

// ResolveRecursiveReadOnly decides whether a volumeMount becomes a
// recursive read-only CRI mount, given whether the pod's runtime handler
// supports those (CRI Status: runtime_handlers[].features
// .recursive_read_only_mounts). Unset and Disabled: no. IfPossible: when
// supported, else a plain read-only mount. Enabled: yes, or an error when
// unsupported. IfPossible and Enabled need readOnly: true and no
// mountPropagation other than None, else they are an error. The errors are
// upstream's words.
func ResolveRecursiveReadOnly(vm v1.VolumeMount, supported bool) (bool, error) {
	if vm.RecursiveReadOnly == nil || *vm.RecursiveReadOnly == v1.RecursiveReadOnlyDisabled {
		return false, nil
	}
	if !vm.ReadOnly {
		return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not read-only", vm.Name)
	}
	if vm.MountPropagation != nil && *vm.MountPropagation != v1.MountPropagationNone {
		return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not compatible with propagation %q", vm.Name, *vm.MountPropagation)
	}
	switch mode := *vm.RecursiveReadOnly; mode {
	case v1.RecursiveReadOnlyIfPossible:
		return supported, nil
	case v1.RecursiveReadOnlyEnabled:
		if !supported {
			return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not supported by the runtime", vm.Name)
		}
		return true, nil
	default:
		return false, fmt.Errorf("unknown recursive read-only mode %q", mode)
	}
}

func criMount(mt container.Mount) *runtimeapi.Mount {
	out := &runtimeapi.Mount{ContainerPath: mt.ContainerPath, HostPath: mt.HostPath, Readonly: mt.ReadOnly}
	switch mt.Propagation {
	case v1.MountPropagationHostToContainer:
		out.Propagation = runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER
	case v1.MountPropagationBidirectional:
		out.Propagation = runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL
	}
	return out
}
