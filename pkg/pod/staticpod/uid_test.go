package staticpod

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// The expected UIDs were computed by the upstream kubelet v1.34.4's own
// code path (its file source: decode with the API's legacy scheme, md5 of
// hash.DeepHashObject of the internal pod, "host:node1", "file:<path>") for
// the manifests in testdata/uid, as if they were in
// /etc/kubernetes/manifests on node "node1". Equal UIDs are what lets a
// node change kubelets without recreating its static pods.
func TestStaticPodUIDMatchesUpstream(t *testing.T) {
	for file, want := range map[string]string{
		"simple.yaml":           "4f7aea71e6e0f32477908191b1c6001f",
		"control-plane.yaml":    "6dd7c942056aa384e95549ded8b065de",
		"init-and-volumes.yaml": "0b062e4db329a986dbca69fd493ee314",
		"downward.yaml":         "9006f2cb252c345505725df1f1f4038d",
	} {
		data, err := os.ReadFile(filepath.Join("testdata", "uid", file))
		if err != nil {
			t.Fatal(err)
		}
		pods, err := Parse(data, podspec.SourceFile, "/etc/kubernetes/manifests/"+file, "node1")
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if got := string(pods[0].UID); got != want {
			t.Errorf("%s: UID %s, upstream gives %s", file, got, want)
		}
	}
}

// The UID depends on the content and on where it came from.
func TestStaticPodUIDDependsOnContentAndOrigin(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "uid", "simple.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	uid := func(data []byte, source, origin, node string) string {
		t.Helper()
		pods, err := Parse(data, source, origin, node)
		if err != nil {
			t.Fatal(err)
		}
		return string(pods[0].UID)
	}
	base := uid(data, podspec.SourceFile, "/m/a.yaml", "n1")
	if base != uid(data, podspec.SourceFile, "/m/a.yaml", "n1") {
		t.Error("same input, different UID")
	}
	for name, other := range map[string]string{
		"other file":    uid(data, podspec.SourceFile, "/m/b.yaml", "n1"),
		"other node":    uid(data, podspec.SourceFile, "/m/a.yaml", "n2"),
		"URL":           uid(data, podspec.SourceHTTP, "/m/a.yaml", "n1"),
		"other content": uid(bytes.Replace(data, []byte("64Mi"), []byte("65Mi"), 1), podspec.SourceFile, "/m/a.yaml", "n1"),
	} {
		if other == base {
			t.Errorf("%s: same UID", name)
		}
	}
}

// uidFor mirrors the internal pod types of upstream v1.34 through the v1
// types of k8s.io/api v0.34. When k8s.io/api changes any struct a pod is
// made of, this fingerprint changes: then check uid.go's layout tables
// against the internal types of the matching upstream version (and the
// golden UIDs above against that version's kubelet) before updating it.
func TestPodTypesFingerprint(t *testing.T) {
	const want = "ee6d1138dc7ab14f"
	if got := podTypesFingerprint(); got != want {
		t.Errorf("the v1 pod types changed (fingerprint %s, was %s): re-check uid.go against upstream's internal core types", got, want)
	}
}

func podTypesFingerprint() string {
	seen := map[reflect.Type]bool{}
	var lines []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Ptr || t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Array {
			if t.Kind() == reflect.Map {
				walk(t.Key())
			}
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		line := typeName(t) + "{"
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			line += f.Name + " " + typeName(f.Type) + ";"
			walk(f.Type)
		}
		lines = append(lines, line+"}")
	}
	walk(reflect.TypeOf(v1.Pod{}))
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:8])
}
