package pullverify

import (
	"strings"
	"testing"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

func TestRequiresVerification(t *testing.T) {
	allow := []string{"registry.example/team/app", "mirror.example/*", "docker.io/library/*"}
	for _, tc := range []struct {
		policy          kubeletv1beta1.ImagePullCredentialsVerificationPolicy
		image           string
		pulledByKubelet bool
		want            bool
	}{
		{kubeletv1beta1.NeverVerify, "registry.example/private:1", true, false},
		{kubeletv1beta1.NeverVerify, "registry.example/private:1", false, false},
		// Preloaded: neither a pulled record nor an intent.
		{kubeletv1beta1.NeverVerifyPreloadedImages, "registry.example/private:1", false, false},
		{kubeletv1beta1.NeverVerifyPreloadedImages, "registry.example/private:1", true, true},
		// The allowlist decides whoever pulled the image.
		{kubeletv1beta1.NeverVerifyAllowlistedImages, "registry.example/team/app:1.0", true, false},
		{kubeletv1beta1.NeverVerifyAllowlistedImages, "registry.example/team/app@sha256:" + strings.Repeat("a", 64), false, false},
		{kubeletv1beta1.NeverVerifyAllowlistedImages, "registry.example/team/app2:1.0", false, true},
		{kubeletv1beta1.NeverVerifyAllowlistedImages, "registry.example/team:1.0", false, true},
		{kubeletv1beta1.NeverVerifyAllowlistedImages, "mirror.example/any/depth:2", true, false},
		{kubeletv1beta1.NeverVerifyAllowlistedImages, "mirror.example.evil/x:1", false, true},
		// Names are not normalised: "busybox" is not docker.io/library/busybox.
		{kubeletv1beta1.NeverVerifyAllowlistedImages, "busybox:1.36", false, true},
		{kubeletv1beta1.NeverVerifyAllowlistedImages, "docker.io/library/busybox:1.36", false, false},
		{kubeletv1beta1.AlwaysVerify, "registry.example/team/app:1.0", false, true},
	} {
		p, err := NewPolicy(tc.policy, allow)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.RequiresVerification(tc.image, tc.pulledByKubelet); got != tc.want {
			t.Errorf("%s %s pulledByKubelet=%v: %v, want %v", tc.policy, tc.image, tc.pulledByKubelet, got, tc.want)
		}
	}
	if _, err := NewPolicy("Sometimes", nil); err == nil {
		t.Errorf("unknown policy accepted")
	}
	if _, err := NewPolicy(kubeletv1beta1.NeverVerifyAllowlistedImages, []string{"bad:tag"}); err == nil {
		t.Errorf("allowlist entry with a tag accepted")
	}
}

func TestValidateAllowlistEntry(t *testing.T) {
	for _, tc := range []struct {
		entry string
		err   string // "" = valid
	}{
		{"registry.example/team/app", ""},
		{"busybox", ""},
		{"registry.example:5000/app", ""},
		{"registry.example/*", ""},
		{"registry.example/team/*", ""},
		{"", "too short"},
		{" registry.example/app", "spaces"},
		{"registry.example/app ", "spaces"},
		{"*", "only patterns ending with '/*'"},
		{"registry.example/*/app", "only patterns ending with '/*'"},
		{"registry.example/app*", "only patterns ending with '/*'"},
		{"/*", "registry hostname is required"},
		{"registry.example/app:1.0", "neither tag nor digest"},
		{"registry.example/app@sha256:" + strings.Repeat("b", 64), "neither tag nor digest"},
		{"Registry.Example/App", "failed to parse"},
	} {
		err := ValidateAllowlistEntry(tc.entry)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.entry, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: %v, want an error with %q", tc.entry, err, tc.err)
		}
	}
}

func TestTrimTagDigest(t *testing.T) {
	d := "sha256:" + strings.Repeat("c", 64)
	for _, tc := range []struct{ in, want string }{
		{"busybox", "busybox"},
		{"busybox:1.36", "busybox"},
		{"registry.example:5000/team/app:1.0", "registry.example:5000/team/app"},
		{"registry.example:5000/team/app", "registry.example:5000/team/app"},
		{"registry.example/app@" + d, "registry.example/app"},
		{"registry.example/app:1.0@" + d, "registry.example/app"},
	} {
		got, err := TrimTagDigest(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%s: %q %v, want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := TrimTagDigest("UPPER/Case:x"); err == nil {
		t.Errorf("an invalid name parsed")
	}
}
