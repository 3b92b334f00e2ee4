// Package provider is the contract between a virtual node and what runs
// its pods elsewhere: another Kubernetes cluster, a cloud container
// service, a batch system, or memory (tests and benchmarks).
//
// A virtual node is an ordinary node to the cluster. Everything that makes
// it one — registration, status and Lease, the pod informer, the work
// queue, the status writer (PATCHes coalesced per pod), events, the final
// delete, ConfigMap/Secret/service/downward-API resolution, retries — is
// the kubelet's (pkg/engine/virtual on the node core, pkg/node). A
// provider only answers:
//
//	Provider        create, update, delete, get and list pods; node facts
//	PodNotifier     (optional) push status changes; otherwise polled
//	ObjectRefKeeper (optional) keep ConfigMap/Secret references in env
//	LogsProvider, ExecProvider, AttachProvider, PortForwardProvider,
//	StatsProvider   (optional) what `kubectl logs/exec/attach/port-forward`
//	                and /stats/summary need
//
// A provider with loops of its own (informers on its backend) also has
// Start(ctx) error, the contract of pkg/runnable: the engine starts it
// before the node registers and stops it last.
//
// # Rules every method follows
//
// Must not mutate: pods passed in belong to the caller (they are the
// informer's objects or copies the engine still reads); copy before
// changing. Pods and statuses returned (and passed to a notifier) become
// the engine's; the provider must not change them afterwards (return
// copies of what it keeps).
//
// Must not block: every method takes a context and returns when it ends.
// Create, Update and Delete start work and return; they do not wait for
// containers to start or stop (status arrives through GetPodStatus,
// ListPods or the notifier). Get and List should answer from a cache: the
// engine calls ListPods every poll interval and GetPod while a pod is
// being deleted. A notifier's callback never blocks, and may be called from
// any goroutine.
//
// Identity: a pod is namespace/name in the cluster's terms, and its UID
// tells incarnations apart. A provider keeps the UID it was given and
// returns it; CreatePod of a UID it already runs is not an error
// (idempotent). The engine never passes pods of other nodes and a
// provider instance serves one node: ListPods returns only that node's
// pods, so cleaning up pods the API no longer has never touches another
// node's.
//
// Errors are classified with pkg/errdefs, keeping their cause:
// errdefs.NotFound (no such pod: GetPod, GetPodStatus, DeletePod of a pod
// already gone), errdefs.Invalid (this pod can never run here as it is:
// the pod is marked Failed with the message, not retried),
// errdefs.Terminal (refused for good though valid, e.g. unsupported:
// likewise), errdefs.Retryable or unclassified (transient: shown on the
// pod, retried with per-pod exponential back-off, never dropped). NotFound,
// Invalid and Retryable wrap with %w as usual: errdefs.IsNotFound still
// finds the class through any number of wraps.
package provider
