// Package features owns the table of upstream feature gates that touch a
// kubelet feature, and the accessor the code asks whether a gate it wires
// is on.
//
// For every such gate, Table says whether this kubelet honours the gate
// (Wired: turning it off turns the feature off, at the place named),
// lacks the feature (Lacking: warned at start when the gate is on), or
// implements a feature whose gate upstream has locked on (Locked). Gates
// outside the table have no kubelet-side feature (API server, scheduler,
// controllers, clients) or none this kubelet behaves differently on;
// setting one to a non-default value is warned about by
// pkg/config/kubeletconfig.
//
// The code asks a Gates value (built once at start from the effective
// feature gate) through typed Feature constants, never by string. The
// zero Gates has every wired feature on, as upstream's defaults have them
// for every gate read outside the config package (pkg/config/kubeletconfig
// tests that).
//
// docs/configuration.md's gate table is generated from Table
// (go run ./hack/tools/configdoc), and a unit test fails when it is stale.
package features

import "sort"

// Feature is the name of an upstream feature gate this kubelet acts on.
type Feature string

// The gates this kubelet wires (Status Wired in Table).
const (
	InPlacePodVerticalScaling          Feature = "InPlacePodVerticalScaling"
	PodReadyToStartContainersCondition Feature = "PodReadyToStartContainersCondition"
	PodObservedGenerationTracking      Feature = "PodObservedGenerationTracking"
	KubeletFineGrainedAuthz            Feature = "KubeletFineGrainedAuthz"
	RotateKubeletServerCertificate     Feature = "RotateKubeletServerCertificate"
	ReloadKubeletServerCertificateFile Feature = "ReloadKubeletServerCertificateFile"
	PodLevelResources                  Feature = "PodLevelResources"
	ImageMaximumGCAge                  Feature = "ImageMaximumGCAge"
	GracefulNodeShutdown               Feature = "GracefulNodeShutdown"
	ContainerRestartRules              Feature = "ContainerRestartRules"
	// CustomCPUCFSQuotaPeriod (until 1.35) and CPUCFSQuotaPeriod (from
	// 1.36) allow a cpuCFSQuotaPeriod other than 100ms.
	CustomCPUCFSQuotaPeriod Feature = "CustomCPUCFSQuotaPeriod"
	CPUCFSQuotaPeriod       Feature = "CPUCFSQuotaPeriod"
	// ResourceHealthStatus: allocatedResourcesStatus of device plugin
	// devices in container statuses.
	ResourceHealthStatus Feature = "ResourceHealthStatus"
	// ResourceHealthStatusMessage: their messages.
	ResourceHealthStatusMessage Feature = "ResourceHealthStatusMessage"
	// ClusterTrustBundleProjection: clusterTrustBundle projected volume
	// sources.
	ClusterTrustBundleProjection Feature = "ClusterTrustBundleProjection"
	// PodCertificateRequest: podCertificate projected volume sources.
	PodCertificateRequest Feature = "PodCertificateRequest"
	// AtomicWriteVolumeUserFields: user and defaultUser, the owner of the
	// files of configMap, secret, downwardAPI and projected volumes
	// (alpha, off by default).
	AtomicWriteVolumeUserFields Feature = "AtomicWriteVolumeUserFields"
	// EmptyDirVolumeMode: an emptyDir's mode (alpha, off by default).
	EmptyDirVolumeMode Feature = "EmptyDirVolumeMode"
	// H2CContainerProbe: httpGet probes over HTTP/2 cleartext (alpha, off
	// by default).
	H2CContainerProbe Feature = "H2CContainerProbe"
	// GRPCContainerProbeTLS: grpc probes over TLS (alpha, off by default).
	GRPCContainerProbeTLS Feature = "GRPCContainerProbeTLS"
	// EnvFiles: env vars read from a file in an emptyDir volume
	// (valueFrom.fileKeyRef; beta, on by default since 1.35).
	EnvFiles Feature = "EnvFiles"
	// InPlacePodVerticalScalingSchedulerPreemption: the scheduler, not
	// the kubelet, preempts for a critical pod's resize (alpha, off by
	// default).
	InPlacePodVerticalScalingSchedulerPreemption Feature = "InPlacePodVerticalScalingSchedulerPreemption"
	// KubeletEnsureSecretPulledImages: an image already on the node is
	// used by a pod only with credentials that pulled it, as
	// imagePullCredentialsVerificationPolicy says (beta, on by default).
	KubeletEnsureSecretPulledImages Feature = "KubeletEnsureSecretPulledImages"
)

// offByDefault are the wired gates upstream has off by default (alpha
// features); every other wired gate is on by default, or read only by
// pkg/config/kubeletconfig, which reads the effective feature gate
// (pkg/config/kubeletconfig's table test holds both to upstream's list).
var offByDefault = map[Feature]bool{
	AtomicWriteVolumeUserFields:                  true,
	EmptyDirVolumeMode:                           true,
	H2CContainerProbe:                            true,
	GRPCContainerProbeTLS:                        true,
	InPlacePodVerticalScalingSchedulerPreemption: true,
}

// OffByDefault reports whether the wired gate f is off by default.
func OffByDefault(f Feature) bool { return offByDefault[f] }

// Status is what a gate means for this kubelet.
type Status string

const (
	// Wired: the gate's value is read where the feature lives; off turns
	// the feature off.
	Wired Status = "wired"
	// Lacking: this kubelet lacks the feature; the gate being on (by
	// default or by configuration) is named in the start warning.
	Lacking Status = "lacking"
	// Locked: implemented, and upstream locks the gate on, so it cannot be
	// turned off (the feature gate refuses false).
	Locked Status = "locked"
)

// Gate is one row of Table.
type Gate struct {
	Name   Feature
	Status Status
	// Where is the package (or packages) that reads the gate, for Wired
	// and Locked gates.
	Where string
	// What says what the gate changes here (Wired), what this kubelet
	// lacks (Lacking) or what it does (Locked).
	What string
}

// Table is the one list of gates that touch a kubelet feature. Keep it
// sorted by status, then name (TestTableSorted).
var Table = []Gate{
	// Wired.
	{AtomicWriteVolumeUserFields, Wired, "pkg/kubelet, pkg/volume", "on: user (an item's) and defaultUser (a volume's) own the files of configMap, secret, downwardAPI and projected volumes, and a credential file (token, trust anchors, pod certificate) with an owner is 0600; off (the default): they are ignored, as upstream ignores them, and the pod gets a VolumeFieldsIgnored warning naming them"},
	{CPUCFSQuotaPeriod, Wired, "pkg/config/kubeletconfig", "off: a cpuCFSQuotaPeriod other than 100ms is refused; on: it must be 1ms to 1s (name of the gate from 1.36)"},
	{ClusterTrustBundleProjection, Wired, "pkg/kubelet, pkg/volume", "off: a projected volume with a clusterTrustBundle source is not set up, and its pod waits with a reason naming the gate; on: the anchors of the named bundle, or of a signer's bundles matching the label selector, merged without duplicates"},
	{ContainerRestartRules, Wired, "pkg/pod/podspec, pkg/engine/cri", "on: a container's own restartPolicy and restartPolicyRules (action Restart) decide its restarts before the pod's policy; off: a pod that sets them (other than a sidecar's restartPolicy Always) is rejected with reason ContainerRestartRulesNotSupported"},
	{CustomCPUCFSQuotaPeriod, Wired, "pkg/config/kubeletconfig", "off (the default until 1.35): a cpuCFSQuotaPeriod other than 100ms is refused; on: it must be 1ms to 1s"},
	{EmptyDirVolumeMode, Wired, "pkg/kubelet, pkg/volume", "on: an emptyDir's mode is its directory's permission bits (a tmpfs's root for medium Memory), before an fsGroup's ownership; off (the default): it is ignored, as upstream ignores it, and the pod gets a VolumeFieldsIgnored warning"},
	{EnvFiles, Wired, "pkg/kubelet, pkg/runtime/kuberuntime, pkg/pod/envvars", "on: an env var's valueFrom.fileKeyRef is read from the env file at its path in the pod's emptyDir volume (single-quoted values; a missing file or key keeps the container waiting with CreateContainerConfigError unless optional); off: a container that uses one waits with CreateContainerConfigError naming the gate"},
	{GRPCContainerProbeTLS, Wired, "pkg/kubelet, pkg/pod/prober", "on: a grpc probe with mode TLS connects over TLS without verifying the certificate; off (the default): mode is ignored (plaintext), as upstream ignores it, and the pod gets a ProbeFieldsIgnored warning"},
	{GracefulNodeShutdown, Wired, "pkg/config/kubeletconfig", "off: shutdownGracePeriod and shutdownGracePeriodCriticalPods are refused, so graceful node shutdown cannot be turned on"},
	{H2CContainerProbe, Wired, "pkg/kubelet, pkg/pod/prober", "on: an httpGet probe with protocol HTTP2 speaks HTTP/2 cleartext with prior knowledge (the API allows it only with scheme HTTP); off (the default): protocol is ignored (HTTP/1.1), as upstream ignores it, and the pod gets a ProbeFieldsIgnored warning. Lifecycle hooks' httpGet ignores protocol, as upstream's, with a LifecycleProtocolIgnored warning"},
	{ImageMaximumGCAge, Wired, "pkg/config/kubeletconfig", "off: a non-zero imageMaximumGCAge is refused, so unused images are not removed by age"},
	{InPlacePodVerticalScaling, Wired, "pkg/kubelet, pkg/engine/cri", "off: no allocation is kept and a changed container resource is not resized in place; no PodResizePending/PodResizeInProgress conditions"},
	{InPlacePodVerticalScalingSchedulerPreemption, Wired, "pkg/pod/allocation, pkg/engine/cri", "off (the default): a critical pod's in-place resize that needs room preempts other pods, as its admission would; on: that resize is deferred (PodResizePending, Deferred) and the scheduler decides any preemption"},
	{KubeletEnsureSecretPulledImages, Wired, "pkg/kubelet, pkg/runtime/images, pkg/config/kubeletconfig", "on (the default): what pulled each image is recorded under <root-dir>/image_manager in upstream's format, and a pod uses an image already on the node only as imagePullCredentialsVerificationPolicy allows (with credentials that pulled it, by pull secret and credential hash, unless it was pulled anonymously or with the node's own login, or it is preloaded or allowlisted); otherwise IfNotPresent pulls with the pod's credentials and Never fails with ErrImageNeverPull. Records of image credential provider plugins (service accounts) are read and matched but never written, as there are no such plugins here. off: no records, any pod uses a present image, and imagePullCredentialsVerificationPolicy and preloadedImagesVerificationAllowlist are refused"},
	{KubeletFineGrainedAuthz, Wired, "pkg/kubelet, pkg/server", "off: /pods, /healthz and /configz are authorized as nodes/proxy only, not nodes/pods, nodes/healthz, nodes/configz first"},
	{PodCertificateRequest, Wired, "pkg/kubelet, pkg/volume, pkg/node/podcerts", "off: a projected volume with a podCertificate source is not set up, and its pod waits with a reason naming the gate; on: a key per source, a PodCertificateRequest to its signer, the issued chain written and renewed from beginRefreshAt"},
	{PodLevelResources, Wired, "pkg/engine/cri", "off: a pod with pod-level resources (spec.resources) is rejected with reason PodLevelResourcesNotSupported, as upstream"},
	{PodObservedGenerationTracking, Wired, "pkg/engine/cri", "off: pod status and its conditions carry no observedGeneration"},
	{PodReadyToStartContainersCondition, Wired, "pkg/pod/podstatus", "off: pods get no PodReadyToStartContainers condition"},
	{ReloadKubeletServerCertificateFile, Wired, "pkg/kubelet, pkg/server", "off: tlsCertFile and tlsPrivateKeyFile are read once at start, not re-read when they change"},
	{ResourceHealthStatus, Wired, "pkg/kubelet, pkg/plugins/devices, pkg/plugins/dra", "on: container statuses carry allocatedResourcesStatus, the health of their device plugin devices and of their DRA devices (from drivers serving v1.DRAResourceHealth); off: none"},
	{ResourceHealthStatusMessage, Wired, "pkg/kubelet, pkg/plugins/dra", "on: the DRA drivers' health messages in allocatedResourcesStatus; off: none"},
	{RotateKubeletServerCertificate, Wired, "pkg/config/kubeletconfig", "off: serverTLSBootstrap is refused, so the serving certificate comes from tlsCertFile or is self-signed"},
	// Lacking.
	{"CPUManagerPolicyBetaOptions", Lacking, "", "the CPU manager (cpuManagerPolicy) and its options"},
	{"CPUManagerPolicyOptions", Lacking, "", "the CPU manager (cpuManagerPolicy) and its options"},
	{"ContainerCheckpoint", Lacking, "", "the /checkpoint endpoint of the kubelet API"},
	{"ContainerStopSignals", Lacking, "", "lifecycle.stopSignal (pods using it wait with a reason)"},
	{"DRAExtendedResource", Lacking, "", "extended resources backed by DRA"},
	{"DisableCPUQuotaWithExclusiveCPUs", Lacking, "", "exclusive CPUs of the CPU manager, whose CFS quota it disables"},
	{"EventedPLEG", Lacking, "", "upstream's evented PLEG, whose cache the event stream fills (whatever the gate says, this kubelet follows the CRI event stream where the runtime has one: a change it did not make, such as an exit, makes it relist at once, and the periodic relist runs every 10 s with the stream and every second without)"},
	{"GracefulNodeShutdownBasedOnPodPriority", Lacking, "", "shutdownGracePeriodByPodPriority"},
	{"HugepageAwareEviction", Lacking, "", "hugepages in eviction decisions (1.36+)"},
	{"ImageVolumeWithDigest", Lacking, "", "the image digest of image volumes in container statuses (volumeMounts[].volumeStatus.image)"},
	{"InPlacePodLevelResourcesVerticalScaling", Lacking, "", "resizing pod-level resources (spec.resources) in place (1.35+)"},
	{"InPlacePodVerticalScalingExclusiveCPUs", Lacking, "", "resizing pods with exclusive CPUs (no CPU manager)"},
	{"InPlacePodVerticalScalingExclusiveMemory", Lacking, "", "resizing pods with exclusive memory (no memory manager)"},
	{"KubeletCrashLoopBackOffMax", Lacking, "", "crashLoopBackOff.maxContainerRestartPeriod"},
	{"KubeletInUserNamespace", Lacking, "", "running the kubelet in a user namespace"},
	{"KubeletSeparateDiskGC", Lacking, "", "garbage collection of a separate containerfs"},
	{"KubeletServiceAccountTokenForCredentialProviders", Lacking, "", "image credential provider plugins"},
	{"KubeletTracing", Lacking, "", "OpenTelemetry tracing of the kubelet and its CRI calls (tracing)"},
	{"LocalStorageCapacityIsolationFSQuotaMonitoring", Lacking, "", "project quotas for emptyDir usage"},
	{"MemoryManager", Lacking, "", "the memory manager (memoryManagerPolicy, reservedMemory)"},
	{"MemoryQoS", Lacking, "", "memory.high and memory.min for cgroup v2 memory QoS"},
	{"NodeLogQuery", Lacking, "", "the query parameters of /logs/ (enableSystemLogQuery)"},
	{"NodeSwap", Lacking, "", "swap for pods (memorySwap)"},
	{"PodAndContainerStatsFromCRI", Lacking, "", "taking every pod and container stat from CRI alone"},
	{"PodLogsQuerySplitStreams", Lacking, "", "stream selection of kubectl logs"},
	{"QOSReserved", Lacking, "", "qosReserved"},
	{"ReduceDefaultCrashLoopBackOffDecay", Lacking, "", "the shorter crash loop back-off"},
	{"RestartAllContainersOnContainerExits", Lacking, "", "the RestartAllContainers action of restartPolicyRules (pods using it wait with a reason)"},
	{"SELinuxChangePolicy", Lacking, "", "SELinux relabelling policies (seLinuxChangePolicy)"},
	{"SELinuxMount", Lacking, "", "SELinux context mount options"},
	{"SELinuxMountReadWriteOncePod", Lacking, "", "SELinux context mount options"},
	{"SystemdWatchdog", Lacking, "", "the systemd watchdog"},
	{"TopologyManagerPolicyBetaOptions", Lacking, "", "the topology manager and its options"},
	{"TopologyManagerPolicyOptions", Lacking, "", "the topology manager and its options"},
	{"UserNamespacesSupport", Lacking, "", "hostUsers: false (refused with a reason on this node)"},
	// Locked on upstream, implemented here.
	{"DynamicResourceAllocation", Locked, "pkg/plugins/dra", "DRA: ResourceClaims prepared by their drivers (kubelet plugin API v1) before the sandbox, CDI devices to the containers"},
	{"ExecProbeTimeout", Locked, "pkg/pod/prober", "exec probes fail when they outlast timeoutSeconds"},
	{"HostnameOverride", Locked, "pkg/pod/dns", "spec.hostnameOverride is the pod's hostname, with no domain"},
	{"ImageVolume", Locked, "pkg/volume, pkg/runtime/kuberuntime", "image volumes (volumes[].image): the reference pulled by its pullPolicy with the pod's credentials, mounted read-only by the runtime (CRI Mount.image), subPath inside the image; refused with a reason on containerd before 2.1"},
	{"KubeletPSI", Locked, "pkg/stats", "pressure stall information (cpu, memory, io) of the node, the pods cgroup, pods and containers in /stats/summary and as /metrics/cadvisor's container_pressure_*, read from their cgroups (on a v1 hybrid host under the cgroup2 mount); left out where it cannot be read, not zero-filled"},
	{"KubeletPodResourcesDynamicResources", Locked, "pkg/podresources", "the prepared DRA devices in the pod-resources API"},
	{"KubeletPodResourcesGet", Locked, "pkg/podresources", "Get of the pod-resources API (<root-dir>/pod-resources/kubelet.sock)"},
	{"NodeDeclaredFeatures", Locked, "pkg/node/nodestatus", "status.declaredFeatures: the kubelet's to write; this kubelet declares none, replacing a list another kubelet left"},
	{"PodLifecycleSleepAction", Locked, "pkg/pod/hooks", "the sleep action of postStart and preStop hooks"},
	{"ProcMountType", Locked, "pkg/pod/securitycontext", "procMount: Unmasked (no masked or read-only /proc paths)"},
	{"RecursiveReadOnlyMounts", Locked, "pkg/runtime/kuberuntime", "recursiveReadOnly volume mounts through CRI"},
	{"SidecarContainers", Locked, "pkg/runtime/kuberuntime", "init containers with restartPolicy Always (sidecars)"},
	{"SupplementalGroupsPolicy", Locked, "pkg/pod/securitycontext, pkg/pod/admission", "supplementalGroupsPolicy through CRI; Strict refused on a runtime without it"},
}

// Lookup returns the table's row for name.
func Lookup(name string) (Gate, bool) {
	for _, g := range Table {
		if string(g.Name) == name {
			return g, true
		}
	}
	return Gate{}, false
}

// Gates answers whether a wired feature is on. Build it with New; the zero
// value has upstream's defaults: every wired feature on but those
// OffByDefault.
type Gates struct {
	// flipped are the gates not at their default.
	flipped map[Feature]bool
}

// New reads every wired gate from enabled. A gate the feature gate does not
// know (upstream removed it once it went GA) is on.
func New(enabled func(name string) (on, known bool)) Gates {
	g := Gates{flipped: map[Feature]bool{}}
	for _, row := range Table {
		if row.Status != Wired {
			continue
		}
		on, known := enabled(string(row.Name))
		if !known {
			on = true
		}
		if on == offByDefault[row.Name] {
			g.flipped[row.Name] = true
		}
	}
	return g
}

// Enabled reports whether the wired feature f is on.
func (g Gates) Enabled(f Feature) bool {
	return g.flipped[f] == offByDefault[f]
}

// With returns a copy of g with f set (for tests and callers that derive
// one setting from another).
func (g Gates) With(f Feature, on bool) Gates {
	out := Gates{flipped: map[Feature]bool{}}
	for k, v := range g.flipped {
		out.flipped[k] = v
	}
	if on == offByDefault[f] {
		out.flipped[f] = true
	} else {
		delete(out.flipped, f)
	}
	return out
}

// LackingOn returns, sorted, the Lacking gates that enabled reports on.
func LackingOn(enabled func(name string) (on, known bool)) []string {
	var out []string
	for _, row := range Table {
		if row.Status != Lacking {
			continue
		}
		if on, known := enabled(string(row.Name)); known && on {
			out = append(out, string(row.Name))
		}
	}
	sort.Strings(out)
	return out
}
