package kubelet

import (
	"context"
	"fmt"

	remote "k8s.io/cri-client/pkg"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/gokubelet/kubelet/pkg/runtime/kuberuntime"
)

// useRuntimeCgroupDriver sets cfg.CgroupDriver to the container runtime's
// when the runtime names it (CRI RuntimeConfig; containerd 2 does, 1.6
// does not and the configured one stays), as upstream does before anything
// places a cgroup. /configz then shows the driver in use.
func useRuntimeCgroupDriver(ctx context.Context, cfg *kubeletv1beta1.KubeletConfiguration) error {
	rs, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(cfg.ContainerRuntimeEndpoint).
		WithConnectionTimeout(cfg.RuntimeRequestTimeout.Duration).WithTracerProvider(nil).Build(ctx)
	if err != nil {
		return fmt.Errorf("connecting to the container runtime at %s: %w", cfg.ContainerRuntimeEndpoint, err)
	}
	choice, err := kuberuntime.CgroupDriver(ctx, rs, cfg.CgroupDriver)
	if err != nil {
		return fmt.Errorf("container runtime at %s: %w", cfg.ContainerRuntimeEndpoint, err)
	}
	cfg.CgroupDriver = choice.Driver
	return nil
}
