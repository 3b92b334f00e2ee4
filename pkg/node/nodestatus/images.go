package nodestatus

import (
	"sort"

	v1 "k8s.io/api/core/v1"
)

// MaxNamesPerImage bounds the names reported for one image in
// status.images (upstream's limit: repo digests first, then tags).
const MaxNamesPerImage = 5

// NoImageLimit as nodeStatusMaxImages reports every image.
const NoImageLimit = -1

// Image is one image on the node as the runtime lists it.
type Image struct {
	ID          string
	RepoTags    []string
	RepoDigests []string
	Size        int64
}

// ContainerImages is status.images for the images on the node: the
// largest first (ties by ID, descending, so the order never depends on
// the runtime's), at most maxImages of them (nodeStatusMaxImages; -1 means
// all), each with at most MaxNamesPerImage names, digests before tags. The
// result is never nil, so a node with no image (or maxImages 0) clears
// what was reported; see Facts.Images.
func ContainerImages(images []Image, maxImages int32) []v1.ContainerImage {
	sorted := append([]Image(nil), images...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Size != sorted[j].Size {
			return sorted[i].Size > sorted[j].Size
		}
		return sorted[i].ID > sorted[j].ID
	})
	if maxImages > NoImageLimit && int(maxImages) < len(sorted) {
		sorted = sorted[:maxImages]
	}
	out := make([]v1.ContainerImage, 0, len(sorted))
	for _, img := range sorted {
		names := append(append([]string{}, img.RepoDigests...), img.RepoTags...)
		if len(names) > MaxNamesPerImage {
			names = names[:MaxNamesPerImage]
		}
		out = append(out, v1.ContainerImage{Names: names, SizeBytes: img.Size})
	}
	return out
}

// setImages sets status.images from the facts' images, unless they are
// not known (nil).
func setImages(node *v1.Node, images []v1.ContainerImage) {
	if images == nil {
		return
	}
	if len(images) == 0 {
		node.Status.Images = nil
		return
	}
	node.Status.Images = images
}
