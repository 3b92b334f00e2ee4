package staticpod

import (
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// The manifests shipped in examples/static-pods must stay valid, and use
// only the locally built image (no registry is reachable).
func TestExamplesParse(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "examples", "static-pods")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".yaml" {
			continue
		}
		n++
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		pods, err := Parse(data, podspec.SourceFile, path, "example-node")
		if err != nil {
			t.Errorf("%s: %v", e.Name(), err)
			continue
		}
		for _, p := range pods {
			for _, c := range append(append([]v1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
				if c.Image != "gokubelet.local/testimage:1.0" || c.ImagePullPolicy != v1.PullIfNotPresent {
					t.Errorf("%s: container %s uses %s (%s), want the local test image, IfNotPresent",
						e.Name(), c.Name, c.Image, c.ImagePullPolicy)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no examples found")
	}
}
