package kubeletconfig

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
)

func TestValidate(t *testing.T) {
	type mut func(c *kubeletv1beta1.KubeletConfiguration)
	tests := []struct {
		name string
		mut  mut
		want []string // substrings of the errors, in order; nil means valid
	}{
		{"defaults", func(c *kubeletv1beta1.KubeletConfiguration) {}, nil},
		{"port 0", func(c *kubeletv1beta1.KubeletConfiguration) { c.Port = 0 }, []string{"port: Invalid value: 0: must be between 1 and 65535"}},
		{"port too big", func(c *kubeletv1beta1.KubeletConfiguration) { c.Port = 65536 }, []string{"port: Invalid value: 65536"}},
		{"readOnlyPort", func(c *kubeletv1beta1.KubeletConfiguration) { c.ReadOnlyPort = -1 }, []string{"readOnlyPort: Invalid value: -1: must be between 0 and 65535"}},
		{"readOnlyPort enabled ok", func(c *kubeletv1beta1.KubeletConfiguration) { c.ReadOnlyPort = 10255 }, nil},
		{"healthzPort", func(c *kubeletv1beta1.KubeletConfiguration) { c.HealthzPort = ptr.To[int32](70000) },
			[]string{"healthzPort: Invalid value: 70000: must be between 0 and 65535"}},
		{"healthzPort 0 disables", func(c *kubeletv1beta1.KubeletConfiguration) { c.HealthzPort = ptr.To[int32](0) }, nil},
		{"address", func(c *kubeletv1beta1.KubeletConfiguration) { c.Address = "nope" }, []string{"address: Invalid value: \"nope\": must be an IP address"}},
		{"healthzBindAddress", func(c *kubeletv1beta1.KubeletConfiguration) { c.HealthzBindAddress = "localhost" }, []string{"healthzBindAddress"}},
		{"registryPullQPS", func(c *kubeletv1beta1.KubeletConfiguration) { c.RegistryPullQPS = ptr.To[int32](-1) }, []string{"registryPullQPS: Invalid value: -1: must not be negative"}},
		{"registryBurst", func(c *kubeletv1beta1.KubeletConfiguration) { c.RegistryBurst = -1 }, []string{"registryBurst"}},
		{"eventRecordQPS", func(c *kubeletv1beta1.KubeletConfiguration) { c.EventRecordQPS = ptr.To[int32](-1) }, []string{"eventRecordQPS"}},
		{"eventBurst", func(c *kubeletv1beta1.KubeletConfiguration) { c.EventBurst = -1 }, []string{"eventBurst"}},
		{"kubeAPIQPS", func(c *kubeletv1beta1.KubeletConfiguration) { c.KubeAPIQPS = ptr.To[int32](-5) }, []string{"kubeAPIQPS: Invalid value: -5"}},
		{"kubeAPIBurst", func(c *kubeletv1beta1.KubeletConfiguration) { c.KubeAPIBurst = -5 }, []string{"kubeAPIBurst"}},
		{"maxParallelImagePulls zero", func(c *kubeletv1beta1.KubeletConfiguration) { c.MaxParallelImagePulls = ptr.To[int32](0) }, []string{"maxParallelImagePulls: Invalid value: 0: must be a positive number"}},
		{"maxParallelImagePulls with serialized pulls", func(c *kubeletv1beta1.KubeletConfiguration) { c.MaxParallelImagePulls = ptr.To[int32](3) }, []string{"serializeImagePulls is false"}},
		{"maxParallelImagePulls parallel ok", func(c *kubeletv1beta1.KubeletConfiguration) {
			c.MaxParallelImagePulls = ptr.To[int32](3)
			c.SerializeImagePulls = ptr.To(false)
		}, nil},
		{"syncFrequency", func(c *kubeletv1beta1.KubeletConfiguration) { c.SyncFrequency = metav1.Duration{} }, []string{"syncFrequency: Invalid value: \"0s\": must be greater than 0"}},
		{"fileCheckFrequency", func(c *kubeletv1beta1.KubeletConfiguration) { c.FileCheckFrequency.Duration = -time.Second }, []string{"fileCheckFrequency"}},
		{"httpCheckFrequency", func(c *kubeletv1beta1.KubeletConfiguration) { c.HTTPCheckFrequency.Duration = 0 }, []string{"httpCheckFrequency"}},
		{"nodeStatusUpdateFrequency", func(c *kubeletv1beta1.KubeletConfiguration) { c.NodeStatusUpdateFrequency.Duration = 0 }, []string{"nodeStatusUpdateFrequency"}},
		{"nodeStatusReportFrequency", func(c *kubeletv1beta1.KubeletConfiguration) { c.NodeStatusReportFrequency.Duration = 0 }, []string{"nodeStatusReportFrequency"}},
		{"runtimeRequestTimeout", func(c *kubeletv1beta1.KubeletConfiguration) { c.RuntimeRequestTimeout.Duration = 0 }, []string{"runtimeRequestTimeout: Invalid value: \"0s\": must be greater than 0"}},
		{"imageMinimumGCAge negative", func(c *kubeletv1beta1.KubeletConfiguration) { c.ImageMinimumGCAge.Duration = -time.Second }, []string{"imageMinimumGCAge"}},
		{"imageMaximumGCAge below minimum", func(c *kubeletv1beta1.KubeletConfiguration) { c.ImageMaximumGCAge.Duration = time.Minute }, []string{"imageMaximumGCAge"}},
		{"authn cacheTTL negative", func(c *kubeletv1beta1.KubeletConfiguration) { c.Authentication.Webhook.CacheTTL.Duration = -1 }, []string{"authentication.webhook.cacheTTL"}},
		{"nodeLeaseDurationSeconds", func(c *kubeletv1beta1.KubeletConfiguration) { c.NodeLeaseDurationSeconds = -1 }, []string{"nodeLeaseDurationSeconds: Invalid value: -1: must be greater than 0"}},
		{"imageGC high > 100", func(c *kubeletv1beta1.KubeletConfiguration) { c.ImageGCHighThresholdPercent = ptr.To[int32](101) }, []string{"imageGCHighThresholdPercent: Invalid value: 101: must be between 0 and 100"}},
		{"imageGC low < 0", func(c *kubeletv1beta1.KubeletConfiguration) { c.ImageGCLowThresholdPercent = ptr.To[int32](-1) }, []string{"imageGCLowThresholdPercent: Invalid value: -1"}},
		{"imageGC low >= high", func(c *kubeletv1beta1.KubeletConfiguration) { c.ImageGCLowThresholdPercent = ptr.To[int32](85) }, []string{"imageGCLowThresholdPercent: Invalid value: 85: must be less than imageGCHighThresholdPercent (85)"}},
		{"cgroupDriver", func(c *kubeletv1beta1.KubeletConfiguration) { c.CgroupDriver = "cgroupfs2" }, []string{"cgroupDriver: Unsupported value: \"cgroupfs2\""}},
		{"cgroupDriver systemd ok", func(c *kubeletv1beta1.KubeletConfiguration) { c.CgroupDriver = "systemd" }, nil},
		{"systemCgroups without cgroupRoot", func(c *kubeletv1beta1.KubeletConfiguration) { c.SystemCgroups = "/system"; c.CgroupRoot = "" }, []string{"systemCgroups"}},
		{"maxPods", func(c *kubeletv1beta1.KubeletConfiguration) { c.MaxPods = -1 }, []string{"maxPods: Invalid value: -1: must not be negative"}},
		{"maxPods zero ok", func(c *kubeletv1beta1.KubeletConfiguration) { c.MaxPods = 0 }, nil},
		{"podsPerCore", func(c *kubeletv1beta1.KubeletConfiguration) { c.PodsPerCore = -1 }, []string{"podsPerCore"}},
		{"podPidsLimit", func(c *kubeletv1beta1.KubeletConfiguration) { c.PodPidsLimit = ptr.To[int64](-2) }, []string{"podPidsLimit"}},
		{"oomScoreAdj", func(c *kubeletv1beta1.KubeletConfiguration) { c.OOMScoreAdj = ptr.To[int32](1001) }, []string{"oomScoreAdj"}},
		{"iptablesDropBit", func(c *kubeletv1beta1.KubeletConfiguration) { c.IPTablesDropBit = ptr.To[int32](32) }, []string{"iptablesDropBit"}},
		{"memoryThrottlingFactor", func(c *kubeletv1beta1.KubeletConfiguration) { c.MemoryThrottlingFactor = ptr.To(1.5) }, []string{"memoryThrottlingFactor"}},
		{"kubeReserved bad quantity", func(c *kubeletv1beta1.KubeletConfiguration) { c.KubeReserved = map[string]string{"cpu": "lots"} }, []string{"kubeReserved[cpu]: Invalid value: \"lots\""}},
		{"systemReserved negative", func(c *kubeletv1beta1.KubeletConfiguration) { c.SystemReserved = map[string]string{"memory": "-1Gi"} }, []string{"systemReserved[memory]"}},
		{"reserved ok", func(c *kubeletv1beta1.KubeletConfiguration) {
			c.SystemReserved = map[string]string{"memory": "1Gi", "cpu": "500m", "ephemeral-storage": "1Gi", "pid": "1000"}
		}, nil},
		{"topologyManagerPolicy", func(c *kubeletv1beta1.KubeletConfiguration) { c.TopologyManagerPolicy = "best" }, []string{"topologyManagerPolicy"}},
		{"evictionHard unknown signal", func(c *kubeletv1beta1.KubeletConfiguration) {
			c.EvictionHard = map[string]string{"disk.available": "10%"}
		},
			[]string{"evictionHard[disk.available]: Unsupported value: \"disk.available\""}},
		{"evictionHard bad quantity", func(c *kubeletv1beta1.KubeletConfiguration) {
			c.EvictionHard = map[string]string{"memory.available": "lots"}
		}, []string{"evictionHard[memory.available]: Invalid value: \"lots\""}},
		{"evictionHard zero", func(c *kubeletv1beta1.KubeletConfiguration) {
			c.EvictionHard = map[string]string{"memory.available": "0"}
		}, []string{"must be positive"}},
		{"evictionHard percent > 100", func(c *kubeletv1beta1.KubeletConfiguration) {
			c.EvictionHard = map[string]string{"nodefs.available": "110%"}
		}, []string{"evictionHard[nodefs.available]"}},
		{"evictionHard bad percent", func(c *kubeletv1beta1.KubeletConfiguration) {
			c.EvictionHard = map[string]string{"nodefs.available": "x%"}
		}, []string{"evictionHard[nodefs.available]"}},
		{"evictionHard all signals ok", func(c *kubeletv1beta1.KubeletConfiguration) {
			c.EvictionHard = map[string]string{"memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%",
				"imagefs.available": "15%", "imagefs.inodesFree": "5%", "pid.available": "10%", "allocatableMemory.available": "1Gi"}
		}, nil},
		{"evictionSoft without grace period", func(c *kubeletv1beta1.KubeletConfiguration) {
			c.EvictionSoft = map[string]string{"memory.available": "1Gi"}
		}, []string{"evictionSoftGracePeriod[memory.available]: Required value"}},
		{"evictionSoft with grace period ok", func(c *kubeletv1beta1.KubeletConfiguration) {
			c.EvictionSoft = map[string]string{"memory.available": "1Gi"}
			c.EvictionSoftGracePeriod = map[string]string{"memory.available": "1m30s"}
		}, nil},
		{"evictionSoftGracePeriod bad duration", func(c *kubeletv1beta1.KubeletConfiguration) {
			c.EvictionSoftGracePeriod = map[string]string{"memory.available": "soon"}
		}, []string{"evictionSoftGracePeriod[memory.available]: Invalid value: \"soon\""}},
		{"evictionMinimumReclaim zero ok", func(c *kubeletv1beta1.KubeletConfiguration) {
			c.EvictionMinimumReclaim = map[string]string{"memory.available": "0"}
		}, nil},
		{"evictionMinimumReclaim negative", func(c *kubeletv1beta1.KubeletConfiguration) {
			c.EvictionMinimumReclaim = map[string]string{"memory.available": "-1Mi"}
		}, []string{"evictionMinimumReclaim[memory.available]"}},
		{"staticPodURL", func(c *kubeletv1beta1.KubeletConfiguration) { c.StaticPodURL = "not a url" }, []string{"staticPodURL: Invalid value: \"not a url\""}},
		{"staticPodURL no scheme", func(c *kubeletv1beta1.KubeletConfiguration) { c.StaticPodURL = "example.com/pods" }, []string{"staticPodURL"}},
		{"staticPodURL ok", func(c *kubeletv1beta1.KubeletConfiguration) { c.StaticPodURL = "https://example.com/pods.yaml" }, nil},
		{"staticPodURLHeader bad name", func(c *kubeletv1beta1.KubeletConfiguration) {
			c.StaticPodURLHeader = map[string][]string{"bad header": {"x"}}
		}, []string{"staticPodURLHeader[bad header]"}},
		{"containerRuntimeEndpoint empty", func(c *kubeletv1beta1.KubeletConfiguration) { c.ContainerRuntimeEndpoint = "" }, []string{"containerRuntimeEndpoint: Required value"}},
		{"containerRuntimeEndpoint scheme", func(c *kubeletv1beta1.KubeletConfiguration) { c.ContainerRuntimeEndpoint = "http://x" }, []string{"containerRuntimeEndpoint: Invalid value"}},
		{"imageServiceEndpoint", func(c *kubeletv1beta1.KubeletConfiguration) { c.ImageServiceEndpoint = "/run/x.sock" }, []string{"imageServiceEndpoint"}},
		{"hairpinMode", func(c *kubeletv1beta1.KubeletConfiguration) { c.HairpinMode = "on" }, []string{"hairpinMode: Unsupported value"}},
		{"containerLogMaxSize", func(c *kubeletv1beta1.KubeletConfiguration) { c.ContainerLogMaxSize = "big" }, []string{"containerLogMaxSize"}},
		{"containerLogMaxFiles", func(c *kubeletv1beta1.KubeletConfiguration) { c.ContainerLogMaxFiles = ptr.To[int32](1) }, []string{"containerLogMaxFiles: Invalid value: 1: must be greater than 1"}},
		{"podLogsDir relative", func(c *kubeletv1beta1.KubeletConfiguration) { c.PodLogsDir = "logs" }, []string{"podLogsDir: Invalid value: \"logs\": must be an absolute path"}},
		{"podLogsDir unclean", func(c *kubeletv1beta1.KubeletConfiguration) { c.PodLogsDir = "/var/log/../pods/" }, []string{"podLogsDir"}},
		{"clusterDNS", func(c *kubeletv1beta1.KubeletConfiguration) { c.ClusterDNS = []string{"10.0.0.10", "dns"} }, []string{"clusterDNS[1]: Invalid value: \"dns\""}},
		{"clusterDomain", func(c *kubeletv1beta1.KubeletConfiguration) { c.ClusterDomain = "Cluster_Local" }, []string{"clusterDomain"}},
		{"clusterDomain ok", func(c *kubeletv1beta1.KubeletConfiguration) {
			c.ClusterDomain = "cluster.local"
			c.ClusterDNS = []string{"10.96.0.10", "fd00::a"}
		}, nil},
		{"allowedUnsafeSysctls", func(c *kubeletv1beta1.KubeletConfiguration) {
			c.AllowedUnsafeSysctls = []string{"kernel.msg*", "net.core.somaxconn", "kernel.modprobe", "Bad!"}
		}, []string{"allowedUnsafeSysctls[2]: Invalid value: \"kernel.modprobe\": the sysctls \"kernel.modprobe\" are not known to be namespaced", "allowedUnsafeSysctls[3]"}},
		{"registerWithTaints effect", func(c *kubeletv1beta1.KubeletConfiguration) {
			c.RegisterWithTaints = []v1.Taint{{Key: "a", Effect: "Never"}}
		}, []string{"registerWithTaints[0].effect: Unsupported value: \"Never\""}},
		{"registerWithTaints key", func(c *kubeletv1beta1.KubeletConfiguration) {
			c.RegisterWithTaints = []v1.Taint{{Key: "a b", Effect: v1.TaintEffectNoSchedule}}
		}, []string{"registerWithTaints[0].key"}},
		{"authorization mode", func(c *kubeletv1beta1.KubeletConfiguration) { c.Authorization.Mode = "RBAC" }, []string{"authorization.mode: Unsupported value: \"RBAC\""}},
		{"tls half set", func(c *kubeletv1beta1.KubeletConfiguration) { c.TLSCertFile = "/c" }, []string{"tlsCertFile"}},
		{"runOnce", func(c *kubeletv1beta1.KubeletConfiguration) { c.RunOnce = true }, []string{"runOnce: Forbidden"}},
		{"errors are collected", func(c *kubeletv1beta1.KubeletConfiguration) {
			c.Port = 0
			c.MaxPods = -1
			c.CgroupDriver = "x"
		}, []string{"port", "cgroupDriver", "maxPods"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewDefaultConfig()
			tc.mut(c)
			errs := Validate(c)
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors %v, want %d matching %q", len(errs), errs, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %d = %q, want it to contain %q", i, errs[i].Error(), w)
				}
			}
		})
	}
}
