package staticpod

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

var dumpDir = flag.String("dump", "", "write this kubelet's static-pod hash input of each testdata/uid manifest to DIR/<file>.dump")

// The expected UIDs (testdata/uid/upstream-uids.txt) were computed by the
// upstream kubelet's own code path (its file source: decode with the API's
// legacy scheme, FNV-128a of hash.DeepHashObject of the internal pod,
// "host:node1", "file:<path>"; hack/upstream-lists.sh) for the manifests in
// testdata/uid, as if they were in /etc/kubernetes/manifests on node
// "node1". Equal UIDs are what lets a node change kubelets without
// recreating its static pods.
func TestStaticPodUIDMatchesUpstream(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("testdata", "uid", "upstream-uids.txt"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(golden), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || strings.HasPrefix(line, "#") {
			continue
		}
		n++
		file, want := f[0], f[1]
		data, err := os.ReadFile(filepath.Join("testdata", "uid", file))
		if err != nil {
			t.Fatal(err)
		}
		if *dumpDir != "" {
			pod, ns, err := decodeForUID(t, data)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			writeInternalPod(&b, pod, ns)
			if err := os.WriteFile(filepath.Join(*dumpDir, file+".dump"), b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
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
	if n < 4 {
		t.Errorf("testdata/uid/upstream-uids.txt names %d manifests, want every one of testdata/uid", n)
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

// uidFor dumps the v1 pod types of k8s.io/api v0.37 as upstream v1.37's
// internal ones, which have their layout. When k8s.io/api changes any
// struct a pod is made of, this fingerprint changes: then run
// hack/upstream-lists.sh, which checks that upstream's internal core.Pod
// still has v1.Pod's layout and regenerates the golden UIDs above, before
// updating it.
func TestPodTypesFingerprint(t *testing.T) {
	const want = "5bf6b222d1fac000"
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

// decodeForUID gives the pod the UID is computed from, as Parse does.
func decodeForUID(t *testing.T, data []byte) (*v1.Pod, string, error) {
	t.Helper()
	pods, err := decode(data)
	if err != nil {
		return nil, "", err
	}
	ns := pods[0].Namespace
	applyDefaults(pods[0])
	return pods[0], ns, nil
}
