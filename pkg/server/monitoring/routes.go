// Package monitoring gathers the kubelet's monitoring endpoints into
// routes: /stats/summary and /stats/timeline/ (authorization subresource
// "stats"), /metrics, /metrics/cadvisor, /metrics/resource and
// /metrics/probes ("metrics"). The secured server mounts them behind
// authentication and authorization with the subresource given; the
// read-only server (readOnlyPort) serves them as upstream's does.
package monitoring

import (
	"net/http"
	"strings"

	"k8s.io/component-base/metrics"

	"github.com/gokubelet/kubelet/pkg/pod/timeline"
	"github.com/gokubelet/kubelet/pkg/stats"
)

// Authorization subresources of the nodes resource (upstream's).
const (
	SubresourceStats   = "stats"
	SubresourceMetrics = "metrics"
)

// Route is one endpoint: a path (a subtree when Prefix, as ServeMux's
// trailing "/"), its handler and the nodes subresource a caller must be
// allowed to "get" (verb by HTTP method, as upstream).
type Route struct {
	Path        string
	Prefix      bool
	Handler     http.Handler
	Subresource string
}

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
	StatsPrefix     = "/stats/"
	SummaryPath     = "/stats/summary"
	TimelinePath    = "/stats/timeline"
	MetricsPath     = "/metrics"
	CadvisorPath    = "/metrics/cadvisor"
	ResourcePath    = "/metrics/resource"
	ProbeMetricPath = "/metrics/probes"
)

// Routes returns the monitoring routes.
func Routes(o Options) []Route {
	var out []Route
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
		out = append(out, Route{Path: StatsPrefix, Prefix: true, Handler: statsMux, Subresource: SubresourceStats})
	}
	for _, m := range []struct {
		path string
		g    metrics.Gatherer
	}{{MetricsPath, o.Kubelet}, {CadvisorPath, o.Cadvisor}, {ResourcePath, o.Resource}, {ProbeMetricPath, o.Probes}} {
		if m.g != nil {
			out = append(out, Route{Path: m.path, Handler: metricsHandler(m.g), Subresource: SubresourceMetrics})
		}
	}
	return out
}

// metricsHandler serves a registry in the Prometheus text (or negotiated)
// format, serving what it can when a collector fails.
func metricsHandler(g metrics.Gatherer) http.Handler {
	h := metrics.HandlerFor(g, metrics.HandlerOpts{ErrorHandling: metrics.ContinueOnError})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Mount registers routes on mux (for servers without authorization, like
// the read-only port).
func Mount(mux *http.ServeMux, routes []Route) {
	for _, r := range routes {
		p := r.Path
		if r.Prefix && !strings.HasSuffix(p, "/") {
			p += "/"
		}
		mux.Handle(p, r.Handler)
	}
}

// WithRoutes serves routes in front of base: requests for a route's path go
// to the route, everything else to base.
func WithRoutes(base http.Handler, routes []Route) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", base)
	Mount(mux, routes)
	return mux
}
