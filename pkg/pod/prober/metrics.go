package prober

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/metrics"
)

// resultLabel is a result as prober_probe_total's result label says it.
func resultLabel(r Result) string {
	switch r {
	case Success:
		return metrics.ProbeSuccessful
	case Failure:
		return metrics.ProbeFailed
	}
	return metrics.ProbeUnknown
}

// observeProbe records one probe run in the /metrics/probes metrics; a run
// that errored (could not be made) is not recorded, as upstream.
func observeProbe(w *worker, pod *v1.Pod, o outcome, err error, began time.Time) {
	if err != nil {
		return
	}
	metrics.ObserveProbe(w.kind.String(), resultLabel(o.result), pod, w.name, w.m.clock.Since(began))
}

// forgetProbeMetrics drops a finished worker's series.
func forgetProbeMetrics(w *worker) { metrics.ForgetProbe(w.kind.String(), w.uid, w.name) }
