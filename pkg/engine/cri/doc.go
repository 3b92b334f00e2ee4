// Package cri is the engine that runs a real node's pods on a CRI runtime
// (containerd): the pod worker handler (handler.go: sync, terminate, clean
// up), the sync loop that feeds the workers from the pod sources, the PLEG
// and the probers (syncloop.go), admission (admission.go) and the orphan
// and cgroup housekeeping. It also serves the kubelet API's container
// endpoints (streaming.go: logs from the CRI log files, exec, attach,
// port-forward and run through the runtime's streaming server), counts pod
// and container starts and the pods it runs for the metrics, and tells an
// Observer (the pod startup timeline) about pods and statuses (observe.go).
//
// It plugs into the node core (pkg/node) from both sides: it reads the
// desired pods, writes statuses and records events through the core, and
// answers the core's lifecycle questions (node.Lifecycle). It talks to the
// runtime only through the Runtime interface, so it runs in tests against
// a fake runtime, in-process.
//
// It never talks to the API server itself: statuses go through the core's
// status writer, mirror pods through the core.
package cri
