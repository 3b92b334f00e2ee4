// Package container holds the runtime-neutral picture of pods and containers
// as the kubelet observes them, and the Runtime contract that turns a pod spec
// into running containers.
//
// It owns types only: no I/O, no CRI. The CRI implementation lives in
// pkg/runtime/kuberuntime; a virtual-node provider can implement the same contract.
// Everything in these types is recoverable from the runtime itself (labels and
// annotations on CRI objects), which is what makes a kubelet restart safe.
package container
