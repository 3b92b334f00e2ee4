// Package podstatus computes the API status of a pod (v1.PodStatus) from what
// the kubelet knows about it: the pod spec, the runtime's observation of its
// sandboxes and container instances, the reasons the kubelet's last sync gave
// for containers it could not start, and the status it reported before.
//
// Everything here is pure: no I/O, no clock (the caller passes "now"), no
// globals. Compute is the whole computation; the pieces it is made of (Phase,
// the condition generators, ContainerStatuses, QOSClass) are exported so that
// other decisions (the pod worker, eviction, admission) reuse the same rules
// and so that each rule has its own table test.
//
// The rules follow the upstream kubelet where a user can observe them:
// reasons (ContainerCreating, PodInitializing, ContainersNotReady,
// ContainersNotInitialized, PodCompleted, ContainerStatusUnknown, ...),
// message formats, the order of status lists (init containers in spec order,
// app containers sorted by name), and the stickiness of terminal phases.
//
// What the package must never do: talk to the runtime or the API server, or
// remember anything between calls. Remembering is the status manager's job
// (pkg/node/statuswriter).
package podstatus
