package kubeletconfig

import (
	_ "embed"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
)

//go:embed upstream_feature_gates.txt
var upstreamFeatureGatesText string

// ActedOnFeatureGates are the feature gates whose setting changes what this
// kubelet does. The logging gates are read by k8s.io/component-base/logs
// (LoggingAlphaOptions, LoggingBetaOptions, ContextualLogging). Every
// other gate of the upstream kubelet is accepted; this kubelet behaves as
// the upstream one with the gate at its default, so a gate set to another
// value gets a warning naming it (FeatureGateWarnings).
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
