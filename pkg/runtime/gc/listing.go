package gc

import (
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Listed returns the images as the collector last listed them (at start,
// every ImagePeriod and on every reclaim), less those it removed since,
// and whether it has listed them yet. It does no I/O: the node status
// reads it on every check without another ListImages. The images are
// shared: callers must not modify them.
func (g *ImageGC) Listed() ([]*runtimeapi.Image, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*runtimeapi.Image(nil), g.listed...), g.haveList
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
