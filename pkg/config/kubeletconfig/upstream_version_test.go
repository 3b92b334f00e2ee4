package kubeletconfig

import (
	"strings"
	"testing"
)

// The embedded upstream lists are those of the version this kubelet follows
// (hack/upstream-lists.sh regenerates them; docs/upgrading-kubernetes.md).
func TestUpstreamListsAreOfUpstreamVersion(t *testing.T) {
	for name, text := range map[string]string{"upstream_flags.txt": upstreamFlagsText, "upstream_feature_gates.txt": upstreamFeatureGatesText} {
		header, _, _ := strings.Cut(text, "\n")
		if !strings.Contains(header, " "+upstreamVersion+" ") {
			t.Errorf("%s: header %q does not name %s: regenerate it with hack/upstream-lists.sh", name, header, upstreamVersion)
		}
	}
}

// The KubeletConfiguration fields upstream added in 1.35 to 1.37 decode
// (strictly: they are fields of k8s.io/kubelet v0.37), and each is either
// implemented or warned about by name when set.
func TestFieldsAddedSince134AreAcceptedAndNamed(t *testing.T) {
	cfg, _, err := DecodeConfig([]byte(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
tlsCurvePreferences: [23]
defaultPodSysctls:
  net.ipv4.ip_unprivileged_port_start: "0"
memoryReservationPolicy: TieredReservation
`))
	if err != nil {
		t.Fatalf("a 1.37 config was refused: %v", err)
	}
	if len(cfg.TLSCurvePreferences) != 1 || cfg.TLSCurvePreferences[0] != 23 ||
		cfg.DefaultPodSysctls["net.ipv4.ip_unprivileged_port_start"] != "0" ||
		cfg.MemoryReservationPolicy != "TieredReservation" {
		t.Fatalf("the 1.37 fields were not decoded: %+v %+v %q", cfg.TLSCurvePreferences, cfg.DefaultPodSysctls, cfg.MemoryReservationPolicy)
	}
	warnings := strings.Join(UnimplementedFieldWarnings(cfg, "k.yaml"), "\n")
	for _, f := range []string{"tlsCurvePreferences", "defaultPodSysctls", "memoryReservationPolicy"} {
		if !IsImplemented(f) && !strings.Contains(warnings, `"`+f+`"`) {
			t.Errorf("%s is neither implemented nor named in the warnings:\n%s", f, warnings)
		}
	}
}
