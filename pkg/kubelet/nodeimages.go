package kubelet

import (
	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/node/nodestatus"
)

// statusImages is the node's status.images from the image collector's
// last listing (no CRI call of its own), bounded by nodeStatusMaxImages;
// nil until the collector has listed the images once.
func (r *nodeResources) statusImages() []v1.ContainerImage {
	if r == nil || r.images == nil {
		return nil
	}
	listed, ok := r.images.Listed()
	if !ok {
		return nil
	}
	imgs := make([]nodestatus.Image, 0, len(listed))
	for _, img := range listed {
		imgs = append(imgs, nodestatus.Image{ID: img.GetId(), RepoTags: img.GetRepoTags(), RepoDigests: img.GetRepoDigests(), Size: int64(img.GetSize())})
	}
	maxImages := int32(50)
	if r.cfg != nil && r.cfg.NodeStatusMaxImages != nil {
		maxImages = *r.cfg.NodeStatusMaxImages
	}
	return nodestatus.ContainerImages(imgs, maxImages)
}
