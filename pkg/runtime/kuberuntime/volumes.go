package kuberuntime

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// volumeMounts turns the container's volumeMounts into CRI mounts, as the
// volume manager (Options.Mounts) prepared them. Without a volume manager
// a container that mounts a volume cannot be created. A recursiveReadOnly
// request is resolved (podspec.ResolveRecursiveReadOnly) before any volume is
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
	if !podspec.AsksRecursiveReadOnly(c) {
		return nil, nil
	}
	supported, err := m.PodSupportsRecursiveReadOnlyMounts(ctx, pod)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(c.VolumeMounts))
	for i, vm := range c.VolumeMounts {
		if out[i], err = podspec.ResolveRecursiveReadOnly(vm, supported); err != nil {
			return nil, fmt.Errorf("failed to resolve recursive read-only mode: %w", err)
		}
	}
	return out, nil
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
