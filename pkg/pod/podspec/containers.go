package podspec

import v1 "k8s.io/api/core/v1"

// Kind says which list of the spec a container is in.
type Kind int

const (
	// App is an entry of spec.containers.
	App Kind = iota
	// Init is an entry of spec.initContainers (sidecars included).
	Init
	// Ephemeral is an entry of spec.ephemeralContainers.
	Ephemeral
)

func (k Kind) String() string {
	switch k {
	case Init:
		return "init"
	case Ephemeral:
		return "ephemeral"
	}
	return "app"
}

// FindContainer returns the container of the pod with that name (names are
// unique across all three lists) and which list it is in.
func FindContainer(pod *v1.Pod, name string) (*v1.Container, Kind, bool) {
	if c := FindIn(pod.Spec.Containers, name); c != nil {
		return c, App, true
	}
	if c := FindIn(pod.Spec.InitContainers, name); c != nil {
		return c, Init, true
	}
	for i := range pod.Spec.EphemeralContainers {
		if e := &pod.Spec.EphemeralContainers[i]; e.Name == name {
			c := v1.Container(e.EphemeralContainerCommon)
			return &c, Ephemeral, true
		}
	}
	return nil, App, false
}

// FindIn returns the container with that name in list, or nil. The result
// points into list.
func FindIn(list []v1.Container, name string) *v1.Container {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// FindStatus returns the status with that container name in list, or nil.
func FindStatus(list []v1.ContainerStatus, name string) *v1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// FindCondition returns the condition of that type in list, or nil.
func FindCondition(list []v1.PodCondition, t v1.PodConditionType) *v1.PodCondition {
	for i := range list {
		if list[i].Type == t {
			return &list[i]
		}
	}
	return nil
}
