package container

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// Mount is one volume mount of a container, prepared on the host by the
// volume manager.
type Mount struct {
	// Name is the volume's name in the pod spec.
	Name string
	// HostPath is what gets mounted: the volume's directory, or the bind
	// mount of its subPath.
	HostPath      string
	ContainerPath string
	ReadOnly      bool
	// Propagation is the volumeMount's mountPropagation; "" is None.
	Propagation v1.MountPropagationMode
	// Image, for an image volume, is its image reference as the pod spec
	// writes it (volumes[].image.reference), with PullPolicy its
	// pullPolicy ("" for the default): the runtime manager pulls it as the
	// container's own image and the runtime mounts it (CRI Mount.image),
	// read-only. HostPath is then empty, and ImageSubPath is the
	// volumeMount's subPath (expanded) inside the image.
	Image        string
	PullPolicy   v1.PullPolicy
	ImageSubPath string
}

// MountsFunc returns the mounts of a container's volumeMounts, in order.
// env looks up the container's resolved environment (for subPathExpr). An
// error makes the container wait with CreateContainerConfigError and the
// error as message.
type MountsFunc func(ctx context.Context, pod *v1.Pod, c *v1.Container, env func(string) (string, bool)) ([]Mount, error)

// VolumeDirFunc returns the host directory of one of the pod's volumes, by
// its name in the pod spec, once the volume manager has prepared it (for
// env vars read from a file in a volume: valueFrom.fileKeyRef).
type VolumeDirFunc func(pod *v1.Pod, name string) (string, error)
