package kubeletconfig

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	cliflag "k8s.io/component-base/cli/flag"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/gokubelet/kubelet/pkg/pod/admission"
)

// EvictionSignals are the eviction signals accepted in evictionHard,
// evictionSoft, evictionSoftGracePeriod and evictionMinimumReclaim.
var EvictionSignals = []string{
	"memory.available",
	"allocatableMemory.available",
	"nodefs.available",
	"nodefs.inodesFree",
	"imagefs.available",
	"imagefs.inodesFree",
	"containerfs.available",
	"containerfs.inodesFree",
	"pid.available",
}

func isEvictionSignal(s string) bool {
	for _, sig := range EvictionSignals {
		if s == sig {
			return true
		}
	}
	return false
}

// Validate checks a defaulted configuration and returns every problem found,
// each naming the field (its path in the file) and the reason. It never
// stops at the first error. It is pure: it looks at no file or network.
func Validate(cfg *kubeletv1beta1.KubeletConfiguration) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath

	// Ports.
	errs = append(errs, validatePort(p("port"), cfg.Port, 1)...)
	errs = append(errs, validatePort(p("readOnlyPort"), cfg.ReadOnlyPort, 0)...)
	if cfg.HealthzPort != nil {
		errs = append(errs, validatePort(p("healthzPort"), *cfg.HealthzPort, 0)...)
	}
	errs = append(errs, validateIP(p("address"), cfg.Address)...)
	errs = append(errs, validateIP(p("healthzBindAddress"), cfg.HealthzBindAddress)...)

	// Rates and bursts.
	errs = append(errs, nonNegativePtr(p("registryPullQPS"), cfg.RegistryPullQPS)...)
	errs = append(errs, nonNegative(p("registryBurst"), int64(cfg.RegistryBurst))...)
	errs = append(errs, nonNegativePtr(p("eventRecordQPS"), cfg.EventRecordQPS)...)
	errs = append(errs, nonNegative(p("eventBurst"), int64(cfg.EventBurst))...)
	errs = append(errs, nonNegativePtr(p("kubeAPIQPS"), cfg.KubeAPIQPS)...)
	errs = append(errs, nonNegative(p("kubeAPIBurst"), int64(cfg.KubeAPIBurst))...)
	if cfg.MaxParallelImagePulls != nil {
		if *cfg.MaxParallelImagePulls < 1 {
			errs = append(errs, field.Invalid(p("maxParallelImagePulls"), *cfg.MaxParallelImagePulls, "must be a positive number"))
		} else if *cfg.MaxParallelImagePulls > 1 && cfg.SerializeImagePulls != nil && *cfg.SerializeImagePulls {
			errs = append(errs, field.Invalid(p("maxParallelImagePulls"), *cfg.MaxParallelImagePulls, "cannot be larger than 1 unless serializeImagePulls is false"))
		}
	}

	// Durations that must be positive.
	for _, d := range []struct {
		name string
		val  metav1.Duration
	}{
		{"syncFrequency", cfg.SyncFrequency},
		{"fileCheckFrequency", cfg.FileCheckFrequency},
		{"httpCheckFrequency", cfg.HTTPCheckFrequency},
		{"nodeStatusUpdateFrequency", cfg.NodeStatusUpdateFrequency},
		{"nodeStatusReportFrequency", cfg.NodeStatusReportFrequency},
		{"runtimeRequestTimeout", cfg.RuntimeRequestTimeout},
		{"streamingConnectionIdleTimeout", cfg.StreamingConnectionIdleTimeout},
		{"volumeStatsAggPeriod", cfg.VolumeStatsAggPeriod},
		{"evictionPressureTransitionPeriod", cfg.EvictionPressureTransitionPeriod},
	} {
		if d.val.Duration <= 0 {
			errs = append(errs, field.Invalid(p(d.name), d.val.Duration.String(), "must be greater than 0"))
		}
	}
	// Durations that may be zero but not negative.
	for _, d := range []struct {
		path *field.Path
		val  time.Duration
	}{
		{p("imageMinimumGCAge"), cfg.ImageMinimumGCAge.Duration},
		{p("imageMaximumGCAge"), cfg.ImageMaximumGCAge.Duration},
		{p("authentication", "webhook", "cacheTTL"), cfg.Authentication.Webhook.CacheTTL.Duration},
		{p("authorization", "webhook", "cacheAuthorizedTTL"), cfg.Authorization.Webhook.CacheAuthorizedTTL.Duration},
		{p("authorization", "webhook", "cacheUnauthorizedTTL"), cfg.Authorization.Webhook.CacheUnauthorizedTTL.Duration},
	} {
		if d.val < 0 {
			errs = append(errs, field.Invalid(d.path, d.val.String(), "must not be negative"))
		}
	}
	if cfg.ImageMaximumGCAge.Duration > 0 && cfg.ImageMaximumGCAge.Duration <= cfg.ImageMinimumGCAge.Duration {
		errs = append(errs, field.Invalid(p("imageMaximumGCAge"), cfg.ImageMaximumGCAge.Duration.String(),
			fmt.Sprintf("must be greater than imageMinimumGCAge (%s)", cfg.ImageMinimumGCAge.Duration)))
	}
	if cfg.NodeLeaseDurationSeconds <= 0 {
		errs = append(errs, field.Invalid(p("nodeLeaseDurationSeconds"), cfg.NodeLeaseDurationSeconds, "must be greater than 0"))
	}

	// Image GC thresholds.
	high, low := cfg.ImageGCHighThresholdPercent, cfg.ImageGCLowThresholdPercent
	highOK := high == nil || validPercent(*high)
	lowOK := low == nil || validPercent(*low)
	if !highOK {
		errs = append(errs, field.Invalid(p("imageGCHighThresholdPercent"), *high, "must be between 0 and 100, inclusive"))
	}
	if !lowOK {
		errs = append(errs, field.Invalid(p("imageGCLowThresholdPercent"), *low, "must be between 0 and 100, inclusive"))
	}
	if highOK && lowOK && high != nil && low != nil && *low >= *high {
		errs = append(errs, field.Invalid(p("imageGCLowThresholdPercent"), *low,
			fmt.Sprintf("must be less than imageGCHighThresholdPercent (%d)", *high)))
	}

	// Cgroups and resources.
	if cfg.CgroupDriver != "cgroupfs" && cfg.CgroupDriver != "systemd" {
		errs = append(errs, field.NotSupported(p("cgroupDriver"), cfg.CgroupDriver, []string{"cgroupfs", "systemd"}))
	}
	if cfg.SystemCgroups != "" && cfg.CgroupRoot == "" {
		errs = append(errs, field.Invalid(p("systemCgroups"), cfg.SystemCgroups, "requires cgroupRoot to be set"))
	}
	if cfg.SystemCgroups != "" && filepath.Clean("/"+cfg.SystemCgroups) == "/" {
		// Upstream's container manager refuses it at start.
		errs = append(errs, field.Invalid(p("systemCgroups"), cfg.SystemCgroups, "the system cgroup cannot be the root (\"/\")"))
	}
	errs = append(errs, nonNegative(p("maxPods"), int64(cfg.MaxPods))...)
	errs = append(errs, nonNegative(p("podsPerCore"), int64(cfg.PodsPerCore))...)
	errs = append(errs, nonNegative(p("maxOpenFiles"), cfg.MaxOpenFiles)...)
	if cfg.PodPidsLimit != nil && *cfg.PodPidsLimit < -1 {
		errs = append(errs, field.Invalid(p("podPidsLimit"), *cfg.PodPidsLimit, "must be -1 or greater"))
	}
	if cfg.NodeStatusMaxImages != nil && *cfg.NodeStatusMaxImages < -1 {
		errs = append(errs, field.Invalid(p("nodeStatusMaxImages"), *cfg.NodeStatusMaxImages, "must be -1 or greater"))
	}
	if cfg.OOMScoreAdj != nil && (*cfg.OOMScoreAdj < -1000 || *cfg.OOMScoreAdj > 1000) {
		errs = append(errs, field.Invalid(p("oomScoreAdj"), *cfg.OOMScoreAdj, "must be between -1000 and 1000, inclusive"))
	}
	for _, b := range []struct {
		name string
		val  *int32
	}{{"iptablesMasqueradeBit", cfg.IPTablesMasqueradeBit}, {"iptablesDropBit", cfg.IPTablesDropBit}} {
		if b.val != nil && (*b.val < 0 || *b.val > 31) {
			errs = append(errs, field.Invalid(p(b.name), *b.val, "must be between 0 and 31, inclusive"))
		}
	}
	if cfg.MemoryThrottlingFactor != nil && (*cfg.MemoryThrottlingFactor <= 0 || *cfg.MemoryThrottlingFactor > 1) {
		errs = append(errs, field.Invalid(p("memoryThrottlingFactor"), *cfg.MemoryThrottlingFactor, "must be greater than 0 and at most 1.0"))
	}
	errs = append(errs, validateEnforceNodeAllocatable(p("enforceNodeAllocatable"), cfg)...)
	errs = append(errs, validateReserved(p("kubeReserved"), cfg.KubeReserved)...)
	errs = append(errs, validateReserved(p("systemReserved"), cfg.SystemReserved)...)
	if cfg.TopologyManagerPolicy != "" {
		allowed := []string{"none", "best-effort", "restricted", "single-numa-node"}
		if !contains(allowed, cfg.TopologyManagerPolicy) {
			errs = append(errs, field.NotSupported(p("topologyManagerPolicy"), cfg.TopologyManagerPolicy, allowed))
		}
	}
	if cfg.TopologyManagerScope != "" {
		allowed := []string{"container", "pod"}
		if !contains(allowed, cfg.TopologyManagerScope) {
			errs = append(errs, field.NotSupported(p("topologyManagerScope"), cfg.TopologyManagerScope, allowed))
		}
	}

	// Eviction.
	errs = append(errs, validateThresholds(p("evictionHard"), cfg.EvictionHard, false)...)
	errs = append(errs, validateThresholds(p("evictionSoft"), cfg.EvictionSoft, false)...)
	for _, sig := range sortedKeys(cfg.EvictionSoftGracePeriod) {
		fp := p("evictionSoftGracePeriod").Key(sig)
		if !isEvictionSignal(sig) {
			errs = append(errs, field.NotSupported(fp, sig, EvictionSignals))
			continue
		}
		d, err := time.ParseDuration(cfg.EvictionSoftGracePeriod[sig])
		if err != nil || d < 0 {
			errs = append(errs, field.Invalid(fp, cfg.EvictionSoftGracePeriod[sig], "must be a non-negative duration such as 1m30s"))
		}
	}
	for _, sig := range sortedKeys(cfg.EvictionSoft) {
		if _, ok := cfg.EvictionSoftGracePeriod[sig]; !ok && isEvictionSignal(sig) {
			errs = append(errs, field.Required(p("evictionSoftGracePeriod").Key(sig), "a grace period is required for every evictionSoft signal"))
		}
	}
	errs = append(errs, validateThresholds(p("evictionMinimumReclaim"), cfg.EvictionMinimumReclaim, true)...)
	errs = append(errs, nonNegative(p("evictionMaxPodGracePeriod"), int64(cfg.EvictionMaxPodGracePeriod))...)

	// Pod sources.
	if cfg.StaticPodURL != "" {
		u, err := url.Parse(cfg.StaticPodURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, field.Invalid(p("staticPodURL"), cfg.StaticPodURL, "must be an absolute http or https URL"))
		}
	}
	for _, name := range sortedKeys(cfg.StaticPodURLHeader) {
		for _, msg := range utilvalidation.IsHTTPHeaderName(name) {
			errs = append(errs, field.Invalid(p("staticPodURLHeader").Key(name), name, msg))
		}
	}

	// Runtime.
	if cfg.ContainerRuntimeEndpoint == "" {
		errs = append(errs, field.Required(p("containerRuntimeEndpoint"), "the CRI runtime endpoint must be set"))
	} else {
		errs = append(errs, validateEndpoint(p("containerRuntimeEndpoint"), cfg.ContainerRuntimeEndpoint)...)
	}
	if cfg.ImageServiceEndpoint != "" {
		errs = append(errs, validateEndpoint(p("imageServiceEndpoint"), cfg.ImageServiceEndpoint)...)
	}
	hairpin := []string{kubeletv1beta1.PromiscuousBridge, kubeletv1beta1.HairpinVeth, kubeletv1beta1.HairpinNone}
	if !contains(hairpin, cfg.HairpinMode) {
		errs = append(errs, field.NotSupported(p("hairpinMode"), cfg.HairpinMode, hairpin))
	}

	// Logs.
	if q, err := resource.ParseQuantity(cfg.ContainerLogMaxSize); err != nil || q.Sign() <= 0 {
		errs = append(errs, field.Invalid(p("containerLogMaxSize"), cfg.ContainerLogMaxSize, "must be a positive quantity such as 10Mi"))
	}
	if cfg.ContainerLogMaxFiles != nil && *cfg.ContainerLogMaxFiles < 2 {
		errs = append(errs, field.Invalid(p("containerLogMaxFiles"), *cfg.ContainerLogMaxFiles, "must be greater than 1"))
	}
	if cfg.ContainerLogMaxWorkers != nil && *cfg.ContainerLogMaxWorkers < 1 {
		errs = append(errs, field.Invalid(p("containerLogMaxWorkers"), *cfg.ContainerLogMaxWorkers, "must be at least 1"))
	}
	if cfg.ContainerLogMonitorInterval != nil && cfg.ContainerLogMonitorInterval.Duration < 3*time.Second {
		errs = append(errs, field.Invalid(p("containerLogMonitorInterval"), cfg.ContainerLogMonitorInterval.Duration.String(), "must be at least 3s"))
	}
	switch {
	case cfg.PodLogsDir == "":
		errs = append(errs, field.Required(p("podLogsDir"), "must be set"))
	case !filepath.IsAbs(cfg.PodLogsDir):
		errs = append(errs, field.Invalid(p("podLogsDir"), cfg.PodLogsDir, "must be an absolute path"))
	case filepath.Clean(cfg.PodLogsDir) != cfg.PodLogsDir:
		errs = append(errs, field.Invalid(p("podLogsDir"), cfg.PodLogsDir, "must be a normalized path"))
	}

	// Cluster DNS.
	for i, ip := range cfg.ClusterDNS {
		if net.ParseIP(ip) == nil {
			errs = append(errs, field.Invalid(p("clusterDNS").Index(i), ip, "must be an IP address"))
		}
	}
	if cfg.ClusterDomain != "" {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(strings.TrimSuffix(cfg.ClusterDomain, ".")) {
			errs = append(errs, field.Invalid(p("clusterDomain"), cfg.ClusterDomain, msg))
		}
	}

	// Pod security.
	for i, pattern := range cfg.AllowedUnsafeSysctls {
		if err := admission.CheckSysctlPattern(pattern); err != nil {
			errs = append(errs, field.Invalid(p("allowedUnsafeSysctls").Index(i), pattern, err.Error()))
		}
	}

	// Node registration.
	errs = append(errs, ValidateTaints(p("registerWithTaints"), cfg.RegisterWithTaints)...)

	// Server security.
	modes := []string{string(kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow), string(kubeletv1beta1.KubeletAuthorizationModeWebhook)}
	if !contains(modes, string(cfg.Authorization.Mode)) {
		errs = append(errs, field.NotSupported(p("authorization", "mode"), cfg.Authorization.Mode, modes))
	}
	if (cfg.TLSCertFile == "") != (cfg.TLSPrivateKeyFile == "") {
		errs = append(errs, field.Invalid(p("tlsCertFile"), cfg.TLSCertFile, "tlsCertFile and tlsPrivateKeyFile must be set together"))
	}
	errs = append(errs, validateTLS(cfg)...)
	if cfg.RunOnce {
		errs = append(errs, field.Forbidden(p("runOnce"), "run-once mode is deprecated and not supported"))
	}
	return errs
}

// validateTLS checks tlsCipherSuites and tlsMinVersion as upstream: known
// IANA names, and no cipher suites with TLS 1.3 only (Go does not let
// them be chosen).
func validateTLS(cfg *kubeletv1beta1.KubeletConfiguration) field.ErrorList {
	var errs field.ErrorList
	for i, name := range cfg.TLSCipherSuites {
		if _, err := cliflag.TLSCipherSuites([]string{name}); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("tlsCipherSuites").Index(i), name, "unknown or unsupported cipher suite"))
		}
	}
	if cfg.TLSMinVersion != "" {
		v, err := cliflag.TLSVersion(cfg.TLSMinVersion)
		if err != nil {
			errs = append(errs, field.NotSupported(field.NewPath("tlsMinVersion"), cfg.TLSMinVersion, cliflag.TLSPossibleVersions()))
		} else if v == tls.VersionTLS13 && len(cfg.TLSCipherSuites) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("tlsCipherSuites"), cfg.TLSCipherSuites, "may not be set when tlsMinVersion is VersionTLS13"))
		}
	}
	return errs
}

func validPercent(v int32) bool { return v >= 0 && v <= 100 }

func validatePort(fp *field.Path, port int32, min int32) field.ErrorList {
	if port < min || port > 65535 {
		return field.ErrorList{field.Invalid(fp, port, fmt.Sprintf("must be between %d and 65535", min))}
	}
	return nil
}

func validateIP(fp *field.Path, s string) field.ErrorList {
	if net.ParseIP(s) == nil {
		return field.ErrorList{field.Invalid(fp, s, "must be an IP address")}
	}
	return nil
}

func nonNegative(fp *field.Path, v int64) field.ErrorList {
	if v < 0 {
		return field.ErrorList{field.Invalid(fp, v, "must not be negative")}
	}
	return nil
}

func nonNegativePtr(fp *field.Path, v *int32) field.ErrorList {
	if v == nil {
		return nil
	}
	return nonNegative(fp, int64(*v))
}

func validateEndpoint(fp *field.Path, ep string) field.ErrorList {
	u, err := url.Parse(ep)
	if err != nil {
		return field.ErrorList{field.Invalid(fp, ep, err.Error())}
	}
	switch u.Scheme {
	case "unix":
		if u.Path == "" && u.Host == "" {
			return field.ErrorList{field.Invalid(fp, ep, "unix endpoint needs a socket path, e.g. unix:///run/containerd/containerd.sock")}
		}
	case "tcp", "npipe":
		if u.Host == "" && u.Path == "" {
			return field.ErrorList{field.Invalid(fp, ep, "endpoint needs an address")}
		}
	default:
		return field.ErrorList{field.Invalid(fp, ep, "must be a URL with scheme unix, tcp or npipe, e.g. unix:///run/containerd/containerd.sock")}
	}
	return nil
}

// ValidateEvictionThreshold checks one signal/value pair of an eviction map:
// the signal must be known, the value a positive quantity (100Mi) or a
// percentage between 0% and 100%. allowZero admits a zero quantity (as
// evictionMinimumReclaim does).
func ValidateEvictionThreshold(fp *field.Path, signal, value string, allowZero bool) field.ErrorList {
	if !isEvictionSignal(signal) {
		return field.ErrorList{field.NotSupported(fp, signal, EvictionSignals)}
	}
	if strings.HasSuffix(value, "%") {
		f, err := strconv.ParseFloat(strings.TrimSuffix(value, "%"), 32)
		if err != nil {
			return field.ErrorList{field.Invalid(fp, value, "must be a quantity (e.g. 100Mi) or a percentage (e.g. 10%)")}
		}
		if f < 0 || f > 100 {
			return field.ErrorList{field.Invalid(fp, value, "percentage must be between 0% and 100%")}
		}
		return nil
	}
	q, err := resource.ParseQuantity(value)
	if err != nil {
		return field.ErrorList{field.Invalid(fp, value, "must be a quantity (e.g. 100Mi) or a percentage (e.g. 10%)")}
	}
	if q.Sign() < 0 || (q.Sign() == 0 && !allowZero) {
		if allowZero {
			return field.ErrorList{field.Invalid(fp, value, "must not be negative")}
		}
		return field.ErrorList{field.Invalid(fp, value, "must be positive")}
	}
	return nil
}

func validateThresholds(fp *field.Path, m map[string]string, allowZero bool) field.ErrorList {
	var errs field.ErrorList
	for _, sig := range sortedKeys(m) {
		errs = append(errs, ValidateEvictionThreshold(fp.Key(sig), sig, m[sig], allowZero)...)
	}
	return errs
}

func validateReserved(fp *field.Path, m map[string]string) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedKeys(m) {
		q, err := resource.ParseQuantity(m[name])
		if err != nil {
			errs = append(errs, field.Invalid(fp.Key(name), m[name], "must be a quantity such as 100m or 1Gi"))
		} else if q.Sign() < 0 {
			errs = append(errs, field.Invalid(fp.Key(name), m[name], "must not be negative"))
		}
		if name != string(v1.ResourcePods) && len(utilvalidation.IsQualifiedName(name)) > 0 {
			errs = append(errs, field.Invalid(fp.Key(name), name, "must be a resource name such as cpu, memory, ephemeral-storage or pid"))
		}
	}
	return errs
}

// ValidateTaints checks the keys, values and effects of taints.
func ValidateTaints(fp *field.Path, taints []v1.Taint) field.ErrorList {
	var errs field.ErrorList
	effects := []string{string(v1.TaintEffectNoSchedule), string(v1.TaintEffectPreferNoSchedule), string(v1.TaintEffectNoExecute)}
	for i, t := range taints {
		ip := fp.Index(i)
		for _, msg := range utilvalidation.IsQualifiedName(t.Key) {
			errs = append(errs, field.Invalid(ip.Child("key"), t.Key, msg))
		}
		for _, msg := range utilvalidation.IsValidLabelValue(t.Value) {
			errs = append(errs, field.Invalid(ip.Child("value"), t.Value, msg))
		}
		if !contains(effects, string(t.Effect)) {
			errs = append(errs, field.NotSupported(ip.Child("effect"), t.Effect, effects))
		}
		if t.TimeAdded != nil {
			errs = append(errs, field.Forbidden(ip.Child("timeAdded"), "must not be set"))
		}
	}
	return errs
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// validateEnforceNodeAllocatable checks enforceNodeAllocatable as upstream:
// known values, "none" alone, a reserved cgroup named for each reservation
// enforced, and the pods hierarchy (cgroupsPerQOS) for "pods".
func validateEnforceNodeAllocatable(fp *field.Path, cfg *kubeletv1beta1.KubeletConfiguration) field.ErrorList {
	var errs field.ErrorList
	allowed := []string{"pods", "kube-reserved", "system-reserved", "kube-reserved-compressible", "system-reserved-compressible", "none"}
	for i, v := range cfg.EnforceNodeAllocatable {
		switch {
		case !contains(allowed, v):
			errs = append(errs, field.NotSupported(fp.Index(i), v, allowed))
		case v == "none" && len(cfg.EnforceNodeAllocatable) > 1:
			errs = append(errs, field.Invalid(fp.Index(i), v, "'none' cannot be combined with other values"))
		case (v == "kube-reserved" || v == "kube-reserved-compressible") && cfg.KubeReservedCgroup == "":
			errs = append(errs, field.Required(field.NewPath("kubeReservedCgroup"), "required when enforceNodeAllocatable has "+v))
		case (v == "system-reserved" || v == "system-reserved-compressible") && cfg.SystemReservedCgroup == "":
			errs = append(errs, field.Required(field.NewPath("systemReservedCgroup"), "required when enforceNodeAllocatable has "+v))
		case v == "pods" && cfg.CgroupsPerQOS != nil && !*cfg.CgroupsPerQOS:
			errs = append(errs, field.Invalid(fp.Index(i), v, "enforcing node allocatable on pods requires cgroupsPerQOS"))
		}
	}
	return errs
}
