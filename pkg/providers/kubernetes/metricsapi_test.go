package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
	"github.com/gokubelet/kubelet/pkg/stats"
)

func TestMetricsError(t *testing.T) {
	gr := schema.GroupResource{Group: "metrics.k8s.io", Resource: "pods"}
	for _, tt := range []struct {
		err     error
		noAPI   bool
		mention string
	}{
		{apierrors.NewNotFound(gr, ""), true, "metrics.k8s.io/v1beta1"},
		{apierrors.NewServiceUnavailable("no endpoints"), true, "metrics-server"},
		{apierrors.NewForbidden(gr, "", errors.New("rbac")), false, "list on pods in API group metrics.k8s.io"},
		{errors.New("connection refused"), false, "metrics.k8s.io/v1beta1"},
	} {
		err := metricsError("vk-shop", tt.err)
		if errors.Is(err, errNoMetricsAPI) != tt.noAPI || !strings.Contains(err.Error(), tt.mention) || !strings.Contains(err.Error(), "vk-shop") {
			t.Errorf("%v -> %v", tt.err, err)
		}
	}
}

// fakeMetricsAPI serves PodMetricsList at the metrics API's path, or a
// status code; it counts requests by path.
type fakeMetricsAPI struct {
	mu       sync.Mutex
	items    map[string][]metricsv1beta1.PodMetrics // by namespace
	status   int
	requests map[string]int
}

func (f *fakeMetricsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests[r.Method+" "+r.URL.Path]++
	if f.status != 0 {
		http.Error(w, http.StatusText(f.status), f.status)
		return
	}
	var ns string
	if _, err := fmt.Sscanf(strings.ReplaceAll(r.URL.Path, "/", " "), " apis metrics.k8s.io v1beta1 namespaces %s pods", &ns); err != nil || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	list := metricsv1beta1.PodMetricsList{TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: "metrics.k8s.io/v1beta1"}, Items: f.items[ns]}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}

// Against a REST server: the provider lists PodMetrics of its namespace
// once per call, reports its own pod under the origin's identity (not a
// foreign pod's figures), and fails naming metrics.k8s.io when the target
// has no metrics API.
func TestGetStatsSummaryFromMetricsAPI(t *testing.T) {
	api := &fakeMetricsAPI{items: map[string][]metricsv1beta1.PodMetrics{}, requests: map[string]int{}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	metricsClient := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL})

	target, watching := fakeTarget()
	p, seen, mu := startProvider(t, "vk-remote", target, watching, originFixture())
	p.podMetrics = restPodMetrics(metricsClient.Discovery().RESTClient())
	ctx := context.Background()

	// No pods: nothing to ask, no figures.
	s, err := p.GetStatsSummary(ctx)
	if err != nil || s.Node.NodeName != "vk-remote" || s.Node.CPU != nil || len(s.Pods) != 0 || len(api.requests) != 0 {
		t.Fatalf("no pods: %+v %v, requests %v", s, err, api.requests)
	}

	if err := p.CreatePod(ctx, originPod()); err != nil {
		t.Fatal(err)
	}
	tp, err := target.CoreV1().Pods("vk-shop").Get(ctx, "web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tp.Status = v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running("main", "containerd://abc", time.Now().Add(-time.Hour))}}
	if _, err := target.CoreV1().Pods("vk-shop").UpdateStatus(ctx, tp, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	evil := forgedPod("vk-shop", "evil")
	if _, err := target.CoreV1().Pods("vk-shop").Create(ctx, evil, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, "the running pod", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range *seen {
			if s.UID == "uid-1" && s.Status.Phase == v1.PodRunning {
				return true
			}
		}
		return false
	})

	now := time.Now().Truncate(time.Second)
	put := func(ts time.Time, cpu string) {
		api.mu.Lock()
		defer api.mu.Unlock()
		api.items["vk-shop"] = []metricsv1beta1.PodMetrics{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "vk-shop", Name: "evil"}, Timestamp: metav1.NewTime(ts), Window: metav1.Duration{Duration: 15 * time.Second},
				Containers: []metricsv1beta1.ContainerMetrics{{Name: "main", Usage: usage("64", "1Ti")}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "vk-shop", Name: "web-1"}, Timestamp: metav1.NewTime(ts), Window: metav1.Duration{Duration: 15 * time.Second},
				Containers: []metricsv1beta1.ContainerMetrics{{Name: "main", Usage: usage(cpu, "200Mi")}}},
		}
	}
	put(now.Add(-15*time.Second), "250m")
	if _, err := p.GetStatsSummary(ctx); err != nil {
		t.Fatal(err)
	}
	put(now, "500m")
	s, err = p.GetStatsSummary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Pods) != 1 {
		t.Fatalf("pods = %+v, want only the provider's", s.Pods)
	}
	ps := s.Pods[0]
	if ps.PodRef != (statsv1alpha1.PodReference{Namespace: "shop", Name: "web-1", UID: "uid-1"}) || len(ps.Containers) != 1 {
		t.Fatalf("pod = %+v, want the origin's identity", ps)
	}
	c := ps.Containers[0]
	if c.Name != "main" || *c.CPU.UsageNanoCores != 500_000_000 || *c.CPU.UsageCoreNanoSeconds != 7_500_000_000 || !c.CPU.Time.Time.Equal(now) ||
		*c.Memory.WorkingSetBytes != 200<<20 || c.Memory.UsageBytes != nil {
		t.Errorf("container = %s %s %s", c.Name, cpuOf(c.CPU), memOf(c.Memory))
	}
	if *s.Node.CPU.UsageNanoCores != 500_000_000 || *s.Node.Memory.WorkingSetBytes != 200<<20 {
		t.Errorf("node = %s %s, want its one pod's", cpuOf(s.Node.CPU), memOf(s.Node.Memory))
	}
	if n := api.requests["GET /apis/metrics.k8s.io/v1beta1/namespaces/vk-shop/pods"]; n != 2 || len(api.requests) != 1 {
		t.Errorf("requests = %v, want one LIST of vk-shop per call", api.requests)
	}

	// What /metrics/resource makes of it (metrics-server reads this).
	mfs, err := stats.NewResourceRegistry(summaryOf{p}).Gather()
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["pod"] == "evil" || labels["namespace"] == "vk-shop" {
				t.Errorf("%s: a target identity %v", mf.GetName(), labels)
			}
			if mf.GetName() == "container_cpu_usage_seconds_total" && labels["namespace"] == "shop" && labels["pod"] == "web-1" {
				found = m.GetCounter().GetValue() == 7.5 && m.GetTimestampMs() == now.UnixMilli()
			}
		}
	}
	if !found {
		t.Errorf("no container_cpu_usage_seconds_total 7.5 at %v for shop/web-1 in %v", now, mfs)
	}

	// Scraped concurrently.
	var wg sync.WaitGroup
	var failed atomic.Int32
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := p.GetStatsSummary(ctx); err != nil {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	if failed.Load() != 0 {
		t.Errorf("%d concurrent calls failed", failed.Load())
	}

	// No metrics API in the target (404), or its server down (503).
	for _, code := range []int{http.StatusNotFound, http.StatusServiceUnavailable} {
		api.mu.Lock()
		api.status = code
		api.mu.Unlock()
		s, err := p.GetStatsSummary(ctx)
		if s != nil || !errors.Is(err, errNoMetricsAPI) || !strings.Contains(err.Error(), "metrics.k8s.io") {
			t.Errorf("%d: %+v, %v; want an error naming the target's metrics.k8s.io", code, s, err)
		}
	}
	api.mu.Lock()
	api.status = http.StatusForbidden
	api.mu.Unlock()
	if _, err := p.GetStatsSummary(ctx); err == nil || !strings.Contains(err.Error(), "list on pods in API group metrics.k8s.io") {
		t.Errorf("403: %v, want the rule the target identity lacks", err)
	}
}

// summaryOf is the provider as the stats routes read it.
type summaryOf struct{ p *Provider }

func (s summaryOf) Summary(ctx context.Context, _ stats.Scope) (*statsv1alpha1.Summary, error) {
	return s.p.GetStatsSummary(ctx)
}
