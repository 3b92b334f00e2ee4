package kubeletconfig

import (
	_ "embed"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/gokubelet/kubelet/pkg/config/features"
	"github.com/gokubelet/kubelet/pkg/runtime/images/pullverify"
)

//go:embed upstream_feature_gates.txt
var upstreamFeatureGatesText string

// ActedOnFeatureGates are the logging gates, read by
// k8s.io/component-base/logs (LoggingAlphaOptions, LoggingBetaOptions,
// ContextualLogging). The gates of kubelet features are in
// pkg/config/features (wired ones take effect, lacking ones are named in
// LackingFeatureWarning when on). Every other gate of the upstream kubelet
// is accepted; this kubelet behaves as the upstream one with the gate at
// its default, so a gate set to another value gets a warning naming it
// (FeatureGateWarnings).
var ActedOnFeatureGates = map[string]bool{
	string(logsapi.LoggingAlphaOptions): true,
	string(logsapi.LoggingBetaOptions):  true,
	string(logsapi.ContextualLogging):   true,
}

// UpstreamFeatureGates returns the feature gates the upstream kubelet
// (upstreamVersion) knows, with their default, stage and lock, as that kubelet
// registers them.
func UpstreamFeatureGates() map[featuregate.Feature]featuregate.FeatureSpec {
	out := map[featuregate.Feature]featuregate.FeatureSpec{}
	for _, line := range strings.Split(upstreamFeatureGatesText, "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || strings.HasPrefix(line, "#") {
			continue
		}
		def, _ := strconv.ParseBool(f[1])
		locked, _ := strconv.ParseBool(f[3])
		spec := featuregate.FeatureSpec{Default: def, LockToDefault: locked, PreRelease: featuregate.GA}
		switch f[2] {
		case "ALPHA":
			spec.PreRelease = featuregate.Alpha
		case "BETA":
			spec.PreRelease = featuregate.Beta
		case "DEPRECATED":
			spec.PreRelease = featuregate.Deprecated
		}
		out[featuregate.Feature(f[0])] = spec
	}
	return out
}

// NewFeatureGate returns a feature gate that knows every gate of the
// upstream kubelet (upstreamVersion; so a name it does not know is refused, as
// upstream refuses it, and a gate locked to its default cannot be changed),
// with the logging gates registered by component-base.
func NewFeatureGate() (featuregate.MutableFeatureGate, error) {
	fg := featuregate.NewFeatureGate()
	if err := logsapi.AddFeatureGates(fg); err != nil {
		return nil, err
	}
	known := fg.GetAll()
	specs := map[featuregate.Feature]featuregate.FeatureSpec{}
	for name, spec := range UpstreamFeatureGates() {
		if _, ok := known[name]; ok {
			continue // AllAlpha, AllBeta and the logging gates are there already
		}
		specs[name] = spec
	}
	if err := fg.Add(specs); err != nil {
		return nil, err
	}
	return fg, nil
}

// FeatureGateWarnings names every gate of gates (the effective settings)
// that this kubelet does not act on and that differs from its default.
func FeatureGateWarnings(gates map[string]bool, source string) []string {
	specs := UpstreamFeatureGates()
	var names []string
	for n := range gates {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		if ActedOnFeatureGates[n] {
			continue
		}
		if _, ok := features.Lookup(n); ok {
			// Wired and locked gates are acted on; a lacking one that
			// is on is named in LackingFeatureWarning, off it matches
			// this kubelet.
			continue
		}
		spec, ok := specs[featuregate.Feature(n)]
		if ok && spec.Default == gates[n] {
			continue
		}
		def := "false"
		if ok && spec.Default {
			def = "true"
		}
		out = append(out, fmt.Sprintf("%s: feature gate %s=%t is not acted on by this kubelet; it behaves as the upstream kubelet with the gate at its default (%s)", source, n, gates[n], def))
	}
	return out
}

// cfsQuotaPeriodGates are the names upstream gave the gate that allows a
// cpuCFSQuotaPeriod other than 100ms: CustomCPUCFSQuotaPeriod (alpha,
// off) until 1.35, CPUCFSQuotaPeriod (GA, on) from 1.36.
var cfsQuotaPeriodGates = []string{"CustomCPUCFSQuotaPeriod", "CPUCFSQuotaPeriod"}

// customCFSQuotaPeriodGate returns the name of that gate in the upstream
// kubelet this one follows.
func customCFSQuotaPeriodGate() string {
	known := UpstreamFeatureGates()
	for _, g := range cfsQuotaPeriodGates {
		if _, ok := known[featuregate.Feature(g)]; ok {
			return g
		}
	}
	return cfsQuotaPeriodGates[len(cfsQuotaPeriodGates)-1]
}

// ValidateWithGates checks the rules of upstream's validation that depend
// on feature gates, so that a wired gate turned off keeps its feature off:
// serverTLSBootstrap needs RotateKubeletServerCertificate, a non-zero
// imageMaximumGCAge needs ImageMaximumGCAge, shutdownGracePeriod* need
// GracefulNodeShutdown, imagePullCredentialsVerificationPolicy and
// preloadedImagesVerificationAllowlist need KubeletEnsureSecretPulledImages
// (and with it on must be valid), and a cpuCFSQuotaPeriod other than 100ms
// needs the custom period gate (with it on, the period must be 1ms to 1s).
func ValidateWithGates(cfg *kubeletv1beta1.KubeletConfiguration, gates featuregate.MutableFeatureGate) field.ErrorList {
	var errs field.ErrorList
	gate := customCFSQuotaPeriodGate()
	on := true
	if _, ok := gates.GetAll()[featuregate.Feature(gate)]; ok {
		on = gates.Enabled(featuregate.Feature(gate))
	}
	enabled := gateLookup(gates)
	off := func(f features.Feature) bool { on, known := enabled(string(f)); return known && !on }
	if cfg.ServerTLSBootstrap && off(features.RotateKubeletServerCertificate) {
		errs = append(errs, field.Invalid(field.NewPath("serverTLSBootstrap"), true, "requires feature gate "+string(features.RotateKubeletServerCertificate)))
	}
	if cfg.ImageMaximumGCAge.Duration != 0 && off(features.ImageMaximumGCAge) {
		errs = append(errs, field.Invalid(field.NewPath("imageMaximumGCAge"), cfg.ImageMaximumGCAge.Duration.String(), "requires feature gate "+string(features.ImageMaximumGCAge)))
	}
	if (cfg.ShutdownGracePeriod.Duration > 0 || cfg.ShutdownGracePeriodCriticalPods.Duration > 0) && off(features.GracefulNodeShutdown) {
		errs = append(errs, field.Invalid(field.NewPath("shutdownGracePeriod"), cfg.ShutdownGracePeriod.Duration.String(), "requires feature gate "+string(features.GracefulNodeShutdown)+" (so does shutdownGracePeriodCriticalPods)"))
	}
	errs = append(errs, validateEnsureSecretPulledImages(cfg, !off(features.KubeletEnsureSecretPulledImages))...)
	p := field.NewPath("cpuCFSQuotaPeriod")
	d := 100 * time.Millisecond
	if cfg.CPUCFSQuotaPeriod != nil {
		d = cfg.CPUCFSQuotaPeriod.Duration
	}
	switch {
	case !on && d != 100*time.Millisecond:
		errs = append(errs, field.Invalid(p, d.String(), "a period other than 100ms requires feature gate "+gate))
	case on && (d < time.Millisecond || d > time.Second):
		errs = append(errs, field.Invalid(p, d.String(), "must be between 1ms and 1s, inclusive"))
	}
	return errs
}

// gateLookup adapts a feature gate to the features package: whether the
// gate is on, and whether the gate knows it at all.
func gateLookup(fg featuregate.MutableFeatureGate) func(string) (bool, bool) {
	all := fg.GetAll()
	return func(name string) (bool, bool) {
		if _, ok := all[featuregate.Feature(name)]; !ok {
			return false, false
		}
		return fg.Enabled(featuregate.Feature(name)), true
	}
}

// NewFeatures returns what the code asks about the gates it wires.
func NewFeatures(fg featuregate.MutableFeatureGate) features.Gates {
	return features.New(gateLookup(fg))
}

// LackingFeatureWarning returns the one start warning naming every gate
// that is on (by default or by configuration) whose feature this kubelet
// lacks (features.Table), or "" when there is none.
func LackingFeatureWarning(fg featuregate.MutableFeatureGate) string {
	on := features.LackingOn(gateLookup(fg))
	if len(on) == 0 {
		return ""
	}
	return fmt.Sprintf("feature gates on whose feature this kubelet lacks (it behaves as if they were off; see docs/configuration.md): %s", strings.Join(on, ", "))
}

// wiredGateNames returns the gates of features.Table this kubelet wires.
func wiredGateNames() []string {
	var out []string
	for _, row := range features.Table {
		if row.Status == features.Wired {
			out = append(out, string(row.Name))
		}
	}
	return out
}

// validateEnsureSecretPulledImages checks the two settings of
// KubeletEnsureSecretPulledImages as upstream does: with the gate on, the
// policy must be one of the four and the allowlist is only for
// NeverVerifyAllowlistedImages, each entry an image name without tag or
// digest, or a prefix ending in "/*"; with the gate off, neither may be
// set.
func validateEnsureSecretPulledImages(cfg *kubeletv1beta1.KubeletConfiguration, on bool) field.ErrorList {
	var errs field.ErrorList
	policyPath := field.NewPath("imagePullCredentialsVerificationPolicy")
	allowPath := field.NewPath("preloadedImagesVerificationAllowlist")
	policy, allow := cfg.ImagePullCredentialsVerificationPolicy, cfg.PreloadedImagesVerificationAllowlist
	if !on {
		requires := "requires feature gate " + string(features.KubeletEnsureSecretPulledImages) + " (it must not be set while the gate is off)"
		if policy != "" {
			errs = append(errs, field.Invalid(policyPath, policy, requires))
		}
		if len(allow) > 0 {
			errs = append(errs, field.Invalid(allowPath, allow, requires))
		}
		return errs
	}
	var names []string
	for _, p := range pullverify.Policies {
		names = append(names, string(p))
	}
	if !slices.Contains(pullverify.Policies, policy) {
		errs = append(errs, field.NotSupported(policyPath, policy, names))
	}
	if len(allow) > 0 && policy != kubeletv1beta1.NeverVerifyAllowlistedImages {
		errs = append(errs, field.Invalid(allowPath, allow, "may only be set with imagePullCredentialsVerificationPolicy "+string(kubeletv1beta1.NeverVerifyAllowlistedImages)))
		return errs
	}
	for i, entry := range allow {
		if err := pullverify.ValidateAllowlistEntry(entry); err != nil {
			errs = append(errs, field.Invalid(allowPath.Index(i), entry, err.Error()))
		}
	}
	return errs
}

// ensureSecretPulledImagesDefault makes the default of
// imagePullCredentialsVerificationPolicy follow the effective gate (file
// and flags). SetDefaults, which sees the file's gates only, fills it in
// unless the file turns the gate off (fileTurnedOff); upstream's
// defaulting sees the command line's gates too. So: with the gate on, an
// empty policy becomes NeverVerifyPreloadedImages; with the gate turned
// off by a flag, the default SetDefaults filled in is taken out again,
// since the feature is off (a file that spells out that same default
// cannot be told from it, and is accepted rather than refused).
func ensureSecretPulledImagesDefault(cfg *kubeletv1beta1.KubeletConfiguration, gates featuregate.MutableFeatureGate, fileTurnedOff bool) {
	name := featuregate.Feature(features.KubeletEnsureSecretPulledImages)
	on := true
	if _, known := gates.GetAll()[name]; known {
		on = gates.Enabled(name)
	}
	switch {
	case on && cfg.ImagePullCredentialsVerificationPolicy == "":
		cfg.ImagePullCredentialsVerificationPolicy = kubeletv1beta1.NeverVerifyPreloadedImages
	case !on && !fileTurnedOff && cfg.ImagePullCredentialsVerificationPolicy == kubeletv1beta1.NeverVerifyPreloadedImages && len(cfg.PreloadedImagesVerificationAllowlist) == 0:
		cfg.ImagePullCredentialsVerificationPolicy = ""
	}
}
