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
	// Working: the pod workers, for kubelet_working_pods.
	Working map[WorkingPod]int
	// Ephemeral: the ephemeral containers in the desired pods' specs.
	Ephemeral int
}

// WorkingPod is one series of kubelet_working_pods: a pod worker's
// lifecycle (WorkingSync, WorkingTerminating, WorkingTerminated), whether
// its pod is desired (in the kubelet's configuration), an orphan (left it,
// and still being stopped or cleaned up) or known only from the runtime,
// and whether it is a static pod ("true", "", or "unknown" for a runtime
// only pod), as upstream labels them.
type WorkingPod struct{ Lifecycle, Config, Static string }

// The label values of kubelet_working_pods.
const (
	WorkingSync        = "sync"
	WorkingTerminating = "terminating"
	WorkingTerminated  = "terminated"

	WorkingDesired     = "desired"
	WorkingOrphan      = "orphan"
	WorkingRuntimeOnly = "runtime_only"
)

// workingPodSeries are the 15 series kubelet_working_pods always reports
// (upstream's: every lifecycle of desired and orphaned pods, static or
// not, and of runtime only pods).
var workingPodSeries = func() []WorkingPod {
	var out []WorkingPod
	for _, c := range []WorkingPod{{Config: WorkingDesired}, {Config: WorkingDesired, Static: "true"},
		{Config: WorkingOrphan}, {Config: WorkingOrphan, Static: "true"}, {Config: WorkingRuntimeOnly, Static: "unknown"}} {
		for _, l := range []string{WorkingSync, WorkingTerminating, WorkingTerminated} {
			c.Lifecycle = l
			out = append(out, c)
		}
	}
	return out
}()

// PodCountSource returns the pod counts; read at scrape time.
type PodCountSource func() PodCounts

var (
	desiredPodsDesc = metrics.NewDesc("kubelet_desired_pods",
		"Number of pods the kubelet is told to run; static is true for static pods.", []string{"static"}, nil, metrics.ALPHA, "")
	activePodsDesc = metrics.NewDesc("kubelet_active_pods",
		"Number of pods the kubelet considers active (admitted, not finished), which new pods are admitted against; static is true for static pods.", []string{"static"}, nil, metrics.ALPHA, "")
	mirrorPodsDesc = metrics.NewDesc("kubelet_mirror_pods",
		"Number of mirror pods of static pods known to the kubelet.", nil, nil, metrics.ALPHA, "")
	workingPodsDesc = metrics.NewDesc("kubelet_working_pods",
		"Number of pods the kubelet's pod workers hold, by lifecycle (sync, terminating, terminated), whether the pod is desired, orphaned (left the kubelet's configuration, still being stopped or cleaned up) or runtime_only (found in the runtime without a spec), and whether it is static.",
		[]string{"lifecycle", "config", "static"}, nil, metrics.ALPHA, "")
	ephemeralContainersDesc = metrics.NewDesc("kubelet_managed_ephemeral_containers",
		"Number of ephemeral containers in the pods the kubelet is told to run.", nil, nil, metrics.ALPHA, "")
)

type podCountCollector struct {
	metrics.BaseStableCollector
	source PodCountSource
}

func (c *podCountCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- desiredPodsDesc
	ch <- activePodsDesc
	ch <- mirrorPodsDesc
	ch <- workingPodsDesc
	ch <- ephemeralContainersDesc
}

func (c *podCountCollector) CollectWithStability(ch chan<- metrics.Metric) {
	n := c.source()
	for i, static := range []string{"", "true"} {
		ch <- metrics.NewLazyConstMetric(desiredPodsDesc, metrics.GaugeValue, float64(n.Desired[i]), static)
		ch <- metrics.NewLazyConstMetric(activePodsDesc, metrics.GaugeValue, float64(n.Active[i]), static)
	}
	ch <- metrics.NewLazyConstMetric(mirrorPodsDesc, metrics.GaugeValue, float64(n.Mirror))
	ch <- metrics.NewLazyConstMetric(ephemeralContainersDesc, metrics.GaugeValue, float64(n.Ephemeral))
	for _, s := range workingPodSeries {
		ch <- metrics.NewLazyConstMetric(workingPodsDesc, metrics.GaugeValue, float64(n.Working[s]), s.Lifecycle, s.Config, s.Static)
	}
}
