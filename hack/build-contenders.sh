#!/usr/bin/env bash
# Builds the scale benchmark's contenders from the Go module proxy and caches
# them by version outside the repository (like hack/build-upstream.sh does for
# the control plane):
#
#   hack/build-contenders.sh            prints the two binaries' paths
#
#   $CONTENDERS_CACHE/virtual-kubelet/$VK_VERSION/bin/virtual-kubelet
#       github.com/virtual-kubelet/virtual-kubelet/cmd/virtual-kubelet: Virtual
#       Kubelet's own command, which registers its mock provider.
#   $CONTENDERS_CACHE/kwok/$KWOK_VERSION/bin/kwok
#       sigs.k8s.io/kwok/cmd/kwok: KWOK's controller.
#   $CONTENDERS_CACHE/kwok/$KWOK_VERSION/kwok.yaml
#       KWOK's configuration as its in-cluster install ships it
#       (kustomize/kwok/kwok.yaml of the module) with the stages of its
#       default "fast" set (kustomize/stage/fast: node-initialize,
#       node-heartbeat-with-lease, pod-ready, pod-complete, pod-delete) given
#       in the file instead of as Stage objects in the cluster, so no CRD
#       is installed: `enableCRDs` is dropped, nothing else changes.
#
# Each is built in a throw-away wrapper module in the cache that requires only
# that module at that version, so the build list is the module's own (neither
# go.mod has replace directives). Not `go install pkg@version`: that also reads
# the module's version list, which the proxy here refuses for Virtual Kubelet.
# Nothing enters this project's module. Re-running is cheap: what is cached is
# not rebuilt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.sh"

vk_dir=$CONTENDERS_CACHE/virtual-kubelet/$VK_VERSION
kwok_dir=$CONTENDERS_CACHE/kwok/$KWOK_VERSION

# build NAME MODULE PACKAGE VERSION DIR LDFLAGS
build() {
  local name=$1 mod=$2 pkg=$3 version=$4 dir=$5 ldflags=$6
  [ -x "$dir/bin/$name" ] && return 0
  echo "building $name $version from the Go module proxy (first build takes minutes; cached afterwards)" >&2
  local wrap=$dir/wrapper
  mkdir -p "$dir/bin" "$wrap"
  if [ ! -f "$wrap/.ready" ]; then
    printf 'module contenderwrapper\n\ngo 1.25.0\n\nrequire %s %s\n' "$mod" "$version" > "$wrap/go.mod"
    printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$pkg" > "$wrap/tools.go"
    (cd "$wrap" && GOFLAGS=-mod=mod go mod tidy >/dev/null)
    touch "$wrap/.ready"
  fi
  (cd "$wrap" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$dir/bin/$name.tmp" "$pkg") >&2
  mv "$dir/bin/$name.tmp" "$dir/bin/$name"
}

build virtual-kubelet github.com/virtual-kubelet/virtual-kubelet github.com/virtual-kubelet/virtual-kubelet/cmd/virtual-kubelet \
  "$VK_VERSION" "$vk_dir" "-s -w -X main.buildVersion=$VK_VERSION"
build kwok sigs.k8s.io/kwok sigs.k8s.io/kwok/cmd/kwok "$KWOK_VERSION" "$kwok_dir" "-s -w"

if [ ! -s "$kwok_dir/kwok.yaml" ]; then
  src=$(cd "$kwok_dir" && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -d "$src/kustomize" ] || { echo "build-contenders: no kustomize/ in $src" >&2; exit 1; }
  tmp=$(mktemp "$kwok_dir/kwok.yaml.XXXXXX")
  {
    # The options, without the enableCRDs list (every line from it to the
    # end of the options is list items).
    awk '/^  enableCRDs:/ {skip=1; next} skip && /^  - / {next} {skip=0; print}' "$src/kustomize/kwok/kwok.yaml"
    for f in "$src"/kustomize/stage/node/fast/node-initialize.yaml \
             "$src"/kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
             "$src"/kustomize/stage/pod/fast/pod-ready.yaml \
             "$src"/kustomize/stage/pod/fast/pod-complete.yaml \
             "$src"/kustomize/stage/pod/fast/pod-delete.yaml; do
      [ -s "$f" ] || { echo "build-contenders: missing $f" >&2; exit 1; }
      echo "---"
      cat "$f"
    done
  } > "$tmp"
  mv "$tmp" "$kwok_dir/kwok.yaml"
fi
echo "$vk_dir/bin/virtual-kubelet"
echo "$kwok_dir/bin/kwok"
