#!/usr/bin/env bash
# Builds upstream Kubernetes binaries (control plane, upstream kubelet) from
# the Go module proxy and caches them by version outside the repository.
#
#   hack/build-upstream.sh [binary ...]     default: kube-apiserver kube-controller-manager kube-scheduler
#
# Output: $UPSTREAM_CACHE/<version>/bin/<binary>. Re-running is cheap: binaries
# already cached are not rebuilt. The wrapper module is throw-away and lives in
# the cache too; nothing from k8s.io/kubernetes enters this project's module.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.sh"

bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=(kube-apiserver kube-controller-manager kube-scheduler)

out="$UPSTREAM_CACHE/$KUBE_VERSION/bin"
mkdir -p "$out"
missing=()
for b in "${bins[@]}"; do [ -x "$out/$b" ] || missing+=("$b"); done
[ ${#missing[@]} -gt 0 ] || { echo "upstream ${bins[*]} $KUBE_VERSION cached in $out"; exit 0; }

wrap="$UPSTREAM_CACHE/$KUBE_VERSION/wrapper"
mkdir -p "$wrap"
if [ ! -f "$wrap/.ready" ]; then
  echo "preparing wrapper module for k8s.io/kubernetes $KUBE_VERSION"
  gomod=$(cd "$wrap" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  staging_v="v0${KUBE_VERSION#v1}"
  {
    echo "module upstreamwrapper"
    echo
    echo "go 1.24"
    echo
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo
    grep -E '=> \./staging/' "$gomod" | awk -v v="$staging_v" '{print "replace " $1 " => " $1 " " v}'
  } > "$wrap/go.mod"
  cat > "$wrap/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO
  (cd "$wrap" && go mod tidy -e >/dev/null 2>&1 || true)
  touch "$wrap/.ready"
fi

ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$KUBE_VERSION" | cut -d. -f2) -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"
for b in "${missing[@]}"; do
  echo "building upstream $b $KUBE_VERSION (first build takes minutes; cached afterwards)"
  (cd "$wrap" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/$b.tmp" "k8s.io/kubernetes/cmd/$b")
  mv "$out/$b.tmp" "$out/$b"
done
echo "upstream ${bins[*]} $KUBE_VERSION cached in $out"
