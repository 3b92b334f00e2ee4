package kubelet

import (
	"context"
	"fmt"
	"testing"
	"time"

	critesting "k8s.io/cri-api/pkg/apis/testing"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/runtime/gc"
)

func TestStatusImagesFromTheImageCollector(t *testing.T) {
	var none *nodeResources
	if got := none.statusImages(); got != nil {
		t.Fatalf("before the resources exist: %v, want nil (unknown)", got)
	}
	is := critesting.NewFakeImageService()
	is.SetFakeImages([]string{"a:1", "b:1", "c:1"})
	r := &nodeResources{
		cfg:    &kubeletv1beta1.KubeletConfiguration{NodeStatusMaxImages: ptr.To[int32](2)},
		images: &gc.ImageGC{Images: is, Runtime: critesting.NewFakeRuntimeService(), Policy: gc.ImagePolicy{MinAge: time.Hour}},
	}
	if got := r.statusImages(); got != nil {
		t.Fatalf("before the first listing: %v, want nil (unknown)", got)
	}
	if err := r.images.DeleteUnusedImages(context.Background()); err != nil { // lists, removes nothing (MinAge)
		t.Fatal(err)
	}
	got := r.statusImages()
	// Equal sizes: ties go by ID, descending; nodeStatusMaxImages 2.
	if fmt.Sprint(got) != "[{[c:1] 0} {[b:1] 0}]" {
		t.Fatalf("status images = %v", got)
	}
}
