package kubeletconfig

import (
	"sort"
	"strings"
	"testing"

	"k8s.io/component-base/featuregate"

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
