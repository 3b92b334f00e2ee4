# Settings and helpers shared by hack/cluster.sh and hack/pki.sh. Sourced, not run.
#
# Every path and port can be overridden from the environment, so two clusters
# (or a default etcd) can live side by side on one machine.

CLUSTER_DIR=${CLUSTER_DIR:-/var/lib/gokubelet/cluster}
PKI_DIR=${PKI_DIR:-$CLUSTER_DIR/pki}
ETCD_DATA_DIR=${ETCD_DATA_DIR:-$CLUSTER_DIR/etcd}
CLUSTER_RUN_DIR=${CLUSTER_RUN_DIR:-/run/gokubelet/cluster}
CLUSTER_LOG_DIR=${CLUSTER_LOG_DIR:-/var/log/gokubelet/cluster}

# Ports: etcd stays off its defaults (2379/2380) so a stock etcd can coexist.
ETCD_CLIENT_PORT=${ETCD_CLIENT_PORT:-23790}
ETCD_PEER_PORT=${ETCD_PEER_PORT:-23800}
APISERVER_PORT=${APISERVER_PORT:-6443}
CONTROLLER_MANAGER_PORT=${CONTROLLER_MANAGER_PORT:-10257}
SCHEDULER_PORT=${SCHEDULER_PORT:-10259}

SERVICE_CIDR=${SERVICE_CIDR:-10.96.0.0/16}
SERVICE_FIRST_IP=${SERVICE_FIRST_IP:-10.96.0.1}
# The cluster's add-ons (CLUSTER_ADDONS=0 leaves them out): kube-proxy and
# CoreDNS, host processes. The kube-dns Service has CLUSTER_DNS_IP; CoreDNS
# listens on the node IP at COREDNS_PORT (kube-proxy carries :53 there), its
# health, readiness and metrics endpoints on loopback.
CLUSTER_ADDONS=${CLUSTER_ADDONS:-1}
CLUSTER_DNS_IP=${CLUSTER_DNS_IP:-10.96.0.10}
COREDNS_PORT=${COREDNS_PORT:-10053}
COREDNS_HEALTH_PORT=${COREDNS_HEALTH_PORT:-10054}
COREDNS_READY_PORT=${COREDNS_READY_PORT:-10055}
COREDNS_METRICS_PORT=${COREDNS_METRICS_PORT:-9153}
KUBE_PROXY_HEALTHZ_PORT=${KUBE_PROXY_HEALTHZ_PORT:-10256}
KUBE_PROXY_METRICS_PORT=${KUBE_PROXY_METRICS_PORT:-10249}
CLUSTER_CIDR=${CLUSTER_CIDR:-10.244.0.0/16}
CLUSTER_DOMAIN=${CLUSTER_DOMAIN:-cluster.local}
CLUSTER_NAME=${CLUSTER_NAME:-gokubelet}

# The node our kubelet registers as: the hostname, lowercased (node names must
# be DNS subdomains), unless NODE_NAME says otherwise.
NODE_NAME=${NODE_NAME:-$(hostname | tr '[:upper:]' '[:lower:]')}

# node_ip prints the machine's first global-scope, non-loopback IPv4 address.
# kube-apiserver refuses a loopback --advertise-address, so there must be one.
node_ip() {
  if [ -n "${NODE_IP:-}" ]; then echo "$NODE_IP"; return; fi
  local ip
  ip=$(ip -4 -o addr show scope global 2>/dev/null | awk '{sub(/\/.*/, "", $4); print $4; exit}')
  [ -n "$ip" ] || ip=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -E '^[0-9.]+$' | grep -v '^127\.' | head -n1)
  [ -n "$ip" ] || { echo "no non-loopback IPv4 address found; set NODE_IP" >&2; return 1; }
  echo "$ip"
}

APISERVER_URL=${APISERVER_URL:-https://127.0.0.1:$APISERVER_PORT}

log() { echo "[cluster] $*" >&2; }
die() { echo "[cluster] error: $*" >&2; exit 1; }
