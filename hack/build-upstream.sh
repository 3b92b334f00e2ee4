#!/usr/bin/env bash
# Builds upstream Kubernetes binaries from the Go module proxy and caches them
# by version outside the repository.
#
#   hack/build-upstream.sh [target ...]     default: kube-apiserver kube-controller-manager kube-scheduler
#
# Targets:
#   kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet kubectl
#                the commands of k8s.io/kubernetes (cmd/<name>)
#   e2e.test     the upstream end-to-end suite (go test -c k8s.io/kubernetes/test/e2e)
#   e2e_node.test  the upstream node end-to-end suite (go test -c
#                k8s.io/kubernetes/test/e2e_node): it runs its own etcd and API
#                server and starts the kubelet binary of --k8s-bin-dir
#   ginkgo       the suite's runner, at the version k8s.io/kubernetes's go.mod pins
#   agnhost      the e2e test image binary (test/images/agnhost, main.Version set
#                from its VERSION file as upstream's Makefile does)
#   nonewprivs   the nonewprivs test image's binary (test/images/nonewprivs)
#   sample-device-plugin  upstream's sample device plugin
#                (test/images/sample-device-plugin: example.com/resource, 2 devices)
#   dra-test-driver  upstream's DRA test driver (test/e2e/dra/test-driver); its
#                `kubelet-plugin` subcommand is a DRA kubelet plugin that publishes
#                its node's ResourceSlice and writes CDI specs on NodePrepareResources
#   csi-mock     upstream's mock CSI driver (test/e2e/storage/drivers/csi-test/mock)
#                as a node plugin with a registration socket: hack/csi-mock/main.go,
#                harness glue built inside the wrapper module
#
# Output: $UPSTREAM_CACHE/<version>/bin/<target>. Re-running is cheap: targets
# already cached are not rebuilt. The wrapper module is throw-away and lives in
# the cache too (one build at a time: it holds $wrap/.lock); nothing from
# k8s.io/kubernetes enters this project's module.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.sh"

bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=(kube-apiserver kube-controller-manager kube-scheduler)

# pkg TARGET: the Go package a target is built from.
pkg() {
  case $1 in
    kube-apiserver | kube-controller-manager | kube-scheduler | kube-proxy | kubelet | kubectl) echo "k8s.io/kubernetes/cmd/$1" ;;
    e2e.test) echo "k8s.io/kubernetes/test/e2e" ;;
    e2e_node.test) echo "k8s.io/kubernetes/test/e2e_node" ;;
    ginkgo) echo "github.com/onsi/ginkgo/v2/ginkgo" ;;
    agnhost | nonewprivs | sample-device-plugin) echo "k8s.io/kubernetes/test/images/$1" ;;
    csi-mock) echo "upstreamwrapper/csimock" ;;
    dra-test-driver) echo "k8s.io/kubernetes/test/e2e/dra/test-driver" ;;
    *) echo "build-upstream.sh: unknown target '$1' (see the header of hack/build-upstream.sh)" >&2; return 1 ;;
  esac
}

out="$UPSTREAM_CACHE/$KUBE_VERSION/bin"
mkdir -p "$out"
missing=()
# srcsum TARGET: for harness glue built from this repository, a checksum of
# its source, so that a changed source is rebuilt.
srcsum() {
  case $1 in
    csi-mock) sha256sum "$here/csi-mock/main.go" | cut -d' ' -f1 ;;
  esac
}
for b in "${bins[@]}"; do
  pkg "$b" >/dev/null
  if [ ! -x "$out/$b" ] || [ "$(srcsum "$b")" != "$(cat "$out/$b.src" 2>/dev/null)" ]; then
    missing+=("$b")
  fi
done
[ ${#missing[@]} -gt 0 ] || { echo "upstream ${bins[*]} $KUBE_VERSION cached in $out"; exit 0; }

wrap="$UPSTREAM_CACHE/$KUBE_VERSION/wrapper"
mkdir -p "$wrap"
exec 8>"$wrap/.lock"
flock 8

# Every package this script builds, so `go mod tidy` records their
# dependencies. (The suite's own _test.go imports are resolved at build time
# with -mod=mod: tidy does not follow tests of dependencies.)
tools() {
  cat <<'GO'
//go:build tools

package tools

import (
	_ "github.com/onsi/ginkgo/v2/ginkgo"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubernetes/test/e2e"
	_ "k8s.io/kubernetes/test/e2e_node"
	_ "k8s.io/kubernetes/test/images/agnhost"
	_ "k8s.io/kubernetes/test/images/nonewprivs"
	_ "k8s.io/kubernetes/test/images/sample-device-plugin"
	_ "k8s.io/kubernetes/test/e2e/dra/test-driver"
	_ "k8s.io/kubernetes/test/e2e/storage/drivers/csi-test/mock/service"
	_ "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)
GO
}

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
  rm -f "$wrap/tools.go"
fi
# A wrapper prepared by an older version of this script imports fewer
# packages: bring tools.go up to date and tidy again.
if [ ! -f "$wrap/.ready" ] || ! tools | cmp -s - "$wrap/tools.go"; then
  [ ! -f "$wrap/.ready" ] || echo "updating the wrapper module's package list"
  tools > "$wrap/tools.go"
  (cd "$wrap" && go mod tidy -e >/dev/null 2>&1 || true)
  touch "$wrap/.ready"
fi

# The harness's own main packages, kept in the wrapper (built as
# upstreamwrapper/<dir>).
mkdir -p "$wrap/csimock"
sed '/^\/\/go:build ignore$/d' "$here/csi-mock/main.go" > "$wrap/csimock/main.go"

minor=$(echo "$KUBE_VERSION" | cut -d. -f2)
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"
for b in "${missing[@]}"; do
  p=$(pkg "$b")
  echo "building upstream $b $KUBE_VERSION (first build takes minutes; cached afterwards)"
  start=$SECONDS
  case $b in
    e2e.test | e2e_node.test)
      (cd "$wrap" && CGO_ENABLED=0 go test -c -mod=mod -trimpath -ldflags "$ldflags" -o "$out/$b.tmp" "$p") ;;
    agnhost)
      srcdir=$(cd "$wrap" && go list -mod=mod -f '{{.Dir}}' "$p")
      (cd "$wrap" && CGO_ENABLED=0 go build -mod=mod -trimpath -ldflags "-s -w -X main.Version=$(cat "$srcdir/VERSION")" -o "$out/$b.tmp" "$p") ;;
    *)
      (cd "$wrap" && CGO_ENABLED=0 go build -mod=mod -trimpath -ldflags "$ldflags" -o "$out/$b.tmp" "$p") ;;
  esac
  mv "$out/$b.tmp" "$out/$b"
  sum=$(srcsum "$b")
  if [ -n "$sum" ]; then echo "$sum" > "$out/$b.src"; fi
  echo "built upstream $b in $((SECONDS - start))s"
done
echo "upstream ${bins[*]} $KUBE_VERSION cached in $out"
