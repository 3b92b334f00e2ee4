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

// PodCounts are the kubelet's pod sets, by static (index 1) or not
// (index 0).
type PodCounts struct {
	// Desired: pods the kubelet is told to run (mirror pods excluded).
	Desired [2]int
	// Active: desired pods admitted and not finished, the ones admission
	// weighs new pods against.
	Active [2]int
	// Mirror: mirror pods of static pods known to the kubelet.
	Mirror int
}

// PodCountSource returns the pod counts; read at scrape time.
type PodCountSource func() PodCounts

var (
	desiredPodsDesc = metrics.NewDesc("kubelet_desired_pods",
		"Number of pods the kubelet is told to run; static is true for static pods.", []string{"static"}, nil, metrics.ALPHA, "")
	activePodsDesc = metrics.NewDesc("kubelet_active_pods",
		"Number of pods the kubelet considers active (admitted, not finished), which new pods are admitted against; static is true for static pods.", []string{"static"}, nil, metrics.ALPHA, "")
	mirrorPodsDesc = metrics.NewDesc("kubelet_mirror_pods",
		"Number of mirror pods of static pods known to the kubelet.", nil, nil, metrics.ALPHA, "")
)

type podCountCollector struct {
	metrics.BaseStableCollector
	source PodCountSource
}

func (c *podCountCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- desiredPodsDesc
	ch <- activePodsDesc
	ch <- mirrorPodsDesc
}

func (c *podCountCollector) CollectWithStability(ch chan<- metrics.Metric) {
	n := c.source()
	for i, static := range []string{"", "true"} {
		ch <- metrics.NewLazyConstMetric(desiredPodsDesc, metrics.GaugeValue, float64(n.Desired[i]), static)
		ch <- metrics.NewLazyConstMetric(activePodsDesc, metrics.GaugeValue, float64(n.Active[i]), static)
	}
	ch <- metrics.NewLazyConstMetric(mirrorPodsDesc, metrics.GaugeValue, float64(n.Mirror))
}
