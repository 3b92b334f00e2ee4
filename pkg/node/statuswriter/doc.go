// Package statuswriter is the kubelet's status manager: it keeps the latest API
// status the kubelet computed for each pod (see pkg/pod/podstatus) and makes the
// API server's copy converge to it.
//
// What it owns:
//   - the cache: one v1.PodStatus per pod UID, with the rules that hold
//     whatever the caller passes: a terminal phase (Succeeded, Failed) is
//     never left; a container that terminated is never shown running again
//     when the restart policy forbids it (the update is refused); a
//     condition's lastTransitionTime only moves when its status changes; the
//     start time is set once.
//   - the writer (only when given a client): per-pod PATCH of pods/status,
//     coalesced through a work queue keyed by pod UID (many SetPodStatus
//     calls in a row become one PATCH carrying the latest status), written
//     as soon as a worker is free — no fixed delay. The patch is a strategic
//     merge patch from the API's last known status to ours, and always
//     carries metadata.uid, which the API server treats as a precondition: a
//     pod re-created under the same name is never written with an old pod's
//     status. Failures are retried with per-pod exponential back-off; a pod
//     gone from the API (NotFound, or a UID mismatch) is dropped.
//   - reconcile: every ReconcilePeriod it compares the informer's view of
//     each pod with the cache and re-queues the pods that differ, so a lost
//     write or a status changed by someone else is repaired (level-triggered).
//   - the final delete: once a pod being deleted (deletionTimestamp set) has
//     a terminal phase in the API and the caller says nothing of it is left
//     on the node, it deletes the pod with grace period 0 and a UID
//     precondition, once.
//
// Static pods have their status written to their mirror pod; the caller's
// PodResolver says which API object carries a pod's status. Mirror pods are
// never deleted here.
//
// In standalone mode (no client) the manager only caches.
//
// What it must never do: compute statuses (pkg/pod/podstatus does), poll the API
// server with lists, or write a pod it cannot tie to the UID it knows.
package statuswriter
