package metrics

import (
	"k8s.io/component-base/metrics"

	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// RunningSource returns the pods as the runtime last showed them (the
// PLEG's cache); it is read at scrape time only.
type RunningSource func() []*container.PodStatus

var (
	runningPodsDesc = metrics.NewDesc("kubelet_running_pods",
		"Number of pods whose newest sandbox is running.",
		nil, nil, metrics.ALPHA, "")
	runningContainersDesc = metrics.NewDesc("kubelet_running_containers",
		"Number of containers in the runtime, by state (created, running, exited, unknown).",
		[]string{"container_state"}, nil, metrics.ALPHA, "")
)

// containerStates are the container_state values, always all reported.
var containerStates = []container.State{container.StateCreated, container.StateRunning, container.StateExited, container.StateUnknown}

// runningCollector computes kubelet_running_pods and
// kubelet_running_containers from the runtime cache when scraped, so
// nothing is counted on the PLEG's path.
type runningCollector struct {
	metrics.BaseStableCollector
	source RunningSource
}

func newRunningCollector(s RunningSource) *runningCollector { return &runningCollector{source: s} }

func (c *runningCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- runningPodsDesc
	ch <- runningContainersDesc
}

func (c *runningCollector) CollectWithStability(ch chan<- metrics.Metric) {
	pods, byState := CountRunning(c.source())
	ch <- metrics.NewLazyConstMetric(runningPodsDesc, metrics.GaugeValue, float64(pods))
	for _, s := range containerStates {
		ch <- metrics.NewLazyConstMetric(runningContainersDesc, metrics.GaugeValue, float64(byState[s]), string(s))
	}
}

// CountRunning counts the pods with a ready newest sandbox and the
// containers by state.
func CountRunning(pods []*container.PodStatus) (int, map[container.State]int) {
	n := 0
	byState := map[container.State]int{}
	for _, p := range pods {
		if p.ReadySandbox() != nil {
			n++
		}
		for _, c := range p.Containers {
			byState[c.State]++
		}
	}
	return n, byState
}
