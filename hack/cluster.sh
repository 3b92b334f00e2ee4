#!/usr/bin/env bash
# A local Kubernetes control plane for our kubelet to join, in one command.
#
#   hack/cluster.sh up              start etcd, kube-apiserver, kube-controller-manager,
#                                   kube-scheduler, and the add-ons kube-proxy and CoreDNS
#                                   (not with CLUSTER_ADDONS=0), each only if not running,
#                                   then the node via hack/node.sh (not with CLUSTER_NODE=0)
#   hack/cluster.sh down [--purge]  stop the node and the control plane; --purge also
#                                   deletes all cluster state ($CLUSTER_DIR)
#   hack/cluster.sh status          what runs, and whether the apiserver is ready
#
# Idempotent: re-running `up` on a running cluster changes nothing; `down` on a
# stopped one does nothing. See docs/cluster.md for paths, ports and settings.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.sh"
. "$here/lib-cluster.sh"
. "$here/lib-daemon.sh"

BIN_DIR=${BIN_DIR:-$UPSTREAM_CACHE/$KUBE_VERSION/bin}
APISERVER_READY_TIMEOUT=${APISERVER_READY_TIMEOUT:-180}
# Verify the kubelet's serving certificate when the apiserver connects to it
# (logs, exec, port-forward). Off by default, as in kubeadm: a kubelet that
# serves a self-signed certificate still works. A kubelet that serves
# $PKI_DIR/kubelet-serving.crt (see kubelet-env) works either way.
KUBELET_VERIFY_SERVING=${KUBELET_VERIFY_SERVING:-0}
# Lifetime of the certificates the controller manager signs for CSRs (the
# kubelets' client and serving certificates); empty means upstream's
# default (a year). Tests of rotation use minutes.
CLUSTER_SIGNING_DURATION=${CLUSTER_SIGNING_DURATION:-}

ADMIN_KUBECONFIG=$CLUSTER_DIR/admin.kubeconfig
NODE_KUBECONFIG=$CLUSTER_DIR/node.kubeconfig
CM_KUBECONFIG=$CLUSTER_DIR/controller-manager.kubeconfig
SCHED_KUBECONFIG=$CLUSTER_DIR/scheduler.kubeconfig
PROXY_KUBECONFIG=$CLUSTER_DIR/kube-proxy.kubeconfig
PROXY_CONFIG=$CLUSTER_DIR/kube-proxy.yaml
COREDNS_KUBECONFIG=$CLUSTER_DIR/coredns.kubeconfig
COREDNS_CONFIG=$CLUSTER_DIR/Corefile
KUBELET_ENV=$CLUSTER_DIR/kubelet-env
COREDNS_BIN=$("$here/build-coredns.sh" --path)
BOOTSTRAP_KUBECONFIG=$CLUSTER_DIR/bootstrap.kubeconfig
BOOTSTRAP_TOKEN_FILE=$CLUSTER_DIR/bootstrap-token

# Components in start order; `down` walks it backwards (and always includes
# the add-ons, so a cluster started with them is stopped whole).
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler)
ADDONS=(kube-proxy coredns)

# ---- processes ---------------------------------------------------------------

pidfile() { echo "$CLUSTER_RUN_DIR/$1.pid"; }

# running NAME: prints the pid and succeeds when the pid file names a live
# process that is still NAME (a stale pid reused by another program is not).
running() {
  local f pid
  f=$(pidfile "$1")
  [ -s "$f" ] || return 1
  pid=$(cat "$f")
  [ -d "/proc/$pid" ] || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | awk '{print $1}' | grep -q "/$1\$\|^$1\$" || return 1
  echo "$pid"
}

# port_in_use PORT: something listens on TCP PORT.
port_in_use() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }

# start NAME PORT BINARY ARGS...: starts BINARY in its own session, detached
# from this shell, logging to $CLUSTER_LOG_DIR/NAME.log, unless already running.
start() {
  local name=$1 port=$2 pid
  shift 2
  if pid=$(running "$name"); then
    if [ "$(tr '\0' ' ' < "/proc/$pid/cmdline" | sed 's/ $//')" = "$*" ]; then
      log "$name already running (pid $pid)"
      return 0
    fi
    # Started with other flags (e.g. another CLUSTER_SIGNING_DURATION):
    # restart it so the cluster is what this invocation asks for.
    log "$name runs with other flags; restarting it"
    stop "$name"
  fi
  if port_in_use "$port"; then
    die "$name: port $port is taken by another process ($(ss -Hltnp "sport = :$port" | awk '{print $NF}' | head -n1)); stop it or override the port (see docs/cluster.md)"
  fi
  log "starting $name (log: $CLUSTER_LOG_DIR/$name.log)"
  echo "=== $(date -u +%FT%TZ) starting: $*" >> "$CLUSTER_LOG_DIR/$name.log"
  gk_daemon "$@" >> "$CLUSTER_LOG_DIR/$name.log" 2>&1 < /dev/null
  pid=$!
  echo "$pid" > "$(pidfile "$name")"
  # Until the daemon's subshell has closed our descriptors and exec'ed the
  # binary, its process is not yet NAME: on a loaded machine (a build
  # beside) that took over 0.2 s. Wait for the exec (at most 10 s, or until
  # the process is gone), then give the binary 0.2 s to fail at once.
  local i
  for i in $(seq 1 100); do
    running "$name" >/dev/null && break
    [ -d "/proc/$pid" ] || break
    sleep 0.1
  done
  sleep 0.2
  running "$name" >/dev/null || { tail -n 20 "$CLUSTER_LOG_DIR/$name.log" >&2; die "$name exited at once"; }
}

# stop NAME: SIGTERM, then SIGKILL after a bounded wait. No-op if not running.
stop() {
  local name=$1 pid i
  if ! pid=$(running "$name"); then
    rm -f "$(pidfile "$name")"
    return 0
  fi
  log "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do
    [ -d "/proc/$pid" ] || break
    sleep 0.2
  done
  if [ -d "/proc/$pid" ]; then
    log "$name did not exit in 20s; killing"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$(pidfile "$name")"
}

# wait_until DESCRIPTION TIMEOUT NAME COMMAND...: polls COMMAND until it
# succeeds; fails early, with the log tail, if process NAME dies meanwhile.
wait_until() {
  local what=$1 timeout=$2 name=$3 start_s
  shift 3
  start_s=$SECONDS
  until "$@" >/dev/null 2>&1; do
    running "$name" >/dev/null || { tail -n 30 "$CLUSTER_LOG_DIR/$name.log" >&2; die "$name died while waiting for $what"; }
    [ $((SECONDS - start_s)) -lt "$timeout" ] || { tail -n 30 "$CLUSTER_LOG_DIR/$name.log" >&2; die "timed out after ${timeout}s waiting for $what"; }
    sleep 0.5
  done
}

etcd_healthy() { curl -sf "http://127.0.0.1:$ETCD_CLIENT_PORT/health" | grep -q '"health":"true"'; }

# The default ServiceAccount exists once controller-manager runs with working
# credentials; pods created before it are refused by ServiceAccount admission.
default_sa_exists() {
  curl -sf --max-time 5 --cacert "$PKI_DIR/ca.crt" --cert "$PKI_DIR/admin.crt" --key "$PKI_DIR/admin.key" \
    "https://127.0.0.1:$APISERVER_PORT/api/v1/namespaces/default/serviceaccounts/default" >/dev/null
}

apiserver_ready() {
  curl -sf --max-time 5 --cacert "$PKI_DIR/ca.crt" --cert "$PKI_DIR/admin.crt" --key "$PKI_DIR/admin.key" \
    "https://127.0.0.1:$APISERVER_PORT/readyz" | grep -qx ok
}

# ---- configuration files -----------------------------------------------------

# write_if_changed FILE: replaces FILE with stdin only when the content differs,
# so a second `up` leaves files (and their mtimes) untouched.
write_if_changed() {
  local f=$1 tmp
  tmp=$(mktemp "$f.XXXXXX")
  cat > "$tmp"
  chmod 600 "$tmp"
  if [ -f "$f" ] && cmp -s "$tmp" "$f"; then
    rm -f "$tmp"
  else
    mv "$tmp" "$f"
    log "wrote $f"
  fi
}

b64() { base64 -w0 < "$1"; }

# kubeconfig USER CERT_BASENAME: a kubeconfig with the CA and client cert embedded.
kubeconfig() {
  local user=$1 cert=$2
  cat <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $CLUSTER_NAME
  cluster:
    server: $APISERVER_URL
    certificate-authority-data: $(b64 "$PKI_DIR/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(b64 "$PKI_DIR/$cert.crt")
    client-key-data: $(b64 "$PKI_DIR/$cert.key")
contexts:
- name: $user@$CLUSTER_NAME
  context:
    cluster: $CLUSTER_NAME
    user: $user
current-context: $user@$CLUSTER_NAME
EOF
}

write_configs() {
  kubeconfig kubernetes-admin admin | write_if_changed "$ADMIN_KUBECONFIG"
  kubeconfig system:kube-controller-manager controller-manager | write_if_changed "$CM_KUBECONFIG"
  kubeconfig system:kube-scheduler scheduler | write_if_changed "$SCHED_KUBECONFIG"
  kubeconfig "system:node:$NODE_NAME" node | write_if_changed "$NODE_KUBECONFIG"
  kubeconfig system:kube-proxy kube-proxy | write_if_changed "$PROXY_KUBECONFIG"
  kubeconfig system:coredns coredns | write_if_changed "$COREDNS_KUBECONFIG"
  local dns=""
  [ "$CLUSTER_ADDONS" = 1 ] && dns=$CLUSTER_DNS_IP
  bootstrap_kubeconfig | write_if_changed "$BOOTSTRAP_KUBECONFIG"
  # The settings a kubelet needs to join; sourced by hack/node.sh.
  write_if_changed "$KUBELET_ENV" <<EOF
# Written by hack/cluster.sh up; source it. Settings for a kubelet joining this cluster.
NODE_NAME=$NODE_NAME
NODE_IP=$(node_ip)
NODE_KUBECONFIG=$NODE_KUBECONFIG
APISERVER_URL=$APISERVER_URL
CLUSTER_CA_FILE=$PKI_DIR/ca.crt
CLUSTER_DNS="$dns"
CLUSTER_DOMAIN=$CLUSTER_DOMAIN
CLUSTER_CIDR=$CLUSTER_CIDR
SERVICE_CIDR=$SERVICE_CIDR
KUBELET_TLS_CERT_FILE=$PKI_DIR/kubelet-serving.crt
KUBELET_TLS_KEY_FILE=$PKI_DIR/kubelet-serving.key
BOOTSTRAP_KUBECONFIG=$BOOTSTRAP_KUBECONFIG
EOF
}

# bootstrap_token prints the cluster's bootstrap token (<id>.<secret>),
# generated once and kept in $BOOTSTRAP_TOKEN_FILE.
bootstrap_token() {
  if [ ! -s "$BOOTSTRAP_TOKEN_FILE" ]; then
    local chars=abcdefghijklmnopqrstuvwxyz0123456789 id secret
    id=$(tr -dc "$chars" < /dev/urandom | head -c 6)
    secret=$(tr -dc "$chars" < /dev/urandom | head -c 16)
    (umask 077 && echo "$id.$secret" > "$BOOTSTRAP_TOKEN_FILE")
    log "generated a bootstrap token ($BOOTSTRAP_TOKEN_FILE)"
  fi
  cat "$BOOTSTRAP_TOKEN_FILE"
}

# bootstrap_kubeconfig: the kubeconfig a kubelet joins with through TLS
# bootstrap (--bootstrap-kubeconfig): the CA and the bootstrap token.
bootstrap_kubeconfig() {
  cat <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $CLUSTER_NAME
  cluster:
    server: $APISERVER_URL
    certificate-authority-data: $(b64 "$PKI_DIR/ca.crt")
users:
- name: kubelet-bootstrap
  user:
    token: $(bootstrap_token)
contexts:
- name: kubelet-bootstrap@$CLUSTER_NAME
  context:
    cluster: $CLUSTER_NAME
    user: kubelet-bootstrap
current-context: kubelet-bootstrap@$CLUSTER_NAME
EOF
}

# apply_bootstrap_objects: the bootstrap token's Secret, and the RBAC that
# lets its holders (group system:bootstrappers) create node client CSRs
# that the controller manager approves and lets nodes renew their own
# client certificates (kubeadm's bindings). Idempotent.
apply_bootstrap_objects() {
  local token id secret
  token=$(bootstrap_token)
  id=${token%%.*}
  secret=${token#*.}
  kubectl --kubeconfig "$ADMIN_KUBECONFIG" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Secret
metadata:
  name: bootstrap-token-$id
  namespace: kube-system
type: bootstrap.kubernetes.io/token
stringData:
  description: "TLS bootstrap of the local cluster's kubelets (hack/cluster.sh)"
  token-id: "$id"
  token-secret: "$secret"
  usage-bootstrap-authentication: "true"
  auth-extra-groups: "system:bootstrappers:gokubelet"
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: gokubelet:kubelet-bootstrap
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:node-bootstrapper
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: Group
  name: system:bootstrappers
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: gokubelet:node-autoapprove-bootstrap
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:certificates.k8s.io:certificatesigningrequests:nodeclient
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: Group
  name: system:bootstrappers
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: gokubelet:node-autoapprove-certificate-rotation
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:certificates.k8s.io:certificatesigningrequests:selfnodeclient
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: Group
  name: system:nodes
EOF
  # kube-proxy: iptables mode; traffic from any of the project's CNI bridges
  # (gk-<instance>) is pod traffic, whichever containerd instance the node
  # kubelet uses; the node IP is the bind address, so NodePorts and the node
  # IP are right even before the Node exists.
  write_if_changed "$PROXY_CONFIG" <<EOF
# Written by hack/cluster.sh up.
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: $PROXY_KUBECONFIG
hostnameOverride: $NODE_NAME
bindAddress: $(node_ip)
healthzBindAddress: 0.0.0.0:$KUBE_PROXY_HEALTHZ_PORT
metricsBindAddress: 127.0.0.1:$KUBE_PROXY_METRICS_PORT
mode: iptables
# NodePorts on the node IP only (kube-proxy's advice; the default, all
# local addresses, would include every CNI bridge's gateway).
nodePortAddresses: [primary]
detectLocalMode: InterfaceNamePrefix
detectLocal:
  interfaceNamePrefix: gk-
conntrack:
  # Leave the machine's conntrack table size alone.
  maxPerCore: 0
EOF
  sed -e "s|__DNS_PORT__|$COREDNS_PORT|g" -e "s|__NODE_IP__|$(node_ip)|g" \
    -e "s|__HEALTH_ADDR__|127.0.0.1:$COREDNS_HEALTH_PORT|g" -e "s|__READY_ADDR__|127.0.0.1:$COREDNS_READY_PORT|g" \
    -e "s|__METRICS_ADDR__|127.0.0.1:$COREDNS_METRICS_PORT|g" -e "s|__CLUSTER_DOMAIN__|$CLUSTER_DOMAIN|g" \
    -e "s|__KUBECONFIG__|$COREDNS_KUBECONFIG|g" "$here/addons/Corefile" | write_if_changed "$COREDNS_CONFIG"
}

# ---- components --------------------------------------------------------------

start_etcd() {
  mkdir -p "$ETCD_DATA_DIR"
  chmod 700 "$ETCD_DATA_DIR"
  start etcd "$ETCD_CLIENT_PORT" "$(command -v etcd)" \
    --name="$CLUSTER_NAME" \
    --data-dir="$ETCD_DATA_DIR" \
    --listen-client-urls="http://127.0.0.1:$ETCD_CLIENT_PORT" \
    --advertise-client-urls="http://127.0.0.1:$ETCD_CLIENT_PORT" \
    --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster="$CLUSTER_NAME=http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster-state=new \
    --initial-cluster-token="$CLUSTER_NAME-etcd" \
    --logger=zap --log-outputs=stderr
  wait_until "etcd health" 60 etcd etcd_healthy
}

start_apiserver() {
  local extra=()
  [ "$KUBELET_VERIFY_SERVING" = 1 ] && extra+=(--kubelet-certificate-authority="$PKI_DIR/ca.crt")
  mapfile -t -O "${#extra[@]}" extra < <(aggregation_flags)
  start kube-apiserver "$APISERVER_PORT" "$BIN_DIR/kube-apiserver" \
    --advertise-address="$(node_ip)" \
    --bind-address=0.0.0.0 \
    --secure-port="$APISERVER_PORT" \
    --etcd-servers="http://127.0.0.1:$ETCD_CLIENT_PORT" \
    --client-ca-file="$PKI_DIR/ca.crt" \
    --tls-cert-file="$PKI_DIR/apiserver.crt" \
    --tls-private-key-file="$PKI_DIR/apiserver.key" \
    --authorization-mode=Node,RBAC \
    --enable-bootstrap-token-auth=true \
    --enable-admission-plugins=NodeRestriction \
    --allow-privileged=true \
    --service-cluster-ip-range="$SERVICE_CIDR" \
    --service-account-issuer="https://kubernetes.default.svc.$CLUSTER_DOMAIN" \
    --service-account-key-file="$PKI_DIR/sa.pub" \
    --service-account-signing-key-file="$PKI_DIR/sa.key" \
    --kubelet-client-certificate="$PKI_DIR/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$PKI_DIR/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types=InternalIP,Hostname,InternalDNS,ExternalDNS,ExternalIP \
    --profiling=false \
    "${extra[@]}"
  wait_until "kube-apiserver /readyz" "$APISERVER_READY_TIMEOUT" kube-apiserver apiserver_ready
}

start_controller_manager() {
  local extra=()
  [ -z "$CLUSTER_SIGNING_DURATION" ] || extra+=(--cluster-signing-duration="$CLUSTER_SIGNING_DURATION")
  start kube-controller-manager "$CONTROLLER_MANAGER_PORT" "$BIN_DIR/kube-controller-manager" \
    --kubeconfig="$CM_KUBECONFIG" \
    --authentication-kubeconfig="$CM_KUBECONFIG" \
    --authorization-kubeconfig="$CM_KUBECONFIG" \
    --bind-address=127.0.0.1 \
    --secure-port="$CONTROLLER_MANAGER_PORT" \
    --client-ca-file="$PKI_DIR/ca.crt" \
    --authentication-skip-lookup=true \
    --cluster-name="$CLUSTER_NAME" \
    --cluster-signing-cert-file="$PKI_DIR/ca.crt" \
    --cluster-signing-key-file="$PKI_DIR/ca.key" \
    --root-ca-file="$PKI_DIR/ca.crt" \
    --service-account-private-key-file="$PKI_DIR/sa.key" \
    --use-service-account-credentials=true \
    --allocate-node-cidrs=true \
    --cluster-cidr="$CLUSTER_CIDR" \
    --service-cluster-ip-range="$SERVICE_CIDR" \
    --leader-elect=true \
    --profiling=false \
    "${extra[@]}"
}

start_scheduler() {
  start kube-scheduler "$SCHEDULER_PORT" "$BIN_DIR/kube-scheduler" \
    --kubeconfig="$SCHED_KUBECONFIG" \
    --authentication-kubeconfig="$SCHED_KUBECONFIG" \
    --authorization-kubeconfig="$SCHED_KUBECONFIG" \
    --bind-address=127.0.0.1 \
    --secure-port="$SCHEDULER_PORT" \
    --client-ca-file="$PKI_DIR/ca.crt" \
    --authentication-skip-lookup=true \
    --leader-elect=true \
    --profiling=false
}

start_kube_proxy() {
  start kube-proxy "$KUBE_PROXY_HEALTHZ_PORT" "$BIN_DIR/kube-proxy" --config="$PROXY_CONFIG"
}

# The kube-dns Service, its EndpointSlice and CoreDNS's RBAC; applied on every
# `up` (a no-op when unchanged), so a new machine IP is picked up.
apply_dns_objects() {
  sed -e "s|__DNS_PORT__|$COREDNS_PORT|g" -e "s|__NODE_IP__|$(node_ip)|g" -e "s|__DNS_IP__|$CLUSTER_DNS_IP|g" \
    "$here/addons/coredns.yaml" |
    kubectl --kubeconfig "$ADMIN_KUBECONFIG" apply -f - >/dev/null 2>"$CLUSTER_LOG_DIR/addons-apply.log" ||
    { cat "$CLUSTER_LOG_DIR/addons-apply.log" >&2; die "applying hack/addons/coredns.yaml failed"; }
}

coredns_ready() { curl -sf --max-time 2 "http://127.0.0.1:$COREDNS_READY_PORT/ready" >/dev/null; }

start_coredns() {
  apply_dns_objects
  start coredns "$COREDNS_PORT" "$COREDNS_BIN" -conf "$COREDNS_CONFIG"
  wait_until "CoreDNS /ready" 60 coredns coredns_ready
}

# ---- metrics-server and the aggregation layer (kubectl top) ------------------
# Everything about metrics-server lives in hack/metrics-server.sh; these
# functions only fit it into up/down/status. METRICS_SERVER=0 leaves it out.

METRICS_SERVER=${METRICS_SERVER:-1}

aggregation_flags() { "$here/metrics-server.sh" apiserver-flags; }

# restart_apiserver_for_aggregation: a kube-apiserver started before the
# aggregation layer was configured is stopped, so start_apiserver starts it
# with the flags (a one-time restart; state is in etcd).
restart_apiserver_for_aggregation() {
  local pid
  pid=$(running kube-apiserver) || return 0
  tr '\0' '\n' < "/proc/$pid/cmdline" | grep -qx -- "--enable-aggregator-routing=true" && return 0
  log "kube-apiserver runs without the aggregation layer metrics-server needs; restarting it"
  stop kube-apiserver
}

start_metrics_server() {
  if [ "$METRICS_SERVER" != 1 ]; then
    # An APIService left from an earlier up would be served by nobody.
    "$here/metrics-server.sh" unregister || log "could not delete the metrics APIService"
    return 0
  fi
  "$here/metrics-server.sh" build >&2
  "$here/metrics-server.sh" apply
  local args
  mapfile -t args < <("$here/metrics-server.sh" args)
  start metrics-server "${METRICS_SERVER_PORT:-4443}" "${args[@]}"
}

# stop_metrics_server unregisters the metrics API first (while the apiserver
# still runs): a cluster brought up later without metrics-server, or by a
# cluster.sh that does not know it, must not keep an APIService nobody serves
# (namespace deletion would stall on its discovery failure).
stop_metrics_server() {
  if running kube-apiserver >/dev/null && apiserver_ready; then
    "$here/metrics-server.sh" unregister || log "could not delete the metrics APIService"
  fi
  stop metrics-server
}

# wait_metrics_server: the metrics API answers for the node (only when a
# node kubelet was started; with CLUSTER_NODE=0 whoever runs the kubelet waits).
wait_metrics_server() {
  [ "$METRICS_SERVER" = 1 ] && [ "${CLUSTER_NODE:-1}" != 0 ] || return 0
  wait_until "the metrics API (kubectl top)" 120 metrics-server "$here/metrics-server.sh" ready
}

# ---- commands ----------------------------------------------------------------

cmd_up() {
  # etcd, openssl, curl and the rest, from Debian, only what is missing.
  "$here/install-deps.sh"
  if [ "$BIN_DIR" = "$UPSTREAM_CACHE/$KUBE_VERSION/bin" ]; then
    local bins=(kube-apiserver kube-controller-manager kube-scheduler)
    [ "$CLUSTER_ADDONS" = 1 ] && bins+=(kube-proxy)
    "$here/build-upstream.sh" "${bins[@]}" >&2
  fi
  [ "$CLUSTER_ADDONS" = 1 ] && "$here/build-coredns.sh" >&2
  mkdir -p "$CLUSTER_DIR" "$CLUSTER_RUN_DIR" "$CLUSTER_LOG_DIR"
  chmod 700 "$CLUSTER_DIR"
  "$here/pki.sh"
  "$here/metrics-server.sh" pki
  write_configs
  start_etcd
  restart_apiserver_for_aggregation
  start_apiserver
  apply_bootstrap_objects
  start_controller_manager
  start_scheduler
  wait_until "the default ServiceAccount" 90 kube-controller-manager default_sa_exists
  if [ "$CLUSTER_ADDONS" = 1 ]; then
    start_kube_proxy
    start_coredns
  fi
  start_metrics_server
  if [ "${CLUSTER_NODE:-1}" = 0 ]; then
    log "CLUSTER_NODE=0: control plane only (node settings: $KUBELET_ENV)"
  elif [ -x "$here/node.sh" ]; then
    NODE_KUBECONFIG=$NODE_KUBECONFIG "$here/node.sh" up >&2
  else
    log "hack/node.sh not found; control plane only (node settings: $KUBELET_ENV)"
  fi
  wait_metrics_server
  log "cluster up: apiserver $APISERVER_URL (advertised $(node_ip):$APISERVER_PORT)"
  echo "export KUBECONFIG=$ADMIN_KUBECONFIG"
}

cmd_down() {
  local purge=0
  case ${1:-} in
    --purge) purge=1 ;;
    "") ;;
    *) die "usage: $0 down [--purge]" ;;
  esac
  if [ -x "$here/node.sh" ]; then
    NODE_KUBECONFIG=$NODE_KUBECONFIG "$here/node.sh" down || log "hack/node.sh down failed; continuing"
  fi
  stop_metrics_server
  local i
  for ((i = ${#ADDONS[@]} - 1; i >= 0; i--)); do
    stop "${ADDONS[$i]}"
  done
  # kube-proxy's rules would keep redirecting Service IPs to gone pods.
  if [ -x "$BIN_DIR/kube-proxy" ] && iptables -t nat -S KUBE-SERVICES >/dev/null 2>&1; then
    log "removing kube-proxy's iptables rules"
    "$BIN_DIR/kube-proxy" --cleanup >>"$CLUSTER_LOG_DIR/kube-proxy.log" 2>&1 || log "kube-proxy --cleanup failed; see $CLUSTER_LOG_DIR/kube-proxy.log"
  fi
  for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
    stop "${COMPONENTS[$i]}"
  done
  if [ "$purge" = 1 ]; then
    log "purging $CLUSTER_DIR"
    rm -rf "$CLUSTER_DIR"
  fi
}

cmd_status() {
  local c pid
  for c in "${COMPONENTS[@]}" "${ADDONS[@]}"; do
    if pid=$(running "$c"); then
      printf '%-24s running  pid %s\n' "$c" "$pid"
    else
      printf '%-24s stopped\n' "$c"
    fi
  done
  if pid=$(running metrics-server); then
    printf '%-24s running  pid %s\n' metrics-server "$pid"
  else
    printf '%-24s stopped\n' metrics-server
  fi
  if running kube-apiserver >/dev/null && apiserver_ready; then
    printf '%-24s %s\n' "apiserver /readyz" "ok ($APISERVER_URL)"
  else
    printf '%-24s %s\n' "apiserver /readyz" "not ready"
  fi
  if [ -x "$here/node.sh" ]; then
    NODE_KUBECONFIG=$NODE_KUBECONFIG "$here/node.sh" status || true
  fi
  [ -f "$ADMIN_KUBECONFIG" ] && echo "export KUBECONFIG=$ADMIN_KUBECONFIG"
  return 0
}

case ${1:-} in
  up) shift; cmd_up "$@" ;;
  down) shift; cmd_down "$@" ;;
  status) shift; cmd_status "$@" ;;
  *) echo "usage: $0 up | down [--purge] | status" >&2; exit 2 ;;
esac
