package pullverify

import (
	"errors"
	"fmt"
	"strings"

	"github.com/distribution/reference"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// Policies are the values of imagePullCredentialsVerificationPolicy.
var Policies = []kubeletv1beta1.ImagePullCredentialsVerificationPolicy{
	kubeletv1beta1.NeverVerify,
	kubeletv1beta1.NeverVerifyPreloadedImages,
	kubeletv1beta1.NeverVerifyAllowlistedImages,
	kubeletv1beta1.AlwaysVerify,
}

// Policy is a verification policy with its allowlist.
type Policy struct {
	name  kubeletv1beta1.ImagePullCredentialsVerificationPolicy
	exact map[string]bool
	// prefixes end in "/".
	prefixes []string
}

// NewPolicy returns the policy named name. The allowlist is used by
// NeverVerifyAllowlistedImages only; each entry must pass
// ValidateAllowlistEntry.
func NewPolicy(name kubeletv1beta1.ImagePullCredentialsVerificationPolicy, allowlist []string) (Policy, error) {
	p := Policy{name: name, exact: map[string]bool{}}
	switch name {
	case kubeletv1beta1.NeverVerify, kubeletv1beta1.NeverVerifyPreloadedImages, kubeletv1beta1.AlwaysVerify:
	case kubeletv1beta1.NeverVerifyAllowlistedImages:
		for _, entry := range allowlist {
			prefix, wildcard, err := parseAllowlistEntry(entry)
			if err != nil {
				return Policy{}, err
			}
			if wildcard {
				p.prefixes = append(p.prefixes, prefix)
			} else {
				p.exact[prefix] = true
			}
		}
	default:
		return Policy{}, fmt.Errorf("unknown image pull credential verification policy %q", name)
	}
	return p, nil
}

// Name is the policy's configuration value.
func (p Policy) Name() kubeletv1beta1.ImagePullCredentialsVerificationPolicy { return p.name }

// RequiresVerification reports whether a pod asking for image (its
// container's image field) must show credentials that pulled it.
// pulledByKubelet: the kubelet has a pulled record of the image or a pull
// intent for it; without either the image is preloaded.
func (p Policy) RequiresVerification(image string, pulledByKubelet bool) bool {
	switch p.name {
	case kubeletv1beta1.NeverVerify:
		return false
	case kubeletv1beta1.NeverVerifyPreloadedImages:
		return pulledByKubelet
	case kubeletv1beta1.NeverVerifyAllowlistedImages:
		return !p.allowlisted(image)
	default: // AlwaysVerify, and the zero Policy
		return true
	}
}

// allowlisted: the image without tag and digest (as written, when it does
// not parse) is an exact entry or under a prefix entry.
func (p Policy) allowlisted(image string) bool {
	name, err := TrimTagDigest(image)
	if err != nil {
		name = image
	}
	if p.exact[name] {
		return true
	}
	for _, prefix := range p.prefixes {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// ValidateAllowlistEntry checks one entry of
// preloadedImagesVerificationAllowlist as upstream's validation does: no
// surrounding spaces; either an image name without tag or digest, or a
// prefix of at least a registry host followed by "/*" (a "*" anywhere
// else is refused).
func ValidateAllowlistEntry(entry string) error {
	_, _, err := parseAllowlistEntry(entry)
	return err
}

// parseAllowlistEntry returns the name to match exactly, or the prefix
// (ending in "/") when wildcard.
func parseAllowlistEntry(entry string) (string, bool, error) {
	if entry != strings.TrimSpace(entry) {
		return "", false, fmt.Errorf("leading/trailing spaces are not allowed: %s", entry)
	}
	name, wildcard := strings.CutSuffix(entry, "/*")
	if wildcard {
		name += "/"
	}
	switch {
	case name == "":
		return "", false, fmt.Errorf("the supplied pattern is too short: %s", entry)
	case strings.Contains(name, "*"):
		return "", false, fmt.Errorf("not a valid wildcard pattern, only patterns ending with '/*' are allowed: %s", entry)
	case wildcard && name == "/":
		return "", false, errors.New("at least registry hostname is required")
	case wildcard:
		return name, true, nil
	}
	trimmed, err := TrimTagDigest(name)
	if err != nil {
		return "", false, fmt.Errorf("failed to parse as an image name: %w", err)
	}
	if trimmed != name {
		return "", false, fmt.Errorf("neither tag nor digest is accepted in an image reference: %s", entry)
	}
	return name, false, nil
}

// TrimTagDigest returns image without its tag and digest, spelled as
// given (not normalised: "busybox:1.36" is "busybox", not
// "docker.io/library/busybox"). Records key credentials by this name.
func TrimTagDigest(image string) (string, error) {
	ref, err := reference.Parse(image)
	if err != nil {
		return "", err
	}
	out := image
	if d, ok := ref.(reference.Digested); ok {
		var found bool
		if out, found = strings.CutSuffix(out, "@"+d.Digest().String()); !found {
			return "", fmt.Errorf("digest was not specified last, this does not appear to be a valid image spec: %q", image)
		}
	}
	if t, ok := ref.(reference.Tagged); ok {
		var found bool
		if out, found = strings.CutSuffix(out, ":"+t.Tag()); !found {
			return "", fmt.Errorf("tag %q was not specified last (or before the digest), this does not appear to be a valid image spec: %q", t.Tag(), image)
		}
	}
	return out, nil
}
