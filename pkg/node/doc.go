// Package node is the node core that every kind of node shares: what makes
// a node a node in the API server's eyes, without running a single
// container.
//
// It owns:
//   - the API clients and the event sink (clients.go), and the API objects
//     the node's pods reference: ConfigMaps, Secrets, service account
//     tokens (package objects);
//   - the Node's registration and status, fed by a facts provider
//     (nodestatus.FactsProvider: the host's for a real node, a provider's
//     for a virtual one), and its Lease (nodelease);
//   - the desired pod set (podmanager) and the pod status writer
//     (statuswriter), with the resolver that tells the writer which API
//     object carries a pod's status (the pod, or a static pod's mirror);
//   - the API pod source (pods bound to this node) and mirror pods for
//     static pods (mirrors.go).
//
// The engine that runs the pods (pkg/engine/cri for a real node; a
// provider engine for a virtual one) plugs in through Lifecycle, which
// answers the questions only it can: has a pod terminated, may its API
// object go, does a static pod run (so it gets a mirror pod).
//
// Standalone and cluster modes differ only in what New assembles: with
// Clients, the cluster parts (registration, lease, API source, mirror
// pods, status writes) are built; without, the status writer is a cache,
// the admission node is built from local facts, and mirror pods are a
// no-op. Nothing downstream checks which mode it is in.
package node
