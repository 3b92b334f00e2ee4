#!/usr/bin/env bash
# Builds the project's local images and imports them into one instance's
# containerd (namespace k8s.io). No registry is reachable here, so these are
# the only images pods can use:
#
#   registry.k8s.io/pause:$PAUSE_VERSION  images/pause, entrypoint /pause (the sandbox image)
#   gokubelet.local/testimage:1.0   busybox applets in /bin, /testserver,
#                                   cmd "/testserver --http-port=8080"
#
#   hack/images.sh [INSTANCE]       INSTANCE defaults to "node"; starts its
#                                   containerd when needed
#
# Idempotent: nothing is rebuilt or imported when a stamp (hash of sources,
# this script and the tool versions) matches and both images are present.
# Intermediates live in $GK_IMAGES_WORK (~/.cache/gokubelet/images).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/versions.sh"
gk_require_root
[ $# -le 1 ] || gk_die "usage: hack/images.sh [INSTANCE]"
gk_instance "${1:-node}"

PAUSE_IMAGE=registry.k8s.io/pause:$PAUSE_VERSION
TEST_IMAGE=gokubelet.local/testimage:1.0
IMAGES=("$PAUSE_IMAGE" "$TEST_IMAGE")

for t in go umoci ctr busybox flock; do
  command -v $t >/dev/null || gk_die "$t not found: run hack/install-deps.sh"
done

work=$GK_IMAGES_WORK
mkdir -p "$work"

stamp=$(
  cd "$GK_REPO_ROOT"
  {
    cat hack/images.sh hack/lib.sh
    echo "$PAUSE_VERSION"
    find images/pause images/testserver -name '*.go' ! -name '*_test.go' -print0 | sort -z | xargs -0 sha256sum
    go version
    umoci --version
    sha256sum "$(command -v busybox)"
  } | sha256sum | cut -d' ' -f1
)

present() {
  local have img
  have=$(gk_ctr -n k8s.io images ls -q 2>/dev/null) || return 1
  for img in "${IMAGES[@]}"; do grep -qxF "$img" <<<"$have" || return 1; done
}

# Builds a one-layer OCI layout from ROOTFS and writes it as a tar.
# oci_image NAME TAG ROOTFS OUT.tar umoci-config-args...
oci_image() {
  local name=$1 tag=$2 rootfs=$3 out=$4 layout
  shift 4
  layout=$work/$name.oci
  rm -rf "$layout"
  umoci init --layout "$layout"
  umoci new --image "$layout:$tag"
  umoci insert --image "$layout:$tag" "$rootfs" / >/dev/null
  umoci config --image "$layout:$tag" --author gokubelet --os linux --architecture "$(go env GOARCH)" "$@"
  umoci gc --layout "$layout"
  tar -C "$layout" -cf "$out.tmp" . && mv -f "$out.tmp" "$out"
}

build() {
  local bin=$work/bin r
  mkdir -p "$bin"
  (cd "$GK_REPO_ROOT" &&
    CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$bin/pause" ./images/pause &&
    CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$bin/testserver" ./images/testserver) ||
    gk_die "building the image binaries failed"

  # pause: the binary alone, run as the conventional nobody uid like upstream.
  r=$work/pause.rootfs
  rm -rf "$r" && mkdir -p "$r"
  install -m 0755 "$bin/pause" "$r/pause"
  oci_image pause "$PAUSE_VERSION" "$r" "$work/pause.tar" \
    --config.entrypoint /pause --config.user 65535:65535 --config.workingdir /

  # testimage: static busybox with every applet linked into /bin.
  r=$work/testimage.rootfs
  rm -rf "$r" && mkdir -p "$r/bin" "$r/etc" "$r/root" "$r/tmp" "$r/var/tmp" "$r/usr"
  chmod 1777 "$r/tmp" "$r/var/tmp"
  chmod 0700 "$r/root"
  install -m 0755 "$(command -v busybox)" "$r/bin/busybox"
  local applet
  for applet in $(busybox --list); do
    [ "$applet" = busybox ] && continue # would replace the binary by a link to itself
    ln -sf busybox "$r/bin/$applet"
  done
  ln -s bin "$r/sbin"
  ln -s ../bin "$r/usr/bin"
  ln -s ../bin "$r/usr/sbin"
  install -m 0755 "$bin/testserver" "$r/testserver"
  printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'nobody:x:65534:65534:nobody:/:/bin/false' >"$r/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' >"$r/etc/group"
  oci_image testimage 1.0 "$r" "$work/testimage.tar" \
    --config.cmd /testserver --config.cmd --http-port=8080 \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --config.workingdir / --config.exposedports 8080/tcp

  echo "$stamp" >"$work/stamp"
}

import() {
  local snap
  snap=$(cat "$GK_CTRD_DIR/snapshotter" 2>/dev/null || echo overlayfs)
  gk_ctr -n k8s.io images import --snapshotter "$snap" --base-name registry.k8s.io/pause "$work/pause.tar" >/dev/null ||
    gk_die "importing $PAUSE_IMAGE into $GK_INST failed"
  gk_ctr -n k8s.io images import --snapshotter "$snap" --base-name gokubelet.local/testimage "$work/testimage.tar" >/dev/null ||
    gk_die "importing $TEST_IMAGE into $GK_INST failed"
  present || gk_die "images missing in $GK_INST after import"
}

"$GK_REPO_ROOT/hack/containerd.sh" up "$GK_INST"

# GK_IMAGES_KEEP_TARS=1 (hack/node-e2e.sh, whose local registry serves
# them) also wants this checkout's image tars, which a new clone lacks even
# when the instance holds the images.
if [ "$(cat "$GK_LIB/images.stamp" 2>/dev/null)" = "$stamp" ] && present &&
  { [ -z "${GK_IMAGES_KEEP_TARS:-}" ] || [ "$(cat "$work/stamp" 2>/dev/null)" = "$stamp" ]; }; then
  exit 0
fi

# One build at a time: instances and checkouts share $GK_IMAGES_WORK.
exec 9>"$work/.lock"
flock 9
if [ "$(cat "$work/stamp" 2>/dev/null)" != "$stamp" ] || [ ! -f "$work/pause.tar" ] || [ ! -f "$work/testimage.tar" ]; then
  build
fi
import
flock -u 9
echo "$stamp" >"$GK_LIB/images.stamp"
