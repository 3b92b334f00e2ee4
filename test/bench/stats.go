package main

import (
	"bufio"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Pure helpers: percentiles, spreads, ratios, and parsers for /proc and the
// API server's metrics. Unit-tested in stats_test.go.

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100) of xs;
// NaN for no samples. xs is not modified.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	if rank < 1 {
		rank = 1
	}
	if rank > len(s) {
		rank = len(s)
	}
	return s[rank-1]
}

// Median is the middle value (mean of the two middle values for an even
// count), ignoring NaNs; NaN when nothing is left.
func Median(xs []float64) float64 {
	s := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			s = append(s, x)
		}
	}
	if len(s) == 0 {
		return math.NaN()
	}
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// MinMax ignores NaNs; both NaN when nothing is left.
func MinMax(xs []float64) (lo, hi float64) {
	lo, hi = math.NaN(), math.NaN()
	for _, x := range xs {
		if math.IsNaN(x) {
			continue
		}
		if math.IsNaN(lo) || x < lo {
			lo = x
		}
		if math.IsNaN(hi) || x > hi {
			hi = x
		}
	}
	return lo, hi
}

// Ratio is a/b, NaN when b is zero or either side is NaN.
func Ratio(a, b float64) float64 {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return a / b
}

// Seconds converts durations to float seconds.
func Seconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

// LatencySummary is the distribution of per-pod latencies in seconds.
type LatencySummary struct{ P50, P90, P99, Max float64 }

// Summarize computes p50/p90/p99/max.
func Summarize(xs []float64) LatencySummary {
	return LatencySummary{Percentile(xs, 50), Percentile(xs, 90), Percentile(xs, 99), Percentile(xs, 100)}
}

// ParseProcStatCPU returns utime+stime in clock ticks from the content of
// /proc/<pid>/stat. The command name (field 2) may contain spaces and
// parentheses, so fields are counted after the last ')'.
func ParseProcStatCPU(stat string) (uint64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed stat: no ')'")
	}
	f := strings.Fields(stat[i+1:])
	// After ')': state(3) ppid(4) ... utime is field 14, stime 15 (1-based
	// over the whole line), i.e. indexes 11 and 12 here.
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed stat: %d fields after comm", len(f))
	}
	u, err := strconv.ParseUint(f[11], 10, 64)
	if err != nil {
		return 0, err
	}
	s, err := strconv.ParseUint(f[12], 10, 64)
	if err != nil {
		return 0, err
	}
	return u + s, nil
}

// ParseProcStatusKB returns the value in KiB of a "Key:  N kB" line of
// /proc/<pid>/status (e.g. VmHWM, VmRSS).
func ParseProcStatusKB(status, key string) (uint64, error) {
	sc := bufio.NewScanner(strings.NewReader(status))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != key {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			break
		}
		return strconv.ParseUint(f[0], 10, 64)
	}
	return 0, fmt.Errorf("no %s in status", key)
}

// NodeFlowSchemas are the API Priority and Fairness flow schemas that match
// requests of group system:nodes (the kubelet's identity) in the default
// configuration of kube-apiserver 1.34 to 1.37 (k8s.io/apiserver pkg/apis/flowcontrol/bootstrap).
var NodeFlowSchemas = []string{"system-nodes", "system-node-high"}

// SumDispatched sums apiserver_flowcontrol_dispatched_requests_total over
// the given flow schemas from a Prometheus text exposition.
func SumDispatched(metrics string, schemas []string) (float64, error) {
	want := map[string]bool{}
	for _, s := range schemas {
		want[s] = true
	}
	var sum float64
	found := false
	err := eachSample(metrics, "apiserver_flowcontrol_dispatched_requests_total", func(labels map[string]string, v float64) {
		found = true
		if want[labels["flow_schema"]] {
			sum += v
		}
	})
	if err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("no apiserver_flowcontrol_dispatched_requests_total in metrics")
	}
	return sum, nil
}

func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			out[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	return out
}

// FormatNum prints a figure compactly: NaN as "–", otherwise with a number
// of decimals that suits its size.
func FormatNum(x float64) string {
	switch {
	case math.IsNaN(x):
		return "–"
	case math.Abs(x) >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case math.Abs(x) >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	default:
		return strconv.FormatFloat(x, 'f', 2, 64)
	}
}

// FormatSpread prints "median [min–max]".
func FormatSpread(xs []float64) string {
	m := Median(xs)
	if math.IsNaN(m) {
		return "–"
	}
	lo, hi := MinMax(xs)
	if len(xs) < 2 {
		return FormatNum(m)
	}
	return fmt.Sprintf("%s [%s–%s]", FormatNum(m), FormatNum(lo), FormatNum(hi))
}

// PairedRatios divides a[i] by b[i] for each round both have.
func PairedRatios(a, b []float64) []float64 {
	n := len(a)
	if len(b) < n {
		n = len(b)
	}
	out := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, Ratio(a[i], b[i]))
	}
	return out
}

// KlogEvent is one line of our kubelet's log that marks a step of a pod's
// startup.
type KlogEvent struct {
	At   time.Time
	Msg  string   // "Pod config update" (op ADD), "Created pod sandbox", "Started container"
	Pods []string // namespace/name
}

// ParseKlogLine reads a klog text line ("I1122 16:05:53.159062 pid file:line] "msg" k=v ...")
// and returns the startup steps it marks. year and loc complete klog's
// timestamp, which has neither.
func ParseKlogLine(line string, year int, loc *time.Location) (KlogEvent, bool) {
	if len(line) < 22 || line[0] != 'I' {
		return KlogEvent{}, false
	}
	at, err := time.ParseInLocation("0102 15:04:05.000000", line[1:21], loc)
	if err != nil {
		return KlogEvent{}, false
	}
	at = at.AddDate(year-at.Year(), 0, 0)
	i := strings.Index(line, `] "`)
	if i < 0 {
		return KlogEvent{}, false
	}
	rest := line[i+3:]
	j := strings.IndexByte(rest, '"')
	if j < 0 {
		return KlogEvent{}, false
	}
	msg, kv := rest[:j], rest[j+1:]
	ev := KlogEvent{At: at, Msg: msg}
	switch msg {
	case "Pod config update":
		if !strings.Contains(kv, ` op="ADD"`) {
			return KlogEvent{}, false
		}
		k := strings.Index(kv, ` pods=[`)
		if k < 0 {
			return KlogEvent{}, false
		}
		list := kv[k+len(` pods=[`):]
		if e := strings.IndexByte(list, ']'); e >= 0 {
			list = list[:e]
		}
		for _, p := range strings.Split(list, ",") {
			if p = strings.Trim(strings.TrimSpace(p), `"`); p != "" {
				ev.Pods = append(ev.Pods, p)
			}
		}
	case "Created pod sandbox", "Started container":
		k := strings.Index(kv, ` pod="`)
		if k < 0 {
			return KlogEvent{}, false
		}
		p := kv[k+len(` pod="`):]
		if e := strings.IndexByte(p, '"'); e >= 0 {
			p = p[:e]
		}
		ev.Pods = []string{p}
	default:
		return KlogEvent{}, false
	}
	return ev, len(ev.Pods) > 0
}

// SumByLabel sums the samples of the counter name in a Prometheus text
// exposition by the value of one label (e.g. kubelet_runtime_operations_total
// by operation_type).
func SumByLabel(metrics, name, label string) (map[string]float64, error) {
	out := map[string]float64{}
	found := false
	err := eachSample(metrics, name, func(labels map[string]string, v float64) {
		found = true
		out[labels[label]] += v
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("no %s in metrics", name)
	}
	return out, nil
}

// eachSample calls f with the labels and value of each labelled sample of
// the metric name in a Prometheus text exposition; a value that is not a
// number is an error.
func eachSample(metrics, name string, f func(labels map[string]string, v float64)) error {
	for _, line := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		end := strings.IndexByte(line, '}')
		if end < 0 {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		if err != nil {
			return fmt.Errorf("bad sample %q: %w", line, err)
		}
		f(parseLabels(line[len(name)+1:end]), v)
	}
	return nil
}
