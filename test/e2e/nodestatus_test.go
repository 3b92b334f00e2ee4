package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gokubelet/kubelet/test/framework"
)

// TestNodeReportsImagesAndHugePages: the Node lists the runtime's images
// (largest first, at most 50, at most five names each, sizes known) and
// one hugepages-<size> resource per page size of this machine's kernel,
// worth its pool, in capacity and in allocatable.
func TestNodeReportsImagesAndHugePages(t *testing.T) {
	name := node(t)
	ctx := context.Background()
	var n *v1.Node
	framework.Eventually(t, "status.images", func() (bool, string) {
		got, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		n = got
		return len(got.Status.Images) > 0, fmt.Sprint(len(got.Status.Images), " images")
	})
	imgs := n.Status.Images
	if len(imgs) > 50 {
		t.Errorf("%d images reported, want at most 50", len(imgs))
	}
	// An image the runtime knows by no tag or digest (a dangling image,
	// left when its tag moved to a newer build) is listed without names,
	// as upstream lists it; the test image must be there by its name.
	found := false
	for i, img := range imgs {
		if len(img.Names) > 5 || img.SizeBytes <= 0 {
			t.Errorf("image %d: %+v", i, img)
		}
		for _, n := range img.Names {
			found = found || n == testImage
		}
		if i > 0 && imgs[i-1].SizeBytes < img.SizeBytes {
			t.Errorf("images not largest first: %d then %d", imgs[i-1].SizeBytes, img.SizeBytes)
		}
	}
	if !found {
		t.Errorf("the test image %s is not among the node's images: %+v", testImage, imgs)
	}

	dirs, err := os.ReadDir("/sys/kernel/mm/hugepages")
	if err != nil {
		t.Logf("no huge pages on this kernel (%v): checking none is reported", err)
	}
	want := map[v1.ResourceName]int64{}
	for _, d := range dirs {
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(d.Name(), "hugepages-"), "kB"), 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", d.Name(), err)
		}
		b, err := os.ReadFile(filepath.Join("/sys/kernel/mm/hugepages", d.Name(), "nr_hugepages"))
		if err != nil {
			t.Fatal(err)
		}
		pages, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		size := kb * 1024
		unit := fmt.Sprintf("%dKi", kb)
		switch {
		case size%(1<<30) == 0:
			unit = fmt.Sprintf("%dGi", size>>30)
		case size%(1<<20) == 0:
			unit = fmt.Sprintf("%dMi", size>>20)
		}
		want[v1.ResourceName("hugepages-"+unit)] = pages * size
	}
	for _, list := range []struct {
		what string
		rl   v1.ResourceList
	}{{"capacity", n.Status.Capacity}, {"allocatable", n.Status.Allocatable}} {
		got := map[v1.ResourceName]int64{}
		for r, q := range list.rl {
			if strings.HasPrefix(string(r), v1.ResourceHugePagesPrefix) {
				got[r] = q.Value()
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s huge pages = %v, want %v (from /sys/kernel/mm/hugepages)", list.what, got, want)
		}
	}
}
