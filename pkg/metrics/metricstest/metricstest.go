// Package metricstest parses Prometheus text expositions for tests: a
// scrape of a handler or URL becomes metric families, with helpers to find
// a series by labels.
package metricstest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	compbase "k8s.io/component-base/metrics"
)

// Families are the metric families of one scrape, by name.
type Families map[string]*dto.MetricFamily

// Parse parses the Prometheus text format.
func Parse(r io.Reader) (Families, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(r)
}

// ScrapeRegistry scrapes r as its /metrics handler serves it, failing the
// test on an error.
func ScrapeRegistry(t testing.TB, r compbase.KubeRegistry) Families {
	t.Helper()
	f, err := ScrapeHandler(compbase.HandlerFor(r, compbase.HandlerOpts{}), "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// ScrapeHandler GETs path from h (asking for the text format) and parses
// the answer.
func ScrapeHandler(h http.Handler, path string) (Families, error) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Accept", "text/plain")
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", path, rec.Code, rec.Body.String())
	}
	return Parse(rec.Body)
}

// Labels returns a sample's labels as a map.
func Labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// Matches reports whether a sample has every label of want.
func Matches(m *dto.Metric, want map[string]string) bool {
	got := Labels(m)
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// Find returns the samples of family name whose labels include want.
func (f Families) Find(name string, want map[string]string) []*dto.Metric {
	mf := f[name]
	if mf == nil {
		return nil
	}
	var out []*dto.Metric
	for _, m := range mf.GetMetric() {
		if Matches(m, want) {
			out = append(out, m)
		}
	}
	return out
}

// Value is a sample's value: a counter's or gauge's value, a histogram's
// sample count, an untyped value.
func Value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetHistogram() != nil:
		return float64(m.GetHistogram().GetSampleCount())
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// Sum adds the values of the samples of name matching want (0 when none).
func (f Families) Sum(name string, want map[string]string) float64 {
	total := 0.0
	for _, m := range f.Find(name, want) {
		total += Value(m)
	}
	return total
}

// Observed adds up the histograms of name matching want: how many
// observations they hold, and their sum.
func (f Families) Observed(name string, want map[string]string) (count uint64, sum float64) {
	for _, m := range f.Find(name, want) {
		count += m.GetHistogram().GetSampleCount()
		sum += m.GetHistogram().GetSampleSum()
	}
	return count, sum
}

// Names lists the families, sorted (for failure messages).
func (f Families) Names() string {
	var n []string
	for k := range f {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, " ")
}

// LabelNames returns the label names of family name's first sample,
// sorted.
func (f Families) LabelNames(name string) []string {
	mf := f[name]
	if mf == nil || len(mf.GetMetric()) == 0 {
		return nil
	}
	var out []string
	for _, l := range mf.GetMetric()[0].GetLabel() {
		out = append(out, l.GetName())
	}
	sort.Strings(out)
	return out
}
