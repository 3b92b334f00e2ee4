package kubeletconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	cliflag "k8s.io/component-base/cli/flag"
	logsapi "k8s.io/component-base/logs/api/v1"
	nodeutil "k8s.io/component-helpers/node/util"
	// The JSON log format (--logging-format=json, logging.format: json).
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	_ "k8s.io/component-base/logs/json/register"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	kubeletapis "k8s.io/kubelet/pkg/apis"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/config/features"
	"github.com/gokubelet/kubelet/pkg/config/virtualnodes"
)

// Options holds the kubelet's command-line flags. Bind them with AddFlags,
// parse the flag set, then call Settings. Flags that map to a
// KubeletConfiguration field override the file only when set explicitly on
// the command line (pflag's Changed), never through their default.
type Options struct {
	ConfigFile              string
	ConfigDir               string
	FeatureGates            map[string]bool
	KubeconfigPath          string
	BootstrapKubeconfigPath string
	HostnameOverride        string
	NodeIP                  string
	RootDir                 string
	RuntimeCgroups          string
	CertDir                 string
	NodeLabels              map[string]string
	PodInfraContainerImage  string
	VirtualNodesConfig      string
	MaxStreamsPerCaller     int

	// flagCfg receives the values of the flags that map to config fields.
	flagCfg kubeletv1beta1.KubeletConfiguration
	// overrides copies one flag's value from flagCfg into the final
	// configuration, keyed by flag name.
	overrides map[string]func(dst, src *kubeletv1beta1.KubeletConfiguration)
	fs        *pflag.FlagSet
	// compat are the upstream kubelet's flags this kubelet accepts without
	// implementing them (see addCompatFlags).
	compat map[string]bool

	// hostname returns the machine's hostname; os.Hostname unless a test
	// replaces it.
	hostname func() (string, error)
}

// NewOptions returns Options holding the flag defaults.
func NewOptions() *Options {
	return &Options{
		RootDir:             DefaultRootDir,
		MaxStreamsPerCaller: DefaultMaxStreamsPerCaller,
		NodeLabels:          map[string]string{},
		FeatureGates:        map[string]bool{},
		flagCfg:             *NewDefaultConfig(),
		overrides:           map[string]func(dst, src *kubeletv1beta1.KubeletConfiguration){},
		hostname:            os.Hostname,
	}
}

// ConfigFlagNames maps each flag that overrides a config field to the
// field's JSON name.
var ConfigFlagNames = map[string]string{
	"container-runtime-endpoint":                 "containerRuntimeEndpoint",
	"pod-manifest-path":                          "staticPodPath",
	"manifest-url":                               "staticPodURL",
	"register-with-taints":                       "registerWithTaints",
	"register-node":                              "registerNode",
	"healthz-port":                               "healthzPort",
	"healthz-bind-address":                       "healthzBindAddress",
	"read-only-port":                             "readOnlyPort",
	"address":                                    "address",
	"port":                                       "port",
	"max-pods":                                   "maxPods",
	"cgroup-driver":                              "cgroupDriver",
	"fail-swap-on":                               "failSwapOn",
	"sync-frequency":                             "syncFrequency",
	"file-check-frequency":                       "fileCheckFrequency",
	"http-check-frequency":                       "httpCheckFrequency",
	"kube-api-qps":                               "kubeAPIQPS",
	"kube-api-burst":                             "kubeAPIBurst",
	"cluster-domain":                             "clusterDomain",
	"cluster-dns":                                "clusterDNS",
	"cgroup-root":                                "cgroupRoot",
	"resolv-conf":                                "resolvConf",
	"allowed-unsafe-sysctls":                     "allowedUnsafeSysctls",
	"seccomp-default":                            "seccompDefault",
	"image-service-endpoint":                     "imageServiceEndpoint",
	"runtime-request-timeout":                    "runtimeRequestTimeout",
	"streaming-connection-idle-timeout":          "streamingConnectionIdleTimeout",
	"node-status-max-images":                     "nodeStatusMaxImages",
	"oom-score-adj":                              "oomScoreAdj",
	"serialize-image-pulls":                      "serializeImagePulls",
	"node-status-update-frequency":               "nodeStatusUpdateFrequency",
	"event-qps":                                  "eventRecordQPS",
	"event-burst":                                "eventBurst",
	"provider-id":                                "providerID",
	"kube-api-content-type":                      "contentType",
	"enable-controller-attach-detach":            "enableControllerAttachDetach",
	"kube-reserved":                              "kubeReserved",
	"system-reserved":                            "systemReserved",
	"eviction-hard":                              "evictionHard",
	"logging-format":                             "logging",
	"feature-gates":                              "featureGates",
	"enable-server":                              "enableServer",
	"tls-cert-file":                              "tlsCertFile",
	"tls-private-key-file":                       "tlsPrivateKeyFile",
	"tls-cipher-suites":                          "tlsCipherSuites",
	"tls-min-version":                            "tlsMinVersion",
	"rotate-certificates":                        "rotateCertificates",
	"rotate-server-certificates":                 "serverTLSBootstrap",
	"anonymous-auth":                             "authentication.anonymous.enabled",
	"authentication-token-webhook":               "authentication.webhook.enabled",
	"authentication-token-webhook-cache-ttl":     "authentication.webhook.cacheTTL",
	"client-ca-file":                             "authentication.x509.clientCAFile",
	"authorization-mode":                         "authorization.mode",
	"authorization-webhook-cache-authorized-ttl": "authorization.webhook.cacheAuthorizedTTL",
	"authorization-webhook-cache-unauthorized-ttl": "authorization.webhook.cacheUnauthorizedTTL",
	"enable-debugging-handlers":                    "enableDebuggingHandlers",
	"contention-profiling":                         "enableContentionProfiling",
	"volume-stats-agg-period":                      "volumeStatsAggPeriod",
	"manifest-url-header":                          "staticPodURLHeader",
	"cgroups-per-qos":                              "cgroupsPerQOS",
	"enforce-node-allocatable":                     "enforceNodeAllocatable",
	"system-reserved-cgroup":                       "systemReservedCgroup",
	"kube-reserved-cgroup":                         "kubeReservedCgroup",
	"kubelet-cgroups":                              "kubeletCgroups",
	"system-cgroups":                               "systemCgroups",
	"eviction-soft":                                "evictionSoft",
	"eviction-soft-grace-period":                   "evictionSoftGracePeriod",
	"eviction-minimum-reclaim":                     "evictionMinimumReclaim",
	"eviction-pressure-transition-period":          "evictionPressureTransitionPeriod",
	"eviction-max-pod-grace-period":                "evictionMaxPodGracePeriod",
	"local-storage-capacity-isolation":             "localStorageCapacityIsolation",
	"image-gc-high-threshold":                      "imageGCHighThresholdPercent",
	"image-gc-low-threshold":                       "imageGCLowThresholdPercent",
	"minimum-image-ttl-duration":                   "imageMinimumGCAge",
	"container-log-max-size":                       "containerLogMaxSize",
	"container-log-max-files":                      "containerLogMaxFiles",
	"pod-max-pids":                                 "podPidsLimit",
	"cpu-cfs-quota":                                "cpuCFSQuota",
	"cpu-cfs-quota-period":                         "cpuCFSQuotaPeriod",
}

// AddFlags registers the kubelet's flags on fs. It does not register klog's
// -v (cmd/kubelet does) nor --version.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.fs = fs
	c := &o.flagCfg

	fs.StringVar(&o.ConfigFile, "config", o.ConfigFile, "Path to a KubeletConfiguration file (YAML or JSON) to load the configuration from; relative paths start at the working directory. Flags given on the command line override values from this file. Without it, built-in defaults are used.")
	fs.StringVar(&o.ConfigDir, "config-dir", o.ConfigDir, "Directory of drop-in KubeletConfiguration files: every *.conf file under it, in lexical order of path, is merged (JSON merge patch) onto the --config file (or the defaults). Flags given on the command line still win.")
	fs.Var(cliflag.NewMapStringBool(&o.FeatureGates), "feature-gates", "Feature gates, as comma-separated key=value pairs, merged over the config file's featureGates. Every gate of the upstream kubelet "+upstreamVersion+" is accepted; unknown gates are refused. Wired gates ("+strings.Join(wiredGateNames(), ", ")+") and the logging gates take effect; one warning at start names the gates that are on whose feature this kubelet lacks; other gates warn when set to a non-default value.")
	fs.StringVar(&o.KubeconfigPath, "kubeconfig", o.KubeconfigPath, "Path to a kubeconfig file saying how to reach the API server. Without it the kubelet runs standalone (static pods only).")
	fs.StringVar(&o.BootstrapKubeconfigPath, "bootstrap-kubeconfig", o.BootstrapKubeconfigPath, "Path to a kubeconfig used to request a client certificate when the --kubeconfig file does not exist yet; the resulting credentials are written to --kubeconfig and certificates to --cert-dir.")
	fs.StringVar(&o.HostnameOverride, "hostname-override", o.HostnameOverride, "Node name to use instead of the machine's hostname.")
	fs.StringVar(&o.NodeIP, "node-ip", o.NodeIP, "IP address of the node, or comma-separated IPv4 and IPv6 addresses for dual-stack. If unset, the node's default address is used.")
	fs.StringVar(&o.RootDir, "root-dir", o.RootDir, "Directory for the kubelet's files (volume mounts, plugins, checkpoints).")
	fs.StringVar(&o.CertDir, "cert-dir", o.CertDir, "Directory of the kubelet's certificates (default <root-dir>/pki): the bootstrapped and rotated client certificate (kubelet-client-current.pem), the serving certificate of serverTLSBootstrap (kubelet-server-current.pem) or the self-signed one (kubelet.crt, kubelet.key). Not used for serving when tlsCertFile and tlsPrivateKeyFile are set.")
	fs.Var(&labelsValue{m: &o.NodeLabels}, "node-labels", fmt.Sprintf("Labels to add to the node when registering it, as key=value pairs separated by ','. Labels in the kubernetes.io and k8s.io namespaces must have one of the prefixes (%s) or be one of (%s).", strings.Join(kubeletapis.KubeletLabelNamespaces(), ", "), strings.Join(kubeletapis.KubeletLabels(), ", ")))
	fs.StringVar(&o.VirtualNodesConfig, "virtual-nodes-config", o.VirtualNodesConfig, "Path to a VirtualNodes file (gokubelet.io/v1alpha1): virtual nodes this process runs beside (or, with realNode: false, instead of) this machine's node, each with a provider (mock, kubernetes). Re-read while running: nodes added or removed there are added or removed. See docs/virtual-nodes.md.")
	fs.IntVar(&o.MaxStreamsPerCaller, "max-streams-per-caller", o.MaxStreamsPerCaller, "Container log, exec, attach and port-forward requests one authenticated caller of the kubelet API may have open at once; more are answered 429. Requests relayed by the API server all come from its kubelet client, so for them this bounds the node. 0: no bound (as the upstream kubelet). Not an upstream flag.")
	fs.StringVar(&o.PodInfraContainerImage, "pod-infra-container-image", o.PodInfraContainerImage, "Accepted for compatibility and ignored: the container runtime chooses the sandbox (pause) image.")

	o.bind("container-runtime-endpoint", func(d, s *kubeletv1beta1.KubeletConfiguration) {
		d.ContainerRuntimeEndpoint = s.ContainerRuntimeEndpoint
	})
	fs.StringVar(&c.ContainerRuntimeEndpoint, "container-runtime-endpoint", c.ContainerRuntimeEndpoint, "Endpoint of the CRI container runtime service, e.g. unix:///run/containerd/containerd.sock.")
	o.bind("pod-manifest-path", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.StaticPodPath = s.StaticPodPath })
	fs.StringVar(&c.StaticPodPath, "pod-manifest-path", c.StaticPodPath, "Directory of static pod manifests to run, or a single manifest file. Files whose names start with a dot are ignored.")
	o.bind("manifest-url", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.StaticPodURL = s.StaticPodURL })
	fs.StringVar(&c.StaticPodURL, "manifest-url", c.StaticPodURL, "URL to fetch additional static pod manifests from.")
	o.bind("register-with-taints", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.RegisterWithTaints = s.RegisterWithTaints })
	fs.Var(&taintsValue{t: &c.RegisterWithTaints}, "register-with-taints", "Taints to put on the node when registering it, comma-separated \"<key>=<value>:<effect>\" or \"<key>:<effect>\". Has no effect when --register-node is false.")
	o.bind("register-node", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.RegisterNode = ptr.To(*s.RegisterNode) })
	fs.BoolVar(c.RegisterNode, "register-node", *c.RegisterNode, "Register the node with the API server. Irrelevant without --kubeconfig.")
	o.bind("healthz-port", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.HealthzPort = ptr.To(*s.HealthzPort) })
	fs.Int32Var(c.HealthzPort, "healthz-port", *c.HealthzPort, "Port of the local healthz endpoint (0 disables it).")
	o.bind("healthz-bind-address", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.HealthzBindAddress = s.HealthzBindAddress })
	fs.StringVar(&c.HealthzBindAddress, "healthz-bind-address", c.HealthzBindAddress, "IP address the healthz server listens on (0.0.0.0 or :: for all interfaces).")
	o.bind("read-only-port", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.ReadOnlyPort = s.ReadOnlyPort })
	fs.Int32Var(&c.ReadOnlyPort, "read-only-port", c.ReadOnlyPort, "Port of the unauthenticated read-only server (0 disables it).")
	o.bind("address", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.Address = s.Address })
	fs.StringVar(&c.Address, "address", c.Address, "IP address the kubelet server listens on (0.0.0.0 or :: for all interfaces).")
	o.bind("port", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.Port = s.Port })
	fs.Int32Var(&c.Port, "port", c.Port, "Port of the kubelet API: HTTPS with authentication and authorization (logs, exec, attach, port-forward, ...); reported in the Node's daemonEndpoints.")
	o.bind("enable-server", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.EnableServer = ptr.To(*s.EnableServer) })
	fs.BoolVar(c.EnableServer, "enable-server", *c.EnableServer, "Serve the kubelet API on --address:--port.")
	o.bind("tls-cert-file", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.TLSCertFile = s.TLSCertFile })
	fs.StringVar(&c.TLSCertFile, "tls-cert-file", c.TLSCertFile, "x509 certificate (with intermediate certificates after it) the kubelet API serves; re-read when it changes. Without it and without --rotate-server-certificates, a self-signed pair kubelet.crt/kubelet.key is generated in --cert-dir.")
	o.bind("tls-private-key-file", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.TLSPrivateKeyFile = s.TLSPrivateKeyFile })
	fs.StringVar(&c.TLSPrivateKeyFile, "tls-private-key-file", c.TLSPrivateKeyFile, "Private key matching --tls-cert-file.")
	o.bind("tls-cipher-suites", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.TLSCipherSuites = s.TLSCipherSuites })
	fs.StringSliceVar(&c.TLSCipherSuites, "tls-cipher-suites", c.TLSCipherSuites, "Comma-separated IANA names of the cipher suites the kubelet API offers (TLS 1.2 and below); default: Go's.")
	o.bind("tls-min-version", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.TLSMinVersion = s.TLSMinVersion })
	fs.StringVar(&c.TLSMinVersion, "tls-min-version", c.TLSMinVersion, "Minimum TLS version of the kubelet API: VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13 (default VersionTLS12).")
	o.bind("rotate-certificates", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.RotateCertificates = s.RotateCertificates })
	fs.BoolVar(&c.RotateCertificates, "rotate-certificates", c.RotateCertificates, "Renew the client certificate through CertificateSigningRequests before it expires (in --cert-dir), switching the API connections to the new one.")
	o.bind("rotate-server-certificates", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.ServerTLSBootstrap = s.ServerTLSBootstrap })
	fs.BoolVar(&c.ServerTLSBootstrap, "rotate-server-certificates", c.ServerTLSBootstrap, "Request the serving certificate through a kubernetes.io/kubelet-serving CertificateSigningRequest and renew it before it expires (serverTLSBootstrap); the CSRs need approval by an administrator or an approver.")
	o.bind("anonymous-auth", func(d, s *kubeletv1beta1.KubeletConfiguration) {
		d.Authentication.Anonymous.Enabled = ptr.To(*s.Authentication.Anonymous.Enabled)
	})
	fs.BoolVar(c.Authentication.Anonymous.Enabled, "anonymous-auth", *c.Authentication.Anonymous.Enabled, "Let requests to the kubelet API that no other method authenticates in as system:anonymous (group system:unauthenticated); they still need authorization.")
	o.bind("authentication-token-webhook", func(d, s *kubeletv1beta1.KubeletConfiguration) {
		d.Authentication.Webhook.Enabled = ptr.To(*s.Authentication.Webhook.Enabled)
	})
	fs.BoolVar(c.Authentication.Webhook.Enabled, "authentication-token-webhook", *c.Authentication.Webhook.Enabled, "Authenticate bearer tokens with TokenReviews against the API server.")
	o.bind("authentication-token-webhook-cache-ttl", func(d, s *kubeletv1beta1.KubeletConfiguration) {
		d.Authentication.Webhook.CacheTTL = s.Authentication.Webhook.CacheTTL
	})
	fs.DurationVar(&c.Authentication.Webhook.CacheTTL.Duration, "authentication-token-webhook-cache-ttl", c.Authentication.Webhook.CacheTTL.Duration, "How long TokenReview answers are cached.")
	o.bind("client-ca-file", func(d, s *kubeletv1beta1.KubeletConfiguration) {
		d.Authentication.X509.ClientCAFile = s.Authentication.X509.ClientCAFile
	})
	fs.StringVar(&c.Authentication.X509.ClientCAFile, "client-ca-file", c.Authentication.X509.ClientCAFile, "CA bundle: a client certificate signed by one of its CAs authenticates as its CommonName (groups: its Organizations). Re-read when it changes.")
	o.bind("authorization-mode", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.Authorization.Mode = s.Authorization.Mode })
	fs.StringVar((*string)(&c.Authorization.Mode), "authorization-mode", string(c.Authorization.Mode), "Authorization of kubelet API requests: Webhook (SubjectAccessReviews for nodes/<subresource>) or AlwaysAllow.")
	o.bind("authorization-webhook-cache-authorized-ttl", func(d, s *kubeletv1beta1.KubeletConfiguration) {
		d.Authorization.Webhook.CacheAuthorizedTTL = s.Authorization.Webhook.CacheAuthorizedTTL
	})
	fs.DurationVar(&c.Authorization.Webhook.CacheAuthorizedTTL.Duration, "authorization-webhook-cache-authorized-ttl", c.Authorization.Webhook.CacheAuthorizedTTL.Duration, "How long allowed SubjectAccessReview answers are cached.")
	o.bind("authorization-webhook-cache-unauthorized-ttl", func(d, s *kubeletv1beta1.KubeletConfiguration) {
		d.Authorization.Webhook.CacheUnauthorizedTTL = s.Authorization.Webhook.CacheUnauthorizedTTL
	})
	fs.DurationVar(&c.Authorization.Webhook.CacheUnauthorizedTTL.Duration, "authorization-webhook-cache-unauthorized-ttl", c.Authorization.Webhook.CacheUnauthorizedTTL.Duration, "How long denied SubjectAccessReview answers are cached.")
	o.bind("enable-debugging-handlers", func(d, s *kubeletv1beta1.KubeletConfiguration) {
		d.EnableDebuggingHandlers = ptr.To(*s.EnableDebuggingHandlers)
	})
	fs.BoolVar(c.EnableDebuggingHandlers, "enable-debugging-handlers", *c.EnableDebuggingHandlers, "Serve container logs, exec, attach, port-forward, run, /runningpods/, /configz, /logs/ and /debug/ on the kubelet API.")
	o.bind("contention-profiling", func(d, s *kubeletv1beta1.KubeletConfiguration) {
		d.EnableContentionProfiling = s.EnableContentionProfiling
	})
	fs.BoolVar(&c.EnableContentionProfiling, "contention-profiling", c.EnableContentionProfiling, "Turn on block profiling when /debug/pprof/ is served.")
	o.bind("volume-stats-agg-period", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.VolumeStatsAggPeriod = s.VolumeStatsAggPeriod })
	fs.DurationVar(&c.VolumeStatsAggPeriod.Duration, "volume-stats-agg-period", c.VolumeStatsAggPeriod.Duration, "How often, at most, a pod volume's disk usage is measured for /stats/summary.")
	o.bind("max-pods", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.MaxPods = s.MaxPods })
	fs.Int32Var(&c.MaxPods, "max-pods", c.MaxPods, "Maximum number of pods that can run on this node.")
	o.bind("cgroup-driver", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.CgroupDriver = s.CgroupDriver })
	fs.StringVar(&c.CgroupDriver, "cgroup-driver", c.CgroupDriver, "Driver the kubelet uses to manage cgroups on the host: 'cgroupfs' or 'systemd'.")
	o.bind("fail-swap-on", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.FailSwapOn = ptr.To(*s.FailSwapOn) })
	fs.BoolVar(c.FailSwapOn, "fail-swap-on", *c.FailSwapOn, "Refuse to start when swap is enabled on the node.")
	o.bind("sync-frequency", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.SyncFrequency = s.SyncFrequency })
	fs.DurationVar(&c.SyncFrequency.Duration, "sync-frequency", c.SyncFrequency.Duration, "Maximum time between resyncs of running containers with the desired configuration.")
	o.bind("file-check-frequency", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.FileCheckFrequency = s.FileCheckFrequency })
	fs.DurationVar(&c.FileCheckFrequency.Duration, "file-check-frequency", c.FileCheckFrequency.Duration, "Time between checks of the static pod path for new data.")
	o.bind("http-check-frequency", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.HTTPCheckFrequency = s.HTTPCheckFrequency })
	fs.DurationVar(&c.HTTPCheckFrequency.Duration, "http-check-frequency", c.HTTPCheckFrequency.Duration, "Time between checks of the manifest URL for new data.")
	o.bind("kube-api-qps", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.KubeAPIQPS = ptr.To(*s.KubeAPIQPS) })
	fs.Int32Var(c.KubeAPIQPS, "kube-api-qps", *c.KubeAPIQPS, "Queries per second allowed towards the API server (must be >= 0). Events and node heartbeats are limited separately.")
	o.bind("kube-api-burst", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.KubeAPIBurst = s.KubeAPIBurst })
	fs.Int32Var(&c.KubeAPIBurst, "kube-api-burst", c.KubeAPIBurst, "Burst of requests allowed towards the API server (must be >= 0).")

	// Flags of the upstream kubelet for other implemented fields.
	o.bind("cluster-domain", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.ClusterDomain = s.ClusterDomain })
	fs.StringVar(&c.ClusterDomain, "cluster-domain", c.ClusterDomain, "Domain of the cluster; pods' DNS search paths start with it (clusterDomain).")
	o.bind("cluster-dns", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.ClusterDNS = s.ClusterDNS })
	fs.StringSliceVar(&c.ClusterDNS, "cluster-dns", c.ClusterDNS, "Comma-separated DNS server IPs for pods with dnsPolicy ClusterFirst (clusterDNS).")
	o.bind("cgroup-root", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.CgroupRoot = s.CgroupRoot })
	fs.StringVar(&c.CgroupRoot, "cgroup-root", c.CgroupRoot, "Root cgroup under which pods' cgroups are placed (cgroupRoot).")
	o.bind("resolv-conf", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.ResolverConfig = ptr.To(*s.ResolverConfig) })
	fs.StringVar(c.ResolverConfig, "resolv-conf", *c.ResolverConfig, "Resolver configuration file that pods with dnsPolicy Default inherit (resolvConf; \"\" for none).")
	o.bind("allowed-unsafe-sysctls", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.AllowedUnsafeSysctls = s.AllowedUnsafeSysctls })
	fs.StringSliceVar(&c.AllowedUnsafeSysctls, "allowed-unsafe-sysctls", c.AllowedUnsafeSysctls, "Comma-separated unsafe sysctls or patterns (ending in *) pods may set (allowedUnsafeSysctls).")
	o.bind("seccomp-default", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.SeccompDefault = ptr.To(*s.SeccompDefault) })
	fs.BoolVar(c.SeccompDefault, "seccomp-default", *c.SeccompDefault, "Use the runtime's default seccomp profile for containers that set none (seccompDefault).")
	o.bind("image-service-endpoint", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.ImageServiceEndpoint = s.ImageServiceEndpoint })
	fs.StringVar(&c.ImageServiceEndpoint, "image-service-endpoint", c.ImageServiceEndpoint, "Endpoint of the CRI image service, when not the runtime endpoint (imageServiceEndpoint).")
	o.bind("runtime-request-timeout", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.RuntimeRequestTimeout = s.RuntimeRequestTimeout })
	fs.DurationVar(&c.RuntimeRequestTimeout.Duration, "runtime-request-timeout", c.RuntimeRequestTimeout.Duration, "Timeout of CRI requests except long-running ones (runtimeRequestTimeout).")
	o.bind("node-status-max-images", func(d, s *kubeletv1beta1.KubeletConfiguration) {
		d.NodeStatusMaxImages = ptr.To(*s.NodeStatusMaxImages)
	})
	fs.Int32Var(c.NodeStatusMaxImages, "node-status-max-images", *c.NodeStatusMaxImages, "Maximum number of images reported in the node's status.images (nodeStatusMaxImages); -1: no limit.")
	o.bind("oom-score-adj", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.OOMScoreAdj = ptr.To(*s.OOMScoreAdj) })
	fs.Int32Var(c.OOMScoreAdj, "oom-score-adj", *c.OOMScoreAdj, "The oom_score_adj the kubelet sets for its own process, -1000 to 1000 (oomScoreAdj); a refusal by the kernel is a warning.")
	o.bind("streaming-connection-idle-timeout", func(d, s *kubeletv1beta1.KubeletConfiguration) {
		d.StreamingConnectionIdleTimeout = s.StreamingConnectionIdleTimeout
	})
	fs.DurationVar(&c.StreamingConnectionIdleTimeout.Duration, "streaming-connection-idle-timeout", c.StreamingConnectionIdleTimeout.Duration, "Exec, attach and port-forward streams with no traffic for this long are closed (streamingConnectionIdleTimeout; 0: never).")
	o.bind("serialize-image-pulls", func(d, s *kubeletv1beta1.KubeletConfiguration) {
		d.SerializeImagePulls = ptr.To(*s.SerializeImagePulls)
	})
	fs.BoolVar(c.SerializeImagePulls, "serialize-image-pulls", *c.SerializeImagePulls, "Pull images one at a time (serializeImagePulls).")
	o.bind("node-status-update-frequency", func(d, s *kubeletv1beta1.KubeletConfiguration) {
		d.NodeStatusUpdateFrequency = s.NodeStatusUpdateFrequency
	})
	fs.DurationVar(&c.NodeStatusUpdateFrequency.Duration, "node-status-update-frequency", c.NodeStatusUpdateFrequency.Duration, "How often the node's status is computed and, when changed, posted (nodeStatusUpdateFrequency).")
	o.bind("event-qps", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.EventRecordQPS = ptr.To(*s.EventRecordQPS) })
	fs.Int32Var(c.EventRecordQPS, "event-qps", *c.EventRecordQPS, "Events per second the kubelet may create (eventRecordQPS; 0: unlimited).")
	o.bind("event-burst", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.EventBurst = s.EventBurst })
	fs.Int32Var(&c.EventBurst, "event-burst", c.EventBurst, "Burst of event creations (eventBurst).")
	o.bind("provider-id", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.ProviderID = s.ProviderID })
	fs.StringVar(&c.ProviderID, "provider-id", c.ProviderID, "The node's provider ID, set on the Node at registration (providerID).")
	o.bind("kube-api-content-type", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.ContentType = s.ContentType })
	fs.StringVar(&c.ContentType, "kube-api-content-type", c.ContentType, "Content type of requests to the API server (contentType).")
	o.bind("enable-controller-attach-detach", func(d, s *kubeletv1beta1.KubeletConfiguration) {
		d.EnableControllerAttachDetach = ptr.To(*s.EnableControllerAttachDetach)
	})
	fs.BoolVar(c.EnableControllerAttachDetach, "enable-controller-attach-detach", *c.EnableControllerAttachDetach, "Let the attach/detach controller manage this node's volumes (enableControllerAttachDetach; announced on the Node).")
	o.bind("kube-reserved", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.KubeReserved = s.KubeReserved })
	fs.Var(cliflag.NewMapStringString(&c.KubeReserved), "kube-reserved", "Resources reserved for Kubernetes system daemons, as name=quantity pairs (kubeReserved).")
	o.bind("system-reserved", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.SystemReserved = s.SystemReserved })
	fs.Var(cliflag.NewMapStringString(&c.SystemReserved), "system-reserved", "Resources reserved for the OS's daemons, as name=quantity pairs (systemReserved).")
	o.bind("eviction-hard", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.EvictionHard = s.EvictionHard })
	fs.Var(cliflag.NewLangleSeparatedMapStringString(&c.EvictionHard), "eviction-hard", "Hard eviction thresholds, as signal<value pairs, e.g. memory.available<1Gi (evictionHard; replaces the whole map).")

	// Node allocatable, eviction, garbage collection, log rotation and pod
	// cgroups: parsed as upstream parses them (maps replace the file's map
	// whole, lists replace the list).
	o.bind("cgroups-per-qos", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.CgroupsPerQOS = ptr.To(*s.CgroupsPerQOS) })
	fs.BoolVar(c.CgroupsPerQOS, "cgroups-per-qos", *c.CgroupsPerQOS, "Create the QoS cgroup hierarchy (kubepods, burstable, besteffort) and a cgroup per pod (cgroupsPerQOS).")
	o.bind("enforce-node-allocatable", func(d, s *kubeletv1beta1.KubeletConfiguration) {
		d.EnforceNodeAllocatable = append([]string(nil), s.EnforceNodeAllocatable...)
	})
	fs.StringSliceVar(&c.EnforceNodeAllocatable, "enforce-node-allocatable", c.EnforceNodeAllocatable, "Comma-separated levels of node allocatable enforcement: 'none' alone, or 'pods', 'system-reserved', 'system-reserved-compressible', 'kube-reserved', 'kube-reserved-compressible' (enforceNodeAllocatable).")
	o.bind("system-reserved-cgroup", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.SystemReservedCgroup = s.SystemReservedCgroup })
	fs.StringVar(&c.SystemReservedCgroup, "system-reserved-cgroup", c.SystemReservedCgroup, "Absolute name of the cgroup of the OS's daemons, where --system-reserved is enforced (systemReservedCgroup).")
	o.bind("kube-reserved-cgroup", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.KubeReservedCgroup = s.KubeReservedCgroup })
	fs.StringVar(&c.KubeReservedCgroup, "kube-reserved-cgroup", c.KubeReservedCgroup, "Absolute name of the cgroup of the Kubernetes daemons, where --kube-reserved is enforced (kubeReservedCgroup).")
	o.bind("kubelet-cgroups", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.KubeletCgroups = s.KubeletCgroups })
	fs.StringVar(&c.KubeletCgroups, "kubelet-cgroups", c.KubeletCgroups, "Absolute name of the cgroup the kubelet moves itself into, and reports as the system container \"kubelet\" (kubeletCgroups). Empty: it stays where it was started, and that cgroup is reported.")
	o.bind("system-cgroups", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.SystemCgroups = s.SystemCgroups })
	fs.StringVar(&c.SystemCgroups, "system-cgroups", c.SystemCgroups, "Absolute name of the cgroup every process of the root cgroup but PID 1 and kernel threads is moved into, every minute, and reported as the system container \"misc\"; needs --cgroup-root (systemCgroups).")
	fs.StringVar(&o.RuntimeCgroups, "runtime-cgroups", o.RuntimeCgroups, "Absolute name of the container runtime's cgroup, reported as the system container \"runtime\". The kubelet does not move the runtime: whoever starts it places it.")
	o.bind("eviction-soft", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.EvictionSoft = s.EvictionSoft })
	fs.Var(cliflag.NewLangleSeparatedMapStringString(&c.EvictionSoft), "eviction-soft", "Soft eviction thresholds, as signal<value pairs, e.g. memory.available<1.5Gi; each needs a grace period (evictionSoft; replaces the whole map).")
	o.bind("eviction-soft-grace-period", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.EvictionSoftGracePeriod = s.EvictionSoftGracePeriod })
	fs.Var(cliflag.NewMapStringString(&c.EvictionSoftGracePeriod), "eviction-soft-grace-period", "How long each soft threshold must hold before pods are evicted, as signal=duration pairs, e.g. memory.available=1m30s (evictionSoftGracePeriod; replaces the whole map).")
	o.bind("eviction-minimum-reclaim", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.EvictionMinimumReclaim = s.EvictionMinimumReclaim })
	fs.Var(cliflag.NewMapStringString(&c.EvictionMinimumReclaim), "eviction-minimum-reclaim", "Minimum amount reclaimed beyond a threshold once eviction starts, as signal=quantity pairs, e.g. imagefs.available=2Gi (evictionMinimumReclaim; replaces the whole map).")
	o.bind("eviction-pressure-transition-period", func(d, s *kubeletv1beta1.KubeletConfiguration) {
		d.EvictionPressureTransitionPeriod = s.EvictionPressureTransitionPeriod
	})
	fs.DurationVar(&c.EvictionPressureTransitionPeriod.Duration, "eviction-pressure-transition-period", c.EvictionPressureTransitionPeriod.Duration, "How long a pressure condition stays after its threshold is no longer met (evictionPressureTransitionPeriod).")
	o.bind("eviction-max-pod-grace-period", func(d, s *kubeletv1beta1.KubeletConfiguration) {
		d.EvictionMaxPodGracePeriod = s.EvictionMaxPodGracePeriod
	})
	fs.Int32Var(&c.EvictionMaxPodGracePeriod, "eviction-max-pod-grace-period", c.EvictionMaxPodGracePeriod, "Maximum grace period, in seconds, of pods evicted for a soft threshold (evictionMaxPodGracePeriod; 0 or negative: the pod's own).")
	o.bind("local-storage-capacity-isolation", func(d, s *kubeletv1beta1.KubeletConfiguration) {
		d.LocalStorageCapacityIsolation = ptr.To(*s.LocalStorageCapacityIsolation)
	})
	fs.BoolVar(c.LocalStorageCapacityIsolation, "local-storage-capacity-isolation", *c.LocalStorageCapacityIsolation, "Enforce ephemeral-storage limits and emptyDir sizeLimit by eviction (localStorageCapacityIsolation).")
	o.bind("image-gc-high-threshold", func(d, s *kubeletv1beta1.KubeletConfiguration) {
		d.ImageGCHighThresholdPercent = ptr.To(*s.ImageGCHighThresholdPercent)
	})
	fs.Int32Var(c.ImageGCHighThresholdPercent, "image-gc-high-threshold", *c.ImageGCHighThresholdPercent, "Percent of image disk usage above which image garbage collection always runs, 0-100; 100 disables it (imageGCHighThresholdPercent).")
	o.bind("image-gc-low-threshold", func(d, s *kubeletv1beta1.KubeletConfiguration) {
		d.ImageGCLowThresholdPercent = ptr.To(*s.ImageGCLowThresholdPercent)
	})
	fs.Int32Var(c.ImageGCLowThresholdPercent, "image-gc-low-threshold", *c.ImageGCLowThresholdPercent, "Percent of image disk usage that image garbage collection frees down to, 0-100 and below the high threshold (imageGCLowThresholdPercent).")
	o.bind("minimum-image-ttl-duration", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.ImageMinimumGCAge = s.ImageMinimumGCAge })
	fs.DurationVar(&c.ImageMinimumGCAge.Duration, "minimum-image-ttl-duration", c.ImageMinimumGCAge.Duration, "Minimum age of an unused image before it is garbage collected (imageMinimumGCAge).")
	o.bind("container-log-max-size", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.ContainerLogMaxSize = s.ContainerLogMaxSize })
	fs.StringVar(&c.ContainerLogMaxSize, "container-log-max-size", c.ContainerLogMaxSize, "Size at which a container's log file is rotated, e.g. 10Mi (containerLogMaxSize).")
	o.bind("container-log-max-files", func(d, s *kubeletv1beta1.KubeletConfiguration) {
		d.ContainerLogMaxFiles = ptr.To(*s.ContainerLogMaxFiles)
	})
	fs.Int32Var(c.ContainerLogMaxFiles, "container-log-max-files", *c.ContainerLogMaxFiles, "Number of log files kept per container, at least 2 (containerLogMaxFiles).")
	// Any negative value means no limit, as upstream; it is kept as -1 like
	// a negative value in the file.
	o.bind("pod-max-pids", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.PodPidsLimit = ptr.To(max(*s.PodPidsLimit, -1)) })
	fs.Int64Var(c.PodPidsLimit, "pod-max-pids", *c.PodPidsLimit, "Maximum number of processes per pod; -1: the node's pid capacity (podPidsLimit).")
	o.bind("cpu-cfs-quota", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.CPUCFSQuota = ptr.To(*s.CPUCFSQuota) })
	fs.BoolVar(c.CPUCFSQuota, "cpu-cfs-quota", *c.CPUCFSQuota, "Enforce CPU limits with CFS quota (cpuCFSQuota).")
	o.bind("cpu-cfs-quota-period", func(d, s *kubeletv1beta1.KubeletConfiguration) {
		d.CPUCFSQuotaPeriod = &metav1.Duration{Duration: s.CPUCFSQuotaPeriod.Duration}
	})
	fs.DurationVar(&c.CPUCFSQuotaPeriod.Duration, "cpu-cfs-quota-period", c.CPUCFSQuotaPeriod.Duration, "CFS quota period of containers' and pods' CPU limits (cpuCFSQuotaPeriod, cpu.cfs_period_us), 1ms to 1s.")
	o.bind("manifest-url-header", func(d, s *kubeletv1beta1.KubeletConfiguration) { d.StaticPodURLHeader = s.StaticPodURLHeader })
	fs.Var(cliflag.NewColonSeparatedMultimapStringString(&c.StaticPodURLHeader), "manifest-url-header", "HTTP headers sent with requests to --manifest-url, comma-separated 'Name:value' pairs; a name given twice gets both values (staticPodURLHeader).")

	// Logging: --logging-format (text, json), -v, --vmodule,
	// --log-flush-frequency and the [Alpha] stream options, bound to the
	// configuration's logging stanza as upstream does.
	logsapi.AddFlags(&c.Logging, fs)
	for name, copyField := range map[string]func(d, s *logsapi.LoggingConfiguration){
		"logging-format":        func(d, s *logsapi.LoggingConfiguration) { d.Format = s.Format },
		"log-flush-frequency":   func(d, s *logsapi.LoggingConfiguration) { d.FlushFrequency = s.FlushFrequency },
		"v":                     func(d, s *logsapi.LoggingConfiguration) { d.Verbosity = s.Verbosity },
		"vmodule":               func(d, s *logsapi.LoggingConfiguration) { d.VModule = s.VModule },
		"log-text-split-stream": func(d, s *logsapi.LoggingConfiguration) { d.Options.Text.SplitStream = s.Options.Text.SplitStream },
		"log-text-info-buffer-size": func(d, s *logsapi.LoggingConfiguration) {
			d.Options.Text.InfoBufferSize = s.Options.Text.InfoBufferSize
		},
		"log-json-split-stream": func(d, s *logsapi.LoggingConfiguration) { d.Options.JSON.SplitStream = s.Options.JSON.SplitStream },
		"log-json-info-buffer-size": func(d, s *logsapi.LoggingConfiguration) {
			d.Options.JSON.InfoBufferSize = s.Options.JSON.InfoBufferSize
		},
	} {
		o.bind(name, func(d, s *kubeletv1beta1.KubeletConfiguration) { copyField(&d.Logging, &s.Logging) })
	}
	o.addCompatFlags(fs)
}

func (o *Options) bind(name string, f func(dst, src *kubeletv1beta1.KubeletConfiguration)) {
	o.overrides[name] = f
}

// Settings builds the kubelet's Settings from the parsed flags: it loads
// and defaults the --config file (or the defaults without one), applies the
// explicitly set flags on top, validates everything and fills the
// flag-only settings. All validation errors are returned together as one
// error; unimplemented-but-set fields and ignored flags become
// Settings.Warnings.
func (o *Options) Settings() (*Settings, error) {
	if o.fs == nil {
		return nil, errors.New("kubeletconfig: Options.Settings called before AddFlags")
	}
	var (
		cfg      *kubeletv1beta1.KubeletConfiguration
		warnings []string
		err      error
	)
	if o.ConfigFile != "" {
		var fileWarnings []string
		cfg, fileWarnings, err = LoadConfigFile(o.ConfigFile)
		if err != nil {
			return nil, err
		}
		warnings = append(warnings, fileWarnings...)
	} else {
		cfg = NewDefaultConfig()
	}
	var dropIns []string
	if o.ConfigDir != "" {
		var dropInWarnings []string
		cfg, dropIns, dropInWarnings, err = MergeDropIns(cfg, o.ConfigDir)
		if err != nil {
			return nil, err
		}
		warnings = append(warnings, dropInWarnings...)
	}
	warnings = append(warnings, UnimplementedFieldWarnings(cfg, o.configFiles())...)
	o.applyFlags(cfg)
	ensureSecretPulledImagesOffInFile := hasGate(cfg, string(features.KubeletEnsureSecretPulledImages)) && !cfg.FeatureGates[string(features.KubeletEnsureSecretPulledImages)]
	// Flag gates are merged over the file's, flags winning, as upstream.
	if len(o.FeatureGates) > 0 {
		if cfg.FeatureGates == nil {
			cfg.FeatureGates = map[string]bool{}
		}
		for k, v := range o.FeatureGates {
			cfg.FeatureGates[k] = v
		}
	}
	if o.fs.Changed("pod-infra-container-image") {
		warnings = append(warnings, "flag --pod-infra-container-image is ignored: the container runtime chooses the sandbox image (set it in the runtime's configuration, e.g. containerd's sandbox_image)")
	}
	warnings = append(warnings, o.compatFlagWarnings()...)

	errs := Validate(cfg)
	gates, err := NewFeatureGate()
	if err != nil {
		return nil, err
	}
	if err := gates.SetFromMap(cfg.FeatureGates); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("featureGates"), cfg.FeatureGates, err.Error()))
	} else {
		ensureSecretPulledImagesDefault(cfg, gates, ensureSecretPulledImagesOffInFile)
		warnings = append(warnings, FeatureGateWarnings(cfg.FeatureGates, "featureGates")...)
		errs = append(errs, ValidateWithGates(cfg, gates)...)
		if w := LackingFeatureWarning(gates); w != "" {
			warnings = append(warnings, w)
		}
	}
	s := &Settings{
		Config:                  cfg,
		ConfigFile:              o.ConfigFile,
		ConfigDir:               o.ConfigDir,
		DropIns:                 dropIns,
		FeatureGates:            gates,
		Features:                NewFeatures(gates),
		KubeconfigPath:          o.KubeconfigPath,
		BootstrapKubeconfigPath: o.BootstrapKubeconfigPath,
		RootDir:                 o.RootDir,
		CertDir:                 o.CertDir,
		RuntimeCgroups:          o.RuntimeCgroups,
		NodeLabels:              map[string]string{},
	}
	for k, v := range o.NodeLabels {
		s.NodeLabels[k] = v
	}
	flagPath := func(name string) *field.Path { return field.NewPath("--" + name) }
	if s.RootDir == "" {
		errs = append(errs, field.Required(flagPath("root-dir"), "must not be empty"))
	}
	if s.CertDir == "" && s.RootDir != "" {
		s.CertDir = filepath.Join(s.RootDir, "pki")
	}
	if s.BootstrapKubeconfigPath != "" && s.KubeconfigPath == "" {
		errs = append(errs, field.Required(flagPath("kubeconfig"), "must be set when --bootstrap-kubeconfig is set (it names where the bootstrapped credentials are written)"))
	}
	ips, err := ParseNodeIPs(o.NodeIP)
	if err != nil {
		errs = append(errs, field.Invalid(flagPath("node-ip"), o.NodeIP, err.Error()))
	}
	s.NodeIPs = ips
	s.NodeName, err = o.nodeName()
	if err != nil {
		errs = append(errs, field.Invalid(flagPath("hostname-override"), o.HostnameOverride, err.Error()))
	}
	if o.MaxStreamsPerCaller < 0 {
		errs = append(errs, field.Invalid(flagPath("max-streams-per-caller"), o.MaxStreamsPerCaller, "negative (0 means no bound)"))
	}
	s.MaxStreamsPerCaller = o.MaxStreamsPerCaller
	if o.VirtualNodesConfig != "" {
		s.VirtualNodesConfigFile = o.VirtualNodesConfig
		s.VirtualNodes, err = virtualnodes.Load(o.VirtualNodesConfig)
		if err != nil {
			errs = append(errs, field.Invalid(flagPath("virtual-nodes-config"), o.VirtualNodesConfig, err.Error()))
		} else {
			errs = append(errs, checkVirtualNodes(s, flagPath("virtual-nodes-config"))...)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("invalid configuration%s:\n  %s", o.configSource(), joinErrors(errs))
	}
	s.Warnings = warnings
	return s, nil
}

// checkVirtualNodes checks what the virtual nodes need from the rest of
// the settings: an API server, and kubelet API ports of their own.
func checkVirtualNodes(s *Settings, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	vn := s.VirtualNodes
	if s.KubeconfigPath == "" && vn.Kubeconfig == "" {
		errs = append(errs, field.Required(p, "virtual nodes need an API server: set --kubeconfig or kubeconfig in the file"))
	}
	if vn.RunsRealNode() {
		for _, n := range vn.Nodes {
			if n.Port == s.Config.Port || (s.Config.ReadOnlyPort != 0 && n.Port == s.Config.ReadOnlyPort) {
				errs = append(errs, field.Invalid(p, n.Port, fmt.Sprintf("virtual node %s: port %d is the real node's", n.Name, n.Port)))
			}
			if n.Name == s.NodeName {
				errs = append(errs, field.Invalid(p, n.Name, "a virtual node cannot have the real node's name"))
			}
		}
	}
	return errs
}

func (o *Options) configSource() string {
	if o.ConfigFile == "" && o.ConfigDir == "" {
		return ""
	}
	return " (" + o.configFiles() + " and flags)"
}

// configFiles names where the configuration came from, for messages.
func (o *Options) configFiles() string {
	var parts []string
	if o.ConfigFile != "" {
		parts = append(parts, "config file "+o.ConfigFile)
	}
	if o.ConfigDir != "" {
		parts = append(parts, "drop-ins in "+o.ConfigDir)
	}
	if len(parts) == 0 {
		return "default configuration"
	}
	return strings.Join(parts, " with ")
}

func joinErrors(errs field.ErrorList) string {
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		msg := e.Error()
		// Name the flag too when the field (or the list or map it is an
		// item of) can be set by one.
		var flags []string
		for flag, name := range ConfigFlagNames {
			if e.Field == name || strings.HasPrefix(e.Field, name+"[") {
				flags = append(flags, "--"+flag)
			}
		}
		sort.Strings(flags)
		for _, f := range flags {
			msg += " (flag " + f + ")"
		}
		msgs = append(msgs, msg)
	}
	return strings.Join(msgs, "\n  ")
}

// applyFlags copies every explicitly set config flag into cfg.
func (o *Options) applyFlags(cfg *kubeletv1beta1.KubeletConfiguration) {
	names := make([]string, 0, len(o.overrides))
	for n := range o.overrides {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if o.fs.Changed(n) {
			o.overrides[n](cfg, &o.flagCfg)
		}
	}
}

func (o *Options) nodeName() (string, error) {
	name := strings.ToLower(strings.TrimSpace(o.HostnameOverride))
	if name == "" {
		h, err := o.hostname()
		if err != nil {
			return "", fmt.Errorf("cannot determine the hostname: %v", err)
		}
		name = strings.ToLower(strings.TrimSpace(h))
		if name == "" {
			return "", errors.New("the hostname is empty; set --hostname-override")
		}
	}
	if msgs := utilvalidation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return "", fmt.Errorf("node name %q is not valid: %s", name, strings.Join(msgs, "; "))
	}
	return name, nil
}

// NewSettings parses a kubelet command line (without the program name) and
// returns the resulting Settings. It knows only this package's flags:
// klog's -v and --version belong to cmd/kubelet.
func NewSettings(args []string) (*Settings, error) {
	fs := pflag.NewFlagSet("kubelet", pflag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	o := NewOptions()
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	return o.Settings()
}

// ParseNodeIPs parses the --node-ip value with upstream's own parser
// (component-helpers' ParseNodeIPArgument): empty, one IP, or an IPv4 and
// an IPv6 separated by a comma; 0.0.0.0 or :: (the default address of that
// family) only alone. Upstream logs and ignores entries that are not IPs;
// here they are an error, so a typo never silently changes the node's
// address. The result holds the IPs in canonical form.
func ParseNodeIPs(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	ips, invalid, err := nodeutil.ParseNodeIPArgument(s, "")
	if len(invalid) > 0 {
		return nil, fmt.Errorf("%s: not an IP address", strings.Join(invalid, ", "))
	}
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out, nil
}

// ParseNodeLabels parses "k=v,k2=v2" into a map, validating each key as a
// qualified name, each value as a label value, and rejecting keys in the
// kubernetes.io / k8s.io namespaces that a kubelet may not set on its Node.
func ParseNodeLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	var problems []string
	for _, pair := range strings.Split(s, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		if !ok {
			problems = append(problems, fmt.Sprintf("%q: must be key=value", pair))
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		for _, msg := range utilvalidation.IsQualifiedName(k) {
			problems = append(problems, fmt.Sprintf("key %q: %s", k, msg))
		}
		for _, msg := range utilvalidation.IsValidLabelValue(v) {
			problems = append(problems, fmt.Sprintf("value %q of %q: %s", v, k, msg))
		}
		if isKubernetesLabel(k) && !kubeletapis.IsKubeletLabel(k) {
			problems = append(problems, fmt.Sprintf("key %q: labels in the kubernetes.io and k8s.io namespaces must have one of the prefixes (%s) or be one of (%s)",
				k, strings.Join(kubeletapis.KubeletLabelNamespaces(), ", "), strings.Join(kubeletapis.KubeletLabels(), ", ")))
		}
		out[k] = v
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return out, nil
}

func isKubernetesLabel(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	ns = strings.ToLower(ns)
	return ns == "kubernetes.io" || strings.HasSuffix(ns, ".kubernetes.io") ||
		ns == "k8s.io" || strings.HasSuffix(ns, ".k8s.io")
}

// ParseTaints parses the --register-with-taints value: comma-separated
// "key=value:Effect" or "key:Effect" items. Keys, values and effects
// (NoSchedule, PreferNoSchedule, NoExecute) are validated, and the same
// key/effect pair may not appear twice.
func ParseTaints(s string) ([]v1.Taint, error) {
	var taints []v1.Taint
	if strings.TrimSpace(s) == "" {
		return taints, nil
	}
	seen := map[string]bool{}
	var problems []string
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		i := strings.LastIndex(item, ":")
		if i < 0 {
			problems = append(problems, fmt.Sprintf("%q: must be key=value:Effect or key:Effect", item))
			continue
		}
		kv, effect := item[:i], item[i+1:]
		k, v, _ := strings.Cut(kv, "=")
		t := v1.Taint{Key: k, Value: v, Effect: v1.TaintEffect(effect)}
		if errs := ValidateTaints(field.NewPath(item), []v1.Taint{t}); len(errs) > 0 {
			problems = append(problems, errs.ToAggregate().Error())
			continue
		}
		id := k + ":" + effect
		if seen[id] {
			problems = append(problems, fmt.Sprintf("%q: duplicate taint key %q with effect %s", item, k, effect))
			continue
		}
		seen[id] = true
		taints = append(taints, t)
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return taints, nil
}

// labelsValue is the pflag.Value of --node-labels; repeated flags merge.
type labelsValue struct{ m *map[string]string }

func (l *labelsValue) String() string {
	if l.m == nil || len(*l.m) == 0 {
		return ""
	}
	var parts []string
	for _, k := range sortedKeys(*l.m) {
		parts = append(parts, k+"="+(*l.m)[k])
	}
	return strings.Join(parts, ",")
}

func (l *labelsValue) Set(s string) error {
	parsed, err := ParseNodeLabels(s)
	if err != nil {
		return err
	}
	if *l.m == nil {
		*l.m = map[string]string{}
	}
	for k, v := range parsed {
		(*l.m)[k] = v
	}
	return nil
}

func (l *labelsValue) Type() string { return "mapStringString" }

// taintsValue is the pflag.Value of --register-with-taints; repeated flags
// append.
type taintsValue struct{ t *[]v1.Taint }

func (tv *taintsValue) String() string {
	if tv.t == nil {
		return ""
	}
	var parts []string
	for _, t := range *tv.t {
		if t.Value == "" {
			parts = append(parts, fmt.Sprintf("%s:%s", t.Key, t.Effect))
		} else {
			parts = append(parts, fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect))
		}
	}
	return strings.Join(parts, ",")
}

func (tv *taintsValue) Set(s string) error {
	parsed, err := ParseTaints(s)
	if err != nil {
		return err
	}
	*tv.t = append(*tv.t, parsed...)
	return nil
}

func (tv *taintsValue) Type() string { return "taints" }
