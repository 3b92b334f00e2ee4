package kuberuntime

import (
	"context"

	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// detached decorates the CRI runtime service so that calls which change the
// runtime run to completion once issued, whatever happens to the caller's
// context: they are still bounded by the CRI client's request timeout.
//
// containerd 1.6 does not survive a cancelled StartContainer cleanly: the
// container is left "in starting state" and can neither be removed nor its
// sandbox removed until containerd restarts. A kill request cancels a pod's
// in-flight sync and a kubelet shutdown cancels everything, so without this
// either could strand a pod. Cancellation is honoured between steps
// instead (see SyncPod); reads and image pulls stay cancellable.
type detached struct {
	cri.RuntimeService
}

func (d detached) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	return d.RuntimeService.RunPodSandbox(context.WithoutCancel(ctx), config, runtimeHandler)
}

func (d detached) StopPodSandbox(ctx context.Context, id string) error {
	return d.RuntimeService.StopPodSandbox(context.WithoutCancel(ctx), id)
}

func (d detached) RemovePodSandbox(ctx context.Context, id string) error {
	return d.RuntimeService.RemovePodSandbox(context.WithoutCancel(ctx), id)
}

func (d detached) CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	return d.RuntimeService.CreateContainer(context.WithoutCancel(ctx), sandboxID, config, sandboxConfig)
}

func (d detached) StartContainer(ctx context.Context, id string) error {
	return d.RuntimeService.StartContainer(context.WithoutCancel(ctx), id)
}

func (d detached) StopContainer(ctx context.Context, id string, timeout int64) error {
	return d.RuntimeService.StopContainer(context.WithoutCancel(ctx), id, timeout)
}

func (d detached) RemoveContainer(ctx context.Context, id string) error {
	return d.RuntimeService.RemoveContainer(context.WithoutCancel(ctx), id)
}
