// Package nodelease keeps this node's heartbeat Lease,
// kube-node-lease/<node name>, renewed.
//
// The Lease is the cheap heartbeat the node lifecycle controller watches
// (the full Node status is written far less often, see nodestatus). The
// Controller owns exactly that one object: it creates it when missing
// (holderIdentity = node name, leaseDurationSeconds), renews
// spec.renewTime every RenewInterval (a quarter of the duration by default,
// as upstream: 10s for 40s), points an ownerReference at the Node once the
// Node exists (so deleting the Node garbage-collects its Lease), and
// recreates the Lease if someone deletes it. Errors are retried with a
// bounded exponential backoff; it never writes any other object.
package nodelease
