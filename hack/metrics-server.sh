#!/usr/bin/env bash
# metrics-server for the local cluster, so `kubectl top nodes|pods` works
# against our kubelet. hack/cluster.sh calls it; each command also works alone.
#
#   hack/metrics-server.sh build            build sigs.k8s.io/metrics-server at
#                                           $METRICS_SERVER_VERSION from the Go module
#                                           proxy, cached in $METRICS_SERVER_CACHE
#   hack/metrics-server.sh pki              the aggregation layer's certificates (see below)
#   hack/metrics-server.sh apiserver-flags  the kube-apiserver flags of the aggregation
#                                           layer, one per line
#   hack/metrics-server.sh apply            RBAC, Service, EndpointSlice and APIService
#                                           v1beta1.metrics.k8s.io (kubectl apply, idempotent)
#   hack/metrics-server.sh unregister       delete the APIService (the rest stays): an
#                                           APIService nobody serves breaks discovery,
#                                           and with it namespace deletion
#   hack/metrics-server.sh args             metrics-server's command line, one per line
#   hack/metrics-server.sh ready            exit 0 when the metrics API answers for the node
#
# metrics-server runs as a host process, like the control plane, listening on
# $NODE_IP:$METRICS_SERVER_PORT. The APIService points at a Service without a
# selector whose EndpointSlice names that address; the apiserver
# (--enable-aggregator-routing) dials it directly and checks its serving
# certificate against the cluster CA.
#
# Certificates (under $PKI_DIR, made once, re-issued when their spec changes):
#   front-proxy-ca.crt/.key          CA of the aggregator's requestheader client
#   front-proxy-client.crt/.key      CN=front-proxy-client: the apiserver's client
#                                    certificate towards aggregated APIs
#   metrics-server.crt/.key          CN=system:metrics-server, signed by the cluster CA:
#                                    its identity towards the apiserver and the kubelet
#   metrics-server-serving.crt/.key  serving certificate for
#                                    metrics-server.kube-system.svc and $NODE_IP
#
# metrics-server reaches the kubelet API as the upstream one does: https to
# the port in the Node's daemonEndpoints (10250) on the node's InternalIP, as
# system:metrics-server (authorized by RBAC for nodes/metrics and
# nodes/stats), checking the kubelet's serving certificate against the
# cluster CA (the node kubelet serves kubelet-serving.crt, or a certificate
# from a kubernetes.io/kubelet-serving CSR, both signed by it).
# See docs/metrics.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.sh"
. "$here/lib-cluster.sh"

METRICS_SERVER_VERSION=${METRICS_SERVER_VERSION:-v0.9.0}
METRICS_SERVER_CACHE=${METRICS_SERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gokubelet/metrics-server/$METRICS_SERVER_VERSION}
METRICS_SERVER_BIN=${METRICS_SERVER_BIN:-$METRICS_SERVER_CACHE/bin/metrics-server}
METRICS_SERVER_PORT=${METRICS_SERVER_PORT:-4443}
METRICS_SERVER_RESOLUTION=${METRICS_SERVER_RESOLUTION:-15s}
MS_KUBECONFIG=$CLUSTER_DIR/metrics-server.kubeconfig
ADMIN_KUBECONFIG=$CLUSTER_DIR/admin.kubeconfig

ms_log() { echo "[metrics-server] $*" >&2; }

# ---- build -------------------------------------------------------------------

cmd_build() {
  [ -x "$METRICS_SERVER_BIN" ] && return 0
  ms_log "building sigs.k8s.io/metrics-server $METRICS_SERVER_VERSION (first build takes minutes; cached in $METRICS_SERVER_CACHE)"
  local bindir tmp
  bindir=$(dirname "$METRICS_SERVER_BIN")
  tmp=$bindir.tmp
  mkdir -p "$bindir" "$tmp"
  local ldflags="-s -w -X k8s.io/client-go/pkg/version.gitVersion=$METRICS_SERVER_VERSION -X k8s.io/client-go/pkg/version.buildDate=1970-01-01T00:00:00Z"
  # `go install pkg@version` builds the module with its own go.mod and
  # go.sum, outside this repository's module.
  (cd / && GOBIN=$tmp CGO_ENABLED=0 GOFLAGS=-mod=mod \
    go install -trimpath -ldflags "$ldflags" "sigs.k8s.io/metrics-server/cmd/metrics-server@$METRICS_SERVER_VERSION")
  mv "$tmp/metrics-server" "$METRICS_SERVER_BIN"
  rmdir "$tmp" 2>/dev/null || true
}

# ---- certificates ------------------------------------------------------------

ms_key() { [ -s "$1" ] || openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1" 2>/dev/null; }

# ms_ca NAME CN: a CA, made once.
ms_ca() {
  local name=$1 cn=$2
  [ -s "$name.crt" ] && [ -s "$name.key" ] && return 0
  ms_log "pki: generating $name"
  ms_key "$name.key"
  openssl req -x509 -new -key "$name.key" -subj "/CN=$cn" -days 3650 \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" -out "$name.crt"
}

# ms_cert NAME SUBJECT EKU CA [SAN]: a leaf signed by CA, re-issued when the
# subject, usage, SANs or CA change.
ms_cert() {
  local name=$1 subject=$2 eku=$3 ca=$4 san=${5:-} spec
  spec="subject=$subject eku=$eku san=$san ca=$(openssl x509 -in "$ca.crt" -noout -fingerprint -sha256)"
  if [ -s "$name.crt" ] && [ -s "$name.key" ] && [ "$(cat "$name.spec" 2>/dev/null)" = "$spec" ]; then
    return 0
  fi
  ms_log "pki: issuing $name ($subject)"
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$eku"
    echo "authorityKeyIdentifier=keyid"
    [ -z "$san" ] || echo "subjectAltName=$san"
  } > "$name.ext.tmp"
  ms_key "$name.key"
  openssl req -new -key "$name.key" -subj "$subject" -out "$name.csr.tmp"
  openssl x509 -req -in "$name.csr.tmp" -CA "$ca.crt" -CAkey "$ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 3650 -extfile "$name.ext.tmp" -out "$name.crt.tmp" 2>/dev/null
  rm -f "$name.csr.tmp" "$name.ext.tmp"
  mv "$name.crt.tmp" "$name.crt"
  echo "$spec" > "$name.spec"
}

cmd_pki() {
  [ -s "$PKI_DIR/ca.crt" ] || { echo "[metrics-server] error: no cluster CA in $PKI_DIR; run hack/pki.sh first" >&2; exit 1; }
  local ip
  ip=$(node_ip)
  (
    cd "$PKI_DIR"
    umask 077
    ms_ca front-proxy-ca "$CLUSTER_NAME-front-proxy-ca"
    ms_cert front-proxy-client "/CN=front-proxy-client" clientAuth front-proxy-ca
    ms_cert metrics-server "/CN=system:metrics-server" clientAuth ca
    ms_cert metrics-server-serving "/CN=metrics-server" serverAuth ca \
      "DNS:metrics-server,DNS:metrics-server.kube-system,DNS:metrics-server.kube-system.svc,DNS:localhost,IP:127.0.0.1,IP:$ip"
  )
  local b64 tmp
  b64() { base64 -w0 < "$1"; }
  tmp=$(mktemp "$MS_KUBECONFIG.XXXXXX")
  chmod 600 "$tmp"
  cat > "$tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $CLUSTER_NAME
  cluster:
    server: $APISERVER_URL
    certificate-authority-data: $(b64 "$PKI_DIR/ca.crt")
users:
- name: system:metrics-server
  user:
    client-certificate-data: $(b64 "$PKI_DIR/metrics-server.crt")
    client-key-data: $(b64 "$PKI_DIR/metrics-server.key")
contexts:
- name: metrics-server@$CLUSTER_NAME
  context:
    cluster: $CLUSTER_NAME
    user: system:metrics-server
current-context: metrics-server@$CLUSTER_NAME
EOF
  if [ -f "$MS_KUBECONFIG" ] && cmp -s "$tmp" "$MS_KUBECONFIG"; then rm -f "$tmp"; else mv "$tmp" "$MS_KUBECONFIG"; fi
}

# ---- the apiserver's aggregation layer ---------------------------------------

cmd_apiserver_flags() {
  cat <<EOF
--requestheader-client-ca-file=$PKI_DIR/front-proxy-ca.crt
--requestheader-allowed-names=front-proxy-client
--requestheader-username-headers=X-Remote-User
--requestheader-group-headers=X-Remote-Group
--requestheader-extra-headers-prefix=X-Remote-Extra-
--proxy-client-cert-file=$PKI_DIR/front-proxy-client.crt
--proxy-client-key-file=$PKI_DIR/front-proxy-client.key
--enable-aggregator-routing=true
EOF
}

# ---- API objects -------------------------------------------------------------

manifests() {
  local ip
  ip=$(node_ip)
  cat <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:metrics-server
rules:
- apiGroups: [""]
  resources: [nodes/metrics, nodes/stats]
  verbs: [get]
- apiGroups: [""]
  resources: [pods, nodes]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: system:metrics-server
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:metrics-server}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:metrics-server"}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: metrics-server:system:auth-delegator
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:auth-delegator}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:metrics-server"}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: metrics-server-auth-reader
  namespace: kube-system
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:metrics-server"}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:aggregated-metrics-reader
  labels:
    rbac.authorization.k8s.io/aggregate-to-view: "true"
    rbac.authorization.k8s.io/aggregate-to-edit: "true"
    rbac.authorization.k8s.io/aggregate-to-admin: "true"
rules:
- apiGroups: [metrics.k8s.io]
  resources: [pods, nodes]
  verbs: [get, list, watch]
---
apiVersion: v1
kind: Service
metadata:
  name: metrics-server
  namespace: kube-system
spec:
  ports:
  - {name: https, port: 443, protocol: TCP, targetPort: $METRICS_SERVER_PORT}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: metrics-server-host
  namespace: kube-system
  labels:
    kubernetes.io/service-name: metrics-server
    endpointslice.kubernetes.io/managed-by: gokubelet-hack
addressType: IPv4
endpoints:
- addresses: ["$ip"]
  conditions: {ready: true}
ports:
- {name: https, port: $METRICS_SERVER_PORT, protocol: TCP}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1beta1.metrics.k8s.io
spec:
  service: {name: metrics-server, namespace: kube-system, port: 443}
  group: metrics.k8s.io
  version: v1beta1
  caBundle: $(base64 -w0 < "$PKI_DIR/ca.crt")
  groupPriorityMinimum: 100
  versionPriority: 100
EOF
}

cmd_apply() {
  manifests | kubectl --kubeconfig "$ADMIN_KUBECONFIG" apply -f - >/dev/null
}

cmd_unregister() {
  kubectl --kubeconfig "$ADMIN_KUBECONFIG" delete apiservice v1beta1.metrics.k8s.io --ignore-not-found >/dev/null
}

# ---- the process -------------------------------------------------------------

cmd_args() {
  local ip
  ip=$(node_ip)
  cat <<EOF
$METRICS_SERVER_BIN
--kubeconfig=$MS_KUBECONFIG
--authentication-kubeconfig=$MS_KUBECONFIG
--authorization-kubeconfig=$MS_KUBECONFIG
--client-ca-file=$PKI_DIR/ca.crt
--requestheader-client-ca-file=$PKI_DIR/front-proxy-ca.crt
--requestheader-allowed-names=front-proxy-client
--tls-cert-file=$PKI_DIR/metrics-server-serving.crt
--tls-private-key-file=$PKI_DIR/metrics-server-serving.key
--bind-address=$ip
--secure-port=$METRICS_SERVER_PORT
--metric-resolution=$METRICS_SERVER_RESOLUTION
--kubelet-preferred-address-types=InternalIP
--kubelet-use-node-status-port
--kubelet-certificate-authority=$PKI_DIR/ca.crt
EOF
}

# ready: the metrics API answers with this cluster's node.
cmd_ready() {
  kubectl --kubeconfig "$ADMIN_KUBECONFIG" get --raw /apis/metrics.k8s.io/v1beta1/nodes 2>/dev/null | grep -q "\"name\":\"$NODE_NAME\""
}

case ${1:-} in
  build) cmd_build ;;
  pki) cmd_pki ;;
  apiserver-flags) cmd_apiserver_flags ;;
  apply) cmd_apply ;;
  unregister) cmd_unregister ;;
  args) cmd_args ;;
  ready) cmd_ready ;;
  *) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
