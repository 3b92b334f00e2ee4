package kubelet

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
)

func TestVersionIsSemverWithUpstreamPrecedence(t *testing.T) {
	for _, tc := range []struct{ project, want string }{
		{"0.1.0-dev", "v1.37.2+gokubelet.0.1.0-dev"},
		{"v0.2.0", "v1.37.2+gokubelet.0.2.0"},
		{"0.3.0+g1a2b3c", "v1.37.2+gokubelet.0.3.0-g1a2b3c"},
		{"", "v1.37.2+gokubelet"},
		{"1..2/x", "v1.37.2+gokubelet.1.2-x"},
	} {
		old := ProjectVersion
		ProjectVersion = tc.project
		got := Version()
		ProjectVersion = old
		if got != tc.want {
			t.Errorf("project %q: Version() = %q, want %q", tc.project, got, tc.want)
			continue
		}
		// What kubeadm's skew checks and the e2e suite do with it.
		v, err := version.ParseSemantic(got)
		if err != nil {
			t.Errorf("%q does not parse as semver: %v", got, err)
			continue
		}
		if up := version.MustParseSemantic(UpstreamVersion); v.Major() != up.Major() || v.Minor() != up.Minor() || v.Patch() != up.Patch() || v.PreRelease() != "" {
			t.Errorf("%q parses as %v, want the upstream %s", got, v, UpstreamVersion)
		}
		if cmp, _ := v.Compare(UpstreamVersion); cmp != 0 {
			t.Errorf("%q does not compare equal to %s", got, UpstreamVersion)
		}
	}
}
