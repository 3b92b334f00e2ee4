package gc

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	critesting "k8s.io/cri-api/pkg/apis/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

func listedIDs(g *ImageGC) (string, bool) {
	imgs, ok := g.Listed()
	var ids []string
	for _, img := range imgs {
		ids = append(ids, img.Id)
	}
	sort.Strings(ids)
	return fmt.Sprint(ids), ok
}

func countCalls(calls []string, name string) int {
	n := 0
	for _, c := range calls {
		if c == name {
			n++
		}
	}
	return n
}

// TestListedImagesReuseTheCollectorsListing: the node status reads the
// images from the collector's last listing, without a CRI call of its
// own, and images the collector removes leave the listing at once.
func TestListedImagesReuseTheCollectorsListing(t *testing.T) {
	ctx := context.Background()
	is := critesting.NewFakeImageService()
	is.SetFakeImages([]string{"keep:1", "old:1"})
	rt := critesting.NewFakeRuntimeService()
	clk := clocktesting.NewFakeClock(t0)
	g := &ImageGC{Images: is, Runtime: rt, Clock: clk, Policy: ImagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80},
		Protected: func(context.Context) []string { return []string{"keep:1"} }}

	if ids, ok := listedIDs(g); ok || ids != "[]" {
		t.Fatalf("before any listing: %s %v, want nothing and not known", ids, ok)
	}
	if _, err := g.detect(ctx, clk.Now()); err != nil {
		t.Fatal(err)
	}
	lists := countCalls(is.Called, "ListImages")
	for i := 0; i < 3; i++ {
		if ids, ok := listedIDs(g); !ok || ids != "[keep:1 old:1]" {
			t.Fatalf("listed = %s %v", ids, ok)
		}
	}
	if got := countCalls(is.Called, "ListImages"); got != lists {
		t.Fatalf("Listed called the runtime: ListImages %d times, want %d", got, lists)
	}

	clk.Step(time.Hour)
	if err := g.DeleteUnusedImages(ctx); err != nil {
		t.Fatal(err)
	}
	if ids, ok := listedIDs(g); !ok || ids != "[keep:1]" {
		t.Fatalf("after removing old:1, listed = %s %v", ids, ok)
	}
}
