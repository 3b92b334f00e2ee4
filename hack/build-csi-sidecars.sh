#!/usr/bin/env bash
# Builds the CSI controller sidecars the e2e CSI tests run from the Go module
# proxy and caches them by version outside the repository (like
# hack/build-upstream.sh does for the control plane):
#
#   hack/build-csi-sidecars.sh          prints the three binaries' paths
#
#   $CSI_SIDECARS_CACHE/csi-provisioner/$CSI_PROVISIONER_VERSION/bin/csi-provisioner
#       github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner
#   $CSI_SIDECARS_CACHE/csi-attacher/$CSI_ATTACHER_VERSION/bin/csi-attacher
#       github.com/kubernetes-csi/external-attacher/v4/cmd/csi-attacher
#   $CSI_SIDECARS_CACHE/csi-resizer/$CSI_RESIZER_VERSION/bin/csi-resizer
#       github.com/kubernetes-csi/external-resizer/cmd/csi-resizer
#       (v1.14.0: the release the Go module proxy serves; the resizer's
#       module has no major version suffix)
#
# Not in build-upstream.sh's shared wrapper module: the provisioner requires
# k8s.io/kubernetes v1.36.x with its staging modules replaced at v0.36.x,
# which clashes with that module's k8s.io/kubernetes v1.37.2. And not in a
# wrapper requiring the module either, since a requiring module ignores the
# sidecar's replace directives (nor `go install pkg@version`, which refuses
# modules that have them). So each is built inside a copy of its own module
# (from the module cache, fetched with `go mod download`), with its own
# go.mod and go.sum: the build list its release uses, version stamped as its
# Makefile does (-X main.version). Nothing enters this project's module.
# Re-running is cheap: what is cached is not rebuilt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.sh"

CSI_PROVISIONER_VERSION=${CSI_PROVISIONER_VERSION:-v6.4.0}
CSI_ATTACHER_VERSION=${CSI_ATTACHER_VERSION:-v4.13.0}
CSI_RESIZER_VERSION=${CSI_RESIZER_VERSION:-v1.14.0}
CSI_SIDECARS_CACHE=${CSI_SIDECARS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gokubelet/csi-sidecars}

# build NAME MODULE VERSION: builds MODULE/cmd/NAME at VERSION into
# $CSI_SIDECARS_CACHE/NAME/VERSION/bin/NAME.
build() {
  local name=$1 mod=$2 version=$3
  local dir=$CSI_SIDECARS_CACHE/$name/$version
  [ -x "$dir/bin/$name" ] && return 0
  mkdir -p "$dir/bin"
  exec 9>"$dir/.lock"
  flock 9
  if [ -x "$dir/bin/$name" ]; then exec 9>&-; return 0; fi
  echo "building $name $version from the Go module proxy (first build takes minutes; cached afterwards)" >&2
  local start=$SECONDS
  if [ ! -f "$dir/src/.ready" ]; then
    local modsrc
    modsrc=$(cd "$dir" && GOFLAGS=-mod=mod go mod download -json "$mod@$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
    [ -f "$modsrc/go.mod" ] || { echo "build-csi-sidecars: no module source for $mod@$version" >&2; exit 1; }
    rm -rf "$dir/src"
    cp -r "$modsrc" "$dir/src"
    chmod -R u+w "$dir/src"
    touch "$dir/src/.ready"
  fi
  (cd "$dir/src" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$version" \
    -o "$dir/bin/$name.tmp" "./cmd/$name") >&2
  mv "$dir/bin/$name.tmp" "$dir/bin/$name"
  echo "built $name $version in $((SECONDS - start))s" >&2
  exec 9>&-
}

build csi-provisioner github.com/kubernetes-csi/external-provisioner/v6 "$CSI_PROVISIONER_VERSION"
build csi-attacher github.com/kubernetes-csi/external-attacher/v4 "$CSI_ATTACHER_VERSION"
build csi-resizer github.com/kubernetes-csi/external-resizer "$CSI_RESIZER_VERSION"
echo "$CSI_SIDECARS_CACHE/csi-provisioner/$CSI_PROVISIONER_VERSION/bin/csi-provisioner"
echo "$CSI_SIDECARS_CACHE/csi-attacher/$CSI_ATTACHER_VERSION/bin/csi-attacher"
echo "$CSI_SIDECARS_CACHE/csi-resizer/$CSI_RESIZER_VERSION/bin/csi-resizer"
