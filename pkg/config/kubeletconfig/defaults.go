package kubeletconfig

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logsapi "k8s.io/component-base/logs/api/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
)

// Default values that other packages may want to refer to.
const (
	DefaultRootDir                  = "/var/lib/kubelet"
	DefaultContainerRuntimeEndpoint = "unix:///run/containerd/containerd.sock"
	DefaultPodLogsDir               = "/var/log/pods"
	DefaultResolvConf               = "/etc/resolv.conf"
	DefaultVolumePluginDir          = "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/"
	DefaultCgroupRoot               = "/"
	// DefaultMaxStreamsPerCaller bounds the container log and stream
	// requests one caller of the kubelet API has open at once.
	DefaultMaxStreamsPerCaller = 100
)

// DefaultEvictionHard returns the hard eviction thresholds used when the
// file sets none (Linux values of the upstream kubelet). With
// mergeDefaultEvictionSettings: true, missing signals of a set map are
// filled from these.
func DefaultEvictionHard() map[string]string {
	return map[string]string{
		"memory.available":   "100Mi",
		"nodefs.available":   "10%",
		"nodefs.inodesFree":  "5%",
		"imagefs.available":  "15%",
		"imagefs.inodesFree": "5%",
	}
}

// NewDefaultConfig returns the configuration used without --config: the
// empty KubeletConfiguration with defaults applied.
func NewDefaultConfig() *kubeletv1beta1.KubeletConfiguration {
	cfg := &kubeletv1beta1.KubeletConfiguration{}
	cfg.APIVersion = GroupVersion
	cfg.Kind = Kind
	SetDefaults(cfg)
	return cfg
}

func setDuration(d *metav1.Duration, v time.Duration) {
	if d.Duration == 0 {
		d.Duration = v
	}
}

func setInt32(p *int32, v int32) {
	if *p == 0 {
		*p = v
	}
}

func setString(p *string, v string) {
	if *p == "" {
		*p = v
	}
}

// SetDefaults fills every unset field of cfg with the upstream v1beta1
// default (the values of Kubernetes v1.37 on Linux), plus the defaults this
// kubelet adds: cgroupRoot "/" and evictionHard when absent. Fields whose
// upstream default depends on a feature gate that is off by default are
// left unset. SetDefaults is idempotent.
func SetDefaults(cfg *kubeletv1beta1.KubeletConfiguration) {
	if cfg.EnableServer == nil {
		cfg.EnableServer = ptr.To(true)
	}
	setDuration(&cfg.SyncFrequency, time.Minute)
	setDuration(&cfg.FileCheckFrequency, 20*time.Second)
	setDuration(&cfg.HTTPCheckFrequency, 20*time.Second)
	setString(&cfg.Address, "0.0.0.0")
	setInt32(&cfg.Port, 10250)

	authn := &cfg.Authentication
	if authn.Anonymous.Enabled == nil {
		authn.Anonymous.Enabled = ptr.To(false)
	}
	if authn.Webhook.Enabled == nil {
		authn.Webhook.Enabled = ptr.To(true)
	}
	setDuration(&authn.Webhook.CacheTTL, 2*time.Minute)
	authz := &cfg.Authorization
	if authz.Mode == "" {
		authz.Mode = kubeletv1beta1.KubeletAuthorizationModeWebhook
	}
	setDuration(&authz.Webhook.CacheAuthorizedTTL, 5*time.Minute)
	setDuration(&authz.Webhook.CacheUnauthorizedTTL, 30*time.Second)

	if cfg.RegistryPullQPS == nil {
		cfg.RegistryPullQPS = ptr.To[int32](5)
	}
	setInt32(&cfg.RegistryBurst, 10)
	if cfg.EventRecordQPS == nil {
		cfg.EventRecordQPS = ptr.To[int32](50)
	}
	setInt32(&cfg.EventBurst, 100)
	if cfg.EnableDebuggingHandlers == nil {
		cfg.EnableDebuggingHandlers = ptr.To(true)
	}
	if cfg.HealthzPort == nil {
		cfg.HealthzPort = ptr.To[int32](10248)
	}
	setString(&cfg.HealthzBindAddress, "127.0.0.1")
	if cfg.OOMScoreAdj == nil {
		cfg.OOMScoreAdj = ptr.To[int32](-999)
	}
	setDuration(&cfg.StreamingConnectionIdleTimeout, 4*time.Hour)
	// The report frequency follows an explicitly set update frequency.
	if cfg.NodeStatusReportFrequency.Duration == 0 {
		if cfg.NodeStatusUpdateFrequency.Duration == 0 {
			cfg.NodeStatusReportFrequency.Duration = 5 * time.Minute
		} else {
			cfg.NodeStatusReportFrequency = cfg.NodeStatusUpdateFrequency
		}
	}
	setDuration(&cfg.NodeStatusUpdateFrequency, 10*time.Second)
	setInt32(&cfg.NodeLeaseDurationSeconds, 40)
	setDuration(&cfg.ImageMinimumGCAge, 2*time.Minute)
	if cfg.ImageGCHighThresholdPercent == nil {
		cfg.ImageGCHighThresholdPercent = ptr.To[int32](85)
	}
	if cfg.ImageGCLowThresholdPercent == nil {
		cfg.ImageGCLowThresholdPercent = ptr.To[int32](80)
	}
	setDuration(&cfg.VolumeStatsAggPeriod, time.Minute)
	if cfg.CgroupsPerQOS == nil {
		cfg.CgroupsPerQOS = ptr.To(true)
	}
	setString(&cfg.CgroupRoot, DefaultCgroupRoot)
	setString(&cfg.CgroupDriver, "cgroupfs")
	setString(&cfg.CPUManagerPolicy, "none")
	setDuration(&cfg.CPUManagerReconcilePeriod, 10*time.Second)
	setString(&cfg.MemoryManagerPolicy, kubeletv1beta1.NoneMemoryManagerPolicy)
	setString(&cfg.TopologyManagerPolicy, kubeletv1beta1.NoneTopologyManagerPolicy)
	setString(&cfg.TopologyManagerScope, kubeletv1beta1.ContainerTopologyManagerScope)
	setDuration(&cfg.RuntimeRequestTimeout, 2*time.Minute)
	setString(&cfg.HairpinMode, kubeletv1beta1.PromiscuousBridge)
	setInt32(&cfg.MaxPods, 110)
	if cfg.PodPidsLimit == nil || *cfg.PodPidsLimit < 0 {
		cfg.PodPidsLimit = ptr.To[int64](-1)
	}
	if cfg.ResolverConfig == nil {
		cfg.ResolverConfig = ptr.To(DefaultResolvConf)
	}
	if cfg.CPUCFSQuota == nil {
		cfg.CPUCFSQuota = ptr.To(true)
	}
	if cfg.CPUCFSQuotaPeriod == nil {
		cfg.CPUCFSQuotaPeriod = &metav1.Duration{Duration: 100 * time.Millisecond}
	}
	if cfg.NodeStatusMaxImages == nil {
		cfg.NodeStatusMaxImages = ptr.To[int32](50)
	}
	if cfg.MaxOpenFiles == 0 {
		cfg.MaxOpenFiles = 1000000
	}
	setString(&cfg.ContentType, "application/vnd.kubernetes.protobuf")
	if cfg.KubeAPIQPS == nil {
		cfg.KubeAPIQPS = ptr.To[int32](50)
	}
	setInt32(&cfg.KubeAPIBurst, 100)
	if cfg.SerializeImagePulls == nil {
		// Setting maxParallelImagePulls >= 2 alone switches to parallel pulls.
		cfg.SerializeImagePulls = ptr.To(cfg.MaxParallelImagePulls == nil || *cfg.MaxParallelImagePulls < 2)
	}
	if cfg.EvictionHard == nil {
		cfg.EvictionHard = DefaultEvictionHard()
	} else if cfg.MergeDefaultEvictionSettings != nil && *cfg.MergeDefaultEvictionSettings {
		for k, v := range DefaultEvictionHard() {
			if _, ok := cfg.EvictionHard[k]; !ok {
				cfg.EvictionHard[k] = v
			}
		}
	}
	setDuration(&cfg.EvictionPressureTransitionPeriod, 5*time.Minute)
	if cfg.MergeDefaultEvictionSettings == nil {
		cfg.MergeDefaultEvictionSettings = ptr.To(false)
	}
	if cfg.EnableControllerAttachDetach == nil {
		cfg.EnableControllerAttachDetach = ptr.To(true)
	}
	if cfg.MakeIPTablesUtilChains == nil {
		cfg.MakeIPTablesUtilChains = ptr.To(true)
	}
	if cfg.IPTablesMasqueradeBit == nil {
		cfg.IPTablesMasqueradeBit = ptr.To[int32](14)
	}
	if cfg.IPTablesDropBit == nil {
		cfg.IPTablesDropBit = ptr.To[int32](15)
	}
	if cfg.FailSwapOn == nil {
		cfg.FailSwapOn = ptr.To(true)
	}
	setString(&cfg.ContainerLogMaxSize, "10Mi")
	if cfg.ContainerLogMaxFiles == nil {
		cfg.ContainerLogMaxFiles = ptr.To[int32](5)
	}
	if cfg.ContainerLogMaxWorkers == nil {
		cfg.ContainerLogMaxWorkers = ptr.To[int32](1)
	}
	if cfg.ContainerLogMonitorInterval == nil {
		cfg.ContainerLogMonitorInterval = &metav1.Duration{Duration: 10 * time.Second}
	}
	if cfg.ConfigMapAndSecretChangeDetectionStrategy == "" {
		cfg.ConfigMapAndSecretChangeDetectionStrategy = kubeletv1beta1.WatchChangeDetectionStrategy
	}
	if cfg.EnforceNodeAllocatable == nil {
		cfg.EnforceNodeAllocatable = []string{"pods"}
	}
	setString(&cfg.VolumePluginDir, DefaultVolumePluginDir)
	logsapi.SetRecommendedLoggingConfiguration(&cfg.Logging)
	if cfg.EnableSystemLogHandler == nil {
		cfg.EnableSystemLogHandler = ptr.To(true)
	}
	if cfg.EnableProfilingHandler == nil {
		cfg.EnableProfilingHandler = ptr.To(true)
	}
	if cfg.EnableDebugFlagsHandler == nil {
		cfg.EnableDebugFlagsHandler = ptr.To(true)
	}
	if cfg.SeccompDefault == nil {
		cfg.SeccompDefault = ptr.To(false)
	}
	if cfg.FailCgroupV1 == nil {
		cfg.FailCgroupV1 = ptr.To(false)
	}
	// memoryThrottlingFactor has no default in 1.37 (nil: memory.high
	// is not set).
	if cfg.MemoryReservationPolicy == "" {
		cfg.MemoryReservationPolicy = kubeletv1beta1.NoneMemoryReservationPolicy
	}
	// Gate-dependent defaults of gates on by default, unless the file turns
	// the gate off (KubeletCrashLoopBackOffMax, KubeletEnsureSecretPulledImages;
	// Options.Settings then makes the latter follow the command line's gates
	// too: ensureSecretPulledImagesDefault).
	if cfg.FeatureGates["KubeletCrashLoopBackOffMax"] || !hasGate(cfg, "KubeletCrashLoopBackOffMax") {
		if cfg.CrashLoopBackOff.MaxContainerRestartPeriod == nil {
			cfg.CrashLoopBackOff.MaxContainerRestartPeriod = &metav1.Duration{Duration: 5 * time.Minute}
		}
	}
	if cfg.FeatureGates["KubeletEnsureSecretPulledImages"] || !hasGate(cfg, "KubeletEnsureSecretPulledImages") {
		if cfg.ImagePullCredentialsVerificationPolicy == "" {
			cfg.ImagePullCredentialsVerificationPolicy = kubeletv1beta1.NeverVerifyPreloadedImages
		}
	}
	if cfg.RegisterNode == nil {
		cfg.RegisterNode = ptr.To(true)
	}
	if cfg.LocalStorageCapacityIsolation == nil {
		cfg.LocalStorageCapacityIsolation = ptr.To(true)
	}
	setString(&cfg.ContainerRuntimeEndpoint, DefaultContainerRuntimeEndpoint)
	setString(&cfg.PodLogsDir, DefaultPodLogsDir)
}

func hasGate(cfg *kubeletv1beta1.KubeletConfiguration, name string) bool {
	_, ok := cfg.FeatureGates[name]
	return ok
}
