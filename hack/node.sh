#!/usr/bin/env bash
# Brings up a node: containerd, local images, and this kubelet.
#
#   hack/node.sh up       install deps, start containerd, import images, build
#                         and (re)start the kubelet; no-op when nothing changed
#   hack/node.sh stop     stop the kubelet (pods keep running, as upstream)
#   hack/node.sh down     stop the kubelet, remove every pod and sandbox, stop
#                         containerd
#   hack/node.sh status   print what runs
#
# Standalone by default: static pods from examples/static-pods (STATIC_POD_PATH
# overrides). With NODE_KUBECONFIG set (hack/cluster.sh does it), the kubelet
# joins that cluster, taking node name and IP from
# /var/lib/gokubelet/cluster/kubelet-env: through TLS bootstrap (the cluster's
# bootstrap kubeconfig; the client certificate lands in <root-dir>/pki and is
# rotated), or with NODE_BOOTSTRAP=0 directly with NODE_KUBECONFIG.
# The node's files: /var/lib/gokubelet/node/kubelet (root dir and config),
# log /var/log/gokubelet/node-kubelet.log, pod logs /var/log/pods.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gk_require_root
gk_instance node

KUBELET_DIR=$GK_LIB/kubelet
KUBELET_CONFIG=$KUBELET_DIR/config.yaml
KUBELET_PID=$GK_RUN/kubelet.pid
KUBELET_LOG=$GK_LOGDIR/node-kubelet.log
KUBELET_BIN=$GK_OUTPUT/bin/kubelet
STATIC_POD_PATH=${STATIC_POD_PATH:-$GK_REPO_ROOT/examples/static-pods}
READ_ONLY_PORT=${READ_ONLY_PORT:-10255}
HEALTHZ_PORT=${HEALTHZ_PORT:-10248}
CLUSTER_ENV=/var/lib/gokubelet/cluster/kubelet-env
KUBELET_KUBECONFIG=$KUBELET_DIR/kubeconfig
KUBELET_CERT_DIR=$KUBELET_DIR/pki
NODE_BOOTSTRAP=${NODE_BOOTSTRAP:-1}

kubelet_pid() {
  local pid
  pid=$(cat "$KUBELET_PID" 2>/dev/null || true)
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "--config $KUBELET_CONFIG" || return 1
  echo "$pid"
}

stop_kubelet() {
  local pid i
  pid=$(kubelet_pid) || { rm -f "$KUBELET_PID"; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do
    [ -d "/proc/$pid" ] || break
    sleep 0.1
  done
  if [ -d "/proc/$pid" ]; then
    gk_warn "kubelet did not stop within 10s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$KUBELET_PID"
}

# forget_foreign_credentials removes a bootstrapped kubeconfig and client
# certificate issued by another cluster CA (after `cluster.sh down --purge`):
# they would not expire for a year but no longer work.
forget_foreign_credentials() {
  [ -f "$KUBELET_KUBECONFIG" ] || return 0
  local pem=$KUBELET_CERT_DIR/kubelet-client-current.pem
  if [ ! -f "$pem" ] || ! openssl verify -CAfile "$CLUSTER_CA_FILE" "$pem" >/dev/null 2>&1 ||
    ! grep -q "certificate-authority-data: $(base64 -w0 < "$CLUSTER_CA_FILE")" "$KUBELET_KUBECONFIG"; then
    gk_warn "the node's bootstrapped credentials are not from this cluster's CA; bootstrapping again"
    rm -f "$KUBELET_KUBECONFIG" "$KUBELET_CERT_DIR"/kubelet-client-*
  fi
}

write_config() {
  local kubeconfig_line="" cluster_lines=""
  if [ -n "${NODE_KUBECONFIG:-}" ] && [ -f "$CLUSTER_ENV" ]; then
    # The cluster's facts for its node (name, IP, DNS); NODE_KUBECONFIG as
    # given wins.
    local kc=$NODE_KUBECONFIG
    # shellcheck disable=SC1090
    . "$CLUSTER_ENV"
    NODE_KUBECONFIG=$kc
  fi
  # Standalone: every port on loopback, the read-only port on.
  local server_lines="address: 127.0.0.1
readOnlyPort: $READ_ONLY_PORT"
  if [ -n "${NODE_KUBECONFIG:-}" ]; then
    cluster_lines="clusterDomain: ${CLUSTER_DOMAIN:-cluster.local}"
    if [ -n "${CLUSTER_DNS:-}" ]; then
      cluster_lines+=$'\n'"clusterDNS: [\"$CLUSTER_DNS\"]"
    fi
    # In a cluster the API server reaches the kubelet API on the node's
    # IP; the unauthenticated read-only port stays off. The upstream
    # kubelet's usual secure settings: x509 (the cluster CA) and webhook
    # authentication, no anonymous access, webhook authorization.
    server_lines="address: 0.0.0.0
readOnlyPort: 0
rotateCertificates: $([ "$NODE_BOOTSTRAP" = 1 ] && echo true || echo false)
tlsCertFile: $KUBELET_TLS_CERT_FILE
tlsPrivateKeyFile: $KUBELET_TLS_KEY_FILE
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $CLUSTER_CA_FILE
authorization:
  mode: Webhook"
  fi
  mkdir -p "$KUBELET_DIR"
  gk_write_if_changed "$KUBELET_CONFIG" <<CFG
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# Written by hack/node.sh.
staticPodPath: $STATIC_POD_PATH
containerRuntimeEndpoint: unix://$GK_CTRD_SOCK
cgroupDriver: cgroupfs
failSwapOn: false
$server_lines
healthzPort: $HEALTHZ_PORT
podLogsDir: /var/log/pods
$cluster_lines
CFG
}

up() {
  "$GK_REPO_ROOT/hack/install-deps.sh"
  "$GK_REPO_ROOT/hack/containerd.sh" up node
  "$GK_REPO_ROOT/hack/images.sh" node
  (cd "$GK_REPO_ROOT" && go build -o "$KUBELET_BIN.new" ./cmd/kubelet)
  write_config
  local args=(--config "$KUBELET_CONFIG" --root-dir "$KUBELET_DIR")
  if [ -n "${NODE_KUBECONFIG:-}" ] && [ "$NODE_BOOTSTRAP" = 1 ] && [ -n "${BOOTSTRAP_KUBECONFIG:-}" ]; then
    forget_foreign_credentials
    args+=(--bootstrap-kubeconfig "$BOOTSTRAP_KUBECONFIG" --kubeconfig "$KUBELET_KUBECONFIG" --cert-dir "$KUBELET_CERT_DIR")
    [ -z "${NODE_NAME:-}" ] || args+=(--hostname-override "$NODE_NAME")
    [ -z "${NODE_IP:-}" ] || args+=(--node-ip "$NODE_IP")
  elif [ -n "${NODE_KUBECONFIG:-}" ]; then
    args+=(--kubeconfig "$NODE_KUBECONFIG")
    [ -z "${NODE_NAME:-}" ] || args+=(--hostname-override "$NODE_NAME")
    [ -z "${NODE_IP:-}" ] || args+=(--node-ip "$NODE_IP")
  fi
  # Restart only when the binary, the config or the arguments changed.
  local stamp
  stamp=$( { sha256sum "$KUBELET_BIN.new" "$KUBELET_CONFIG" | cut -d' ' -f1; echo "${args[*]}"; } | sha256sum | cut -d' ' -f1)
  if kubelet_pid >/dev/null && [ "$(cat "$KUBELET_DIR/.stamp" 2>/dev/null)" = "$stamp" ]; then
    rm -f "$KUBELET_BIN.new"
    echo "kubelet already running (pid $(kubelet_pid)); nothing changed"
  else
    stop_kubelet
    mv "$KUBELET_BIN.new" "$KUBELET_BIN"
    mkdir -p "$GK_LOGDIR" "$GK_RUN"
    gk_daemon nohup "$KUBELET_BIN" "${args[@]}" >>"$KUBELET_LOG" 2>&1 </dev/null
    echo $! >"$KUBELET_PID"
    echo "$stamp" >"$KUBELET_DIR/.stamp"
    local i
    for i in $(seq 1 300); do
      if curl -fsS "http://127.0.0.1:$HEALTHZ_PORT/healthz" >/dev/null 2>&1; then break; fi
      kubelet_pid >/dev/null || { tail -20 "$KUBELET_LOG" >&2; gk_die "kubelet exited; log: $KUBELET_LOG"; }
      sleep 0.1
    done
    curl -fsS "http://127.0.0.1:$HEALTHZ_PORT/healthz" >/dev/null || gk_die "kubelet healthz did not answer within 30s; log: $KUBELET_LOG"
    echo "kubelet running (pid $(kubelet_pid)), log: $KUBELET_LOG"
  fi
  if [ -n "${NODE_KUBECONFIG:-}" ]; then
    cat <<MSG

The node is up and joins the cluster (kubectl get nodes). Its API on ${NODE_IP:-<node-ip>}:10250 needs credentials:
  curl -sk https://${NODE_IP:-<node-ip>}:10250/pods                          # 401
  curl -s --cacert $CLUSTER_CA_FILE --cert ${KUBELET_TLS_CERT_FILE%/*}/apiserver-kubelet-client.crt \\
       --key ${KUBELET_TLS_CERT_FILE%/*}/apiserver-kubelet-client.key https://${NODE_IP:-<node-ip>}:10250/pods   # 200
  kubectl top pods -A                                                        # through metrics-server (docs/metrics.md)
MSG
    return 0
  fi
  cat <<MSG

The node is up. See its pods:
  curl -s http://127.0.0.1:$READ_ONLY_PORT/pods | python3 -m json.tool     # the kubelet's view, with status
  curl -s http://127.0.0.1:$READ_ONLY_PORT/stats/summary             # resource usage (docs/metrics.md)
  curl -s http://127.0.0.1:$HEALTHZ_PORT/healthz                            # ok
  ctr --address $GK_CTRD_SOCK -n k8s.io containers ls                       # the runtime's view
Static pods come from $STATIC_POD_PATH: add, edit or remove a manifest there.
Stop the kubelet (pods keep running): make stop.   Tear everything down: make down.
MSG
}

case ${1:-} in
  up) up ;;
  stop) stop_kubelet; echo "kubelet stopped (pods keep running; make down removes them)" ;;
  down)
    stop_kubelet
    "$GK_REPO_ROOT/hack/containerd.sh" down node
    echo "node down: kubelet stopped, pods and sandboxes removed, containerd stopped"
    ;;
  status)
    if pid=$(kubelet_pid); then echo "kubelet: running (pid $pid)"; else echo "kubelet: stopped"; fi
    "$GK_REPO_ROOT/hack/containerd.sh" status node && echo "containerd: running" || echo "containerd: stopped"
    ;;
  *) sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
