# Shared helpers for the hack/ scripts. Sourced, not run.
#
# Per-instance layout (INSTANCE defaults to "node"; tests use "test"):
#   /var/lib/gokubelet/$INST/containerd/{config.toml,root,opt,snapshotter,flavor,bindir}
#   /var/lib/gokubelet/$INST/cni/{net.d,ipam}
#   /run/gokubelet/$INST/{containerd.sock,containerd.sock.ttrpc,containerd.pid}
#   /run/gokubelet/$INST/containerd/state
#   /var/log/gokubelet/$INST-containerd.log

. "$(dirname "${BASH_SOURCE[0]}")/lib-daemon.sh"

GK_REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GK_OUTPUT=${GK_OUTPUT:-$GK_REPO_ROOT/_output}
# Where hack/images.sh and hack/e2e-images.sh build their image tars: a cache
# outside the checkout, so a new clone (CI's) finds them built (their stamps
# say whether they are current).
GK_IMAGES_WORK=${GK_IMAGES_WORK:-${XDG_CACHE_HOME:-$HOME/.cache}/gokubelet/images}
GK_E2E_IMAGES_WORK=${GK_E2E_IMAGES_WORK:-${XDG_CACHE_HOME:-$HOME/.cache}/gokubelet/e2e-images}

gk_die() { echo "${0##*/}: error: $*" >&2; exit 1; }
gk_warn() { echo "${0##*/}: warning: $*" >&2; }
# gk_info prints only when GK_VERBOSE is set: the scripts are quiet on success.
gk_info() { if [ -n "${GK_VERBOSE:-}" ]; then echo "${0##*/}: $*" >&2; fi; }

gk_require_root() { [ "$(id -u)" = 0 ] || gk_die "must run as root"; }

# gk_instance NAME: validates NAME and sets every per-instance variable.
gk_instance() {
  local inst=$1
  [[ $inst =~ ^[a-z0-9][a-z0-9-]{0,30}$ ]] ||
    gk_die "bad instance name '$inst' (want [a-z0-9][a-z0-9-]*, at most 31 chars)"
  GK_INST=$inst
  GK_LIB=/var/lib/gokubelet/$inst
  GK_RUN=/run/gokubelet/$inst
  GK_LOGDIR=/var/log/gokubelet
  GK_CTRD_DIR=$GK_LIB/containerd
  GK_CTRD_CONFIG=$GK_CTRD_DIR/config.toml
  GK_CTRD_ROOT=$GK_CTRD_DIR/root
  GK_CTRD_STATE=$GK_RUN/containerd/state
  GK_CTRD_SOCK=$GK_RUN/containerd.sock
  GK_CTRD_PID=$GK_RUN/containerd.pid
  GK_CTRD_LOG=$GK_LOGDIR/$inst-containerd.log
  GK_CNI_CONF_DIR=$GK_LIB/cni/net.d
  GK_CNI_IPAM_DIR=$GK_LIB/cni/ipam
  GK_CNI_BIN_DIR=/usr/lib/cni
  GK_CNI_NET=gokubelet-$inst

  # Bridge names are at most 15 chars. Short instance names read well;
  # long ones get a stable hash.
  if [ ${#inst} -le 12 ]; then
    GK_BRIDGE=gk-$inst
  else
    GK_BRIDGE=gk-$(printf %s "$inst" | sha256sum | cut -c1-12)
  fi
  # One private /16 per instance: fixed for the well-known instances,
  # derived from the name otherwise (10.90-10.189; distinct names may collide).
  local octet
  case $inst in
    node) octet=88 ;;
    test) octet=89 ;;
    test16) octet=87 ;; # the integration tier's pass on Debian's containerd 1.6
    test-rt) octet=86 ;; # make test's unit and integration tiers, beside the cluster's
    *) octet=$((90 + $(printf %s "$inst" | cksum | cut -d' ' -f1) % 100)) ;;
  esac
  GK_POD_CIDR=10.$octet.0.0/16
  GK_POD_GW=10.$octet.0.1
}

# gk_ctr_bin: the ctr for this instance: the one built with its containerd
# (hack/containerd.sh records where its binaries are), else the one on PATH.
gk_ctr_bin() {
  local dir
  dir=$(cat "$GK_CTRD_DIR/bindir" 2>/dev/null || true)
  if [ -n "$dir" ] && [ -x "$dir/ctr" ]; then echo "$dir/ctr"; else echo ctr; fi
}

# gk_ctr ARGS...: ctr against this instance's containerd.
# containerd 2 warns on every call that cgroup v1 is deprecated (these
# machines are cgroup v1; docs/environment.md says so once).
gk_ctr() { CONTAINERD_SUPPRESS_DEPRECATION_WARNINGS=1 "$(gk_ctr_bin)" --address "$GK_CTRD_SOCK" "$@"; }

# gk_ctrd_answers: true when this instance's containerd answers on its socket.
gk_ctrd_answers() {
  [ -S "$GK_CTRD_SOCK" ] && timeout 5 "$(gk_ctr_bin)" --address "$GK_CTRD_SOCK" version >/dev/null 2>&1
}

# gk_cgroup_join CGROUP PID: moves PID into the cgroupfs path CGROUP (e.g.
# /docker-daemon) in every mounted hierarchy, each v1 controller and the
# cgroup2 tree, creating it (a new cpuset level gets its parent's CPUs and
# memory nodes first), as a service manager places a daemon.
gk_cgroup_join() {
  local cg=$1 pid=$2 mnt dir f
  while read -r mnt; do
    dir=$mnt$cg
    mkdir -p "$dir"
    for f in cpuset.cpus cpuset.mems; do
      if [ -f "$mnt/$f" ] && [ -z "$(tr -d '[:space:]' <"$dir/$f")" ]; then
        cat "$mnt/$f" >"$dir/$f"
      fi
    done
    echo "$pid" >"$dir/cgroup.procs"
  done < <(awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/self/mounts)
}

# gk_ctrd_pid: prints the pid of this instance's containerd, if any. Trusts the
# pid file only when that process really runs our config.
gk_ctrd_pid() {
  local pid cmd
  if [ -f "$GK_CTRD_PID" ]; then
    pid=$(cat "$GK_CTRD_PID" 2>/dev/null || true)
    if [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ]; then
      cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)
      if [[ $cmd == *containerd*"--config $GK_CTRD_CONFIG"* ]]; then
        echo "$pid"
        return 0
      fi
    fi
  fi
  # Pid file lost: look for a containerd started with our config.
  for pid in $(pgrep -x containerd 2>/dev/null || true); do
    cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)
    if [[ $cmd == *"--config $GK_CTRD_CONFIG"* ]]; then
      echo "$pid"
      return 0
    fi
  done
  return 1
}

# gk_write_if_changed FILE: writes stdin to FILE only when the content differs.
gk_write_if_changed() {
  local file=$1 tmp
  tmp=$(mktemp "$file.XXXXXX")
  chmod 0644 "$tmp"
  cat >"$tmp"
  if [ -f "$file" ] && cmp -s "$tmp" "$file"; then
    rm -f "$tmp"
  else
    mv -f "$tmp" "$file"
  fi
}

# gk_mounts_under DIR: prints mount points at or below DIR, deepest first.
gk_mounts_under() {
  local dir=$1
  findmnt -rn -o TARGET 2>/dev/null | awk -v d="$dir" '$0 == d || index($0, d "/") == 1' |
    awk '{ print length($0) " " $0 }' | sort -rn | cut -d' ' -f2-
}

# gk_umount_under DIR: unmounts everything at or below DIR. Fails when a mount
# cannot be removed, so callers never rm -rf through a live mount.
gk_umount_under() {
  local dir=$1 m left
  for m in $(gk_mounts_under "$dir"); do
    # findmnt escapes blanks as \x20; none of our paths have them.
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
  left=$(gk_mounts_under "$dir")
  [ -z "$left" ] || { echo "still mounted under $dir:" >&2; echo "$left" >&2; return 1; }
}

# gk_go_build OUT PKG: builds a Go package of this module into OUT when OUT is
# missing or older than any Go file of the package or go.mod/go.sum.
gk_go_build() {
  local out=$1 pkg=$2 dir
  dir=$GK_REPO_ROOT/${pkg#./}
  if [ -x "$out" ] && [ -z "$(find "$dir" "$GK_REPO_ROOT/go.mod" "$GK_REPO_ROOT/go.sum" -newer "$out" -print -quit)" ]; then
    return 0
  fi
  mkdir -p "$(dirname "$out")"
  (cd "$GK_REPO_ROOT" && CGO_ENABLED=0 go build -trimpath -o "$out" "$pkg") ||
    gk_die "go build $pkg failed"
}
