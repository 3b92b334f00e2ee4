package kubelet

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/node/nodestatus"
	"github.com/gokubelet/kubelet/pkg/pod/timeline"
	"github.com/gokubelet/kubelet/pkg/runtime/instrumented"
)

// The node's status.images: the image collector's listing (pkg/runtime/gc),
// which it refreshes every five minutes, relisted at the next status check
// after a pull (the CRI observer below tells it), bounded by
// nodeStatusMaxImages (pkg/node/nodestatus).

// statusImages is the node's status.images, nil until the images have been
// listed once. It calls the runtime only when an image was pulled since
// the last listing.
func (r *nodeResources) statusImages(ctx context.Context) []v1.ContainerImage {
	if r == nil || r.images == nil {
		return nil
	}
	if err := r.images.Relist(ctx); err != nil {
		klog.FromContext(ctx).V(2).Info("Relisting images after a pull failed; status.images keeps the last listing", "err", err)
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

// imagePulled tells the image collector its listing is out of date.
func (r *nodeResources) imagePulled() {
	if r != nil && r.images != nil {
		r.images.ImagePulled()
	}
}

// criObserver is the runtime's CRI observer: the startup timeline's, and
// each successful pull also marks the image listing stale (no I/O on the
// pull's path).
type criObserver struct {
	*timeline.Tracker
	pulled func()
}

var _ instrumented.Observer = criObserver{}

func (o criObserver) ImagePulled(uid types.UID, image string, start, end time.Time, err error) {
	o.Tracker.ImagePulled(uid, image, start, end, err)
	if err == nil {
		o.pulled()
	}
}
