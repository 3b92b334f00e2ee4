#!/usr/bin/env bash
# Builds CoreDNS, the local cluster's DNS server, from the Go module proxy
# (github.com/coredns/coredns at COREDNS_VERSION, hack/versions.sh) and caches
# it by version outside the repository. About 4 minutes on 2 cores the first
# time; a no-op afterwards.
#
#   hack/build-coredns.sh          build if missing; prints nothing else when cached
#   hack/build-coredns.sh --path   print where the binary is (or will be)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.sh"

bin=$COREDNS_CACHE/$COREDNS_VERSION/bin/coredns
if [ "${1:-}" = --path ]; then echo "$bin"; exit 0; fi
[ $# -eq 0 ] || { echo "usage: $0 [--path]" >&2; exit 2; }
[ -x "$bin" ] && exit 0

mkdir -p "$(dirname "$bin")"
exec 8>"$COREDNS_CACHE/.lock"
flock 8
[ -x "$bin" ] && exit 0
echo "building CoreDNS $COREDNS_VERSION (first build takes minutes; cached afterwards)"
start=$SECONDS
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# go install pkg@version: the module's own go.mod, no wrapper needed.
(cd "$tmp" && CGO_ENABLED=0 GOBIN="$tmp" go install -trimpath -ldflags "-s -w" "github.com/coredns/coredns@$COREDNS_VERSION")
mv "$tmp/coredns" "$bin"
echo "built CoreDNS $COREDNS_VERSION in $((SECONDS - start))s: $bin"
