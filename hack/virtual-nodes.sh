#!/usr/bin/env bash
# Credentials for virtual nodes on the local cluster (hack/cluster.sh).
#
#   hack/virtual-nodes.sh creds [--shared]
#                                 issue a client certificate for the identity
#                                 gokubelet:virtual-nodes, write
#                                 $CLUSTER_DIR/virtual-nodes.kubeconfig, and
#                                 grant it the ClusterRole gokubelet:virtual-nodes
#                                 (hack/virtual-nodes-rbac.yaml); with --shared
#                                 also gokubelet:virtual-nodes-shared
#                                 (hack/virtual-nodes-rbac-shared.yaml), without
#                                 it that grant is removed
#
# Why a separate identity: a virtual node is a node of its own name, and the
# kubelet's system:node:<name> credentials only let it act as that one node
# (the Node authorizer and NodeRestriction). With hack/virtual-nodes-rbac.yaml
# the identity bootstraps a system:node:<name> identity for each node (the
# default, identity: bootstrap) and may do nothing a kubelet's credentials
# may not; --shared adds what nodes acting as the file's identity
# (identity: shared) need, and deleting Nodes taken out of the file. See
# docs/virtual-nodes.md, "Credentials". Idempotent: re-running changes
# nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib-cluster.sh"

VN_USER=gokubelet:virtual-nodes
VN_KUBECONFIG=$CLUSTER_DIR/virtual-nodes.kubeconfig
ADMIN_KUBECONFIG=$CLUSTER_DIR/admin.kubeconfig

cmd_creds() {
  [ -s "$PKI_DIR/ca.crt" ] && [ -s "$PKI_DIR/ca.key" ] || die "no cluster CA in $PKI_DIR: run hack/cluster.sh up first"
  [ -s "$ADMIN_KUBECONFIG" ] || die "no $ADMIN_KUBECONFIG: run hack/cluster.sh up first"
  local key=$PKI_DIR/virtual-nodes.key crt=$PKI_DIR/virtual-nodes.crt
  local ca_fp
  ca_fp=$(openssl x509 -in "$PKI_DIR/ca.crt" -noout -fingerprint -sha256)
  if [ ! -s "$crt" ] || [ "$(cat "$PKI_DIR/virtual-nodes.spec" 2>/dev/null)" != "$VN_USER $ca_fp" ]; then
    log "issuing the $VN_USER client certificate"
    (
      umask 077
      [ -s "$key" ] || openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$key" 2>/dev/null
      printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' > "$PKI_DIR/virtual-nodes.ext"
      openssl req -new -key "$key" -subj "/CN=$VN_USER" -out "$PKI_DIR/virtual-nodes.csr"
      openssl x509 -req -in "$PKI_DIR/virtual-nodes.csr" -CA "$PKI_DIR/ca.crt" -CAkey "$PKI_DIR/ca.key" \
        -set_serial "0x$(openssl rand -hex 16)" -days 3650 -extfile "$PKI_DIR/virtual-nodes.ext" -out "$crt" 2>/dev/null
      rm -f "$PKI_DIR/virtual-nodes.csr" "$PKI_DIR/virtual-nodes.ext"
      echo "$VN_USER $ca_fp" > "$PKI_DIR/virtual-nodes.spec"
    )
  fi
  local tmp
  tmp=$(mktemp "$VN_KUBECONFIG.XXXXXX")
  chmod 600 "$tmp"
  cat > "$tmp" <<EOK
apiVersion: v1
kind: Config
clusters:
- name: $CLUSTER_NAME
  cluster:
    server: $APISERVER_URL
    certificate-authority-data: $(base64 -w0 < "$PKI_DIR/ca.crt")
users:
- name: $VN_USER
  user:
    client-certificate-data: $(base64 -w0 < "$crt")
    client-key-data: $(base64 -w0 < "$key")
contexts:
- name: $VN_USER@$CLUSTER_NAME
  context:
    cluster: $CLUSTER_NAME
    user: $VN_USER
current-context: $VN_USER@$CLUSTER_NAME
EOK
  if [ -f "$VN_KUBECONFIG" ] && cmp -s "$tmp" "$VN_KUBECONFIG"; then rm -f "$tmp"; else mv "$tmp" "$VN_KUBECONFIG"; log "wrote $VN_KUBECONFIG"; fi
  kubectl --kubeconfig "$ADMIN_KUBECONFIG" apply -f "$here/virtual-nodes-rbac.yaml" >/dev/null
  if [ "$shared" = 1 ]; then
    kubectl --kubeconfig "$ADMIN_KUBECONFIG" apply -f "$here/virtual-nodes-rbac-shared.yaml" >/dev/null
  else
    kubectl --kubeconfig "$ADMIN_KUBECONFIG" delete --ignore-not-found -f "$here/virtual-nodes-rbac-shared.yaml" >/dev/null
  fi
  echo "$VN_KUBECONFIG"
}

shared=0
case ${1:-} in
  creds)
    case ${2:-} in
      "") ;;
      --shared) shared=1 ;;
      *) echo "usage: $0 creds [--shared]" >&2; exit 2 ;;
    esac
    cmd_creds ;;
  *) echo "usage: $0 creds [--shared]" >&2; exit 2 ;;
esac
