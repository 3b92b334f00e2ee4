// Package monitoring gathers the kubelet's monitoring endpoints into
// routes of the kubelet API (server.Route): /stats/summary and
// /stats/timeline/ (authorization subresource "stats"), /metrics,
// /metrics/cadvisor, /metrics/resource and /metrics/probes ("metrics").
// The kubelet API serves them behind its authentication and authorization,
// mapped like every other path; the read-only port (readOnlyPort) serves
// them too, as upstream's does.
package monitoring

import (
	"net/http"

	"k8s.io/component-base/metrics"

	"github.com/gokubelet/kubelet/pkg/pod/timeline"
	"github.com/gokubelet/kubelet/pkg/server"
	"github.com/gokubelet/kubelet/pkg/stats"
)

// Authorization subresources of the nodes resource (upstream's).
const (
	SubresourceStats   = "stats"
	SubresourceMetrics = "metrics"
)

// Options are the sources of the endpoints; nil ones are left out.
type Options struct {
	Summary  stats.SummarySource
	Timeline *timeline.Tracker
	// Registries served on /metrics, /metrics/probes, /metrics/resource,
	// /metrics/cadvisor.
	Kubelet, Probes, Resource, Cadvisor metrics.Gatherer
}

// Paths of the endpoints.
const (
	StatsPath       = "/stats"
	SummaryPath     = "/stats/summary"
	TimelinePath    = "/stats/timeline"
	MetricsPath     = "/metrics"
	CadvisorPath    = "/metrics/cadvisor"
	ResourcePath    = "/metrics/resource"
	ProbeMetricPath = "/metrics/probes"
)

// Routes returns the monitoring routes, each also served on the read-only
// port.
func Routes(o Options) []server.Route {
	var out []server.Route
	statsMux := http.NewServeMux()
	if o.Summary != nil {
		statsMux.Handle(SummaryPath, stats.SummaryHandler(o.Summary))
	}
	if o.Timeline != nil {
		h := o.Timeline.Handler(TimelinePath)
		statsMux.Handle(TimelinePath, h)
		statsMux.Handle(TimelinePath+"/", h)
	}
	if o.Summary != nil || o.Timeline != nil {
		out = append(out, server.Route{Path: StatsPath, Handler: statsMux, Subresource: SubresourceStats, ReadOnly: true})
	}
	for _, m := range []struct {
		path string
		g    metrics.Gatherer
	}{{MetricsPath, o.Kubelet}, {CadvisorPath, o.Cadvisor}, {ResourcePath, o.Resource}, {ProbeMetricPath, o.Probes}} {
		if m.g != nil {
			out = append(out, server.Route{Path: m.path, Handler: metricsHandler(m.path, m.g), Subresource: SubresourceMetrics, ReadOnly: true})
		}
	}
	return out
}

// metricsHandler serves a registry at exactly path (a route also covers
// the paths under it: those are not found) in the Prometheus text (or
// negotiated) format, serving what it can when a collector fails.
func metricsHandler(path string, g metrics.Gatherer) http.Handler {
	h := metrics.HandlerFor(g, metrics.HandlerOpts{ErrorHandling: metrics.ContinueOnError})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}
