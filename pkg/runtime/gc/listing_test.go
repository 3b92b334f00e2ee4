package gc

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critesting "k8s.io/cri-api/pkg/apis/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/metrics/metricstest"
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

	reg := metrics.NewKubeletRegistry(metrics.KubeletOptions{})
	space := map[string]string{"reason": "space"}
	before := metricstest.ScrapeRegistry(t, reg).Sum("kubelet_image_garbage_collected_total", space)
	clk.Step(time.Hour)
	if err := g.DeleteUnusedImages(ctx); err != nil {
		t.Fatal(err)
	}
	if ids, ok := listedIDs(g); !ok || ids != "[keep:1]" {
		t.Fatalf("after removing old:1, listed = %s %v", ids, ok)
	}
	// A removal under disk pressure counts as upstream's "space".
	if d := metricstest.ScrapeRegistry(t, reg).Sum("kubelet_image_garbage_collected_total", space) - before; d != 1 {
		t.Errorf("kubelet_image_garbage_collected_total{reason=space} grew by %v, want 1", d)
	}
}

// pullDuringList reports a pull while ListImages runs (a pull that ends
// while the listing is under way), once.
type pullDuringList struct {
	*critesting.FakeImageService
	g    *ImageGC
	once bool
}

func (p *pullDuringList) ListImages(ctx context.Context, f *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	imgs, err := p.FakeImageService.ListImages(ctx, f)
	if p.once {
		p.once = false
		p.g.ImagePulled()
	}
	return imgs, err
}

// TestRelistOnlyAfterPulls: the node status relists the images only when
// a pull was reported since the last listing started, once however many
// pulls there were; a pull that ends during a listing is not lost.
func TestRelistOnlyAfterPulls(t *testing.T) {
	ctx := context.Background()
	is := critesting.NewFakeImageService()
	is.SetFakeImages([]string{"a:1"})
	g := &ImageGC{Runtime: critesting.NewFakeRuntimeService(), Clock: clocktesting.NewFakeClock(t0)}
	wrapped := &pullDuringList{FakeImageService: is, g: g}
	g.Images = wrapped
	if _, err := g.detect(ctx, t0); err != nil {
		t.Fatal(err)
	}
	lists := func() int { return countCalls(is.Called, "ListImages") }
	base := lists()
	for i := 0; i < 3; i++ {
		if err := g.Relist(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if lists() != base {
		t.Fatalf("no pull, yet %d listings", lists()-base)
	}

	is.SetFakeImages([]string{"a:1", "b:1"})
	g.ImagePulled()
	g.ImagePulled()
	if err := g.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	if lists() != base+1 {
		t.Fatalf("two pulls: %d listings, want 1", lists()-base)
	}
	if ids, _ := listedIDs(g); ids != "[a:1 b:1]" {
		t.Fatalf("after the relist: %s", ids)
	}

	// A pull that ends while the listing runs may not be in it: the
	// listing stays stale and the next call lists again.
	g.ImagePulled()
	wrapped.once = true
	is.SetFakeImages([]string{"a:1", "b:1", "c:1"})
	if err := g.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	if lists() != base+3 {
		t.Fatalf("a pull during a listing: %d listings in all, want 3", lists()-base)
	}
}

// TestAfterCollectGetsTheImagesLeft: after a collection the hook (the pull
// records' prune) gets the images still on the node, those removed left
// out, and the time their listing began, also when the collection stops
// early.
func TestAfterCollectGetsTheImagesLeft(t *testing.T) {
	ctx := context.Background()
	is := critesting.NewFakeImageService()
	is.SetFakeImages([]string{"keep:1", "old:1"})
	clk := clocktesting.NewFakeClock(t0)
	var calls []string
	g := &ImageGC{Images: is, Runtime: critesting.NewFakeRuntimeService(), Clock: clk,
		Policy:    ImagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80},
		Protected: func(context.Context) []string { return []string{"keep:1"} },
		AfterCollect: func(_ context.Context, present []string, listedAt time.Time) {
			calls = append(calls, fmt.Sprint(present, " ", listedAt.Sub(t0)))
		}}
	clk.Step(time.Hour)
	if err := g.DeleteUnusedImages(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Minute)
	// The fake runtime reports no image filesystem: the collection fails
	// after its listing, and the hook still runs.
	if err := g.GarbageCollect(ctx); err == nil {
		t.Fatal("expected the image filesystem error")
	}
	want := []string{"[keep:1] 1h0m0s", "[keep:1] 1h1m0s"}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Errorf("AfterCollect calls %q, want %q", calls, want)
	}
	is.InjectError("ListImages", fmt.Errorf("runtime down"))
	if err := g.GarbageCollect(ctx); err == nil || len(calls) != 2 {
		t.Errorf("a collection without a listing called the hook: %v %q", err, calls)
	}
}

// TestImageVolumesAreInUse: the images pods mount as image volumes stay,
// matched by the reference as the pod writes it ("busybox" is the
// runtime's docker.io/library/busybox:latest); the others go.
func TestImageVolumesAreInUse(t *testing.T) {
	ctx := context.Background()
	is := critesting.NewFakeImageService()
	is.SetFakeImages([]string{"docker.io/library/busybox:latest", "example.com/tools:1", "old:1"})
	clk := clocktesting.NewFakeClock(t0)
	g := &ImageGC{Images: is, Runtime: critesting.NewFakeRuntimeService(), Clock: clk,
		Policy: ImagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80},
		InUse:  func(context.Context) []string { return []string{"busybox", "example.com/tools:1", "Not A Reference"} }}
	if _, err := g.detect(ctx, clk.Now()); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Hour)
	if err := g.DeleteUnusedImages(ctx); err != nil {
		t.Fatal(err)
	}
	if ids, ok := listedIDs(g); !ok || ids != "[docker.io/library/busybox:latest example.com/tools:1]" {
		t.Fatalf("after collection, listed = %s %v", ids, ok)
	}
}
