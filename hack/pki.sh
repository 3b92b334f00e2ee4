#!/usr/bin/env bash
# Generates the local cluster's PKI with openssl, under $PKI_DIR
# (default /var/lib/gokubelet/cluster/pki). Only what is missing or stale is
# (re)generated: each leaf certificate has a <name>.spec file recording the
# subject, SANs, usage and issuing CA it was made for; when the wanted spec
# differs (a new NODE_NAME, a new machine IP, a new CA) that certificate is
# re-issued and everything else is left alone.
#
#   hack/pki.sh            # generate/refresh; prints nothing when up to date
#
# Files (all PEM):
#   ca.crt ca.key                          cluster CA (also signs CSRs in controller-manager)
#   apiserver.crt/.key                     kube-apiserver serving cert
#   apiserver-kubelet-client.crt/.key      kube-apiserver -> kubelet client (O=system:masters)
#   admin.crt/.key                         CN=kubernetes-admin, O=system:masters
#   controller-manager.crt/.key            CN=system:kube-controller-manager
#   scheduler.crt/.key                     CN=system:kube-scheduler
#   kube-proxy.crt/.key                    CN=system:kube-proxy (bound to system:node-proxier by default RBAC)
#   coredns.crt/.key                       CN=system:coredns (bound to ClusterRole system:coredns, hack/addons/coredns.yaml)
#   node.crt/.key                          CN=system:node:$NODE_NAME, O=system:nodes
#   kubelet-serving.crt/.key               kubelet's HTTPS serving cert for $NODE_NAME
#   sa.key sa.pub                          service-account token signing key pair
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib-cluster.sh"

command -v openssl >/dev/null || {
  log "installing openssl"
  DEBIAN_FRONTEND=noninteractive apt-get install -y openssl >/dev/null
}

CERT_DAYS=${CERT_DAYS:-3650}
mkdir -p "$PKI_DIR"
chmod 700 "$PKI_DIR"
cd "$PKI_DIR"
umask 077

new_key() { openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1" 2>/dev/null; }

ensure_ca() {
  [ -s ca.crt ] && [ -s ca.key ] && return 0
  log "pki: generating cluster CA"
  new_key ca.key.tmp
  openssl req -x509 -new -key ca.key.tmp -subj "/CN=$CLUSTER_NAME-ca" -days "$CERT_DAYS" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
    -out ca.crt.tmp
  mv ca.key.tmp ca.key
  mv ca.crt.tmp ca.crt
}

# ensure_cert NAME SUBJECT USAGE [SAN]
#   SUBJECT: openssl form, e.g. /O=system:nodes/CN=system:node:vm
#   USAGE:   client | server | both
#   SAN:     subjectAltName value, e.g. DNS:localhost,IP:127.0.0.1
ensure_cert() {
  local name=$1 subject=$2 usage=$3 san=${4:-}
  local ca_fp spec
  ca_fp=$(openssl x509 -in ca.crt -noout -fingerprint -sha256)
  spec="subject=$subject usage=$usage san=$san ca=$ca_fp"
  if [ -s "$name.crt" ] && [ -s "$name.key" ] && [ "$(cat "$name.spec" 2>/dev/null)" = "$spec" ]; then
    return 0
  fi
  log "pki: issuing $name ($subject)"
  local eku
  case $usage in
    client) eku=clientAuth ;;
    server) eku=serverAuth ;;
    both) eku=serverAuth,clientAuth ;;
    *) die "bad usage $usage" ;;
  esac
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$eku"
    echo "authorityKeyIdentifier=keyid"
    [ -z "$san" ] || echo "subjectAltName=$san"
  } > "$name.ext.tmp"
  [ -s "$name.key" ] || new_key "$name.key"
  openssl req -new -key "$name.key" -subj "$subject" -out "$name.csr.tmp"
  openssl x509 -req -in "$name.csr.tmp" -CA ca.crt -CAkey ca.key \
    -set_serial "0x$(openssl rand -hex 16)" -days "$CERT_DAYS" \
    -extfile "$name.ext.tmp" -out "$name.crt.tmp" 2>/dev/null
  rm -f "$name.csr.tmp" "$name.ext.tmp"
  mv "$name.crt.tmp" "$name.crt"
  echo "$spec" > "$name.spec"
}

ensure_sa_keys() {
  [ -s sa.key ] && [ -s sa.pub ] && return 0
  log "pki: generating service-account key pair"
  new_key sa.key.tmp
  openssl pkey -in sa.key.tmp -pubout -out sa.pub.tmp
  mv sa.key.tmp sa.key
  mv sa.pub.tmp sa.pub
}

ip=$(node_ip)
ensure_ca
ensure_sa_keys
ensure_cert apiserver "/CN=kube-apiserver" server \
  "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.$CLUSTER_DOMAIN,DNS:localhost,DNS:$NODE_NAME,IP:127.0.0.1,IP:$ip,IP:$SERVICE_FIRST_IP"
ensure_cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" client
ensure_cert admin "/O=system:masters/CN=kubernetes-admin" client
ensure_cert controller-manager "/CN=system:kube-controller-manager" client
ensure_cert scheduler "/CN=system:kube-scheduler" client
ensure_cert kube-proxy "/CN=system:kube-proxy" client
ensure_cert coredns "/CN=system:coredns" client
ensure_cert node "/O=system:nodes/CN=system:node:$NODE_NAME" client
ensure_cert kubelet-serving "/O=system:nodes/CN=system:node:$NODE_NAME" server \
  "DNS:$NODE_NAME,DNS:localhost,IP:127.0.0.1,IP:$ip"
