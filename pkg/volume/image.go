package volume

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// imageVolume: an OCI image or artifact (volumes[].image) mounted
// read-only. Nothing is prepared on the host: the runtime manager pulls
// the reference by the volume's pull policy when a container that mounts
// it starts, and the runtime mounts the image's contents (CRI
// Mount.image). ContainerMounts hands the reference over.
type imageVolume struct {
	src *v1.ImageVolumeSource
}

func (i *imageVolume) kind() string      { return "image" }
func (i *imageVolume) describe() string  { return fmt.Sprintf("image %q", i.src.Reference) }
func (i *imageVolume) pluginDir() string { return "" }
func (i *imageVolume) readOnly() bool    { return true }
func (i *imageVolume) refreshed() bool   { return false }

func (i *imageVolume) setUp(ctx context.Context, s *setup) (string, error) {
	if i.src.Reference == "" {
		return "", fmt.Errorf("the image volume has no reference")
	}
	return "", nil
}
