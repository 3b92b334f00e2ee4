package provider

import (
	"context"
	"errors"
	"fmt"
	"io"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/gokubelet/kubelet/pkg/errdefs"
)

// Provider runs the pods of one virtual node. See the package doc for the
// rules (no blocking, no mutation, identity, error classes) every method
// follows.
type Provider interface {
	// CreatePod starts running pod. Its containers' environment is
	// resolved (see ObjectRefKeeper); its managedFields, the API server's
	// bookkeeping, are left out. Returns once the work is started;
	// creating a pod (same UID) that already runs is not an error.
	CreatePod(ctx context.Context, pod *v1.Pod) error
	// UpdatePod applies a changed spec or metadata (images, labels,
	// annotations, active deadline, resources) to a pod it runs. A change
	// it cannot apply in place is an errdefs.Invalid error.
	UpdatePod(ctx context.Context, pod *v1.Pod) error
	// DeletePod stops pod within pod.DeletionGracePeriodSeconds (0 or nil:
	// now) and removes it. It returns once the deletion started; when the
	// pod is gone, GetPod returns NotFound, ListPods omits it and a
	// notifier is called with its last status. Deleting a pod that is
	// already gone returns an errdefs.NotFound error.
	DeletePod(ctx context.Context, pod *v1.Pod) error
	// GetPod returns the pod as the provider runs it (its UID and status),
	// or an errdefs.NotFound error.
	GetPod(ctx context.Context, namespace, name string) (*v1.Pod, error)
	// GetPodStatus returns the pod's status, or an errdefs.NotFound error.
	GetPodStatus(ctx context.Context, namespace, name string) (*v1.PodStatus, error)
	// ListPods returns every pod the provider runs for this node, with
	// status. It must be authoritative: a pod missing from the list twice
	// after it was created is reported lost (Failed) on the node. A
	// provider that cannot tell yet (a cache not synced) returns an error.
	ListPods(ctx context.Context) ([]*v1.Pod, error)
	// NodeStatus reports the node's capacity, conditions, addresses,
	// labels and system info. Called at registration and every status
	// period (nodeStatusUpdateFrequency); it must answer quickly.
	NodeStatus(ctx context.Context) (NodeStatus, error)
}

// NodeStatus is what the provider says about its node. The virtual node's
// configuration adds its own labels and capacity overrides on top.
type NodeStatus struct {
	// Capacity of the node (cpu, memory, pods, ...). cpu, memory and pods
	// are required for the node to be Ready.
	Capacity v1.ResourceList
	// Allocatable defaults to Capacity.
	Allocatable v1.ResourceList
	// Conditions of the node. A Ready condition that is not True makes the
	// node NotReady with its message; MemoryPressure, DiskPressure and
	// PIDPressure conditions that are True set the matching pressure;
	// conditions of other types are reported as given. Omitted: Ready, no
	// pressure.
	Conditions []v1.NodeCondition
	// Addresses are added after the node's own (its InternalIP, where its
	// kubelet API listens, and its Hostname).
	Addresses []v1.NodeAddress
	// Labels the provider sets on the node (e.g. topology); the
	// configuration's labels win on conflict.
	Labels map[string]string
	// NodeInfo: operatingSystem and architecture (default linux/amd64),
	// containerRuntimeVersion ("<provider>://<version>"), and whatever
	// else applies. kubeletVersion is the kubelet's.
	NodeInfo v1.NodeSystemInfo
}

// PodNotifier is implemented by a provider that pushes status changes.
// Without it, the engine polls ListPods.
type PodNotifier interface {
	// NotifyPods registers notify, called with a pod (namespace, name, UID
	// and its current status) whenever its status changes, and once more
	// with its last status when a deleted pod is gone. NotifyPods is
	// called once, before any other method but NodeStatus, and returns at
	// once. notify never blocks and may be called from any goroutine, until
	// ctx ends; the pod passed must not be changed afterwards.
	NotifyPods(ctx context.Context, notify func(*v1.Pod))
}

// ObjectRefKeeper is implemented by a provider that copies ConfigMaps and
// Secrets to where its pods run (so secret values never end up in a pod
// spec). The engine then leaves configMapKeyRef, secretKeyRef and envFrom
// in the pods it passes, and resolves only the downward API, resource
// fields and service variables. Other providers get every variable
// resolved to a value and envFrom emptied.
type ObjectRefKeeper interface {
	KeepsObjectRefs() bool
}

// AttachIO are the streams of an exec or attach session. A nil Stdin,
// Stdout or Stderr was not requested. With TTY, stderr is merged into
// stdout and Resize delivers terminal sizes (it may be nil).
type AttachIO struct {
	Stdin  io.Reader
	Stdout io.WriteCloser
	Stderr io.WriteCloser
	TTY    bool
	Resize <-chan remotecommand.TerminalSize
}

// LogsProvider serves `kubectl logs`.
type LogsProvider interface {
	// GetContainerLogs returns the container's log by opts (Follow,
	// Previous, SinceSeconds, SinceTime, Timestamps, TailLines,
	// LimitBytes; opts.Container is ignored). The reader ends with the log,
	// or, when following, when the container stops or ctx ends.
	GetContainerLogs(ctx context.Context, namespace, pod, container string, opts v1.PodLogOptions) (io.ReadCloser, error)
}

// ExecProvider serves `kubectl exec`.
type ExecProvider interface {
	// RunInContainer runs cmd in the container with the given streams and
	// returns when it exits. A non-zero exit is an error implementing
	// k8s.io/utils/exec.ExitError (client-go's exec.CodeExitError does), so
	// the exit code reaches the client.
	RunInContainer(ctx context.Context, namespace, pod, container string, cmd []string, attach AttachIO) error
}

// AttachProvider serves `kubectl attach`.
type AttachProvider interface {
	// AttachToContainer connects the streams to the container's main
	// process until it exits, the streams close or ctx ends.
	AttachToContainer(ctx context.Context, namespace, pod, container string, attach AttachIO) error
}

// PortForwardProvider serves `kubectl port-forward`.
type PortForwardProvider interface {
	// PortForward copies between stream and the pod's port until either
	// side closes or ctx ends. It closes stream when done.
	PortForward(ctx context.Context, namespace, pod string, port int32, stream io.ReadWriteCloser) error
}

// StatsProvider serves /stats/summary for the node's pods.
type StatsProvider interface {
	GetStatsSummary(ctx context.Context) (*statsv1alpha1.Summary, error)
}

// Unsupported is the error for an optional capability a provider lacks
// (classified terminal: retrying will not help).
func Unsupported(providerType, what string) error {
	return errdefs.Terminal(fmt.Errorf("%w: provider %q does not support %s", ErrUnsupported, providerType, what))
}

// ErrUnsupported is the cause of Unsupported errors.
var ErrUnsupported = errors.New("not supported")

// NotFound is the error for a pod the provider does not run.
func NotFound(namespace, name string) error {
	return errdefs.NotFound(fmt.Errorf("pod %s/%s not found in the provider", namespace, name))
}
