#!/usr/bin/env bash
# metrics-server for the local cluster, so `kubectl top nodes|pods` works
# against our kubelet. Called by hack/cluster.sh (up/down/status); usable alone.
#
#   hack/metrics-server.sh build    build sigs.k8s.io/metrics-server at
#                                   $METRICS_SERVER_VERSION from the Go module
#                                   proxy, cached in $METRICS_SERVER_CACHE
#   hack/metrics-server.sh pki      the aggregation layer's certificates (front-proxy
#                                   CA and client, metrics-server's client and
#                                   serving certificates); needed before the
#                                   apiserver starts
#   hack/metrics-server.sh up       RBAC, Service/Endpoints, APIService, then start the
#                                   process on the host (only if not running) and wait
#                                   until the metrics API answers
#   hack/metrics-server.sh down     stop the process (the API objects stay)
#   hack/metrics-server.sh status   running or not, and whether the APIService is available
#
# metrics-server runs as a host process (like the control plane), listening on
# $NODE_IP:$METRICS_SERVER_PORT; the APIService v1beta1.metrics.k8s.io points
# at a selector-less Service whose Endpoints name that address, and the
# apiserver (--enable-aggregator-routing) dials it directly.
#
# How it reaches the kubelet ($METRICS_SERVER_KUBELET):
#   secure    https on the Node's daemonEndpoints port (10250), with its own
#             client certificate (RBAC: nodes/metrics, nodes/stats), not
#             verifying the kubelet's serving certificate
#             (--kubelet-insecure-tls, as kubeadm's quick starts do)
#   readonly  plain http on the kubelet's read-only port
#             ($METRICS_SERVER_KUBELET_PORT, default 10255) with
#             --deprecated-kubelet-completely-insecure: for a kubelet that
#             serves /metrics/resource only on its read-only port
# See docs/metrics.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.sh"
. "$here/lib-cluster.sh"

METRICS_SERVER_VERSION=${METRICS_SERVER_VERSION:-v0.9.0}
METRICS_SERVER_CACHE=${METRICS_SERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gokubelet/metrics-server/$METRICS_SERVER_VERSION}
METRICS_SERVER_BIN=${METRICS_SERVER_BIN:-$METRICS_SERVER_CACHE/bin/metrics-server}
METRICS_SERVER_PORT=${METRICS_SERVER_PORT:-4443}
METRICS_SERVER_KUBELET=${METRICS_SERVER_KUBELET:-readonly}
METRICS_SERVER_KUBELET_PORT=${METRICS_SERVER_KUBELET_PORT:-10255}
METRICS_SERVER_RESOLUTION=${METRICS_SERVER_RESOLUTION:-15s}
METRICS_SERVER_READY_TIMEOUT=${METRICS_SERVER_READY_TIMEOUT:-120}
MS_KUBECONFIG=$CLUSTER_DIR/metrics-server.kubeconfig
ADMIN_KUBECONFIG=$CLUSTER_DIR/admin.kubeconfig
MS_PIDFILE=$CLUSTER_RUN_DIR/metrics-server.pid
MS_LOG=$CLUSTER_LOG_DIR/metrics-server.log

ms_log() { echo "[metrics-server] $*" >&2; }

# ---- build -------------------------------------------------------------------

cmd_build() {
  if [ -x "$METRICS_SERVER_BIN" ]; then
    return 0
  fi
  ms_log "building sigs.k8s.io/metrics-server $METRICS_SERVER_VERSION (first build takes minutes; cached in $METRICS_SERVER_CACHE)"
  mkdir -p "$(dirname "$METRICS_SERVER_BIN")"
  local ldflags="-s -w -X k8s.io/client-go/pkg/version.gitVersion=$METRICS_SERVER_VERSION -X k8s.io/client-go/pkg/version.buildDate=1970-01-01T00:00:00Z"
  # `go install pkg@version` builds the module with its own go.mod (and
  # go.sum), outside this repository's module.
  (cd / && GOBIN="$(dirname "$METRICS_SERVER_BIN").tmp" CGO_ENABLED=0 GOFLAGS=-mod=mod \
    go install -trimpath -ldflags "$ldflags" "sigs.k8s.io/metrics-server/cmd/metrics-server@$METRICS_SERVER_VERSION")
  mv "$(dirname "$METRICS_SERVER_BIN").tmp/metrics-server" "$METRICS_SERVER_BIN"
  rmdir "$(dirname "$METRICS_SERVER_BIN").tmp" 2>/dev/null || true
}

case ${1:-} in
  build) cmd_build ;;
  *) echo "usage: $0 build" >&2; exit 2 ;;
esac
