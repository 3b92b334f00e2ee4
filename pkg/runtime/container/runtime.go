package container

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Runtime runs pods. Implementations must be safe for concurrent use by many
// pod workers, each working on a different pod.
type Runtime interface {
	// Type names the runtime (e.g. "containerd").
	Type() string
	// Version is the runtime's version string.
	Version(ctx context.Context) (string, error)

	// SyncPod converges the runtime towards the pod spec, given the status
	// last observed: creates the sandbox, starts init and app containers by
	// the restart policy, kills what must go. It does one round of actions and
	// reports every step; the caller re-inspects and calls again.
	SyncPod(ctx context.Context, pod *v1.Pod, status *PodStatus) SyncResult

	// KillPod stops all containers of the pod and its sandbox. pod may be nil
	// when only the running pod is known (an orphan). gracePeriod overrides
	// the pod's terminationGracePeriodSeconds when non-nil.
	KillPod(ctx context.Context, pod *v1.Pod, running *RunningPod, gracePeriod *int64) error

	// RemovePod deletes the pod's stopped containers and sandboxes from the
	// runtime. It is only called once nothing of the pod is running.
	RemovePod(ctx context.Context, uid types.UID) error

	// GetPodStatus inspects one pod in the runtime.
	GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*PodStatus, error)

	// GetPods lists the pods in the runtime: all container instances when
	// all is true, else only running ones (pods with no running container
	// and no ready sandbox are left out).
	GetPods(ctx context.Context, all bool) ([]*RunningPod, error)

	// Relist returns every pod's status in one pass (for the PLEG).
	Relist(ctx context.Context) ([]*PodStatus, error)
}

// Action names one step SyncPod takes.
type Action string

const (
	ActionCreateSandbox Action = "CreatePodSandbox"
	ActionKillSandbox   Action = "KillPodSandbox"
	ActionStartInit     Action = "StartInitContainer"
	ActionStart         Action = "StartContainer"
	ActionKill          Action = "KillContainer"
	ActionPull          Action = "PullImage"
	ActionResize        Action = "ResizeContainer"
)

// StepResult is the outcome of one step of SyncPod.
type StepResult struct {
	Action Action
	// Container is the container's name; empty for sandbox steps.
	Container string
	// Err is nil on success.
	Err error
	// Reason is the upstream reason for a failed or deferred step
	// (ErrImagePull, ImagePullBackOff, CrashLoopBackOff, CreateContainerError,
	// RunContainerError, CreateContainerConfigError, ...). Message explains.
	Reason  string
	Message string
	// RetryAfter, when positive, is when the step can next succeed (the end
	// of a back-off); the caller should sync the pod again then.
	RetryAfter time.Duration
}

// SyncResult is the outcome of one SyncPod round.
type SyncResult struct {
	Steps []StepResult
}

// Changed reports whether any step may have changed the runtime. A step
// that failed and only says when to retry (a crash-loop or image-pull
// back-off) changed nothing.
func (r SyncResult) Changed() bool {
	for _, s := range r.Steps {
		if s.Err == nil || s.RetryAfter <= 0 {
			return true
		}
	}
	return false
}

// Error joins the failed steps into one error, or nil.
func (r SyncResult) Error() error {
	var msgs []string
	for _, s := range r.Steps {
		if s.Err != nil {
			msgs = append(msgs, fmt.Sprintf("%s %q: %v", s.Action, s.Container, s.Err))
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

// WaitingReasons returns, per container, the reason its last start step
// failed or was deferred. A container whose last step succeeded maps to the
// zero WaitingReason so callers can clear an old one.
func (r SyncResult) WaitingReasons() map[string]WaitingReason {
	out := map[string]WaitingReason{}
	for _, s := range r.Steps {
		if s.Container == "" || s.Action == ActionKill || s.Action == ActionResize {
			continue
		}
		if s.Err != nil || s.Reason != "" {
			out[s.Container] = WaitingReason{Reason: s.Reason, Message: s.Message}
		} else {
			out[s.Container] = WaitingReason{}
		}
	}
	return out
}

// RetryAfter is the earliest positive RetryAfter of the steps, or 0.
func (r SyncResult) RetryAfter() time.Duration {
	var min time.Duration
	for _, s := range r.Steps {
		if s.RetryAfter > 0 && (min == 0 || s.RetryAfter < min) {
			min = s.RetryAfter
		}
	}
	return min
}

// RuntimeStatus is the runtime's own view of whether it can run pods.
type RuntimeStatus struct {
	// RuntimeReady: the runtime can run containers.
	RuntimeReady bool
	// NetworkReady: the runtime's pod network is set up.
	NetworkReady bool
	// Errors explain, one sentence each, what is not ready.
	Errors []string
	// Handlers are the runtime handlers the runtime reports with their
	// features (CRI Status; containerd 1.6 reports none), the default
	// handler under the name "". Features are the runtime's own features;
	// nil when it reports none.
	Handlers []RuntimeHandler
	Features *RuntimeFeatures
}

// RuntimeHandler is one runtime handler (a RuntimeClass's handler) and what
// it supports.
type RuntimeHandler struct {
	Name                    string
	RecursiveReadOnlyMounts bool
	UserNamespaces          bool
}

// RuntimeFeatures are features of the runtime as a whole.
type RuntimeFeatures struct {
	SupplementalGroupsPolicy bool
}
