package monitoring

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	compbase "k8s.io/component-base/metrics"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/gokubelet/kubelet/pkg/pod/timeline"
)

type fakeSummary struct{}

func (fakeSummary) Summary(context.Context, bool) (*statsapi.Summary, error) {
	return &statsapi.Summary{Node: statsapi.NodeStats{NodeName: "n1"}}, nil
}

func get(t *testing.T, h http.Handler, method, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, string(b)
}

func TestRoutes(t *testing.T) {
	reg := compbase.NewKubeRegistry()
	routes := Routes(Options{Summary: fakeSummary{}, Timeline: timeline.New(nil), Kubelet: reg, Probes: reg, Resource: reg, Cadvisor: reg})
	want := map[string]string{StatsPrefix: SubresourceStats, MetricsPath: SubresourceMetrics, CadvisorPath: SubresourceMetrics, ResourcePath: SubresourceMetrics, ProbeMetricPath: SubresourceMetrics}
	if len(routes) != len(want) {
		t.Fatalf("routes = %+v", routes)
	}
	for _, r := range routes {
		if want[r.Path] != r.Subresource || r.Handler == nil || r.Prefix != (r.Path == StatsPrefix) {
			t.Errorf("route %+v", r)
		}
	}

	base := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "base:"+r.URL.Path) })
	h := WithRoutes(base, routes)
	for _, tc := range []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/pods", 200, "base:/pods"},
		{"GET", "/healthz", 200, "base:/healthz"},
		{"GET", "/stats/summary", 200, `"nodeName":"n1"`},
		{"GET", "/stats/timeline", 200, "[]"},
		{"GET", "/stats/timeline/ns/p", 404, "no startup timeline"},
		{"GET", "/stats/other", 404, ""},
		{"GET", "/metrics", 200, ""},
		{"GET", "/metrics/probes", 200, ""},
		{"POST", "/metrics", 405, ""},
		{"GET", "/metrics/nothing", 200, "base:/metrics/nothing"},
	} {
		code, body := get(t, h, tc.method, tc.path)
		if code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("%s %s: %d %q", tc.method, tc.path, code, body)
		}
	}
	// Only what is given is routed.
	if r := Routes(Options{Kubelet: reg}); len(r) != 1 || r[0].Path != MetricsPath {
		t.Errorf("partial routes = %+v", r)
	}
}
