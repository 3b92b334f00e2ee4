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
// a container that mounts a volume cannot be created.
func (m *Manager) volumeMounts(ctx context.Context, pod *v1.Pod, c *v1.Container, env func(string) (string, bool)) ([]*runtimeapi.Mount, error) {
	if len(c.VolumeMounts) == 0 {
		return nil, nil
	}
	if m.opts.Mounts == nil {
		return nil, fmt.Errorf("volume %q of container %q: this runtime manager has no volume manager", c.VolumeMounts[0].Name, c.Name)
	}
	mounts, err := m.opts.Mounts(ctx, pod, c, env)
	if err != nil {
		return nil, err
	}
	out := make([]*runtimeapi.Mount, 0, len(mounts))
	for _, mt := range mounts {
		out = append(out, criMount(mt))
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
