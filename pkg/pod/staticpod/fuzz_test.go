package staticpod

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// FuzzParse feeds arbitrary manifests to the static pod decoder: it never
// panics, and what it accepts is a usable static pod of this node: a name
// with the node's suffix, the node's name, a UID that is one clean path
// element (it names host directories), and the config annotations.
func FuzzParse(f *testing.F) {
	f.Add([]byte(minimal), false)
	f.Add([]byte(strings.Replace(minimal, "name: web", "name: web\n  uid: ../../victim", 1)), false)
	f.Add([]byte("apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: a}\n  spec: {containers: [{name: c, image: x}]}\n"), true)
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"c","image":"x","resources":{"limits":{"cpu":"1e18"}}}]}}`), false)
	for _, dir := range []string{"testdata/uid", "../../../examples/static-pods"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b, false)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, http bool) {
		source, origin := podspec.SourceFile, "/etc/kubernetes/manifests/p.yaml"
		if http {
			source, origin = podspec.SourceHTTP, "https://user:pw@example.com/pods?x=1"
		}
		pods, err := Parse(data, source, origin, "Node-1")
		if err != nil {
			if pods != nil {
				t.Fatalf("pods returned with the error %v", err)
			}
			return
		}
		for _, p := range pods {
			if err := podspec.UIDPathElement(string(p.UID)); err != nil {
				t.Fatalf("accepted UID %q: %v", p.UID, err)
			}
			if !strings.HasSuffix(p.Name, "-node-1") || p.Spec.NodeName != "Node-1" {
				t.Fatalf("name %q node %q", p.Name, p.Spec.NodeName)
			}
			if p.Annotations[podspec.ConfigSourceAnnotation] != source || p.Annotations[podspec.ConfigHashAnnotation] != string(p.UID) {
				t.Fatalf("annotations %v", p.Annotations)
			}
			if len(p.Spec.Containers) == 0 {
				t.Fatal("a pod without containers was accepted")
			}
		}
	})
}
