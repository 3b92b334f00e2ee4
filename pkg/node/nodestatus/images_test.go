package nodestatus

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gokubelet/kubelet/pkg/node/machineinfo"
)

func TestContainerImages(t *testing.T) {
	small := Image{ID: "sha256:a", RepoTags: []string{"a:1"}, RepoDigests: []string{"a@sha256:1"}, Size: 10}
	big := Image{ID: "sha256:b", RepoTags: []string{"b:1", "b:2"}, Size: 30}
	tieLow := Image{ID: "sha256:c", RepoTags: []string{"c:1"}, Size: 20}
	tieHigh := Image{ID: "sha256:d", RepoTags: []string{"d:1"}, Size: 20}
	many := Image{ID: "sha256:e", Size: 5,
		RepoDigests: []string{"e@sha256:1", "e@sha256:2"},
		RepoTags:    []string{"e:1", "e:2", "e:3", "e:4"}}
	nameless := Image{ID: "sha256:f", Size: 1}
	all := []Image{small, big, tieLow, tieHigh}
	for _, tc := range []struct {
		name   string
		images []Image
		max    int32
		want   []v1.ContainerImage
	}{
		{"no images", nil, 50, []v1.ContainerImage{}},
		{"largest first, ties by ID descending", all, 50, []v1.ContainerImage{
			{Names: []string{"b:1", "b:2"}, SizeBytes: 30},
			{Names: []string{"d:1"}, SizeBytes: 20},
			{Names: []string{"c:1"}, SizeBytes: 20},
			{Names: []string{"a@sha256:1", "a:1"}, SizeBytes: 10},
		}},
		{"bounded: the largest are kept", all, 2, []v1.ContainerImage{
			{Names: []string{"b:1", "b:2"}, SizeBytes: 30},
			{Names: []string{"d:1"}, SizeBytes: 20},
		}},
		{"-1 means no limit", all, -1, []v1.ContainerImage{
			{Names: []string{"b:1", "b:2"}, SizeBytes: 30},
			{Names: []string{"d:1"}, SizeBytes: 20},
			{Names: []string{"c:1"}, SizeBytes: 20},
			{Names: []string{"a@sha256:1", "a:1"}, SizeBytes: 10},
		}},
		{"0 reports none", all, 0, []v1.ContainerImage{}},
		{"limit above the count", []Image{small}, 50, []v1.ContainerImage{{Names: []string{"a@sha256:1", "a:1"}, SizeBytes: 10}}},
		{"names: digests first, at most five", []Image{many}, 50, []v1.ContainerImage{
			{Names: []string{"e@sha256:1", "e@sha256:2", "e:1", "e:2", "e:3"}, SizeBytes: 5},
		}},
		{"an image without names is still reported", []Image{nameless}, 50, []v1.ContainerImage{{Names: []string{}, SizeBytes: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ContainerImages(tc.images, tc.max)
			if got == nil || !equality.Semantic.DeepEqual(got, tc.want) {
				t.Fatalf("ContainerImages = %#v, want %#v", got, tc.want)
			}
		})
	}
}

// TestContainerImagesDoesNotTouchItsInput: the runtime's listing is shared
// with the image collector; sorting or cutting names must not change it.
func TestContainerImagesDoesNotTouchItsInput(t *testing.T) {
	in := []Image{
		{ID: "a", Size: 1, RepoTags: []string{"1", "2", "3", "4", "5", "6"}},
		{ID: "b", Size: 2},
	}
	out := ContainerImages(in, 50)
	if in[0].ID != "a" || len(in[0].RepoTags) != 6 {
		t.Fatalf("input changed: %+v", in)
	}
	out[0].Names = append(out[0].Names, "x")
	if len(in[1].RepoTags) != 0 {
		t.Fatalf("output aliases input: %+v", in)
	}
}

// TestImageOrderFromTheRuntimeDoesNotChangeStatus: the runtime lists images
// in any order; the status must be the same, or every check would PATCH.
func TestImageOrderFromTheRuntimeDoesNotChangeStatus(t *testing.T) {
	imgs := []Image{
		{ID: "a", Size: 5, RepoTags: []string{"a:1"}},
		{ID: "b", Size: 5, RepoTags: []string{"b:1"}},
		{ID: "c", Size: 9, RepoTags: []string{"c:1"}},
	}
	reversed := []Image{imgs[2], imgs[1], imgs[0]}
	var a, b v1.Node
	cfg := &Config{NodeName: "n"}
	now := metav1.Now()
	SetStatus(&a, cfg, Facts{Images: ContainerImages(imgs, 50)}, now)
	SetStatus(&b, cfg, Facts{Images: ContainerImages(reversed, 50)}, now)
	if StatusChanged(&a.Status, &b.Status) {
		t.Fatalf("order of the listing changed the status:\n%v\n%v", a.Status.Images, b.Status.Images)
	}
}

func TestSetStatusImages(t *testing.T) {
	reported := []v1.ContainerImage{{Names: []string{"old:1"}, SizeBytes: 1}}
	for _, tc := range []struct {
		name  string
		facts []v1.ContainerImage
		want  []v1.ContainerImage
	}{
		{"unknown keeps what is reported", nil, reported},
		{"known replaces", []v1.ContainerImage{{Names: []string{"new:1"}, SizeBytes: 2}}, []v1.ContainerImage{{Names: []string{"new:1"}, SizeBytes: 2}}},
		{"none clears", []v1.ContainerImage{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &v1.Node{Status: v1.NodeStatus{Images: reported}}
			SetStatus(n, &Config{NodeName: "n"}, Facts{Images: tc.facts}, metav1.Now())
			if !equality.Semantic.DeepEqual(n.Status.Images, tc.want) || (tc.want == nil) != (n.Status.Images == nil) {
				t.Fatalf("images = %#v, want %#v", n.Status.Images, tc.want)
			}
		})
	}
}

// TestImagesChangeCoalescedWithStatusChecks: images are written with the
// status check that sees them changed, once; an unchanged listing (in any
// order) writes nothing until the report is due, however often checked.
func TestImagesChangeCoalescedWithStatusChecks(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	client := fake.NewClientset()
	cfg := Config{NodeName: "node-a", Hostname: "node-a", MaxPods: 110}
	var mu sync.Mutex
	listing := []Image{{ID: "a", Size: 3, RepoTags: []string{"a:1"}}, {ID: "b", Size: 2, RepoTags: []string{"b:1"}}}
	c, err := NewController(Options{
		Client: client, Config: cfg, Clock: clk,
		UpdateFrequency: 10 * time.Second, ReportFrequency: 5 * time.Minute,
		Facts: FactsFunc(func(context.Context) (Facts, error) {
			f := HostFacts(&cfg, machineinfo.Info{NumCPU: 2, MemoryCapacityBytes: 4 * gib, OperatingSystem: "linux", Architecture: "amd64"})
			mu.Lock()
			defer mu.Unlock()
			f.Images = ContainerImages(listing, 50)
			return f, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	patches := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "patch" && a.GetSubresource() == "status" {
				n++
			}
		}
		return n
	}
	if err := c.register(ctx); err != nil {
		t.Fatal(err)
	}
	n, err := client.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(n.Status.Images); got != "[{[a:1] 3} {[b:1] 2}]" {
		t.Fatalf("registered images = %s", got)
	}
	for i := 0; i < 5; i++ { // same images, listed in another order each time
		mu.Lock()
		listing[0], listing[1] = listing[1], listing[0]
		mu.Unlock()
		clk.Step(10 * time.Second)
		if err := c.syncStatus(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := patches(); got != 0 {
		t.Fatalf("unchanged images written %d times", got)
	}
	mu.Lock()
	listing = append(listing, Image{ID: "c", Size: 9, RepoTags: []string{"c:1"}})
	mu.Unlock()
	for i := 0; i < 3; i++ {
		clk.Step(10 * time.Second)
		if err := c.syncStatus(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := patches(); got != 1 {
		t.Fatalf("one change of images: want 1 patch, got %d", got)
	}
	n, err = client.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(n.Status.Images); got != "[{[c:1] 9} {[a:1] 3} {[b:1] 2}]" {
		t.Fatalf("images after the change = %s", got)
	}
}
