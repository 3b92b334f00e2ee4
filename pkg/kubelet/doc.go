// Package kubelet assembles a node and runs it: it builds the node core
// (pkg/node), the engine that runs its pods (pkg/engine/cri), the pod
// sources and the HTTP endpoints from the settings, puts every long-running
// part into one runnable group in start order, and runs the group until
// the context ends.
//
// It holds no decisions and no loops of its own: what a standalone node and
// a joined node have in common and where they differ is decided here, once,
// by what is assembled (see Run).
package kubelet
