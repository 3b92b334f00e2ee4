package kubelet

import (
	"strings"

	"github.com/gokubelet/kubelet/pkg/upstream"
)

// UpstreamVersion is the upstream Kubernetes release whose kubelet this one
// follows (package upstream, the Go side of hack/versions.sh's KUBE_VERSION).
const UpstreamVersion = upstream.Version

// ProjectVersion is this project's own version, set at build time with
// -ldflags "-X github.com/gokubelet/kubelet/pkg/kubelet.ProjectVersion=0.2.0".
var ProjectVersion = "0.1.0-dev"

// Version is the version the kubelet reports in --version ("Kubernetes
// <Version>", the form kubeadm parses) and in the Node's
// status.nodeInfo.kubeletVersion: the upstream version it implements, with
// this project and its version as semver build metadata, e.g.
// v1.37.2+gokubelet.0.1.0-dev. Build metadata leaves the version's
// precedence alone, so every semver parser (kubeadm's skew checks, the
// e2e suite's [MinimumKubeletVersion] gates) sees v1.37.2. See
// docs/upgrading-kubernetes.md, "The version this kubelet reports".
func Version() string {
	return UpstreamVersion + "+" + buildMetadata("gokubelet."+ProjectVersion)
}

// buildMetadata makes s valid semver build metadata: dot-separated
// non-empty identifiers of [0-9A-Za-z-]. A leading "v" of the project
// version is dropped (v0.2.0 -> gokubelet.0.2.0); any other character
// becomes "-".
func buildMetadata(s string) string {
	s = strings.Replace(s, "gokubelet.v", "gokubelet.", 1)
	var ids []string
	for _, id := range strings.Split(s, ".") {
		id = strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' {
				return r
			}
			return '-'
		}, id)
		if id != "" {
			ids = append(ids, id)
		}
	}
	return strings.Join(ids, ".")
}
