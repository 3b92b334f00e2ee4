package monitoring

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	compbase "k8s.io/component-base/metrics"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/gokubelet/kubelet/pkg/pod/timeline"
	"github.com/gokubelet/kubelet/pkg/server"
	"github.com/gokubelet/kubelet/pkg/stats"
)

type fakeSummary struct{}

func (fakeSummary) Summary(context.Context, stats.Scope) (*statsapi.Summary, error) {
	return &statsapi.Summary{Node: statsapi.NodeStats{NodeName: "n1"}}, nil
}

type noPods struct{}

func (noPods) Pods() []*v1.Pod                                { return nil }
func (noPods) RunningPods(context.Context) ([]*v1.Pod, error) { return nil, nil }

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
	want := map[string]string{StatsPath: SubresourceStats, MetricsPath: SubresourceMetrics, CadvisorPath: SubresourceMetrics, ResourcePath: SubresourceMetrics, ProbeMetricPath: SubresourceMetrics}
	if len(routes) != len(want) {
		t.Fatalf("routes = %+v", routes)
	}
	for _, r := range routes {
		if want[r.Path] != r.Subresource || r.Handler == nil || !r.ReadOnly {
			t.Errorf("route %+v", r)
		}
	}
	// The authorization mapping of the kubelet API for these paths.
	for p, sub := range map[string]string{"/stats/summary": "stats", "/stats/timeline/ns/p": "stats", "/metrics": "metrics", "/metrics/cadvisor": "metrics", "/metrics/probes": "metrics"} {
		if got := server.Subresources(p, routes, true); len(got) != 1 || got[0] != sub {
			t.Errorf("%s authorized as %v, want %s", p, got, sub)
		}
	}

	// Served on the read-only API as its routes, beside /pods.
	h, err := server.ReadOnlyHandler(noPods{}, routes)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/pods", 200, `"kind":"PodList"`},
		{"GET", "/stats/summary", 200, `"nodeName":"n1"`},
		{"GET", "/stats/timeline", 200, "[]"},
		{"GET", "/stats/timeline/ns/p", 404, "no startup timeline"},
		{"GET", "/stats/other", 404, ""},
		{"GET", "/metrics", 200, ""},
		{"GET", "/metrics/probes", 200, ""},
		{"POST", "/metrics", 405, ""},
		{"GET", "/metrics/nothing", 404, ""},
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
