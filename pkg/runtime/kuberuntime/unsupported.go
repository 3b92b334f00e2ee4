package kuberuntime

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// The fields unsupportedFields refuses, as its message names them (a
// container's are prefixed with the container's path, e.g.
// spec.containers[0]). pkg/kubelet/podspec_fields_test.go classifies every
// pod spec field; a field refused here is classified by these names.
const (
	RefusedPodResourceClaims       = "spec.resourceClaims (dynamic resource allocation)"
	RefusedContainerResourceClaims = ".resources.claims (dynamic resource allocation)"
	RefusedRestartAllContainers    = ".action RestartAllContainers (RestartAllContainersOnContainerExits)"
	RefusedStopSignal              = ".lifecycle.stopSignal"
	RefusedBindMountOptions        = ".bindMountOptions (alpha, VolumeBindMountOptions)"
)

// Refusals of hostUsers: false (spec.hostUsers), by the runtime handler's
// support; the first is upstream's message.
const (
	RefusedUserNamespacesRuntime        = "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
	RefusedUserNamespacesHandler        = "can't set `spec.hostUsers: false`, RuntimeClass handler %q does not support user namespaces"
	RefusedUserNamespacesNotImplemented = "can't set `spec.hostUsers: false`, this kubelet does not support user namespaces yet (the runtime handler does)"
)

// unsupportedFields names the fields of pod that ask for something this
// kubelet cannot do (resource claims: when it has no DRA manager), so the pod waits with a reason and an event naming
// them (as a sandboxConfigError) instead of running without it. Fields
// handled elsewhere with their own reason (volume types, hostUsers,
// AppArmor, supplementalGroupsPolicy) are not repeated here.
func unsupportedFields(pod *v1.Pod, dra bool) error {
	var out []string
	if len(pod.Spec.ResourceClaims) > 0 && !dra {
		out = append(out, RefusedPodResourceClaims)
	}
	check := func(path string, c *v1.Container) {
		if len(c.Resources.Claims) > 0 && !dra {
			out = append(out, path+RefusedContainerResourceClaims)
		}
		for j, r := range c.RestartPolicyRules {
			if r.Action == v1.ContainerRestartRuleActionRestartAllContainers {
				out = append(out, fmt.Sprintf("%s.restartPolicyRules[%d]%s", path, j, RefusedRestartAllContainers))
			}
		}
		if c.Lifecycle != nil && c.Lifecycle.StopSignal != nil {
			out = append(out, path+RefusedStopSignal)
		}
		for j := range c.VolumeMounts {
			if len(c.VolumeMounts[j].BindMountOptions) > 0 {
				out = append(out, fmt.Sprintf("%s.volumeMounts[%d]%s", path, j, RefusedBindMountOptions))
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		check(fmt.Sprintf("spec.initContainers[%d]", i), &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		check(fmt.Sprintf("spec.containers[%d]", i), &pod.Spec.Containers[i])
	}
	if len(out) == 0 {
		return nil
	}
	return fmt.Errorf("this kubelet does not support %s", strings.Join(out, ", "))
}
