package upstream

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
)

// The Go constant and the hack/ scripts' knob name the same release.
func TestVersionIsTheKnob(t *testing.T) {
	b, err := os.ReadFile("../../hack/versions.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^KUBE_VERSION=\$\{KUBE_VERSION:-(v[0-9.]+)\}$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("no KUBE_VERSION default in hack/versions.sh")
	}
	if string(m[1]) != Version {
		t.Errorf("hack/versions.sh KUBE_VERSION=%s, upstream.Version=%s: move both (docs/upgrading-kubernetes.md)", m[1], Version)
	}
}

func TestMinorIsVersions(t *testing.T) {
	v, err := version.ParseSemantic(Version)
	if err != nil {
		t.Fatalf("Version %q: %v", Version, err)
	}
	if want := strconv.FormatUint(uint64(v.Major()), 10) + "." + strconv.FormatUint(uint64(v.Minor()), 10); Minor != want {
		t.Errorf("Minor = %q, Version %s has %q", Minor, Version, want)
	}
}
