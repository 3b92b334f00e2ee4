package kubeletconfig

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// ImplementedFields is the one list of top-level KubeletConfiguration fields
// (their JSON names) that this kubelet acts on. Any other upstream field is
// accepted but, when a file sets it to a non-default value, reported by
// UnimplementedFieldWarnings. Add a field here in the same change that makes
// the kubelet honour it.
//
// TestImplementedFieldsAreRead fails when a listed field is read nowhere
// outside this package, so the list cannot claim more than the code does.
var ImplementedFields = []string{
	"apiVersion", "kind",
	// Pod sources.
	"staticPodPath", "staticPodURL", "staticPodURLHeader",
	"syncFrequency", "fileCheckFrequency", "httpCheckFrequency",
	// Servers and their security.
	"enableServer", "address", "port", "readOnlyPort",
	"healthzPort", "healthzBindAddress",
	"authentication", "authorization",
	"tlsCertFile", "tlsPrivateKeyFile", "tlsCipherSuites", "tlsMinVersion",
	"rotateCertificates", "serverTLSBootstrap", "streamingConnectionIdleTimeout",
	"enableDebuggingHandlers", "enableSystemLogHandler", "enableProfilingHandler",
	"enableContentionProfiling", "enableDebugFlagsHandler",
	// API client and registration.
	"kubeAPIQPS", "kubeAPIBurst", "contentType", "eventRecordQPS", "eventBurst",
	"registerNode", "registerWithTaints", "providerID", "enableControllerAttachDetach",
	"nodeStatusUpdateFrequency", "nodeStatusReportFrequency", "nodeLeaseDurationSeconds",
	"nodeStatusMaxImages",
	// Runtime and images.
	"containerRuntimeEndpoint", "imageServiceEndpoint", "runtimeRequestTimeout",
	"serializeImagePulls", "maxParallelImagePulls",
	"imagePullCredentialsVerificationPolicy", "preloadedImagesVerificationAllowlist",
	"imageGCHighThresholdPercent", "imageGCLowThresholdPercent",
	// Pods and resources (pkg/runtime/cgroups, pkg/node/eviction,
	// pkg/runtime/gc, pkg/runtime/logrotate, pkg/node/shutdown).
	"maxPods", "podPidsLimit", "cgroupDriver", "cgroupsPerQOS", "cgroupRoot",
	"cpuCFSQuota", "cpuCFSQuotaPeriod",
	"kubeReserved", "systemReserved", "kubeReservedCgroup", "systemReservedCgroup", "enforceNodeAllocatable",
	"kubeletCgroups", "systemCgroups",
	"evictionHard", "evictionSoft", "evictionSoftGracePeriod", "evictionMinimumReclaim",
	"evictionPressureTransitionPeriod", "evictionMaxPodGracePeriod", "mergeDefaultEvictionSettings",
	"localStorageCapacityIsolation", "imageMinimumGCAge", "imageMaximumGCAge",
	"shutdownGracePeriod", "shutdownGracePeriodCriticalPods", "failSwapOn",
	// Networking and DNS.
	"clusterDNS", "clusterDomain", "resolvConf",
	// Pod security.
	"allowedUnsafeSysctls", "seccompDefault",
	// Logs.
	"podLogsDir", "containerLogMaxSize", "containerLogMaxFiles", "containerLogMaxWorkers", "containerLogMonitorInterval", "logging",
	// Stats.
	"volumeStatsAggPeriod",
	// The kubelet process itself (pkg/kubelet/oom.go).
	"oomScoreAdj",
	// Feature gates (see FeatureGateWarnings for the gates acted on).
	"featureGates",
}

// honouredInThisPackage are implemented fields whose whole effect is in
// this package's defaulting (so no other package needs to read them).
var honouredInThisPackage = map[string]bool{
	// Fills missing evictionHard signals from the defaults (SetDefaults).
	"mergeDefaultEvictionSettings": true,
	// Applied to the feature gate built here (Settings.FeatureGates).
	"featureGates": true,
}

// IsImplemented reports whether the top-level field (JSON name) is in
// ImplementedFields.
func IsImplemented(jsonName string) bool {
	return contains(ImplementedFields, jsonName)
}

// UnimplementedFields returns, sorted, the top-level fields of cfg that are
// outside ImplementedFields and differ from their default. Both cfg and the
// comparison are taken after defaulting, so a field written out with its
// default value is not reported.
func UnimplementedFields(cfg *kubeletv1beta1.KubeletConfiguration) []string {
	got := toMap(cfg)
	def := toMap(NewDefaultConfig())
	var out []string
	for k, v := range got {
		if IsImplemented(k) {
			continue
		}
		if !reflect.DeepEqual(v, def[k]) {
			out = append(out, k)
		}
	}
	for k := range def {
		if _, ok := got[k]; !ok && !IsImplemented(k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// UnimplementedFieldWarnings returns one warning per field reported by
// UnimplementedFields, naming it and the source (usually the file path).
func UnimplementedFieldWarnings(cfg *kubeletv1beta1.KubeletConfiguration, source string) []string {
	var out []string
	for _, f := range UnimplementedFields(cfg) {
		out = append(out, fmt.Sprintf("%s: field %q is set to a non-default value but is not implemented by this kubelet yet; it is ignored", source, f))
	}
	return out
}

func toMap(cfg *kubeletv1beta1.KubeletConfiguration) map[string]any {
	c := cfg.DeepCopy()
	c.APIVersion, c.Kind = "", ""
	data, err := json.Marshal(c)
	if err != nil {
		// The type always marshals; a failure is a programming error.
		panic(err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(data, &m); err != nil {
		panic(err)
	}
	return m
}
