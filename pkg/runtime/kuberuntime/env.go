package kuberuntime

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/pod/envvars"
)

// containerEnv resolves container c's environment (see envvars.Resolve):
// ConfigMaps and Secrets are read only when the container refers to some,
// the service variables come from the kubelet's Service cache. override,
// when non-nil, is an environment another part of the kubelet resolved
// (ContainerOptions.Env) and is used as it is.
func (m *Manager) containerEnv(ctx context.Context, pod *v1.Pod, c *v1.Container, podIPs []string, override []v1.EnvVar) ([]v1.EnvVar, error) {
	if override != nil {
		return override, nil
	}
	deps := m.opts.PodSpec
	if pod.Spec.HostNetwork {
		// A host-network pod's IPs are the node's, as its status says
		// (podstatus.PodIPs); its sandbox reports none.
		podIPs = deps.HostIPs
	}
	in := envvars.Inputs{PodIPs: podIPs, HostIPs: deps.HostIPs}
	if envvars.NeedsObjects(c) {
		src, err := envvars.Fetch(ctx, deps.Objects, pod, c)
		if err != nil {
			return nil, err
		}
		in.Sources = src
	}
	if deps.ServiceEnv != nil {
		svc, err := deps.ServiceEnv(pod)
		if err != nil {
			return nil, err
		}
		in.ServiceEnv = svc
	}
	if deps.NodeAllocatable != nil && needsAllocatable(c) {
		in.NodeAllocatable = deps.NodeAllocatable()
	}
	if m.opts.VolumeDir != nil {
		in.FileKey = func(ref *v1.FileKeySelector) (string, bool, error) {
			return m.fileKey(pod, ref)
		}
	}
	return envvars.Resolve(pod, c, in)
}

// fileKey reads a fileKeyRef from the pod's volume, which must be an
// emptyDir (the API server's validation says so; a static pod's manifest
// reaches the kubelet unvalidated).
func (m *Manager) fileKey(pod *v1.Pod, ref *v1.FileKeySelector) (string, bool, error) {
	emptyDir := false
	for _, v := range pod.Spec.Volumes {
		if v.Name == ref.VolumeName {
			emptyDir = v.EmptyDir != nil
			break
		}
	}
	if !emptyDir {
		return "", false, fmt.Errorf("fileKeyRef volume %q is not an emptyDir volume of the pod", ref.VolumeName)
	}
	dir, err := m.opts.VolumeDir(pod, ref.VolumeName)
	if err != nil {
		return "", false, err
	}
	return envvars.FileKeyValue(dir, ref)
}

func needsAllocatable(c *v1.Container) bool {
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil {
			return true
		}
	}
	return false
}
