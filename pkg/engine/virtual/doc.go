// Package virtual is the engine of a virtual node: it runs the pods bound
// to the node through a provider (pkg/provider) instead of a container
// runtime, behind the same node core as a real node (pkg/node).
//
// What it reuses: the core registers the Node, keeps its status and Lease
// (with a nodestatus.FactsProvider backed by the provider: Facts), records
// events, and writes pod statuses through its status writer — strategic
// merge PATCHes of pods/status, coalesced per pod, with the final delete
// (UID precondition) once the engine says nothing of a deleted pod is left
// (node.Lifecycle).
//
// What it owns:
//
//   - Pods come from an informer on spec.nodeName=<node> (no podconfig
//     merger: a virtual node has no static pods, and the merger's
//     whole-set diffs cost O(pods) per change, where the informer's
//     per-pod events feed a work queue at O(1)). Each event updates the
//     core's desired set (the status writer reads the API's view from it)
//     and queues the pod's key.
//   - One work queue keyed by namespace/name, served by Workers
//     goroutines: a key is never synced by two workers at once, and every
//     burst of events for a pod becomes one sync. New events are queued
//     without delay; only retries are rate limited (per-pod exponential
//     back-off, RetryBase to RetryMax, and an optional overall RetryQPS).
//     There is no fixed low QPS: throughput is Workers divided by the
//     provider's latency, and the API client's own QPS.
//   - The per-pod state machine (podsync.go): create in the provider
//     (environment resolved: env.go), update on spec or metadata changes,
//     graceful delete (provider delete, then, once the provider reports
//     the pod gone or the grace period ends, a terminal status and the
//     final API delete by the status writer), a new incarnation under the
//     same name only after the old one left the provider.
//   - Status from the provider: pushed through its notifier when it has
//     one, else polled with one ListPods per PollInterval — never a GET
//     per pod per change. Provider statuses are completed into what a
//     kubelet reports (status.go: conditions, QoS class, host IPs,
//     container statuses for every spec container) and handed to the
//     status writer.
//   - Provider failures are shown on the pod — a waiting reason and
//     message on its containers (Pending) or, for errors classified
//     invalid or terminal, phase Failed with the reason — plus a Warning
//     event, and retried with back-off; nothing is dropped.
//   - Clean-up (providersync.go): every ResyncInterval (and at start) the
//     provider's list is compared with the API: pods the provider runs for
//     this node that the API no longer has are deleted from the provider;
//     pods the provider lost are marked Failed (ProviderPodLost). Only this
//     node's provider is asked, and API pods are only ever deleted by the
//     status writer, with a UID precondition, after the API asked for it.
//   - Streams (streams.go): logs, exec, attach and port-forward of the
//     node's pods for the kubelet API server, shaped as k8s.io/kubelet's
//     streaming interfaces.
//
// What it must never do: write to the API server itself (the core does),
// touch pods bound to other nodes, or block an informer handler or a
// provider notification.
package virtual
