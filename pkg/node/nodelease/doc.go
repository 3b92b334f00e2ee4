// Package nodelease keeps this node's heartbeat Lease,
// kube-node-lease/<node name>, renewed.
//
// The Lease is the cheap heartbeat the node lifecycle controller watches
// (the full Node status is written far less often, see nodestatus). The
// loop is k8s.io/component-helpers/apimachinery/lease, the controller
// upstream components use: it creates the Lease when missing
// (holderIdentity = node name, leaseDurationSeconds), renews
// spec.renewTime every RenewInterval with 4% jitter (a quarter of the
// duration by default, as upstream: 10s for 40s) from the last written
// version, re-reads it on a conflict, recreates it if someone deletes it,
// and retries with a bounded exponential back-off. This package adds the
// kubelet's part: an ownerReference to the Node once the Node exists (so
// deleting the Node garbage-collects its Lease), and no Lease before its
// Node. It never writes any other object.
package nodelease
