#!/usr/bin/env bash
# Installs the Debian packages the node and the tests need, only those that are
# missing. Runs `apt-get update` only when something has to be installed.
#
#   hack/install-deps.sh
#
# Debian 12 has no cri-tools (crictl) package; hack/containerd.sh tears pods
# down with its own small CRI client (hack/tools/cri-teardown) instead.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gk_require_root

pkgs=(
  containerd runc containernetworking-plugins # container runtime and CNI plugins
  umoci busybox-static                        # local image builds (hack/images.sh)
  etcd-server                                 # control plane for cluster tests
  iptables iproute2 util-linux procps         # CNI bridge/portmap, ip, findmnt, pgrep
  ca-certificates wget curl                   # wget/curl check endpoints from the host
  openssl                                     # the local cluster's PKI (hack/pki.sh)
)
# Optional: installed when the distribution has it.
# crun: a second OCI runtime, which make bench tries as the handler "crun"
# (Debian 12's 1.8.1 cannot start a pod on these machines; the report says why).
optional=(cri-tools crun)

installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }

missing=() missing_optional=()
for p in "${pkgs[@]}"; do installed "$p" || missing+=("$p"); done
# Optional packages alone never trigger an update; they are added when the
# package lists (refreshed below) know them.
for p in "${optional[@]}"; do installed "$p" || missing_optional+=("$p"); done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! apt-get update >"$log" 2>&1; then
  cat "$log" >&2
  gk_die "apt-get update failed"
fi
for p in "${missing_optional[@]}"; do
  if apt-cache show "$p" >/dev/null 2>&1; then missing+=("$p"); fi
done
if ! apt-get install -y --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
  cat "$log" >&2
  gk_die "apt-get install ${missing[*]} failed"
fi
# Debian's containerd package starts a system containerd where systemd runs;
# our instances never use it (they have their own sockets and state).
