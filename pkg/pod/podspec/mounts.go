package podspec

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// AsksRecursiveReadOnly reports whether a volumeMount of c asks for a
// recursive read-only mount (IfPossible or Enabled): only then does the
// runtime handler's support matter.
func AsksRecursiveReadOnly(c *v1.Container) bool {
	for _, vm := range c.VolumeMounts {
		if vm.RecursiveReadOnly != nil && *vm.RecursiveReadOnly != v1.RecursiveReadOnlyDisabled {
			return true
		}
	}
	return false
}

// PodAsksRecursiveReadOnly is AsksRecursiveReadOnly for any container of
// the pod (init, app and ephemeral).
func PodAsksRecursiveReadOnly(pod *v1.Pod) bool {
	for i := range pod.Spec.InitContainers {
		if AsksRecursiveReadOnly(&pod.Spec.InitContainers[i]) {
			return true
		}
	}
	for i := range pod.Spec.Containers {
		if AsksRecursiveReadOnly(&pod.Spec.Containers[i]) {
			return true
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		c := v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		if AsksRecursiveReadOnly(&c) {
			return true
		}
	}
	return false
}

// ResolveRecursiveReadOnly decides whether a volumeMount becomes a
// recursive read-only CRI mount, given whether the pod's runtime handler
// supports those (CRI Status: runtime_handlers[].features
// .recursive_read_only_mounts). Unset and Disabled: no. IfPossible: when
// supported, else a plain read-only mount. Enabled: yes, or an error when
// unsupported. IfPossible and Enabled need readOnly: true and no
// mountPropagation other than None, else they are an error. The errors are
// upstream's words. The CRI runtime and the status computation (a
// container status's volumeMounts[].recursiveReadOnly) both use it.
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

// VolumeMountStatuses are a container's volumeMounts as its status reports
// them (upstream's): name, mountPath and readOnly of each, and for a
// read-only one whether it is recursive (Enabled) or not (Disabled), as
// ResolveRecursiveReadOnly decides with supported (a mount it refuses is
// reported Disabled; the container does not start anyway).
func VolumeMountStatuses(c *v1.Container, supported bool) []v1.VolumeMountStatus {
	if len(c.VolumeMounts) == 0 {
		return nil
	}
	out := make([]v1.VolumeMountStatus, 0, len(c.VolumeMounts))
	for _, vm := range c.VolumeMounts {
		st := v1.VolumeMountStatus{Name: vm.Name, MountPath: vm.MountPath, ReadOnly: vm.ReadOnly}
		if vm.ReadOnly {
			mode := v1.RecursiveReadOnlyDisabled
			if rro, err := ResolveRecursiveReadOnly(vm, supported); err == nil && rro {
				mode = v1.RecursiveReadOnlyEnabled
			}
			st.RecursiveReadOnly = &mode
		}
		out = append(out, st)
	}
	return out
}
