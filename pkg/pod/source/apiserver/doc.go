// Package apiserver is the pod source that takes the pods bound to this
// node from the API server.
//
// It watches pods in all namespaces with the field selector
// spec.nodeName=<node>, as the upstream kubelet does, through a client-go
// informer: one LIST, then a WATCH that the reflector re-establishes
// (re-listing when the server says its resource version expired) after a
// dropped connection or an API server restart. There is no polling and no
// periodic resync.
//
// Every change marks the set dirty (a one-slot signal, so the informer's
// handlers never wait); a sender goroutine then sends the complete current
// set as one PodUpdate{Op: SET, Source: "api"}. A burst of changes while a
// send is blocked costs one send of the newest set. The first send happens
// only after the informer's initial list has been delivered (even when it
// is empty), so the merger counts the source as seen only once it knows
// every pod the API server had bound here.
//
// Pods in every phase are sent, mirror pods included: the merger and the
// pod manager tell them apart. Pods whose spec.nodeName is not this node
// are dropped in case a server ignored the field selector.
package apiserver
