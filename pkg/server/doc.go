// Package server serves the kubelet's HTTP endpoints:
//
//   - healthz (healthzBindAddress:healthzPort, default 127.0.0.1:10248);
//   - the read-only API (address:readOnlyPort, off unless configured):
//     /healthz, /pods and the routes marked ReadOnly, unauthenticated;
//   - the kubelet API (address:port, default 0.0.0.0:10250): HTTPS
//     (BuildTLS: certificate files reloaded on change, a CSR-issued
//     certificate, or a self-signed pair), every request authenticated
//     and authorized (BuildAuth: k8s.io/apiserver's delegating x509 and
//     TokenReview authenticator; SubjectAccessReviews with their answers
//     kept, in sar.go; upstream's path → nodes/<subresource> mapping in
//     RequestAttributes), serving
//     /healthz, /pods, /runningpods/, /containerLogs, /exec, /attach,
//     /portForward, /run, /logs/, /configz, /debug/pprof/, /debug/flags/v
//     and the extra routes other parts register (Route).
//
// The kubelet side is behind two small interfaces, PodLookup and
// Containers; exec, attach and port-forward are proxied to the runtime's
// streaming server. See docs/kubelet-api.md.
package server
