package kuberuntime

import (
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The expected values were computed by the upstream kubelet v1.34.4's own
// HashContainer (k8s.io/kubernetes/pkg/kubelet/container) for these specs:
// the annotation this kubelet writes must be the one upstream writes and
// compares against. The algorithm is unchanged in v1.37.2 (FNV-32a over
// dump.ForHash of the JSON of {name, image}); the last case is the golden
// value of upstream's own container_hash_test.go at v1.37.2 (unchanged
// since v1.31), for its sample container's name and image.
func TestHashContainerMatchesUpstream(t *testing.T) {
	for _, tc := range []struct {
		c    v1.Container
		want string
	}{
		{v1.Container{Name: "c", Image: "gokubelet.local/testimage:1.0"}, "c1ed055b"},
		{v1.Container{Name: "app", Image: "registry.k8s.io/pause:3.10.1", Command: []string{"x"}}, "c0cd0088"},
		{v1.Container{Name: "web", Image: "nginx<&>"}, "6157f165"},
		{v1.Container{}, "edd67cc4"},
		{v1.Container{Name: "test_container", Image: "foo/image:v1", Command: []string{"/bin/testcmd"}}, "8e45cbd0"},
	} {
		if got := strconv.FormatUint(HashContainer(&tc.c), 16); got != tc.want {
			t.Errorf("HashContainer(%q, %q) = %s, upstream writes %s", tc.c.Name, tc.c.Image, got, tc.want)
		}
	}
}

// Fields other than the name and the image (which the API server may start
// defaulting after an upgrade, or which an in-place resize changes) never
// change the hash; the image does.
func TestHashContainerIgnoresDefaultedFields(t *testing.T) {
	base := v1.Container{Name: "c", Image: "img:1"}
	h := HashContainer(&base)
	changed := base
	changed.TerminationMessagePolicy = v1.TerminationMessageReadFile
	changed.ImagePullPolicy = v1.PullIfNotPresent
	changed.Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
	changed.Env = []v1.EnvVar{{Name: "A", Value: "b"}}
	if HashContainer(&changed) != h {
		t.Error("a change outside name and image changed the hash")
	}
	changed.Image = "img:2"
	if HashContainer(&changed) == h {
		t.Error("a new image kept the hash")
	}
}

// A container created by this kubelet's earlier version (64-bit hash of the
// whole spec) is adopted while its spec is the same, and replaced when the
// image changes.
func TestContainerChangedAcceptsLegacyHash(t *testing.T) {
	c := v1.Container{Name: "c", Image: "img:1", Command: []string{"sleep", "1d"}}
	if containerChanged(&c, legacyHashContainer(&c)) {
		t.Error("legacy hash of the same spec counted as changed")
	}
	if containerChanged(&c, HashContainer(&c)) {
		t.Error("current hash counted as changed")
	}
	old := legacyHashContainer(&c)
	c.Image = "img:2"
	if !containerChanged(&c, old) {
		t.Error("legacy hash of another image counted as unchanged")
	}
	if !containerChanged(&c, 0) {
		t.Error("a missing hash counted as unchanged")
	}
}

func BenchmarkHashContainer(b *testing.B) {
	c := v1.Container{Name: "app", Image: "registry.k8s.io/e2e-test-images/agnhost:2.56"}
	for i := 0; i < b.N; i++ {
		HashContainer(&c)
	}
}
