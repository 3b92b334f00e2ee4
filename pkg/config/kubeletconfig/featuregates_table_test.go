package kubeletconfig

import (
	"sort"
	"strings"
	"testing"

	"k8s.io/component-base/featuregate"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/gokubelet/kubelet/pkg/config/features"
)

// The gate table (pkg/config/features) against the upstream gate list: its
// rows are sorted and unique, gates wired outside this package default to
// on unless features.OffByDefault says otherwise (so features.Gates{} is
// upstream's defaults), and a row naming a gate
// the upstream kubelet does not know is reported (the gate was renamed or
// removed: a wired one then counts as on, a lacking one is never warned).
func TestFeatureTableAgainstUpstream(t *testing.T) {
	specs := UpstreamFeatureGates()
	seen := map[features.Feature]bool{}
	order := map[features.Status]int{features.Wired: 0, features.Lacking: 1, features.Locked: 2}
	for i, row := range features.Table {
		if seen[row.Name] {
			t.Errorf("%s is in the table twice", row.Name)
		}
		seen[row.Name] = true
		if i > 0 {
			prev := features.Table[i-1]
			if order[prev.Status] > order[row.Status] || (prev.Status == row.Status && prev.Name > row.Name) {
				t.Errorf("table not sorted by status then name at %s", row.Name)
			}
		}
		spec, known := specs[featuregate.Feature(row.Name)]
		if !known {
			t.Logf("%s (%s) is not a gate of the upstream kubelet %s", row.Name, row.Status, upstreamVersion)
			continue
		}
		switch row.Status {
		case features.Wired:
			if row.Where != "pkg/config/kubeletconfig" && !spec.Default && !features.OffByDefault(row.Name) {
				t.Errorf("%s is wired in %s but off by default upstream, and not features.OffByDefault: features.Gates{} would not be upstream's defaults", row.Name, row.Where)
			}
			if features.OffByDefault(row.Name) && spec.Default {
				t.Errorf("%s is features.OffByDefault, but on by default upstream", row.Name)
			}
			if spec.LockToDefault {
				t.Logf("%s is wired but locked on upstream %s: it cannot be turned off any more", row.Name, upstreamVersion)
			}
		case features.Locked:
			if !spec.LockToDefault || !spec.Default {
				t.Errorf("%s is marked Locked but upstream does not lock it on (default %v, locked %v): wire it", row.Name, spec.Default, spec.LockToDefault)
			}
		}
	}
	// Every gate that is on by default and lacking is in the start
	// warning with upstream's defaults.
	fg, err := NewFeatureGate()
	if err != nil {
		t.Fatal(err)
	}
	w := LackingFeatureWarning(fg)
	var want []string
	for _, row := range features.Table {
		if spec, ok := specs[featuregate.Feature(row.Name)]; ok && row.Status == features.Lacking && spec.Default {
			want = append(want, string(row.Name))
		}
	}
	sort.Strings(want)
	if !strings.HasSuffix(w, ": "+strings.Join(want, ", ")) {
		t.Errorf("start warning %q, want it to name exactly %v", w, want)
	}
}

// A wired gate turned off keeps its feature off where the feature is a
// configuration: upstream's validation refuses the setting that needs it.
// A gate the upstream list locks on cannot be turned off at all.
func TestWiredGatesRefuseTheirSettings(t *testing.T) {
	tests := []struct {
		gate string
		file string
		want string
	}{
		{"RotateKubeletServerCertificate", "serverTLSBootstrap: true\n", "serverTLSBootstrap"},
		{"ImageMaximumGCAge", "imageMaximumGCAge: 24h\n", "imageMaximumGCAge"},
		{"GracefulNodeShutdown", "shutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s\n", "shutdownGracePeriod"},
		{"KubeletEnsureSecretPulledImages", "imagePullCredentialsVerificationPolicy: AlwaysVerify\n", "imagePullCredentialsVerificationPolicy"},
		{customCFSQuotaPeriodGate(), "cpuCFSQuotaPeriod: 50ms\n", "cpuCFSQuotaPeriod"},
	}
	specs := UpstreamFeatureGates()
	for _, tc := range tests {
		t.Run(tc.gate, func(t *testing.T) {
			p := writeFile(t, "k.yaml", header+tc.file)
			if _, err := settingsFor(t, "--config", p, "--feature-gates="+tc.gate+"=true"); err != nil {
				t.Fatalf("gate on: %v", err)
			}
			_, err := settingsFor(t, "--config", p, "--feature-gates="+tc.gate+"=false")
			if spec, ok := specs[featuregate.Feature(tc.gate)]; ok && spec.LockToDefault {
				if err == nil || !strings.Contains(err.Error(), tc.gate) {
					t.Errorf("gate locked on upstream, turned off: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "requires feature gate "+tc.gate) {
				t.Errorf("gate off: %v", err)
			}
		})
	}
}

// Settings.Features follows the effective gates: each wired gate the
// upstream list lets turn off is off in Settings.Features when turned off.
func TestSettingsFeatures(t *testing.T) {
	specs := UpstreamFeatureGates()
	for _, row := range features.Table {
		spec, ok := specs[featuregate.Feature(row.Name)]
		if row.Status != features.Wired || !ok || spec.LockToDefault {
			continue
		}
		args := []string{"--feature-gates=" + string(row.Name) + "=false"}
		s, err := settingsFor(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if s.Features.Enabled(row.Name) {
			t.Errorf("%v: Features has %s on", args, row.Name)
		}
		for _, other := range features.Table {
			if other.Status == features.Wired && other.Name != row.Name && !s.Features.Enabled(other.Name) {
				if o, ok := specs[featuregate.Feature(other.Name)]; !ok || o.Default {
					t.Errorf("%v: Features has %s off too", args, other.Name)
				}
			}
		}
	}
}

// KubeletEnsureSecretPulledImages' two settings, validated as upstream
// validates them, and the policy's default following the effective gate
// (the file's and the command line's).
func TestEnsureSecretPulledImagesSettings(t *testing.T) {
	const off = "--feature-gates=KubeletEnsureSecretPulledImages=false"
	for _, tc := range []struct {
		name, file string
		flags      []string
		err        string // "" = accepted
		policy     kubeletv1beta1.ImagePullCredentialsVerificationPolicy
	}{
		{name: "defaults", policy: kubeletv1beta1.NeverVerifyPreloadedImages},
		{name: "no file, gate off by flag", flags: []string{off}},
		{name: "file without the policy, gate off by flag", file: "maxPods: 50\n", flags: []string{off}},
		{name: "file spells out the default, gate off by flag (accepted, feature off)", file: "imagePullCredentialsVerificationPolicy: NeverVerifyPreloadedImages\n", flags: []string{off}},
		{name: "another policy, gate off by flag", file: "imagePullCredentialsVerificationPolicy: AlwaysVerify\n", flags: []string{off},
			err: "imagePullCredentialsVerificationPolicy: Invalid value: \"AlwaysVerify\": requires feature gate KubeletEnsureSecretPulledImages"},
		{name: "gate off in the file, policy set", file: "featureGates:\n  KubeletEnsureSecretPulledImages: false\nimagePullCredentialsVerificationPolicy: NeverVerifyPreloadedImages\n",
			err: "requires feature gate KubeletEnsureSecretPulledImages"},
		{name: "gate off in the file, allowlist set", file: "featureGates:\n  KubeletEnsureSecretPulledImages: false\npreloadedImagesVerificationAllowlist: [\"registry.example/*\"]\n",
			err: "preloadedImagesVerificationAllowlist: Invalid value"},
		{name: "gate off in the file, on by flag: the default", file: "featureGates:\n  KubeletEnsureSecretPulledImages: false\n",
			flags: []string{"--feature-gates=KubeletEnsureSecretPulledImages=true"}, policy: kubeletv1beta1.NeverVerifyPreloadedImages},
		{name: "gate off in the file", file: "featureGates:\n  KubeletEnsureSecretPulledImages: false\n"},
		{name: "AlwaysVerify", file: "imagePullCredentialsVerificationPolicy: AlwaysVerify\n", policy: kubeletv1beta1.AlwaysVerify},
		{name: "NeverVerify", file: "imagePullCredentialsVerificationPolicy: NeverVerify\n", policy: kubeletv1beta1.NeverVerify},
		{name: "unknown policy", file: "imagePullCredentialsVerificationPolicy: Sometimes\n", err: "imagePullCredentialsVerificationPolicy: Unsupported value: \"Sometimes\""},
		{name: "allowlist with its policy", file: "imagePullCredentialsVerificationPolicy: NeverVerifyAllowlistedImages\npreloadedImagesVerificationAllowlist: [\"registry.example/*\", \"busybox\"]\n",
			policy: kubeletv1beta1.NeverVerifyAllowlistedImages},
		{name: "allowlist with another policy", file: "preloadedImagesVerificationAllowlist: [\"registry.example/*\"]\n",
			err: "may only be set with imagePullCredentialsVerificationPolicy NeverVerifyAllowlistedImages"},
		{name: "allowlist entry with a tag", file: "imagePullCredentialsVerificationPolicy: NeverVerifyAllowlistedImages\npreloadedImagesVerificationAllowlist: [\"ok.example/*\", \"busybox:1.36\"]\n",
			err: "preloadedImagesVerificationAllowlist[1]: Invalid value: \"busybox:1.36\": neither tag nor digest"},
		{name: "allowlist wildcard in the middle", file: "imagePullCredentialsVerificationPolicy: NeverVerifyAllowlistedImages\npreloadedImagesVerificationAllowlist: [\"registry.example/*/app\"]\n",
			err: "only patterns ending with '/*'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.flags
			if tc.file != "" {
				args = append([]string{"--config", writeFile(t, "k.yaml", header+tc.file)}, args...)
			}
			s, err := settingsFor(t, args...)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Config.ImagePullCredentialsVerificationPolicy; got != tc.policy {
				t.Errorf("policy %q, want %q", got, tc.policy)
			}
			for _, w := range s.Warnings {
				if strings.Contains(w, "imagePullCredentialsVerificationPolicy") || strings.Contains(w, "preloadedImagesVerificationAllowlist") || strings.Contains(w, "KubeletEnsureSecretPulledImages") {
					t.Errorf("warning: %s", w)
				}
			}
		})
	}
}
