// Package podworkers runs one worker goroutine per pod UID and owns each
// pod's lifecycle state machine:
//
//	          SyncPod updates                kill requested, or
//	         (coalesced: latest wins)        SyncPod reports terminal
//	┌──────────┐ ──────────────────────────────▶ ┌─────────────┐
//	│ syncing  │                                 │ terminating │ SyncTerminatingPod
//	└──────────┘                                 └─────────────┘ until it succeeds
//	                                                    │
//	                                                    ▼
//	                                             ┌────────────┐ SyncTerminatedPod
//	                                             │ terminated │ until it succeeds;
//	                                             └────────────┘ forgotten once removed
//
// Rules the package guarantees:
//   - at most one handler call runs per pod at a time; different pods run in
//     parallel;
//   - updates that arrive while a handler runs are coalesced: only the
//     latest pod spec is synced next;
//   - a kill request is never overwritten by a later sync request, and a
//     grace period can only shrink once termination started;
//   - a pod is never started while another pod with the same full name
//     (namespace/name, e.g. an edited static pod) is still terminating;
//   - a pod that left its source and comes back under the same UID (a
//     static pod's manifest removed and written back) runs again once its
//     earlier run has terminated, keeping its exited containers (restart
//     counts go on), as upstream's kubelet does;
//   - every pod is re-synced at least every resync interval, and at the
//     time a handler asks for (back-off expiry), without a central ticker.
//
// The package makes no runtime or API calls itself: it only decides when to
// call the Handler.
package podworkers
