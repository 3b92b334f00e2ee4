// Package kubelet assembles the node: it wires pod sources, the sync loop,
// pod workers, the runtime, PLEG, status and the HTTP server, and runs them
// until the context ends. Decisions live in the packages it wires; this
// package owns only the order things start and stop in and the glue between
// them.
package kubelet
