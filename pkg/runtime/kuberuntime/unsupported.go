package kuberuntime

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// unsupportedFields names the fields of pod that ask for something this
// kubelet cannot do, so the pod waits with a reason and an event naming
// them (as a sandboxConfigError) instead of running without it. Fields
// handled elsewhere with their own reason (volume types, hostUsers,
// AppArmor, supplementalGroupsPolicy) are not repeated here.
func unsupportedFields(pod *v1.Pod) error {
	var out []string
	if len(pod.Spec.ResourceClaims) > 0 {
		out = append(out, "spec.resourceClaims (dynamic resource allocation)")
	}
	if pod.Spec.HostnameOverride != nil {
		out = append(out, "spec.hostnameOverride")
	}
	check := func(path string, c *v1.Container) {
		if len(c.Resources.Claims) > 0 {
			out = append(out, path+".resources.claims (dynamic resource allocation)")
		}
		if len(c.RestartPolicyRules) > 0 {
			out = append(out, path+".restartPolicyRules")
		}
		if c.Lifecycle != nil && c.Lifecycle.StopSignal != nil {
			out = append(out, path+".lifecycle.stopSignal")
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
