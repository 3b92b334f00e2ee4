package kuberuntime

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	crierrors "k8s.io/cri-api/pkg/errors"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// volumeMounts turns the container's volumeMounts into CRI mounts, as the
// volume manager (Options.Mounts) prepared them. Without a volume manager
// a container that mounts a volume cannot be created. A recursiveReadOnly
// request is resolved (podspec.ResolveRecursiveReadOnly) before any volume is
// prepared, against what the pod's runtime handler reports; a refusal is
// the container's error (CreateContainerConfigError), as upstream.
//
// An image volume's image is made present here, by its pull policy, as
// the container's own image is: a failure is the puller's *images.Error,
// which the container waits with (ErrImagePull, ImagePullBackOff, ...).
func (m *Manager) volumeMounts(ctx context.Context, pod *v1.Pod, c *v1.Container, env func(string) (string, bool), sandbox *runtimeapi.PodSandboxConfig) ([]*runtimeapi.Mount, error) {
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
		if mt.Image != "" {
			if err := imageVolumeSupport(m.runtimeName, m.runtimeVersion); err != nil {
				return nil, fmt.Errorf("volume %q: %w", mt.Name, err)
			}
			ref, err := m.puller.EnsureVolumeImage(ctx, pod, mt.Image, mt.PullPolicy, sandbox)
			if err != nil {
				return nil, err
			}
			cm.Image = &runtimeapi.ImageSpec{Image: ref, UserSpecifiedImage: mt.Image}
		}
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
	out := &runtimeapi.Mount{ContainerPath: mt.ContainerPath, HostPath: mt.HostPath, Readonly: mt.ReadOnly, ImageSubPath: mt.ImageSubPath}
	switch mt.Propagation {
	case v1.MountPropagationHostToContainer:
		out.Propagation = runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER
	case v1.MountPropagationBidirectional:
		out.Propagation = runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL
	}
	return out
}

// imageVolumeSupport refuses image volumes on a runtime known not to mount
// them: containerd before 2.1 ignores CRI Mount.image and would mount an
// empty host path instead. Other runtimes (CRI-O mounts them since 1.31)
// are trusted to refuse what they cannot do.
func imageVolumeSupport(name, version string) error {
	if name != "containerd" {
		return nil
	}
	major, minor, ok := majorMinor(version)
	if !ok || major > 2 || (major == 2 && minor >= 1) {
		return nil
	}
	return fmt.Errorf("the container runtime, containerd %s, cannot mount image volumes (containerd 2.1 or later can)", version)
}

// majorMinor reads "v2.1.3", "1.6.20~ds1" and the like.
func majorMinor(v string) (major, minor int, ok bool) {
	v = strings.TrimPrefix(v, "v")
	maj, rest, found := strings.Cut(v, ".")
	if !found {
		return 0, 0, false
	}
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	var err1, err2 error
	major, err1 = strconv.Atoi(maj)
	minor, err2 = strconv.Atoi(rest[:end])
	return major, minor, err1 == nil && err2 == nil
}

// countImageVolumes feeds the image volume metrics after c's
// CreateContainer (createErr its error): the image volumes c mounts were
// requested, and each of its mounts of them failed when the runtime said
// it could not mount an image volume, else succeeded.
func countImageVolumes(pod *v1.Pod, c *v1.Container, createErr error) {
	image := map[string]bool{}
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Image != nil {
			image[pod.Spec.Volumes[i].Name] = true
		}
	}
	if len(image) == 0 {
		return
	}
	failed := createErr != nil && strings.Contains(createErr.Error(), crierrors.ErrImageVolumeMountFailed.Error())
	requested := map[string]bool{}
	for _, vm := range c.VolumeMounts {
		if !image[vm.Name] {
			continue
		}
		requested[vm.Name] = true
		if failed {
			metrics.ImageVolumeMountedErrorsTotal.Inc()
		} else {
			metrics.ImageVolumeMountedSucceedTotal.Inc()
		}
	}
	metrics.ImageVolumeRequestedTotal.Add(float64(len(requested)))
}
