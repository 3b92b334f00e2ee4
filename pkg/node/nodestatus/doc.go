// Package nodestatus owns this kubelet's Node object: what it looks like
// (pure builders) and keeping it registered and its status current in the
// API server (Controller).
//
// The split follows the project's rule that decisions are pure:
//
//   - NewNode builds the Node to register from Config (labels, taints,
//     annotations, spec) and SetStatus fills Node.Status from Config and a
//     Facts snapshot (capacity, allocatable, addresses, node info, labels,
//     readiness, pressure, images) at a given time. Neither does I/O. Allocatable, condition transitions
//     and "has the status changed" are plain functions with table tests.
//   - Controller does the I/O: it creates the Node (or reconciles the one
//     that exists the way upstream does on re-registration: the default
//     labels and the attach-detach annotation), watches it through an
//     informer selected on metadata.name (no polling lists), recreates it if
//     it is deleted, and sends a strategic-merge PATCH to the status
//     subresource when the status changed (checked every
//     UpdateFrequency) or ReportFrequency has passed since the last write.
//
// What it must never do: write to other nodes, or write fields it does not
// own (spec.podCIDR, taints set by other controllers after registration,
// labels other than the defaults it reconciles).
//
// The facts come from a FactsProvider: for a real node, HostFacts maps the
// machine's facts (package machineinfo) and the assembly adds what the
// runtime and the eviction manager know (readiness, runtime version,
// pressure); a virtual node's provider gives its own. So the same
// controller registers and reports either kind of node without importing
// what feeds it.
package nodestatus
