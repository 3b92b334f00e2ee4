// Package prober runs the liveness, readiness and startup probes of the
// containers of the pods on this node and keeps their latest results.
//
// It owns: one worker goroutine per (pod, container, probe kind) for
// containers whose spec has that probe; each worker waits for its own
// container instance to run, honours initialDelaySeconds from the instance's
// start, probes every periodSeconds with timeoutSeconds, and turns raw probe
// outcomes into results with successThreshold/failureThreshold. A new
// container instance starts from fresh results. The probe mechanisms (exec
// through the CRI, httpGet, tcpSocket, grpc health v1) live one per file.
//
// Semantics, as upstream:
//   - readiness is false until its first success and false while the
//     container is not running;
//   - a startup probe gates readiness and liveness: they do not run until it
//     succeeded, and it stops running once it did;
//   - liveness and startup results count as failed once failureThreshold
//     consecutive failures are seen; the worker then holds (probes no more)
//     until the kubelet replaces the instance;
//   - liveness and startup stop when the pod is being deleted; readiness
//     keeps running until the pod is removed;
//   - every failed probe is an "Unhealthy" Warning event ("Readiness probe
//     failed: <output>"), rate-limited per worker; a redirect the HTTP probe
//     did not follow is a success with a "ProbeWarning" event.
//
// It never acts on a result: it tells the kubelet (Updates) which pod to
// sync again, and the kubelet reads Result (for status) and Liveness (for the
// runtime manager's kill decision). It never talks to the API server.
package prober
