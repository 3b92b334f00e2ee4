// Package metrics defines the kubelet's Prometheus metrics, with the
// upstream kubelet's names and labels wherever the meaning is the same, on
// component-base's metrics library.
//
// The metrics are package variables, as upstream's are, so that the parts of
// the kubelet that feed them do so with one-line calls
// (metrics.PLEGRelistDuration.Observe(...)). They are not registered in any
// process-global registry: NewKubeletRegistry and NewProbesRegistry build
// registries owned by the kubelet, served on /metrics and /metrics/probes.
// Until a metric is registered its methods do nothing, so code and tests
// that run without a registry pay nothing.
//
// docs/metrics.md lists every metric, what it means here and what is not
// provided.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/component-base/metrics"
)

// Subsystems and label values shared with upstream.
const (
	KubeletSubsystem = "kubelet"
	ProberSubsystem  = "prober"

	// container_type label values.
	Container          = "container"
	InitContainer      = "init_container"
	EphemeralContainer = "ephemeral_container"
)

// The eviction_signal of kubelet_evictions for evictions that no
// threshold decided: a pod or container past its ephemeral-storage limit,
// an emptyDir past its sizeLimit (upstream's values).
const (
	EvictionSignalEphemeralPodFsLimit       = "ephemeralpodfs.limit"
	EvictionSignalEphemeralContainerFsLimit = "ephemeralcontainerfs.limit"
	EvictionSignalEmptyDirFsLimit           = "emptydirfs.limit"
)

// Histogram buckets. The pod startup and image pull buckets are upstream's
// boundaries, so SLO queries (e.g. "99% under 5s") read the same here.
var (
	podStartupBuckets = []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}
	imagePullBuckets  = []float64{1, 5, 10, 20, 30, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}
	// phaseBuckets start lower than podStartupBuckets: single phases of a
	// pod start (admission, sandbox) often take milliseconds.
	phaseBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 8, 10, 20, 30, 60, 120, 300, 600, 1800, 3600}
)

var (
	// NodeName is 1, labelled with the node's name.
	NodeName = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem: KubeletSubsystem, Name: "node_name",
		Help:           "The name of this node, as the value of label node; always 1.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"node"})

	// PodWorkerDuration is the duration of one pod worker step, by
	// operation_type: create (the pod's first sync), sync, kill
	// (terminating), terminated (cleanup).
	PodWorkerDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem: KubeletSubsystem, Name: "pod_worker_duration_seconds",
		Help:           "Seconds one pod worker step took, by operation type (create, sync, kill, terminated).",
		Buckets:        metrics.DefBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"operation_type"})

	// PodWorkerStartDuration is the time from the kubelet first seeing a
	// pod to its worker's first sync.
	PodWorkerStartDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem: KubeletSubsystem, Name: "pod_worker_start_duration_seconds",
		Help:           "Seconds from the kubelet first seeing a pod to its pod worker starting on it.",
		Buckets:        metrics.DefBuckets,
		StabilityLevel: metrics.ALPHA,
	})

	// ContainersPerPodCount is the number of app containers of each pod a
	// worker starts on.
	ContainersPerPodCount = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem: KubeletSubsystem, Name: "containers_per_pod_count",
		Help:           "Number of containers in the pods the kubelet starts.",
		Buckets:        metrics.ExponentialBuckets(1, 2, 5),
		StabilityLevel: metrics.ALPHA,
	})

	// PodStartDuration is the time from the kubelet first seeing a pod to
	// the pod's phase first being Running.
	PodStartDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem: KubeletSubsystem, Name: "pod_start_duration_seconds",
		Help:           "Seconds from the kubelet first seeing a pod to the pod running.",
		Buckets:        podStartupBuckets,
		StabilityLevel: metrics.ALPHA,
	})

	// PodStartSLIDuration is the pod startup latency SLI: from the pod's
	// creation timestamp to the kubelet seeing, on its watch, every
	// container reported started, minus the time spent pulling images.
	PodStartSLIDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem: KubeletSubsystem, Name: "pod_start_sli_duration_seconds",
		Help:           "Seconds from pod creation to every container reported started and seen on the watch, not counting image pulls.",
		Buckets:        podStartupBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{})

	// PodStartTotalDuration is PodStartSLIDuration with image pulls
	// included.
	PodStartTotalDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem: KubeletSubsystem, Name: "pod_start_total_duration_seconds",
		Help:           "Seconds from pod creation to every container reported started and seen on the watch, image pulls included.",
		Buckets:        podStartupBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{})

	// FirstNetworkPodStartSLIDuration is the SLI duration of the first
	// pod-network (not host-network) pod this kubelet started.
	FirstNetworkPodStartSLIDuration = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem: KubeletSubsystem, Name: "first_network_pod_start_sli_duration_seconds",
		Help:           "Pod start SLI duration, in seconds, of the first pod on the pod network this kubelet started.",
		StabilityLevel: metrics.INTERNAL,
	})

	// PodStartupPhaseDuration is this kubelet's own breakdown of a pod's
	// startup, one observation per phase per pod (see docs/metrics.md and
	// the timeline endpoint): admission, sandbox, image_pull, containers,
	// readiness, api_report.
	PodStartupPhaseDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem: KubeletSubsystem, Name: "pod_startup_phase_duration_seconds",
		Help:           "Seconds a starting pod spent in each phase (admission, sandbox, image_pull, containers, readiness, api_report); not an upstream metric.",
		Buckets:        phaseBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"phase"})

	// PLEGRelistDuration is how long one relist of the runtime took.
	PLEGRelistDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem: KubeletSubsystem, Name: "pleg_relist_duration_seconds",
		Help:           "Seconds one PLEG relist of the runtime took.",
		Buckets:        metrics.DefBuckets,
		StabilityLevel: metrics.ALPHA,
	})

	// PLEGRelistInterval is the time between the starts of two relists.
	PLEGRelistInterval = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem: KubeletSubsystem, Name: "pleg_relist_interval_seconds",
		Help:           "Seconds between the starts of two PLEG relists.",
		Buckets:        metrics.DefBuckets,
		StabilityLevel: metrics.ALPHA,
	})

	// PLEGLastSeen is the unix time of the last successful relist.
	PLEGLastSeen = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem: KubeletSubsystem, Name: "pleg_last_seen_seconds",
		Help:           "Unix time, in seconds, of the PLEG's last successful relist.",
		StabilityLevel: metrics.ALPHA,
	})

	// PLEGDiscardEvents counts events dropped because the PLEG's channel
	// was full.
	PLEGDiscardEvents = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: "pleg_discard_events",
		Help:           "Number of PLEG events dropped because the event channel was full.",
		StabilityLevel: metrics.ALPHA,
	})

	// PodStatusSyncDuration is, for each status write to the API, the time
	// from the first change it carries to the write's success.
	PodStatusSyncDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem: KubeletSubsystem, Name: "pod_status_sync_duration_seconds",
		Help:           "Seconds from a change of a pod's status to the API server accepting the write that carries it, however many changes that write coalesced.",
		Buckets:        []float64{0.010, 0.050, 0.100, 0.500, 1, 5, 10, 20, 30, 45, 60},
		StabilityLevel: metrics.ALPHA,
	})

	// AdmissionRejections counts pods admission rejected, by reason
	// (admission.RejectionLabel: upstream's bounded set of labels).
	AdmissionRejections = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: "admission_rejections_total",
		Help:           "Pods the kubelet's admission rejected, by reason.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})

	// The node's start, in phases (nodestatus.Startup): from the host's
	// boot to the kubelet's start, to its first registration attempt, to
	// the Node's creation, to its first Ready status; and in all.
	NodeStartupPreKubeletDuration = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem: KubeletSubsystem, Name: "node_startup_pre_kubelet_duration_seconds",
		Help:           "Seconds from the host's boot to the kubelet's start.",
		StabilityLevel: metrics.ALPHA,
	})
	NodeStartupPreRegistrationDuration = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem: KubeletSubsystem, Name: "node_startup_pre_registration_duration_seconds",
		Help:           "Seconds from the kubelet's start to its first attempt to register the Node.",
		StabilityLevel: metrics.ALPHA,
	})
	NodeStartupRegistrationDuration = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem: KubeletSubsystem, Name: "node_startup_registration_duration_seconds",
		Help:           "Seconds from the first attempt to register the Node to its creation.",
		StabilityLevel: metrics.ALPHA,
	})
	NodeStartupPostRegistrationDuration = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem: KubeletSubsystem, Name: "node_startup_post_registration_duration_seconds",
		Help:           "Seconds from the Node's creation to its first Ready status.",
		StabilityLevel: metrics.ALPHA,
	})
	NodeStartupDuration = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem: KubeletSubsystem, Name: "node_startup_duration_seconds",
		Help:           "Seconds from the host's boot to the Node's first Ready status.",
		StabilityLevel: metrics.ALPHA,
	})

	// Preemptions counts pods the kubelet stopped to admit a critical pod,
	// by the first resource that was short.
	Preemptions = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: "preemptions",
		Help:           "Pods the kubelet preempted to admit a critical pod, by the first resource that was short.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"preemption_signal"})

	// CgroupManagerDuration is how long the cgroup driver's writes took,
	// by operation (create, update, destroy).
	CgroupManagerDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem: KubeletSubsystem, Name: "cgroup_manager_duration_seconds",
		Help:           "Seconds a cgroup operation of the kubelet took, by operation type (create, update, destroy).",
		Buckets:        metrics.DefBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"operation_type"})

	// EvictionStatsAge is, for each met threshold an eviction pass acts
	// on, how old the observation of its signal is.
	EvictionStatsAge = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem: KubeletSubsystem, Name: "eviction_stats_age_seconds",
		Help:           "Seconds between the observation of an eviction signal and an eviction pass acting on it, by signal.",
		Buckets:        metrics.DefBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"eviction_signal"})

	// LifecycleHandlerSleepTerminated counts sleep lifecycle handlers cut
	// short because their container was terminated.
	LifecycleHandlerSleepTerminated = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: "sleep_action_terminated_early_total",
		Help:           "Sleep lifecycle handlers cut short because their container was terminated.",
		StabilityLevel: metrics.ALPHA,
	})

	// LifecycleHandlerHTTPFallbacks counts HTTPS lifecycle handlers that
	// got a plain HTTP answer and succeeded when retried over HTTP.
	LifecycleHandlerHTTPFallbacks = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: "lifecycle_handler_http_fallbacks_total",
		Help:           "HTTPS lifecycle handlers answered in plain HTTP that succeeded when retried over HTTP.",
		StabilityLevel: metrics.ALPHA,
	})

	// EventedPLEGConn counts the times the runtime's container event
	// stream was established (upstream's name, kept from its evented PLEG).
	EventedPLEGConn = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: "evented_pleg_connection_success_count",
		Help:           "Times the container runtime's CRI event stream was established.",
		StabilityLevel: metrics.ALPHA,
	})

	// EventedPLEGConnErr counts the times following that stream failed:
	// refused, broken, or not offered by the runtime.
	EventedPLEGConnErr = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: "evented_pleg_connection_error_count",
		Help:           "Times following the container runtime's CRI event stream failed (refused, broken, or not offered).",
		StabilityLevel: metrics.ALPHA,
	})

	// EventedPLEGConnLatency is, for each event of the stream, the time
	// from the runtime creating it to the PLEG receiving it.
	EventedPLEGConnLatency = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem: KubeletSubsystem, Name: "evented_pleg_connection_latency_seconds",
		Help:           "Seconds from the container runtime creating a CRI container event to the PLEG receiving it.",
		Buckets:        metrics.DefBuckets,
		StabilityLevel: metrics.ALPHA,
	})

	// DevicePluginRegistrations counts device plugin registrations by
	// resource_name (upstream's name and label).
	DevicePluginRegistrations = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: "device_plugin_registration_total",
		Help:           "Device plugin registrations, by resource name.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"resource_name"})

	// DevicePluginAllocationDuration is how long device plugins took to
	// answer Allocate, by resource_name (upstream's name and label).
	DevicePluginAllocationDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem: KubeletSubsystem, Name: "device_plugin_alloc_duration_seconds",
		Help:           "Seconds device plugins took to answer Allocate, by resource name.",
		Buckets:        metrics.DefBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"resource_name"})

	// RuntimeOperations counts CRI calls by operation_type.
	RuntimeOperations = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: "runtime_operations_total",
		Help:           "Number of container runtime (CRI) calls, by operation type.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"operation_type"})

	// RuntimeOperationsDuration is the duration of CRI calls by
	// operation_type.
	RuntimeOperationsDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem: KubeletSubsystem, Name: "runtime_operations_duration_seconds",
		Help:           "Seconds container runtime (CRI) calls took, by operation type.",
		Buckets:        metrics.ExponentialBuckets(.005, 2.5, 14),
		StabilityLevel: metrics.ALPHA,
	}, []string{"operation_type"})

	// RuntimeOperationsErrors counts failed CRI calls by operation_type.
	RuntimeOperationsErrors = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: "runtime_operations_errors_total",
		Help:           "Number of container runtime (CRI) calls that failed, by operation type.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"operation_type"})

	// RunPodSandboxDuration is the duration of RunPodSandbox by runtime
	// handler ("" is the default handler).
	RunPodSandboxDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem: KubeletSubsystem, Name: "run_podsandbox_duration_seconds",
		Help:           "Seconds RunPodSandbox took, by runtime handler.",
		Buckets:        metrics.DefBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"runtime_handler"})

	// RunPodSandboxErrors counts failed RunPodSandbox calls by runtime
	// handler.
	RunPodSandboxErrors = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: "run_podsandbox_errors_total",
		Help:           "Number of RunPodSandbox calls that failed, by runtime handler.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"runtime_handler"})

	// Evictions counts pod evictions by eviction signal: the threshold's
	// (memory.available, nodefs.available, ...) or the local storage limit
	// the pod broke (EvictionSignal*Limit).
	Evictions = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: "evictions",
		Help:           "Number of pods evicted, by eviction signal.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"eviction_signal"})

	// RestartedPodTotal counts pods started again under a UID the kubelet
	// had already run and removed (a static pod manifest put back).
	RestartedPodTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: "restarted_pods_total",
		Help:           "Number of pods started again with the UID of a pod this kubelet had already terminated and removed; static is true for static pods.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"static"})

	// OrphanedRuntimePodTotal counts pods found in the runtime that no
	// source wants and no pod worker knew of (left by an earlier kubelet,
	// or deleted while this one was down), which housekeeping stops.
	OrphanedRuntimePodTotal = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: "orphaned_runtime_pods_total",
		Help:           "Number of pods found in the runtime that the kubelet's configuration and pod workers did not know, and which it stopped.",
		StabilityLevel: metrics.ALPHA,
	})

	// The pod-resources API's calls (pkg/podresources), by server API
	// version, as upstream counts them: every call that passed the rate
	// limit, each method's calls, and each method's calls that failed.
	PodResourcesRequestsTotal          = podResourcesCounter("pod_resources_endpoint_requests_total", "Cumulative number of requests to the PodResource endpoint.")
	PodResourcesRequestsList           = podResourcesCounter("pod_resources_endpoint_requests_list", "Number of requests to the PodResource List endpoint.")
	PodResourcesRequestsGet            = podResourcesCounter("pod_resources_endpoint_requests_get", "Number of requests to the PodResource Get endpoint.")
	PodResourcesRequestsGetAllocatable = podResourcesCounter("pod_resources_endpoint_requests_get_allocatable", "Number of requests to the PodResource GetAllocatableResources endpoint.")
	PodResourcesErrorsList             = podResourcesCounter("pod_resources_endpoint_errors_list", "Number of requests to the PodResource List endpoint which returned an error.")
	PodResourcesErrorsGet              = podResourcesCounter("pod_resources_endpoint_errors_get", "Number of requests to the PodResource Get endpoint which returned an error.")
	PodResourcesErrorsGetAllocatable   = podResourcesCounter("pod_resources_endpoint_errors_get_allocatable", "Number of requests to the PodResource GetAllocatableResources endpoint which returned an error.")

	// ImageGarbageCollectedTotal counts the images the image GC removed, by
	// reason: "age" (unused past imageMaximumGCAge) or "space" (disk usage
	// over the high threshold, or disk pressure).
	ImageGarbageCollectedTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: "image_garbage_collected_total",
		Help:           "Total number of images garbage collected by the kubelet, whether through disk usage or image age.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})

	// The image pull records of KubeletEnsureSecretPulledImages
	// (pkg/runtime/images/pullrecords), upstream's names: the intent and
	// pulled record files under <root-dir>/image_manager, and each check
	// of whether a pod may use an image already present, by result
	// (credentialPolicyAllowed, credentialRecordFound, mustAuthenticate,
	// error).
	ImageManagerOnDiskPullIntents = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem: KubeletSubsystem, Name: "imagemanager_ondisk_pullintents",
		Help:           "Image pull intents (pulls under way, or interrupted) recorded on disk.",
		StabilityLevel: metrics.ALPHA,
	})
	ImageManagerOnDiskPulledRecords = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem: KubeletSubsystem, Name: "imagemanager_ondisk_pulledrecords",
		Help:           "Image pulled records (images the kubelet pulled, with the credentials used) on disk.",
		StabilityLevel: metrics.ALPHA,
	})
	ImageManagerMustPullChecksTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: "imagemanager_image_mustpull_checks_total",
		Help:           "Checks of whether a pod must show its credentials (pull) to use an image already on the node, by result.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})

	// StartedPodsTotal counts pod sandboxes the kubelet tried to create.
	StartedPodsTotal = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: "started_pods_total",
		Help:           "Number of pod sandboxes the kubelet tried to start.",
		StabilityLevel: metrics.ALPHA,
	})

	// StartedPodsErrorsTotal counts failed sandbox creations.
	StartedPodsErrorsTotal = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: "started_pods_errors_total",
		Help:           "Number of pod sandboxes that failed to start.",
		StabilityLevel: metrics.ALPHA,
	})

	// StartedContainersTotal counts containers the kubelet tried to start
	// (after any crash-loop back-off), by container_type.
	StartedContainersTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: "started_containers_total",
		Help:           "Number of containers the kubelet tried to start, by container type.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"container_type"})

	// StartedContainersErrorsTotal counts failed container starts by
	// container_type and code (the waiting reason: ErrImagePull,
	// CreateContainerError, RunContainerError, ...).
	StartedContainersErrorsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: "started_containers_errors_total",
		Help:           "Number of container starts that failed, by container type and reason code.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"container_type", "code"})

	// Image volumes (pkg/runtime/kuberuntime), upstream's names and
	// stability: each container start that got its image volumes' images
	// adds the number of image volumes it mounts to the requested total,
	// and each of its image volume mounts to the errors total when the
	// runtime refused to create the container for an image volume mount
	// (CRI's ImageVolumeMountFailed), else to the succeeded total.
	ImageVolumeRequestedTotal = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: "image_volume_requested_total",
		Help:           "Number of requested image volumes.",
		StabilityLevel: metrics.BETA,
	})
	ImageVolumeMountedSucceedTotal = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: "image_volume_mounted_succeed_total",
		Help:           "Number of successful image volume mounts.",
		StabilityLevel: metrics.BETA,
	})
	ImageVolumeMountedErrorsTotal = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: "image_volume_mounted_errors_total",
		Help:           "Number of failed image volume mounts.",
		StabilityLevel: metrics.BETA,
	})

	// ImagePullDuration is the duration of successful image pulls, by
	// the pulled image's size bucket.
	ImagePullDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem: KubeletSubsystem, Name: "image_pull_duration_seconds",
		Help:           "Seconds a successful image pull took, by image size bucket.",
		Buckets:        imagePullBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"image_size_in_bytes"})

	// CgroupVersion is the cgroup version of the host (1 or 2).
	CgroupVersion = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem: KubeletSubsystem, Name: "cgroup_version",
		Help:           "The host's cgroup version (1 or 2).",
		StabilityLevel: metrics.ALPHA,
	})
)

// kubeletMetrics are the metrics served on /metrics.
func kubeletMetrics() []metrics.Registerable {
	return []metrics.Registerable{
		NodeName, PodWorkerDuration, PodWorkerStartDuration, ContainersPerPodCount,
		PodStartDuration, PodStartSLIDuration, PodStartTotalDuration, FirstNetworkPodStartSLIDuration,
		PodStartupPhaseDuration,
		PLEGRelistDuration, PLEGRelistInterval, PLEGLastSeen, PLEGDiscardEvents,
		EventedPLEGConn, EventedPLEGConnErr, EventedPLEGConnLatency, PodStatusSyncDuration,
		AdmissionRejections, LifecycleHandlerSleepTerminated, LifecycleHandlerHTTPFallbacks, EvictionStatsAge,
		NodeStartupPreKubeletDuration, NodeStartupPreRegistrationDuration, NodeStartupRegistrationDuration,
		NodeStartupPostRegistrationDuration, NodeStartupDuration, CgroupManagerDuration, Preemptions,
		RuntimeOperations, RuntimeOperationsDuration, RuntimeOperationsErrors,
		RunPodSandboxDuration, RunPodSandboxErrors,
		Evictions, RestartedPodTotal, OrphanedRuntimePodTotal, ImageGarbageCollectedTotal,
		PodResourcesRequestsTotal, PodResourcesRequestsList, PodResourcesRequestsGet, PodResourcesRequestsGetAllocatable,
		PodResourcesErrorsList, PodResourcesErrorsGet, PodResourcesErrorsGetAllocatable,
		StartedPodsTotal, StartedPodsErrorsTotal, StartedContainersTotal, StartedContainersErrorsTotal,
		ImagePullDuration, CgroupVersion,
		ImageVolumeRequestedTotal, ImageVolumeMountedSucceedTotal, ImageVolumeMountedErrorsTotal,
		DevicePluginRegistrations, DevicePluginAllocationDuration,
		ImageManagerOnDiskPullIntents, ImageManagerOnDiskPulledRecords, ImageManagerMustPullChecksTotal,
	}
}

// KubeletOptions are what /metrics needs from the running kubelet.
type KubeletOptions struct {
	// NodeName sets kubelet_node_name.
	NodeName string
	// CgroupVersion sets kubelet_cgroup_version when non-zero.
	CgroupVersion int
	// Running, when set, feeds kubelet_running_pods and
	// kubelet_running_containers at scrape time.
	Running RunningSource
	// Pods, when set, feeds kubelet_desired_pods, kubelet_active_pods and
	// kubelet_mirror_pods at scrape time.
	Pods PodCountSource
	// Volumes, when set, feeds kubelet_volume_stats_* at scrape time
	// (volumes.go).
	Volumes VolumeStatsSource
	// DRAClaims, when set, feeds dra_resource_claims_in_use at scrape time
	// (dra.go).
	DRAClaims DRAClaimsSource
}

// NewKubeletRegistry returns the registry served on /metrics: the
// kubelet's metrics, the running pods and containers, and the Go runtime
// and process collectors.
func NewKubeletRegistry(o KubeletOptions) metrics.KubeRegistry {
	r := metrics.NewKubeRegistry()
	r.MustRegister(kubeletMetrics()...)
	if o.Running != nil {
		r.CustomMustRegister(newRunningCollector(o.Running))
	}
	if o.Pods != nil {
		r.CustomMustRegister(&podCountCollector{source: o.Pods})
	}
	if o.Volumes != nil {
		r.CustomMustRegister(&volumeStatsCollector{source: o.Volumes})
	}
	if o.DRAClaims != nil {
		r.CustomMustRegister(&draClaimsCollector{source: o.DRAClaims})
	}
	r.RawMustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if o.NodeName != "" {
		NodeName.WithLabelValues(o.NodeName).Set(1)
	}
	if o.CgroupVersion > 0 {
		CgroupVersion.Set(float64(o.CgroupVersion))
	}
	return r
}

// SinceInSeconds is the time since start in seconds.
func SinceInSeconds(start time.Time) float64 { return time.Since(start).Seconds() }

// ImageSizeBucket is the image_size_in_bytes label of an image of the given
// size: upstream's buckets ("0-10MB", "10MB-100MB", ... "GT100GB"), "N/A"
// when the size is unknown.
func ImageSizeBucket(size uint64) string {
	const mb, gb = 1 << 20, 1 << 30
	if size == 0 {
		return "N/A"
	}
	bounds := []struct {
		above uint64
		label string
	}{
		{100 * gb, "GT100GB"},
		{60 * gb, "60GB-100GB"},
		{40 * gb, "40GB-60GB"},
		{30 * gb, "30GB-40GB"},
		{20 * gb, "20GB-30GB"},
		{10 * gb, "10GB-20GB"},
		{5 * gb, "5GB-10GB"},
		{1 * gb, "1GB-5GB"},
		{500 * mb, "500MB-1GB"},
		{100 * mb, "100MB-500MB"},
		{10 * mb, "10MB-100MB"},
	}
	for _, b := range bounds {
		if size > b.above {
			return b.label
		}
	}
	return "0-10MB"
}

// podResourcesCounter is one of the pod-resources API's counters, by
// server_api_version (v1, v1alpha1).
func podResourcesCounter(name, help string) *metrics.CounterVec {
	return metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: KubeletSubsystem, Name: name,
		Help:           help + " Broken down by server api version.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"server_api_version"})
}
