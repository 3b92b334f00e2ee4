package container

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// State is the state of one container instance as reported by the runtime.
type State string

const (
	StateCreated State = "created"
	StateRunning State = "running"
	StateExited  State = "exited"
	StateUnknown State = "unknown"
)

// SandboxState is the state of a pod sandbox.
type SandboxState string

const (
	SandboxReady    SandboxState = "ready"
	SandboxNotReady SandboxState = "notready"
)

// Status is one container instance (one attempt) as observed in the runtime.
type Status struct {
	// ID is the runtime's container ID.
	ID string
	// Name is the container's name in the pod spec.
	Name  string
	State State
	// CreatedAt, StartedAt and FinishedAt are zero when unknown.
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	ExitCode   int32
	// Reason and Message are the runtime's words for the exit (e.g. OOMKilled,
	// Error, Completed).
	Reason  string
	Message string
	// Image is the image as named in the spec; ImageRef the resolved image ID
	// or digest.
	Image    string
	ImageRef string
	// Hash is the hash of the container spec this instance was created from.
	Hash uint64
	// RestartCount is the attempt number recorded on the instance.
	RestartCount int
	// SandboxID is the sandbox this instance belongs to.
	SandboxID string
	// User is the identity the container's process runs with, as the
	// runtime reports it (containerd 2 does; nil when unreported).
	User *LinuxUser
}

// LinuxUser is a container process's user and groups.
type LinuxUser struct {
	UID, GID           int64
	SupplementalGroups []int64
}

// SandboxStatus is one pod sandbox instance.
type SandboxStatus struct {
	ID        string
	State     SandboxState
	CreatedAt time.Time
	// Attempt counts sandbox re-creations for the pod.
	Attempt uint32
	// IPs are the sandbox's pod IPs, primary first; empty for host network.
	IPs         []string
	HostNetwork bool
}

// PodStatus is everything the runtime knows about one pod: all of its
// sandboxes and container instances (including exited ones), newest first.
type PodStatus struct {
	UID       types.UID
	Name      string
	Namespace string
	// IPs are the pod IPs of the newest ready sandbox.
	IPs []string
	// Sandboxes, newest first.
	Sandboxes []SandboxStatus
	// Containers, newest first within each name.
	Containers []Status
	// Timestamp is when this status was read from the runtime.
	Timestamp time.Time
}

// Latest returns the newest instance of the named container, or nil.
func (s *PodStatus) Latest(name string) *Status {
	if s == nil {
		return nil
	}
	var best *Status
	for i := range s.Containers {
		c := &s.Containers[i]
		if c.Name != name {
			continue
		}
		if best == nil || c.CreatedAt.After(best.CreatedAt) || (c.CreatedAt.Equal(best.CreatedAt) && c.RestartCount > best.RestartCount) {
			best = c
		}
	}
	return best
}

// Previous returns the instance of the named container that ran before the
// latest one, or nil.
func (s *PodStatus) Previous(name string) *Status {
	latest := s.Latest(name)
	if latest == nil {
		return nil
	}
	var best *Status
	for i := range s.Containers {
		c := &s.Containers[i]
		if c.Name != name || c.ID == latest.ID {
			continue
		}
		if best == nil || c.CreatedAt.After(best.CreatedAt) {
			best = c
		}
	}
	return best
}

// Running returns the running container instances.
func (s *PodStatus) Running() []Status {
	if s == nil {
		return nil
	}
	var out []Status
	for _, c := range s.Containers {
		if c.State == StateRunning {
			out = append(out, c)
		}
	}
	return out
}

// ReadySandbox returns the newest sandbox if it is ready, else nil.
func (s *PodStatus) ReadySandbox() *SandboxStatus {
	if s == nil || len(s.Sandboxes) == 0 {
		return nil
	}
	if s.Sandboxes[0].State == SandboxReady {
		return &s.Sandboxes[0]
	}
	return nil
}

// RunningPod is a pod as found in the runtime, without the spec: what the
// kubelet sees of pods it may not know (orphans after a restart, /runningpods).
type RunningPod struct {
	UID       types.UID
	Name      string
	Namespace string
	Sandboxes []SandboxStatus
	// Containers holds only the instances that were asked for (running ones,
	// or all).
	Containers []Status
}

// WaitingReason is the reason and message a container is waiting with, taken
// from the kubelet's last attempt to start it (ErrImagePull,
// CrashLoopBackOff, CreateContainerError, ...).
type WaitingReason struct {
	Reason  string
	Message string
}
