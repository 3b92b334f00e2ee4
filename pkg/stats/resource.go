package stats

import (
	"context"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// The /metrics/resource metrics: upstream's names, labels and meanings
// (metrics-server reads the node_ and container_ CPU and memory ones, with
// their timestamps).
var (
	nodeCPUDesc = metrics.NewDesc("node_cpu_usage_seconds_total",
		"CPU time the node used, cumulative, in core-seconds.", nil, nil, metrics.STABLE, "")
	nodeMemDesc = metrics.NewDesc("node_memory_working_set_bytes",
		"The node's memory working set, in bytes.", nil, nil, metrics.STABLE, "")
	nodeSwapDesc = metrics.NewDesc("node_swap_usage_bytes",
		"Swap the node uses, in bytes.", nil, nil, metrics.ALPHA, "")
	containerCPUDesc = metrics.NewDesc("container_cpu_usage_seconds_total",
		"CPU time the container used, cumulative, in core-seconds.", []string{"container", "pod", "namespace"}, nil, metrics.STABLE, "")
	containerMemDesc = metrics.NewDesc("container_memory_working_set_bytes",
		"The container's memory working set, in bytes.", []string{"container", "pod", "namespace"}, nil, metrics.STABLE, "")
	containerStartDesc = metrics.NewDesc("container_start_time_seconds",
		"When the container was created, as unix time in seconds.", []string{"container", "pod", "namespace"}, nil, metrics.STABLE, "")
	podCPUDesc = metrics.NewDesc("pod_cpu_usage_seconds_total",
		"CPU time the pod used, cumulative, in core-seconds.", []string{"pod", "namespace"}, nil, metrics.STABLE, "")
	podMemDesc = metrics.NewDesc("pod_memory_working_set_bytes",
		"The pod's memory working set, in bytes.", []string{"pod", "namespace"}, nil, metrics.STABLE, "")
	// scrape_error is upstream's older name of resource_scrape_error
	// (deprecated there since 1.29); both are served.
	scrapeErrorDesc = metrics.NewDesc("scrape_error",
		"1 if the last collection of resource metrics failed, else 0 (older name of resource_scrape_error).", nil, nil, metrics.ALPHA, "")
	resourceScrapeErrorDesc = metrics.NewDesc("resource_scrape_error",
		"1 if the last collection of resource metrics failed, else 0.", nil, nil, metrics.STABLE, "")
)

// Scope is how much of the summary its reader needs; each reads only
// what it returns.
type Scope int

const (
	// Full is /stats/summary.
	Full Scope = iota
	// CPUAndMemory is /stats/summary?only_cpu_and_memory=true: the CPU
	// and memory of the node, its pods and containers, with their pressure
	// (PSI); no filesystems, network, volumes or logs.
	CPUAndMemory
	// ResourceMetrics is /metrics/resource: CPU and memory usage alone.
	// The pods' and containers' pressure files are not read.
	ResourceMetrics

	scopes = iota
)

// SummarySource is what the summary routes and the resource collector read.
type SummarySource interface {
	Summary(ctx context.Context, scope Scope) (*statsapi.Summary, error)
}

// ResourceCollector serves /metrics/resource from the CPU and memory
// summary, collected when scraped.
type ResourceCollector struct {
	metrics.BaseStableCollector
	src SummarySource
}

// NewResourceCollector returns the /metrics/resource collector.
func NewResourceCollector(src SummarySource) *ResourceCollector { return &ResourceCollector{src: src} }

// NewResourceRegistry returns the registry served on /metrics/resource.
func NewResourceRegistry(src SummarySource) metrics.KubeRegistry {
	r := metrics.NewKubeRegistry()
	r.CustomMustRegister(NewResourceCollector(src))
	return r
}

func (c *ResourceCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	for _, d := range []*metrics.Desc{nodeCPUDesc, nodeMemDesc, nodeSwapDesc, containerCPUDesc, containerMemDesc,
		containerStartDesc, podCPUDesc, podMemDesc, scrapeErrorDesc, resourceScrapeErrorDesc} {
		ch <- d
	}
}

func (c *ResourceCollector) CollectWithStability(ch chan<- metrics.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.src.Summary(ctx, ResourceMetrics)
	failed := 0.0
	if err != nil {
		failed = 1
		klog.ErrorS(err, "Collecting resource metrics failed")
	}
	ch <- metrics.NewLazyConstMetric(scrapeErrorDesc, metrics.GaugeValue, failed)
	ch <- metrics.NewLazyConstMetric(resourceScrapeErrorDesc, metrics.GaugeValue, failed)
	if err != nil {
		return
	}
	EmitResourceMetrics(ch, s)
}

// withTime stamps a sample with when it was measured.
func withTime(t time.Time, m metrics.Metric) metrics.Metric {
	return metrics.NewLazyMetricWithTimestamp(t, m)
}

// EmitResourceMetrics writes the resource metrics of a summary.
func EmitResourceMetrics(ch chan<- metrics.Metric, s *statsapi.Summary) {
	n := s.Node
	if n.CPU != nil && n.CPU.UsageCoreNanoSeconds != nil {
		ch <- withTime(n.CPU.Time.Time, metrics.NewLazyConstMetric(nodeCPUDesc, metrics.CounterValue, float64(*n.CPU.UsageCoreNanoSeconds)/1e9))
	}
	if n.Memory != nil && n.Memory.WorkingSetBytes != nil {
		ch <- withTime(n.Memory.Time.Time, metrics.NewLazyConstMetric(nodeMemDesc, metrics.GaugeValue, float64(*n.Memory.WorkingSetBytes)))
	}
	if n.Swap != nil && n.Swap.SwapUsageBytes != nil {
		ch <- withTime(n.Swap.Time.Time, metrics.NewLazyConstMetric(nodeSwapDesc, metrics.GaugeValue, float64(*n.Swap.SwapUsageBytes)))
	}
	for _, p := range s.Pods {
		name, ns := p.PodRef.Name, p.PodRef.Namespace
		for _, c := range p.Containers {
			if !c.StartTime.IsZero() {
				ch <- metrics.NewLazyConstMetric(containerStartDesc, metrics.GaugeValue, float64(c.StartTime.UnixNano())/1e9, c.Name, name, ns)
			}
			if c.CPU != nil && c.CPU.UsageCoreNanoSeconds != nil {
				ch <- withTime(c.CPU.Time.Time, metrics.NewLazyConstMetric(containerCPUDesc, metrics.CounterValue, float64(*c.CPU.UsageCoreNanoSeconds)/1e9, c.Name, name, ns))
			}
			if c.Memory != nil && c.Memory.WorkingSetBytes != nil {
				ch <- withTime(c.Memory.Time.Time, metrics.NewLazyConstMetric(containerMemDesc, metrics.GaugeValue, float64(*c.Memory.WorkingSetBytes), c.Name, name, ns))
			}
		}
		if p.CPU != nil && p.CPU.UsageCoreNanoSeconds != nil {
			ch <- withTime(p.CPU.Time.Time, metrics.NewLazyConstMetric(podCPUDesc, metrics.CounterValue, float64(*p.CPU.UsageCoreNanoSeconds)/1e9, name, ns))
		}
		if p.Memory != nil && p.Memory.WorkingSetBytes != nil {
			ch <- withTime(p.Memory.Time.Time, metrics.NewLazyConstMetric(podMemDesc, metrics.GaugeValue, float64(*p.Memory.WorkingSetBytes), name, ns))
		}
	}
}
