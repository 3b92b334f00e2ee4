// Package kuberuntime implements container.Runtime over the CRI: it turns a
// pod spec into a CRI sandbox and containers, kills and removes them, and
// reads the runtime's state back into container.PodStatus.
//
// The shape is "decide, then execute". ComputePodActions (actions.go) is a
// pure function of (pod spec, observed status, crash back-off, now) that
// returns PodActions; SyncPod (sync.go) only carries those out, one CRI call
// per step, reporting each step with the upstream kubelet's reason words.
// Everything a restarted kubelet needs (pod identity, container name, spec
// hash, restart count, grace period) is written into CRI labels and
// annotations (labels.go) and read back by GetPodStatus/Relist (status.go),
// so a new kubelet adopts running pods and restarts nothing.
//
// The package never talks to the API server and never decides pod phase; it
// emits events through the injected recorder and logs through the context's
// logger.
package kuberuntime
