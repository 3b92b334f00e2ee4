#!/usr/bin/env bash
# Builds the images the upstream e2e suite runs, locally (no registry is
# reachable here), under the exact names and tags of the pinned version's
# test/utils/image/manifest.go, and imports them into one instance's
# containerd (namespace k8s.io).
#
#   hack/e2e-images.sh [INSTANCE]    INSTANCE defaults to "node"; starts its containerd
#   hack/e2e-images.sh --list        print the image names and exit
#
# Each image keeps what the suite relies on from upstream's: entrypoint,
# command, stop signal, exposed ports, working directory, users and groups,
# files, and the tools tests run inside (see docs/conformance-run.md, "Test
# images", for each image and where it differs). Binaries that upstream
# builds from k8s.io/kubernetes (agnhost, nnp) are built from the same module
# at the pinned version (hack/build-upstream.sh); the tools upstream installs
# from Alpine or Debian packages are copied from this machine's Debian
# packages together with the libraries `ldd` names; the base system is
# Debian's busybox (the dynamically linked build, unpacked from its package:
# like Alpine's and Docker's, its shell runs commands found in PATH, where
# busybox-static's prefers its own applets and would shadow the tools the
# images add, e.g. nc -u).
#
# Idempotent: nothing is rebuilt or imported when the stamp (hash of inputs)
# matches and every image is present. Intermediates live in $GK_E2E_IMAGES_WORK
# (~/.cache/gokubelet/e2e-images).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/versions.sh"

E2E=registry.k8s.io/e2e-test-images
# The tags of the pinned version's test/utils/image/manifest.go (initImageConfigs).
AGNHOST_TAG=2.66.1
AGNHOST_PREV_TAG=2.55  # AgnhostPrev: the image before an update (StatefulSet, Deployment, kubectl apply)
KITTEN_TAG=1.8         # Kitten and Nautilus: kubectl's Update Demo
NAUTILUS_TAG=1.8
BUSYBOX_TAG=1.37.0-2
NONROOT_TAG=1.5
NONEWPRIVS_TAG=1.4
NGINX_TAG=1.27.0-2     # Nginx: nginx:1.27-alpine
NGINX_NEW_TAG=1.28.0-2 # NginxNew: nginx:1.28-alpine
GLIBC_DNS_TAG=2.1.1    # GlibcDnsTesting: debian:bookworm-slim with dnsutils
# The node e2e suite's device plugin specs run the tag its DaemonSet manifest
# names (test/e2e/testing-manifests/sample-device-plugin), not manifest.go's.
SAMPLE_DP_TAG=1.8.0
# name:tag of each image the conformance specs use.
IMAGES=(
  "$E2E/agnhost:$AGNHOST_TAG"
  "$E2E/agnhost:$AGNHOST_PREV_TAG"
  "$E2E/kitten:$KITTEN_TAG"
  "$E2E/nautilus:$NAUTILUS_TAG"
  "$E2E/busybox:$BUSYBOX_TAG"
  "$E2E/nonroot:$NONROOT_TAG"
  "$E2E/nonewprivs:$NONEWPRIVS_TAG"
  "$E2E/nginx:$NGINX_TAG"
  "$E2E/nginx:$NGINX_NEW_TAG"
  "$E2E/glibc-dns-testing:$GLIBC_DNS_TAG"
  "$E2E/sample-device-plugin:$SAMPLE_DP_TAG"
)
if [ "${1:-}" = --list ]; then
  printf '%s\n' "${IMAGES[@]}"
  exit 0
fi

gk_require_root
[ $# -le 1 ] || gk_die "usage: hack/e2e-images.sh [INSTANCE] | --list"
gk_instance "${1:-node}"

SRC=$GK_REPO_ROOT/images/e2e
work=$GK_E2E_IMAGES_WORK
mkdir -p "$work"
BIN=$UPSTREAM_CACHE/$KUBE_VERSION/bin

# Tools copied into the images, from Debian packages installed on this
# machine, and those that build them (umoci; jq lays out the fake registry).
TOOL_PKGS=(bash dash hostname curl bind9-dnsutils netcat-openbsd iproute2 iperf socat umoci jq)
installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }
need=()
for p in "${TOOL_PKGS[@]}"; do installed "$p" || need+=("$p"); done
if [ ${#need[@]} -gt 0 ]; then
  echo "e2e-images: installing ${need[*]} (tools the test images carry)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update >/dev/null 2>&1 || gk_die "apt-get update failed"
  apt-get install -y --no-install-recommends "${need[@]}" >/dev/null || gk_die "apt-get install ${need[*]} failed"
fi
# nginx and the dynamically linked busybox are only unpacked (dpkg -x), never
# installed: no service on this host, and busybox-static stays the host's.
debs=$work/debs
if ! ls "$debs"/nginx_*.deb "$debs"/nginx-common_*.deb "$debs"/busybox_*.deb >/dev/null 2>&1; then
  mkdir -p "$debs"
  (cd "$debs" && { apt-get download nginx nginx-common busybox >/dev/null 2>&1 ||
    { apt-get update >/dev/null 2>&1 && apt-get download nginx nginx-common busybox >/dev/null; }; }) ||
    gk_die "apt-get download nginx nginx-common busybox failed"
fi
BUSYBOX_ROOT=$work/busybox.debroot
rm -rf "$BUSYBOX_ROOT" && mkdir -p "$BUSYBOX_ROOT"
dpkg -x "$(ls "$debs"/busybox_*.deb | tail -n 1)" "$BUSYBOX_ROOT"
BUSYBOX=$BUSYBOX_ROOT/bin/busybox
[ -x "$BUSYBOX" ] || gk_die "no bin/busybox in $(ls "$debs"/busybox_*.deb)"

"$GK_REPO_ROOT/hack/build-upstream.sh" agnhost nonewprivs sample-device-plugin >&2
COREDNS_BIN=$("$GK_REPO_ROOT/hack/build-coredns.sh" --path)
[ -x "$COREDNS_BIN" ] || "$GK_REPO_ROOT/hack/build-coredns.sh" >&2

stamp=$(
  {
    cat "$GK_REPO_ROOT/hack/e2e-images.sh"
    (cd "$SRC" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
    (cd "$GK_REPO_ROOT" && find images/pause -name '*.go' ! -name '*_test.go' -print0 | sort -z | xargs -0 sha256sum)
    go version
    sha256sum "$BIN/agnhost" "$BIN/nonewprivs" "$BIN/sample-device-plugin" "$COREDNS_BIN" "$debs"/*.deb
    dpkg-query -W "${TOOL_PKGS[@]}"
    umoci --version
  } | sha256sum | cut -d' ' -f1
)

present() {
  local have img
  have=$(gk_ctr -n k8s.io images ls -q 2>/dev/null) || return 1
  for img in "${IMAGES[@]}"; do grep -qxF "$img" <<<"$have" || return 1; done
}

# ---- rootfs helpers ----------------------------------------------------------

# base_busybox ROOTFS ETC: a minimal system: Debian's busybox (with its
# libraries) and every applet linked into /bin, the usual directories, and
# passwd/group from images/e2e/ETC.
base_busybox() {
  local r=$1 etc=$2 applet
  rm -rf "$r" && mkdir -p "$r"/{bin,sbin,etc,root,tmp,home,dev,proc,sys,run,usr/bin,usr/sbin,usr/local/bin,usr/local/sbin,var/tmp,var/log,var/spool/mail,var/www}
  chmod 1777 "$r/tmp" "$r/var/tmp"
  chmod 0700 "$r/root"
  copy_bin "$r" "$BUSYBOX" /bin/busybox
  for applet in $("$BUSYBOX" --list); do
    [ "$applet" = busybox ] && continue # would replace the binary by a link to itself
    ln -sf busybox "$r/bin/$applet"
  done
  install -m 0644 "$SRC/$etc/passwd" "$r/etc/passwd"
  install -m 0644 "$SRC/$etc/group" "$r/etc/group"
  printf 'hosts: files dns\nnetworks: files\n' >"$r/etc/nsswitch.conf"
  printf 'root:*::0:::::\n' >"$r/etc/shadow"
  chmod 0640 "$r/etc/shadow"
}

# add_nmeter ROOTFS: /bin/nmeter. Upstream's busybox and agnhost images have
# busybox's nmeter applet, which the node e2e suite's container lifecycle
# specs use as a millisecond clock (`nmeter -d0 '%3t'`, in both images);
# Debian's busybox is built without it (and its date has no %N), so
# images/e2e/nmeter stands in for that use (only -d and %[N]t), built static.
add_nmeter() {
  local r=$1
  [ ! -e "$r/bin/nmeter" ] || gk_die "Debian's busybox has an nmeter applet now: drop images/e2e/nmeter"
  if [ ! -x "$work/nmeter" ]; then
    (cd "$GK_REPO_ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$work/nmeter" ./images/e2e/nmeter) ||
      gk_die "building images/e2e/nmeter failed"
  fi
  install -m 0755 "$work/nmeter" "$r/bin/nmeter"
}

# copy_bin ROOTFS SRC [DEST]: copies a host binary into the image at DEST
# (default: the same path) with every shared library `ldd` names, at the
# paths ldd resolved them to, and the dynamic loader.
copy_bin() {
  local r=$1 src=$2 dest=${3:-$2} lib
  [ -x "$src" ] || gk_die "$src not found (package missing?)"
  mkdir -p "$r$(dirname "$dest")"
  rm -f "$r$dest"
  cp -L "$src" "$r$dest"
  chmod 0755 "$r$dest"
  ldd "$src" 2>/dev/null | grep -q 'not a dynamic executable' && return 0
  if ldd "$src" | grep -q 'not found'; then
    ldd "$src" >&2
    gk_die "$src needs libraries this machine does not have"
  fi
  for lib in $(ldd "$src" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
    [ -e "$r$lib" ] && continue
    mkdir -p "$r$(dirname "$lib")"
    cp -L "$lib" "$r$lib"
  done
}

# oci_image NAME TAG ROOTFS OUT.tar umoci-config-args...: a one-layer OCI
# layout of ROOTFS, written as a tar.
oci_image() {
  local name=$1 tag=$2 rootfs=$3 out=$4 layout
  shift 4
  layout=$work/$name-$tag.oci
  rm -rf "$layout"
  umoci init --layout "$layout"
  umoci new --image "$layout:$tag"
  umoci insert --image "$layout:$tag" "$rootfs" / >/dev/null
  umoci config --image "$layout:$tag" --author "gokubelet hack/e2e-images.sh" --os linux \
    --architecture "$(go env GOARCH)" "$@"
  umoci gc --layout "$layout"
  tar -C "$layout" -cf "$out.tmp" . && mv -f "$out.tmp" "$out"
}

PATH_ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# ---- the images --------------------------------------------------------------

# registry_content ROOTFS NAME TAG LAYOUT: the image of the OCI layout LAYOUT
# (one manifest) as agnhost fake-registry-server serves it, NAME:TAG under
# ROOTFS/var/registry: a tag file holding the digest of an image index,
# the index (linux/GOARCH) and the manifest under manifests/, the config
# and layers under blobs/, each at <algo>/<first two>/<hash>/data. As
# upstream's image carries (test/images/agnhost/fakeregistryserver); the
# server sends a manifest's own mediaType as its Content-Type, so both
# documents carry one (umoci's manifest has none).
registry_content() {
  local r=$1 name=$2 tag=$3 layout=$4 dir manifest index digest
  dir=$r/var/registry/$name
  rm -rf "$dir" && mkdir -p "$dir/manifests" "$dir/blobs"
  put() { # put KIND FILE: stores FILE under KIND by its digest, prints the digest
    local h
    h=$(sha256sum <"$2" | cut -d' ' -f1)
    install -D -m 0644 "$2" "$dir/$1/sha256/${h:0:2}/$h/data"
    echo "sha256:$h"
  }
  digest=$(jq -r '.manifests[0].digest' "$layout/index.json")
  manifest=$work/$name-$tag.registry-manifest.json
  jq -c '{schemaVersion, mediaType: "application/vnd.oci.image.manifest.v1+json", config, layers}' \
    "$layout/blobs/sha256/${digest#sha256:}" >"$manifest"
  for digest in $(jq -r '.config.digest, .layers[].digest' "$manifest"); do
    put blobs "$layout/blobs/sha256/${digest#sha256:}" >/dev/null
  done
  digest=$(put manifests "$manifest")
  index=$work/$name-$tag.registry-index.json
  jq -nc --arg d "$digest" --argjson size "$(stat -c %s "$manifest")" --arg arch "$(go env GOARCH)" \
    '{schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json",
      manifests: [{mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $d, size: $size,
                   platform: {architecture: $arch, os: "linux"}}]}' >"$index"
  put manifests "$index" >"$dir/manifests/$tag"
  # The registry pod runs as a non-root user (the restricted profile);
  # umoci keeps its blobs owner-only.
  chmod -R a+rX "$r/var/registry"
}

# The pause image the fake registry serves as pause:testing (upstream's
# images.txt: registry.k8s.io/pause:3.10.2): this repository's pause
# binary, as the sandbox image of hack/images.sh.
build_registry_pause() {
  local r=$work/registry-pause.rootfs
  rm -rf "$r" && mkdir -p "$r"
  (cd "$GK_REPO_ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$r/pause" ./images/pause) ||
    gk_die "building images/pause failed"
  oci_image registry-pause testing "$r" "$work/registry-pause-testing.tar" \
    --config.entrypoint /pause --config.user 65535:65535 --config.workingdir /
}

# agnhost: upstream is alpine 3.21 with bind-tools, curl, netcat-openbsd,
# iproute2, iperf, bash, util-linux-misc and socat, /coredns, the porter's
# certificate, /uploads, /agnhost and /agnhost-2, the user/group the
# supplemental-groups tests expect, and the fake registry's content in
# /var/registry (pause:testing; upstream pulls it from registry.k8s.io at
# image build time, here it is built: registry_content). Not here:
# util-linux-misc.
build_agnhost() {
  local r=$work/agnhost.rootfs
  base_busybox "$r" etc-alpine
  add_nmeter "$r"
  copy_bin "$r" /bin/bash /bin/bash
  copy_bin "$r" /usr/bin/curl
  copy_bin "$r" /usr/bin/dig
  copy_bin "$r" /usr/bin/host
  copy_bin "$r" /usr/bin/nslookup
  copy_bin "$r" /bin/nc.openbsd /usr/bin/nc
  copy_bin "$r" /bin/ip /sbin/ip
  copy_bin "$r" /bin/ss /usr/sbin/ss
  copy_bin "$r" /usr/bin/iperf
  copy_bin "$r" /usr/bin/socat
  ln -s /usr/bin/iperf "$r/usr/local/bin/iperf"
  install -m 0755 "$COREDNS_BIN" "$r/coredns"
  install -m 0755 "$BIN/agnhost" "$r/agnhost"
  ln -s agnhost "$r/agnhost-2"
  local porter
  porter=$(go env GOMODCACHE)/k8s.io/kubernetes@$KUBE_VERSION/test/images/agnhost/porter
  install -m 0644 "$porter/localhost.crt" "$r/localhost.crt"
  install -m 0600 "$porter/localhost.key" "$r/localhost.key"
  mkdir -p "$r/uploads"
  # adduser -u 1000 -D user-defined-in-image; addgroup -g 50000 group-defined-in-image;
  # addgroup user-defined-in-image group-defined-in-image
  echo 'user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh' >>"$r/etc/passwd"
  echo 'user-defined-in-image:x:1000:' >>"$r/etc/group"
  echo 'group-defined-in-image:x:50000:user-defined-in-image' >>"$r/etc/group"
  echo 'user-defined-in-image:!::0:::::' >>"$r/etc/shadow"
  mkdir -p "$r/home/user-defined-in-image"
  chown 1000:1000 "$r/home/user-defined-in-image"
  build_registry_pause
  registry_content "$r" pause testing "$work/registry-pause-testing.oci"
  oci_image agnhost "$AGNHOST_TAG" "$r" "$work/agnhost-$AGNHOST_TAG.tar" \
    --config.entrypoint /agnhost --config.cmd pause --config.env "$PATH_ENV" \
    --config.exposedports 80/tcp --config.exposedports 8080/tcp --config.exposedports 8081/tcp \
    --config.exposedports 9376/tcp --config.exposedports 5000/tcp
}

# agnhost:2.55 (AgnhostPrev): upstream's is agnhost 2.55, an older build of
# the same program; the specs use it as the image a rollout starts from and
# run the commands both versions have (test-webserver, pause, netexec). No
# served k8s.io/kubernetes release carries 2.55 (v1.34.4 has 2.56), so it is
# the agnhost image above under its own name, with its own image ID (the
# AGNHOST_IMAGE environment differs), as two upstream tags are two images.
build_agnhost_prev() {
  oci_image agnhost "$AGNHOST_PREV_TAG" "$work/agnhost.rootfs" "$work/agnhost-$AGNHOST_PREV_TAG.tar" \
    --config.entrypoint /agnhost --config.cmd pause --config.env "$PATH_ENV" --config.env "AGNHOST_IMAGE=$AGNHOST_PREV_TAG" \
    --config.exposedports 80/tcp --config.exposedports 8080/tcp --config.exposedports 8081/tcp \
    --config.exposedports 9376/tcp --config.exposedports 5000/tcp
}

# kitten and nautilus: upstream's are the agnhost image with kitten.jpg (or
# nautilus.jpg) and data.json in /, command test-webserver (serving /). The
# files are upstream's, from test/images/<name>/html at the pinned version.
build_demo() {
  local name=$1 tag=$2 r=$work/$1.rootfs html
  html=$(go env GOMODCACHE)/k8s.io/kubernetes@$KUBE_VERSION/test/images/$name/html
  rm -rf "$r" && cp -a "$work/agnhost.rootfs" "$r"
  install -m 0644 "$html/$name.jpg" "$html/data.json" "$r/"
  oci_image "$name" "$tag" "$r" "$work/$name-$tag.tar" \
    --config.entrypoint /agnhost --config.cmd test-webserver --config.env "$PATH_ENV" \
    --config.exposedports 80/tcp
}

# busybox: upstream is Docker's busybox:1.37.0 (every applet in /bin, cmd sh).
build_busybox() {
  local r=$work/busybox.rootfs
  base_busybox "$r" etc-busybox
  add_nmeter "$r"
  oci_image busybox "$BUSYBOX_TAG" "$r" "$work/busybox-$BUSYBOX_TAG.tar" --config.cmd sh --config.env "$PATH_ENV"
}

# nonroot: upstream is debian-base (bookworm) with USER 1234.
build_nonroot() {
  local r=$work/nonroot.rootfs
  base_busybox "$r" etc-debian
  copy_bin "$r" /bin/bash /bin/bash
  oci_image nonroot "$NONROOT_TAG" "$r" "$work/nonroot-$NONROOT_TAG.tar" --config.cmd /bin/bash --config.user 1234 --config.env "$PATH_ENV"
}

# nonewprivs: upstream is alpine with /usr/local/bin/nnp (setuid, setgid root), cmd nnp.
build_nonewprivs() {
  local r=$work/nonewprivs.rootfs
  base_busybox "$r" etc-alpine
  install -m 6755 -o 0 -g 0 "$BIN/nonewprivs" "$r/usr/local/bin/nnp"
  oci_image nonewprivs "$NONEWPRIVS_TAG" "$r" "$work/nonewprivs-$NONEWPRIVS_TAG.tar" --config.cmd nnp --config.env "$PATH_ENV"
}

# sample-device-plugin: upstream's is its base image with /sampledeviceplugin,
# entrypoint [/sampledeviceplugin, -alsologtostderr]: the plugin advertises
# example.com/resource (test/images/sample-device-plugin).
build_sample_device_plugin() {
  local r=$work/sample-device-plugin.rootfs
  base_busybox "$r" etc-debian
  copy_bin "$r" "$BIN/sample-device-plugin" /sampledeviceplugin
  oci_image sample-device-plugin "$SAMPLE_DP_TAG" "$r" "$work/sample-device-plugin-$SAMPLE_DP_TAG.tar" \
    --config.entrypoint /sampledeviceplugin --config.entrypoint -alsologtostderr --config.env "$PATH_ENV"
}

# nginx: upstream is nginx:<version>-alpine: nginx in the foreground, user
# nginx (101), logs to stdout/stderr, the welcome page. The binary is
# Debian's nginx package (unpacked, not installed).
build_nginx() {
  local tag=$1 version=$2 r=$work/nginx-$1.rootfs x=$work/nginx.debroot
  rm -rf "$x" && mkdir -p "$x"
  for d in "$debs"/nginx_*.deb "$debs"/nginx-common_*.deb; do dpkg -x "$d" "$x"; done
  base_busybox "$r" etc-alpine
  echo 'nginx:x:101:101:nginx:/var/cache/nginx:/sbin/nologin' >>"$r/etc/passwd"
  echo 'nginx:x:101:nginx' >>"$r/etc/group"
  copy_bin "$r" "$x/usr/sbin/nginx" /usr/sbin/nginx
  mkdir -p "$r/etc/nginx/conf.d" "$r/usr/share/nginx/html" "$r/var/log/nginx" "$r/var/cache/nginx" \
    "$r/var/lib/nginx"/{body,proxy,fastcgi,uwsgi,scgi} "$r/var/run" "$r/run/nginx" "$r/usr/lib/nginx/modules"
  install -m 0644 "$x/etc/nginx/mime.types" "$r/etc/nginx/mime.types"
  install -m 0644 "$SRC/nginx/nginx.conf" "$r/etc/nginx/nginx.conf"
  install -m 0644 "$SRC/nginx/default.conf" "$r/etc/nginx/conf.d/default.conf"
  install -m 0644 "$SRC/nginx/index.html" "$SRC/nginx/50x.html" "$r/usr/share/nginx/html/"
  ln -sf /dev/stdout "$r/var/log/nginx/access.log"
  ln -sf /dev/stderr "$r/var/log/nginx/error.log"
  oci_image nginx "$tag" "$r" "$work/nginx-$tag.tar" \
    --config.cmd nginx --config.cmd -g --config.cmd 'daemon off;' --config.env "$PATH_ENV" \
    --config.env "NGINX_VERSION=$version" --config.exposedports 80/tcp --config.stopsignal SIGTERM
}

# glibc-dns-testing: upstream is debian:bookworm-slim with dnsutils (dig,
# host, nslookup) and /coredns; its programs resolve through glibc (the
# hostnameOverride specs run `hostname -f` in it). Here: the busybox base
# with Debian's dash as /bin/sh, bash, hostname and the dnsutils binaries,
# all glibc-linked from this (bookworm) machine.
build_glibc_dns() {
  local r=$work/glibc-dns-testing.rootfs
  base_busybox "$r" etc-debian
  copy_bin "$r" /bin/dash /bin/sh
  copy_bin "$r" /bin/dash /bin/dash
  copy_bin "$r" /bin/bash /bin/bash
  copy_bin "$r" /bin/hostname /bin/hostname
  copy_bin "$r" /usr/bin/dig
  copy_bin "$r" /usr/bin/host
  copy_bin "$r" /usr/bin/nslookup
  install -m 0755 "$COREDNS_BIN" "$r/coredns"
  oci_image glibc-dns-testing "$GLIBC_DNS_TAG" "$r" "$work/glibc-dns-testing-$GLIBC_DNS_TAG.tar" --config.cmd bash --config.env "$PATH_ENV"
}

build() {
  echo "e2e-images: building ${#IMAGES[@]} images into $work" >&2
  rm -f "$work/nmeter"
  build_agnhost
  build_agnhost_prev
  build_demo kitten "$KITTEN_TAG"
  build_demo nautilus "$NAUTILUS_TAG"
  build_busybox
  build_nonroot
  build_nonewprivs
  build_nginx "$NGINX_TAG" 1.27.0
  build_nginx "$NGINX_NEW_TAG" 1.28.0
  build_glibc_dns
  build_sample_device_plugin
  echo "$stamp" >"$work/stamp"
}

import() {
  local snap img name tag
  snap=$(cat "$GK_CTRD_DIR/snapshotter" 2>/dev/null || echo overlayfs)
  for img in "${IMAGES[@]}"; do
    name=${img%:*} tag=${img##*:}
    gk_ctr -n k8s.io images import --snapshotter "$snap" --base-name "$name" \
      "$work/$(basename "$name")-$tag.tar" >/dev/null || gk_die "importing $img into $GK_INST failed"
  done
  present || gk_die "images missing in $GK_INST after import"
}

"$GK_REPO_ROOT/hack/containerd.sh" up "$GK_INST"

# GK_IMAGES_KEEP_TARS=1 (hack/node-e2e.sh, whose local registry serves
# them) also wants this checkout's image tars, which a new clone lacks even
# when the instance holds the images.
if [ "$(cat "$GK_LIB/e2e-images.stamp" 2>/dev/null)" = "$stamp" ] && present &&
  { [ -z "${GK_IMAGES_KEEP_TARS:-}" ] || [ "$(cat "$work/stamp" 2>/dev/null)" = "$stamp" ]; }; then
  exit 0
fi

# One build at a time: instances and checkouts share $GK_E2E_IMAGES_WORK.
exec 9>"$work/.lock"
flock 9
if [ "$(cat "$work/stamp" 2>/dev/null)" != "$stamp" ]; then
  build
fi
import
flock -u 9
echo "$stamp" >"$GK_LIB/e2e-images.stamp"
echo "e2e-images: ${#IMAGES[@]} images imported into $GK_INST" >&2
