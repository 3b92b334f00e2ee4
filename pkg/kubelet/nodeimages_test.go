package kubelet

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	critesting "k8s.io/cri-api/pkg/apis/testing"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/pod/timeline"
	"github.com/gokubelet/kubelet/pkg/runtime/gc"
)

func TestStatusImagesFromTheImageCollector(t *testing.T) {
	var none *nodeResources
	if got := none.statusImages(context.Background()); got != nil {
		t.Fatalf("before the resources exist: %v, want nil (unknown)", got)
	}
	is := critesting.NewFakeImageService()
	is.SetFakeImages([]string{"a:1", "b:1", "c:1"})
	r := &nodeResources{
		cfg:    &kubeletv1beta1.KubeletConfiguration{NodeStatusMaxImages: ptr.To[int32](2)},
		images: &gc.ImageGC{Images: is, Runtime: critesting.NewFakeRuntimeService(), Policy: gc.ImagePolicy{MinAge: time.Hour}},
	}
	if err := r.images.DeleteUnusedImages(context.Background()); err != nil { // lists, removes nothing (MinAge)
		t.Fatal(err)
	}
	got := r.statusImages(context.Background())
	// Equal sizes: ties go by ID, descending; nodeStatusMaxImages 2.
	if fmt.Sprint(got) != "[{[c:1] 0} {[b:1] 0}]" {
		t.Fatalf("status images = %v", got)
	}
}

// TestPullMakesTheNextStatusRelist: a successful pull (heard through the
// CRI observer) makes the next status check list the images again, once;
// a failed pull or no pull lists nothing.
func TestPullMakesTheNextStatusRelist(t *testing.T) {
	ctx := context.Background()
	is := critesting.NewFakeImageService()
	is.SetFakeImages([]string{"a:1"})
	r := &nodeResources{
		cfg:    &kubeletv1beta1.KubeletConfiguration{NodeStatusMaxImages: ptr.To[int32](50)},
		images: &gc.ImageGC{Images: is, Runtime: critesting.NewFakeRuntimeService(), Policy: gc.ImagePolicy{MinAge: time.Hour}},
	}
	if err := r.images.DeleteUnusedImages(ctx); err != nil { // the collector's first listing
		t.Fatal(err)
	}
	obs := criObserver{Tracker: timeline.New(nil), pulled: r.imagePulled}
	lists := func() int {
		n := 0
		for _, c := range is.Called {
			if c == "ListImages" {
				n++
			}
		}
		return n
	}
	base := lists()
	is.SetFakeImages([]string{"a:1", "b:1"})
	obs.ImagePulled("u1", "b:1", time.Now(), time.Now(), errors.New("pull failed"))
	if got := fmt.Sprint(r.statusImages(ctx)); got != "[{[a:1] 0}]" || lists() != base {
		t.Fatalf("after a failed pull: %s, %d listings", got, lists()-base)
	}
	obs.ImagePulled("u1", "b:1", time.Now(), time.Now(), nil)
	for i := 0; i < 3; i++ {
		if got := fmt.Sprint(r.statusImages(ctx)); got != "[{[b:1] 0} {[a:1] 0}]" {
			t.Fatalf("after a pull: %s", got)
		}
	}
	if lists() != base+1 {
		t.Fatalf("one pull: %d listings, want 1", lists()-base)
	}
}
