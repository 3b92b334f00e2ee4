#!/usr/bin/env bash
# Builds containerd 2.x (the daemon, its runc shim and ctr) from the Go module
# proxy and caches the binaries by version outside the repository. Debian 12
# ships only containerd 1.6; hack/containerd.sh runs these binaries unless
# CONTAINERD_FLAVOR=debian.
#
#   hack/build-containerd.sh        prints the directory holding the binaries
#
# Output: $CONTAINERD_CACHE/<CONTAINERD_VERSION>/bin/{containerd,
# containerd-shim-runc-v2,ctr}. Re-running is cheap: a version already cached
# is not rebuilt. Built as upstream's release builds them: without cgo (the
# shim always; the daemon here too, so no btrfs headers are needed: the btrfs
# snapshotter needs cgo and is left out, as `-tags no_btrfs` would), with the
# version stamped into `containerd --version`. One build at a time (the cache
# directory's .lock).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.sh"

module=github.com/containerd/containerd/v2
bins=(containerd containerd-shim-runc-v2 ctr)
out=$CONTAINERD_CACHE/$CONTAINERD_VERSION/bin

cached() {
  local b
  for b in "${bins[@]}"; do [ -x "$out/$b" ] || return 1; done
}
if cached; then
  echo "$out"
  exit 0
fi

mkdir -p "$CONTAINERD_CACHE"
exec 8>"$CONTAINERD_CACHE/.lock"
flock 8
if cached; then
  echo "$out"
  exit 0
fi

echo "building containerd $CONTAINERD_VERSION from the Go module proxy (first build takes minutes; cached afterwards)" >&2
start=$SECONDS
tmp=$CONTAINERD_CACHE/$CONTAINERD_VERSION/bin.tmp
rm -rf "$tmp"
mkdir -p "$tmp"
pkgs=()
for b in "${bins[@]}"; do pkgs+=("$module/cmd/$b@$CONTAINERD_VERSION"); done
# `go install pkg@version` builds the module as released, with its own
# go.mod (containerd's has no replace directives), outside any module of ours.
(cd "$tmp" && GOBIN=$tmp GOFLAGS=-mod=mod CGO_ENABLED=0 go install -trimpath \
  -tags "urfave_cli_no_docs no_btrfs" \
  -ldflags "-s -w -X $module/version.Version=$CONTAINERD_VERSION -X $module/version.Package=$module" \
  "${pkgs[@]}") >&2 || { rm -rf "$tmp"; echo "build-containerd.sh: building containerd $CONTAINERD_VERSION failed" >&2; exit 1; }
rm -rf "$out"
mv "$tmp" "$out"
echo "built containerd $CONTAINERD_VERSION in $((SECONDS - start))s: $out" >&2
echo "$out"
