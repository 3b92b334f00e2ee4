package metrics

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics"
)

// Probe result label values (upstream's).
const (
	ProbeSuccessful = "successful"
	ProbeFailed     = "failed"
	ProbeUnknown    = "unknown"
)

var (
	// ProberResults counts probe runs by type, result and container.
	ProberResults = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: ProberSubsystem, Name: "probe_total",
		Help:           "Number of liveness, readiness and startup probe runs of a container, by result.",
		StabilityLevel: metrics.BETA,
	}, []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"})

	// ProberDuration is the duration of successful (and inconclusive)
	// probe runs.
	ProberDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem: ProberSubsystem, Name: "probe_duration_seconds",
		Help:           "Seconds a probe took to answer (successful and unknown results).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"probe_type", "container", "pod", "namespace"})
)

// NewProbesRegistry returns the registry served on /metrics/probes.
func NewProbesRegistry() metrics.KubeRegistry {
	r := metrics.NewKubeRegistry()
	_ = metrics.RegisterProcessStartTime(r.Register)
	r.MustRegister(ProberResults, ProberDuration)
	return r
}

type probeKey struct {
	probeType string
	uid       types.UID
	container string
}

// probeSeries remembers each probe worker's pod name and namespace, so its
// series can be dropped when the worker ends (pods come and go; their
// series must not pile up).
var probeSeries = struct {
	sync.Mutex
	m map[probeKey][2]string
}{m: map[probeKey][2]string{}}

// ObserveProbe records one probe run of a container of pod. A run that
// errored (could not be made) is not recorded, as upstream. Failed runs are
// counted but not timed, as upstream.
func ObserveProbe(probeType, result string, pod *v1.Pod, container string, took time.Duration) {
	probeSeries.Lock()
	probeSeries.m[probeKey{probeType, pod.UID, container}] = [2]string{pod.Namespace, pod.Name}
	probeSeries.Unlock()
	ProberResults.WithLabelValues(probeType, result, container, pod.Name, pod.Namespace, string(pod.UID)).Inc()
	if result != ProbeFailed {
		ProberDuration.WithLabelValues(probeType, container, pod.Name, pod.Namespace).Observe(took.Seconds())
	}
}

// ForgetProbe drops the series of one probe worker (called when it ends).
func ForgetProbe(probeType string, uid types.UID, container string) {
	k := probeKey{probeType, uid, container}
	probeSeries.Lock()
	id, ok := probeSeries.m[k]
	delete(probeSeries.m, k)
	probeSeries.Unlock()
	if !ok {
		return
	}
	ns, name := id[0], id[1]
	for _, r := range []string{ProbeSuccessful, ProbeFailed, ProbeUnknown} {
		ProberResults.Delete(map[string]string{"probe_type": probeType, "result": r, "container": container, "pod": name, "namespace": ns, "pod_uid": string(uid)})
	}
	ProberDuration.Delete(map[string]string{"probe_type": probeType, "container": container, "pod": name, "namespace": ns})
}
