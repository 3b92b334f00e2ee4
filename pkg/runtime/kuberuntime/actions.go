package kuberuntime

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// BackoffState answers whether a container restart must still wait. It is
// the read side of client-go's *flowcontrol.Backoff (see package backoff);
// the decision function never records.
type BackoffState interface {
	// IsInBackOffSince: a failure at eventTime must still wait, by the
	// back-off's clock (the same clock as the decision's now).
	IsInBackOffSince(key string, eventTime time.Time) bool
	// Get is the key's current delay.
	Get(key string) time.Duration
}

// Reasons a running container is killed.
const (
	KillReasonSpecChanged   = "SpecChanged"
	KillReasonNotInSpec     = "NotInSpec"
	KillReasonUnknownState  = "UnknownState"
	KillReasonPodTerminated = "PodTerminated"
	// KillReasonLivenessProbe and KillReasonStartupProbe: the probe reached
	// its failureThreshold on the running instance.
	KillReasonLivenessProbe = "LivenessProbe"
	KillReasonStartupProbe  = "StartupProbe"
)

// LivenessFunc reports whether the liveness or startup probe of one running
// container instance (containerID is the runtime's ID, without the
// "<runtime>://" prefix) has failed, that is reached its failureThreshold.
// message is upstream's words for it: "Container <name> failed liveness
// probe" or "Container <name> failed startup probe"; which probe it names
// decides the grace period of the kill. It must not block: it is read by the
// pure decision.
type LivenessFunc func(podUID types.UID, containerName, containerID string) (failed bool, message string)

// ReasonCrashLoopBackOff is the waiting reason of a container whose restart
// is deferred by the back-off.
const ReasonCrashLoopBackOff = "CrashLoopBackOff"

// ContainerToKill names one container instance to stop and why.
type ContainerToKill struct {
	ID      string
	Name    string
	Reason  string
	Message string
	// GracePeriod, when set, overrides the pod's grace period (a failed
	// probe's terminationGracePeriodSeconds).
	GracePeriod *int64
}

// ContainerToStart is one container to create and start.
type ContainerToStart struct {
	// Name of the container in the spec.
	Name string
	// Init is true for init containers (including sidecars).
	Init bool
	// Ephemeral is true for ephemeral containers (never restarted).
	Ephemeral bool
	// Index in pod.Spec.InitContainers, pod.Spec.Containers or
	// pod.Spec.EphemeralContainers.
	Index int
	// RestartCount is the attempt number the new instance gets.
	RestartCount int
	// BackoffKey and FailedAt are set when this is a restart after an exit:
	// the executor records the restart in the back-off at FailedAt.
	BackoffKey string
	FailedAt   time.Time
}

// Deferred is a container that should run but must wait (crash back-off).
type Deferred struct {
	Name    string
	Init    bool
	Reason  string
	Message string
	// RetryAfter is how long until the back-off ends.
	RetryAfter time.Duration
}

// PodActions is what SyncPod must do for a pod, in this order: kill the pod
// (all containers and the sandbox) if KillPod, else kill ContainersToKill;
// create the sandbox if CreateSandbox; start EphemeralContainersToStart;
// start InitContainersToStart in order; then ContainersToStart.
type PodActions struct {
	// KillPod stops every container and the sandbox first.
	KillPod bool
	// CreateSandbox asks for a new sandbox with Attempt; otherwise SandboxID
	// is the ready sandbox to use.
	CreateSandbox bool
	SandboxID     string
	Attempt       uint32
	// SandboxReason says why a new sandbox is needed (for the log).
	SandboxReason string
	// InitFailed is true when an init container failed and the restart
	// policy is Never: the pod has failed and nothing more will run.
	InitFailed bool
	// InitContainersToStart is at most one regular init container (they run
	// one at a time, in order), plus sidecars (restartPolicy Always init
	// containers) to (re)start.
	InitContainersToStart []ContainerToStart
	ContainersToStart     []ContainerToStart
	// EphemeralContainersToStart are the ephemeral containers that never
	// ran in the pod; they start in the running sandbox whatever the state
	// of initialization, and are never restarted.
	EphemeralContainersToStart []ContainerToStart
	ContainersToKill           []ContainerToKill
	Deferred                   []Deferred
}

// Empty reports whether there is nothing to do.
func (a PodActions) Empty() bool {
	return !a.KillPod && !a.CreateSandbox && len(a.InitContainersToStart) == 0 &&
		len(a.ContainersToStart) == 0 && len(a.ContainersToKill) == 0 && len(a.EphemeralContainersToStart) == 0
}

// Probes are what the pure decision reads of probe results.
type Probes struct {
	// Liveness tells which running instances failed their liveness or
	// startup probe (nil: none).
	Liveness LivenessFunc
	// Started tells whether a running instance's startup probe succeeded
	// (nil: every running instance counts as started).
	Started StartedFunc
}

// BackoffKey is the crash back-off key of a container of pod: a new spec
// (hash) starts a fresh back-off.
func BackoffKey(pod *v1.Pod, c *v1.Container) string {
	return fmt.Sprintf("%s_%s_%s_%s_%x", pod.Name, pod.Namespace, pod.UID, c.Name, HashContainer(c))
}

// ComputePodActions decides what SyncPod does next for pod given the
// runtime's view of it. It is pure: no I/O, time comes in as now, back-off
// state and probe results (liveness, may be nil) are only read.
//
// A running app container or sidecar whose liveness or startup probe failed
// is killed, with the probe's terminationGracePeriodSeconds when set, and
// started again at once unless the pod's restartPolicy is Never (sidecars
// always restart), as upstream: the crash back-off only delays restarts of
// containers that exited on their own.
func ComputePodActions(pod *v1.Pod, status *container.PodStatus, bo BackoffState, liveness LivenessFunc, now time.Time) PodActions {
	return ComputePodActionsWith(pod, status, bo, Probes{Liveness: liveness}, now)
}

// ComputePodActionsWith is ComputePodActions with every probe answer: an
// init container that follows a sidecar with a startup probe waits until
// that probe succeeded, as upstream.
func ComputePodActionsWith(pod *v1.Pod, status *container.PodStatus, bo BackoffState, probes Probes, now time.Time) PodActions {
	liveness := probes.Liveness
	var a PodActions
	if status == nil {
		status = &container.PodStatus{}
	}

	// A terminal pod runs nothing; stop whatever is left.
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed || pod.DeletionTimestamp != nil {
		a.KillPod = len(status.Running()) > 0 || status.ReadySandbox() != nil
		return a
	}

	create, attempt, sandboxID, why := sandboxChanged(pod, status)
	if create {
		a.Attempt, a.SandboxReason = attempt, why
		// Never restart a pod whose sandbox died after containers ran under
		// restartPolicy Never: kill what remains, start nothing.
		if podspec.RestartPolicy(pod) == v1.RestartPolicyNever && len(status.Sandboxes) > 0 && len(status.Containers) > 0 {
			a.KillPod = len(status.Running()) > 0 || status.ReadySandbox() != nil
			return a
		}
		a.CreateSandbox = true
		a.KillPod = len(status.Running()) > 0 || len(readySandboxes(status)) > 0
		// Everything starts over in a new sandbox: the first init container,
		// or all app containers when there are none.
		if len(pod.Spec.InitContainers) > 0 {
			c := &pod.Spec.InitContainers[0]
			a.InitContainersToStart = []ContainerToStart{{Name: c.Name, Init: true, Index: 0, RestartCount: nextRestartCount(status, c.Name)}}
			return a
		}
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			if podspec.RunsOnce(pod, c) && succeeded(status.Latest(c.Name)) {
				continue
			}
			a.ContainersToStart = append(a.ContainersToStart, ContainerToStart{Name: c.Name, Index: i, RestartCount: nextRestartCount(status, c.Name)})
		}
		return a
	}
	a.SandboxID = sandboxID

	// Running instances of names no longer in the spec, or in an old sandbox.
	specNames := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		specNames[c.Name] = true
	}
	for _, c := range pod.Spec.Containers {
		specNames[c.Name] = true
	}
	for _, c := range pod.Spec.EphemeralContainers {
		specNames[c.Name] = true
	}
	for _, s := range status.Containers {
		if s.State != container.StateRunning {
			continue
		}
		switch {
		case !specNames[s.Name]:
			a.ContainersToKill = append(a.ContainersToKill, ContainerToKill{ID: s.ID, Name: s.Name, Reason: KillReasonNotInSpec,
				Message: fmt.Sprintf("Container %s is not in the pod spec", s.Name)})
		case s.SandboxID != "" && s.SandboxID != sandboxID:
			a.ContainersToKill = append(a.ContainersToKill, ContainerToKill{ID: s.ID, Name: s.Name, Reason: KillReasonNotInSpec,
				Message: fmt.Sprintf("Container %s runs in an old sandbox", s.Name)})
		}
	}

	// Ephemeral containers start even while initialization is under way;
	// one that ran once (in any sandbox) never runs again.
	for i := range pod.Spec.EphemeralContainers {
		name := pod.Spec.EphemeralContainers[i].Name
		if status.Latest(name) == nil {
			a.EphemeralContainersToStart = append(a.EphemeralContainersToStart, ContainerToStart{Name: name, Ephemeral: true, Index: i})
		}
	}

	initDone := a.computeInit(pod, status, sandboxID, bo, probes, now)
	if a.InitFailed {
		a.KillPod = true
		a.ContainersToKill = nil
		a.InitContainersToStart = nil
		a.EphemeralContainersToStart = nil
		return a
	}
	if !initDone {
		return a
	}

	keep := 0
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		latest := status.Latest(c.Name)
		start := ContainerToStart{Name: c.Name, Index: i, RestartCount: nextRestartCount(status, c.Name)}
		if latest == nil {
			a.ContainersToStart = append(a.ContainersToStart, start)
			continue
		}
		switch latest.State {
		case container.StateRunning:
			if containerChanged(c, latest.Hash) {
				a.ContainersToKill = append(a.ContainersToKill, ContainerToKill{ID: latest.ID, Name: c.Name, Reason: KillReasonSpecChanged,
					Message: fmt.Sprintf("Container %s definition changed, will be restarted", c.Name)})
				a.ContainersToStart = append(a.ContainersToStart, start)
				continue
			}
			if k, ok := probeKill(pod, c, latest, liveness); ok {
				if !podspec.RestartsAfterKill(pod, c) {
					// Stopped for good; the next round sees it exited and
					// winds the pod down. Counted as kept so this round
					// kills it with the probe's message and grace period
					// rather than as part of the whole pod.
					a.ContainersToKill = append(a.ContainersToKill, k)
					keep++
					continue
				}
				k.Message += ", will be restarted"
				a.ContainersToKill = append(a.ContainersToKill, k)
				a.ContainersToStart = append(a.ContainersToStart, start)
				continue
			}
			keep++
			continue
		case container.StateExited:
			if !podspec.RestartsAfterExit(pod, c, false, latest.ExitCode) {
				continue
			}
		default: // created but never started, or unknown: replace it.
			a.ContainersToKill = append(a.ContainersToKill, ContainerToKill{ID: latest.ID, Name: c.Name, Reason: KillReasonUnknownState,
				Message: fmt.Sprintf("Container %s is in state %q, will be replaced", c.Name, latest.State)})
		}
		if d, ok := deferRestart(pod, c, latest, bo, now, &start); ok {
			a.Deferred = append(a.Deferred, d)
			keep++
			continue
		}
		a.ContainersToStart = append(a.ContainersToStart, start)
	}

	// Nothing runs, nothing will start, nothing waits: the pod is done. Stop
	// the sandbox and any sidecars.
	if keep == 0 && len(a.ContainersToStart) == 0 && len(pod.Spec.Containers) > 0 {
		a.KillPod = true
		a.ContainersToKill = nil
		a.InitContainersToStart = nil
		a.EphemeralContainersToStart = nil
	}
	return a
}

// computeInit fills the init container steps and reports whether all
// regular init containers have completed (so app containers may run).
func (a *PodActions) computeInit(pod *v1.Pod, status *container.PodStatus, sandboxID string, bo BackoffState, probes Probes, now time.Time) bool {
	liveness := probes.Liveness
	// If an app container already ran in this sandbox, init is complete
	// even if the init instances were garbage-collected.
	appStarted := false
	for _, c := range pod.Spec.Containers {
		if s := latestInSandbox(status, c.Name, sandboxID); s != nil {
			appStarted = true
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		s := latestInSandbox(status, c.Name, sandboxID)
		start := ContainerToStart{Name: c.Name, Init: true, Index: i, RestartCount: nextRestartCount(status, c.Name)}
		sidecar := podspec.IsSidecar(c)
		if !sidecar && appStarted {
			continue
		}
		if s == nil {
			a.InitContainersToStart = append(a.InitContainersToStart, start)
			if appStarted {
				continue // a sidecar missing after init completed
			}
			return false
		}
		switch {
		case s.State == container.StateRunning:
			if sidecar && containerChanged(c, s.Hash) {
				a.ContainersToKill = append(a.ContainersToKill, ContainerToKill{ID: s.ID, Name: c.Name, Reason: KillReasonSpecChanged,
					Message: fmt.Sprintf("Init container %s definition changed, will be restarted", c.Name)})
				a.InitContainersToStart = append(a.InitContainersToStart, start)
				if !appStarted {
					return false
				}
				continue
			}
			if sidecar {
				if k, ok := probeKill(pod, c, s, liveness); ok {
					k.Message += ", will be restarted"
					a.ContainersToKill = append(a.ContainersToKill, k)
					a.InitContainersToStart = append(a.InitContainersToStart, start)
					if !appStarted {
						return false
					}
					continue
				}
				// The next init container waits for the sidecar's startup
				// probe, the first time through initialization.
				if !appStarted && c.StartupProbe != nil && probes.Started != nil && !probes.Started(pod.UID, c.Name, s.ID) {
					return false
				}
				continue
			}
			return false // wait for the regular init container to finish
		case s.State == container.StateExited && !podspec.RestartsAfterExit(pod, c, true, s.ExitCode):
			if s.ExitCode == 0 {
				continue // completed
			}
			a.InitFailed = true // failed under restartPolicy Never
			return false
		}
		// Failed regular init container, exited sidecar, or an instance in a
		// created/unknown state: restart it (after the back-off).
		if s.State != container.StateExited {
			a.ContainersToKill = append(a.ContainersToKill, ContainerToKill{ID: s.ID, Name: c.Name, Reason: KillReasonUnknownState,
				Message: fmt.Sprintf("Init container %s is in state %q, will be replaced", c.Name, s.State)})
		}
		if d, ok := deferRestart(pod, c, s, bo, now, &start); ok {
			d.Init = true
			a.Deferred = append(a.Deferred, d)
		} else {
			a.InitContainersToStart = append(a.InitContainersToStart, start)
		}
		if !appStarted {
			return false
		}
	}
	return true
}

// probeKill asks liveness whether the running instance s of c failed its
// liveness or startup probe, and if so returns the kill for it (without the
// ", will be restarted" the caller adds when it restarts).
func probeKill(pod *v1.Pod, c *v1.Container, s *container.Status, liveness LivenessFunc) (ContainerToKill, bool) {
	if liveness == nil || (c.LivenessProbe == nil && c.StartupProbe == nil) {
		return ContainerToKill{}, false
	}
	failed, msg := liveness(pod.UID, c.Name, s.ID)
	if !failed {
		return ContainerToKill{}, false
	}
	k := ContainerToKill{ID: s.ID, Name: c.Name, Reason: KillReasonLivenessProbe, Message: msg}
	probe := c.LivenessProbe
	if strings.Contains(msg, "startup probe") {
		k.Reason, probe = KillReasonStartupProbe, c.StartupProbe
	}
	if k.Message == "" {
		k.Message = fmt.Sprintf("Container %s failed liveness probe", c.Name)
		if k.Reason == KillReasonStartupProbe {
			k.Message = fmt.Sprintf("Container %s failed startup probe", c.Name)
		}
	}
	if probe != nil && probe.TerminationGracePeriodSeconds != nil {
		g := *probe.TerminationGracePeriodSeconds
		k.GracePeriod = &g
	}
	return k, true
}

// deferRestart checks the crash back-off for a restart of c after latest
// exited. When the restart may go ahead it fills start's back-off fields.
func deferRestart(pod *v1.Pod, c *v1.Container, latest *container.Status, bo BackoffState, now time.Time, start *ContainerToStart) (Deferred, bool) {
	key := BackoffKey(pod, c)
	failedAt := latest.FinishedAt
	if failedAt.IsZero() {
		failedAt = latest.CreatedAt
	}
	if bo != nil {
		if bo.IsInBackOffSince(key, failedAt) {
			delay := bo.Get(key)
			return Deferred{Name: c.Name, Reason: ReasonCrashLoopBackOff,
				Message:    fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", delay, c.Name, podspec.Format(pod)),
				RetryAfter: delay - now.Sub(failedAt)}, true
		}
	}
	start.BackoffKey = key
	start.FailedAt = failedAt
	return Deferred{}, false
}

func succeeded(s *container.Status) bool {
	return s != nil && s.State == container.StateExited && s.ExitCode == 0
}

func nextRestartCount(status *container.PodStatus, name string) int {
	if l := status.Latest(name); l != nil {
		return l.RestartCount + 1
	}
	return 0
}

func latestInSandbox(status *container.PodStatus, name, sandboxID string) *container.Status {
	var best *container.Status
	for i := range status.Containers {
		c := &status.Containers[i]
		if c.Name != name || (c.SandboxID != "" && c.SandboxID != sandboxID) {
			continue
		}
		if best == nil || c.CreatedAt.After(best.CreatedAt) || (c.CreatedAt.Equal(best.CreatedAt) && c.RestartCount > best.RestartCount) {
			best = c
		}
	}
	return best
}

func readySandboxes(status *container.PodStatus) []container.SandboxStatus {
	var out []container.SandboxStatus
	for _, s := range status.Sandboxes {
		if s.State == container.SandboxReady {
			out = append(out, s)
		}
	}
	return out
}

// sandboxChanged reports whether the pod needs a new sandbox, the attempt
// number it gets and why, and otherwise the ID of the sandbox to use.
func sandboxChanged(pod *v1.Pod, status *container.PodStatus) (bool, uint32, string, string) {
	if len(status.Sandboxes) == 0 {
		return true, 0, "", "no sandbox yet"
	}
	newest := status.Sandboxes[0]
	for _, s := range status.Sandboxes[1:] {
		if s.CreatedAt.After(newest.CreatedAt) {
			newest = s
		}
	}
	next := newest.Attempt + 1
	if n := len(readySandboxes(status)); n > 1 {
		return true, next, "", fmt.Sprintf("%d ready sandboxes", n)
	}
	if newest.State != container.SandboxReady {
		return true, next, "", fmt.Sprintf("the newest sandbox %s is %s", newest.ID, newest.State)
	}
	if newest.HostNetwork != pod.Spec.HostNetwork {
		return true, next, "", "hostNetwork changed"
	}
	if !pod.Spec.HostNetwork && len(newest.IPs) == 0 {
		return true, next, "", fmt.Sprintf("the sandbox %s has no IP", newest.ID)
	}
	return false, newest.Attempt, newest.ID, ""
}

// findContainer returns the container of the pod with that name, or nil.
func findContainer(pod *v1.Pod, name string) *v1.Container {
	c, _, _ := podspec.FindContainer(pod, name)
	return c
}
