package gc

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Listed returns the images as the collector last listed them (at start,
// every ImagePeriod, on every reclaim, and on Relist after a pull), less
// those it removed since, and whether it has listed them yet. It does no
// I/O: the node status reads it on every check without another
// ListImages. The images are shared: callers must not modify them.
func (g *ImageGC) Listed() ([]*runtimeapi.Image, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*runtimeapi.Image(nil), g.listed...), g.haveList
}

// ImagePulled notes that the runtime has a new image, so the listing is
// out of date until the next Relist (or collection). It does no I/O and
// never blocks: it is called on the pull's path.
func (g *ImageGC) ImagePulled() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pulls++
}

func (g *ImageGC) pullCount() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.pulls
}

// setListedLocked keeps a listing started when pulls had been reported,
// unless a newer one was kept meanwhile.
func (g *ImageGC) setListedLocked(imgs []*runtimeapi.Image, pulls uint64) {
	if g.haveList && pulls < g.listedPulls {
		return
	}
	g.listed, g.haveList, g.listedPulls = imgs, true, pulls
}

// Relist lists the images again when one was pulled after the last
// listing started, and does nothing otherwise: however many pulls happen
// between two calls, it costs at most one ListImages, and a pull during
// the listing leaves it stale for the next call.
func (g *ImageGC) Relist(ctx context.Context) error {
	g.mu.Lock()
	pulls, stale := g.pulls, g.pulls != g.listedPulls || !g.haveList
	g.mu.Unlock()
	if !stale {
		return nil
	}
	imgs, err := g.Images.ListImages(ctx, nil)
	if err != nil {
		return fmt.Errorf("listing images: %w", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.setListedLocked(imgs, pulls)
	return nil
}

func (g *ImageGC) forgetListedLocked(id string) {
	kept := make([]*runtimeapi.Image, 0, len(g.listed))
	for _, img := range g.listed {
		if img.GetId() != id {
			kept = append(kept, img)
		}
	}
	g.listed = kept
}
