// Package eviction is the node's eviction manager: it keeps the node
// alive when memory, disk or process IDs run short, as the upstream
// kubelet's eviction manager does.
//
// Every ten seconds the Manager observes the signals (HostObserver:
// memory.available, allocatableMemory.available, nodefs.available,
// nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available)
// and runs one pass of the pure decision (State.Update) against the
// thresholds parsed from evictionHard, evictionSoft,
// evictionSoftGracePeriod and evictionMinimumReclaim (Parse):
//
//   - a met threshold raises its node condition (MemoryPressure,
//     DiskPressure, PIDPressure), held for evictionPressureTransitionPeriod
//     after it was last met; the node controller turns the conditions into
//     the node.kubernetes.io/*-pressure taints;
//   - while a condition holds, admission refuses best-effort pods under
//     memory pressure alone (unless they tolerate its taint) and every
//     non-critical pod under any other pressure (Admit), with reason
//     Evicted;
//   - a hard threshold, or a soft one met for its grace period, is
//     reclaimed: for disk, dead containers and unused images first; then
//     one pod is evicted per pass, the first by Rank (usage above request,
//     then priority, then usage), never a critical pod, Failed with reason
//     Evicted and a message naming the resource (Message), and the manager
//     waits for it to be cleaned up;
//   - a threshold stays met until evictionMinimumReclaim more than its
//     value is available again.
//
// Pods past their ephemeral-storage limits are evicted without node
// pressure (localStorageCapacityIsolation).
package eviction
