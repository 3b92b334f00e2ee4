// Package server serves the kubelet's HTTP endpoints. This file set owns the
// unauthenticated, local ones: the healthz endpoint (healthzBindAddress:
// healthzPort, default 127.0.0.1:10248) and the read-only API
// (address:readOnlyPort, off unless configured) with /healthz, /pods and
// /runningpods/. The secured API on port 10250 (TLS, authn, authz, logs,
// exec, stats, metrics) builds on the same handlers.
package server
