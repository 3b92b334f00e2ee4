package nodestatus

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	kubeletapis "k8s.io/kubelet/pkg/apis"
)

// DefaultLabels are the labels the kubelet sets on its own node from the
// machine: hostname, OS and architecture (stable and beta keys).
func DefaultLabels(hostname, goos, goarch string) map[string]string {
	return map[string]string{
		v1.LabelHostname:      hostname,
		v1.LabelOSStable:      goos,
		v1.LabelArchStable:    goarch,
		kubeletapis.LabelOS:   goos,
		kubeletapis.LabelArch: goarch,
	}
}

// reconciledLabels are the labels the kubelet owns on an existing Node and
// brings back to its own value on re-registration.
var reconciledLabels = []string{
	v1.LabelHostname,
	v1.LabelTopologyZone,
	v1.LabelTopologyRegion,
	v1.LabelFailureDomainBetaZone,
	v1.LabelFailureDomainBetaRegion,
	v1.LabelInstanceTypeStable,
	v1.LabelInstanceType,
	v1.LabelOSStable,
	v1.LabelArchStable,
	v1.LabelWindowsBuild,
	kubeletapis.LabelOS,
	kubeletapis.LabelArch,
}

// ValidateNodeLabels checks --node-labels: each key and value must be a
// valid label, and keys in the kubernetes.io or k8s.io namespaces must be
// ones the NodeRestriction admission plugin lets a node set on itself (the
// kubelet.kubernetes.io/ and node.kubernetes.io/ prefixes and the
// well-known labels). Anything else would be refused by the API server at
// registration, so it is refused here, at start, naming the labels.
func ValidateNodeLabels(labels map[string]string) error {
	var refused, invalid []string
	for k, v := range labels {
		if isKubernetesLabel(k) && !kubeletapis.IsKubeletLabel(k) {
			refused = append(refused, k)
		}
		for _, e := range validation.IsQualifiedName(k) {
			invalid = append(invalid, fmt.Sprintf("key %q: %s", k, e))
		}
		for _, e := range validation.IsValidLabelValue(v) {
			invalid = append(invalid, fmt.Sprintf("value %q of %q: %s", v, k, e))
		}
	}
	sort.Strings(refused)
	sort.Strings(invalid)
	if len(refused) > 0 {
		return fmt.Errorf("--node-labels: %s in the kubernetes.io or k8s.io namespace cannot be set by a node on itself; "+
			"allowed are keys under the prefixes %s and the labels %s",
			strings.Join(refused, ", "),
			strings.Join(kubeletapis.KubeletLabelNamespaces(), ", "),
			strings.Join(kubeletapis.KubeletLabels(), ", "))
	}
	if len(invalid) > 0 {
		return fmt.Errorf("--node-labels: invalid: %s", strings.Join(invalid, "; "))
	}
	return nil
}

// isKubernetesLabel reports whether key's prefix is kubernetes.io or k8s.io
// or a subdomain of either.
func isKubernetesLabel(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, reserved := range []string{"kubernetes.io", "k8s.io"} {
		if ns == reserved || strings.HasSuffix(ns, "."+reserved) {
			return true
		}
	}
	return false
}
