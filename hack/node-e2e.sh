#!/usr/bin/env bash
# Upstream's node end-to-end suite (k8s.io/kubernetes/test/e2e_node) against
# a kubelet binary, as upstream gates its own kubelet: e2e_node.test runs its
# own etcd and API server in-process and starts the kubelet binary found
# beside it itself (upstream's --k8s-bin-dir mode; no systemd here, so as a
# child process, or, for the sets that restart it, under the stand-in of
# hack/node-e2e-systemd). Called by hack/conformance.sh
# for CONFORMANCE_SET=node-e2e, node-e2e-serial, node-e2e-plugins and
# node-e2e-groups; see
# docs/conformance-run.md.
#
# Environment (as hack/conformance.sh):
#   CONFORMANCE_KUBELET   ours (default) | upstream (kubelet KUBE_VERSION)
#   CONFORMANCE_SET       node-e2e: [NodeConformance] without [Serial], [Slow],
#                           [Disruptive], [Flaky]
#                         node-e2e-serial: the [Serial] specs of
#                           [NodeConformance], one at a time (without [Flaky];
#                           [Disruptive] here means the kubelet or runtime is
#                           restarted, which the suite does itself)
#                         node-e2e-plugins: the [Serial] groups of device
#                           plugins, the pod resources API and DRA, one at a
#                           time (without [Flaky] and [Feature:OffByDefault])
#                         node-e2e-groups: the other [Serial] groups beyond
#                           [NodeConformance] that fit two cores, one at a
#                           time: eviction, kubelet and runtime restart,
#                           resource usage and density at 10 pods (as
#                           node-e2e-plugins; the Summary API's specs are in
#                           node-e2e)
#   CONFORMANCE_FOCUS     a regular expression narrowing the set (a trial run;
#                         such a run writes no report)
#   CONFORMANCE_SUBSET    FILE: run exactly the specs FILE lists (one full name a
#                         line) and fail unless every one passes; writes no
#                         report (the node-e2e tier of hack/test.sh uses
#                         test/conformance/subset-node-e2e.txt)
#   CONFORMANCE_PROCS     ginkgo processes (default 4)
#   CONFORMANCE_TIMEOUT   ginkgo suite timeout (default 3h)
#   CONFORMANCE_SEED      ginkgo's random seed, which orders the specs
#                         (default 1796042239, the seed of the upstream
#                         kubelet's recorded node-e2e-plugins run): runs of
#                         both kubelets with one seed meet the specs in the
#                         same order, which the [Serial] sets depend on
#
# The suite's API server listens on 127.0.0.1:6443 and its kubelet on the
# standard ports with root /var/lib/kubelet, so the local cluster (control
# plane and node) is stopped first; `make cluster` brings it back. The
# kubelet runs on its own containerd instance, node-e2e, with the local and
# e2e images imported (no registry is reachable: --prepull-images=false).
# For node-e2e-serial and node-e2e-groups, whose specs pull images with
# policy Always or through CRI, that instance pulls registry.k8s.io images
# from hack/tools/ociregistry on 127.0.0.1:5055 serving the same
# locally built images (its log: registry.log beside ginkgo.log); any other
# image still fails to pull, for both kubelets.
#
# Writes test/conformance/results/<set>.<kubelet>.json and
# docs/conformance-<set>.md and the overview docs/conformance.md; logs, the JUnit report and the kubelet's log
# stay in _output/conformance/<set>-<kubelet>/.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/versions.sh"
gk_require_root
cd "$GK_REPO_ROOT"

KIND=${CONFORMANCE_KUBELET:-ours}
SET=${CONFORMANCE_SET:-node-e2e}
TIMEOUT=${CONFORMANCE_TIMEOUT:-3h}
SEED=${CONFORMANCE_SEED:-1796042239}
[[ $SEED =~ ^[1-9][0-9]*$ ]] || gk_die "CONFORMANCE_SEED must be a positive integer, not '$SEED'"
TRIAL=${CONFORMANCE_FOCUS:-}
SUBSET=${CONFORMANCE_SUBSET:-}
case $KIND in
  ours) WHO="our kubelet" ;;
  upstream) WHO="the upstream kubelet $KUBE_VERSION" ;;
  *) gk_die "CONFORMANCE_KUBELET must be ours or upstream, not '$KIND'" ;;
esac
case $SET in
  node-e2e)
    FOCUS='\[NodeConformance\]'
    SKIP='\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Slow\]'
    SET_DOC="upstream's node e2e suite (e2e_node.test), the [NodeConformance] specs that may run in parallel"
    PROCS=${CONFORMANCE_PROCS:-4} ;;
  node-e2e-serial)
    FOCUS='\[NodeConformance\].*\[Serial\]|\[Serial\].*\[NodeConformance\]'
    SKIP='\[Flaky\]'
    SET_DOC="upstream's node e2e suite (e2e_node.test), the [Serial] specs of [NodeConformance], one at a time"
    PROCS=${CONFORMANCE_PROCS:-1} ;;
  node-e2e-plugins)
    # Matched against "E2eNode Suite <spec text>"; every spec selected is
    # [Serial].
    FOCUS='\[Feature:DevicePlugin\]|\[Feature:PodResourcesAPI\]|\[Feature:DynamicResourceAllocation\]'
    # [Feature:OffByDefault]: the spec needs feature gates that are off by
    # default, which the suite's kubelet and API server do not get (as in
    # upstream's default node e2e jobs); 18 of them also wait 5 minutes for
    # a ReplicaSet, and the suite runs no controller manager.
    SKIP='\[Flaky\]|\[Feature:OffByDefault\]'
    SET_DOC="upstream's node e2e suite (e2e_node.test), the [Serial] groups of the node's plugins: device plugins, the pod resources API and DRA, one at a time"
    PROCS=${CONFORMANCE_PROCS:-1} ;;
  node-e2e-groups)
    # As node-e2e-plugins.
    FOCUS='\[Feature:Eviction\]|EvictionPodLevelResources|EvictionOrderingPodLevelResources'
    FOCUS+='|\[sig-node\] Restart Kubelet |\[sig-node\] Restart Container Runtime '
    FOCUS+='|\[sig-node\] Resource-usage .* for (0|10) pods per node|\[sig-node\] Density .* 10 pods '
    SKIP='\[Flaky\]|\[Feature:OffByDefault\]'
    SET_DOC="upstream's node e2e suite (e2e_node.test), the other [Serial] groups that fit two cores: eviction, kubelet and runtime restart, resource usage and density at 10 pods, one at a time"
    PROCS=${CONFORMANCE_PROCS:-1} ;;
  *) gk_die "hack/node-e2e.sh: CONFORMANCE_SET must be node-e2e, node-e2e-serial, node-e2e-plugins or node-e2e-groups, not '$SET'" ;;
esac
[ -z "$TRIAL" ] || FOCUS=$TRIAL
[ -z "$SUBSET" ] || [ -f "$SUBSET" ] || gk_die "CONFORMANCE_SUBSET: $SUBSET not found"
# Ginkgo matches focus and skip against "<suite description> <spec text>".
SUITE="E2eNode Suite"

BIN=$UPSTREAM_CACHE/$KUBE_VERSION/bin
EXCLUSIONS=test/conformance/exclusions-node-e2e.txt
RESULTS_DIR=test/conformance/results
OUT=$GK_OUTPUT/conformance/$SET-$KIND
[ -z "$TRIAL" ] || OUT=$GK_OUTPUT/conformance/$SET-trial-$KIND
[ -z "$SUBSET" ] || OUT=$GK_OUTPUT/conformance/$SET-subset-$KIND
INST=node-e2e
LOCK=/run/gokubelet/cluster.lock
MIRROR_PORT=5055
MIRROR=""
case $SET in node-e2e-serial | node-e2e-groups) MIRROR=127.0.0.1:$MIRROR_PORT ;; esac
REGISTRY_PID=""
SYSTEMDBUS_PID=""
ROOT=/var/lib/kubelet

T0=$SECONDS
stage_name="" stage_start=$SECONDS
stage() {
  [ -z "$stage_name" ] || echo "[node-e2e]    (took $((SECONDS - stage_start))s)"
  stage_name=$1 stage_start=$SECONDS
  echo "[node-e2e] == $1"
}
note() { echo "[node-e2e]    $*"; }

cleanup() {
  local rc=$?
  # The suite stops its kubelet; one left behind by a killed suite is
  # stopped here (it runs the binary of --k8s-bin-dir).
  pkill -TERM -f "^$KBIN_DIR/kubelet " 2>/dev/null || true
  [ -z "$REGISTRY_PID" ] || kill "$REGISTRY_PID" 2>/dev/null || true
  # Before the instance goes down: the stand-in would restart it.
  stop_systemdbus
  if [ -n "${CLEAN_INSTANCE:-}" ]; then
    hack/containerd.sh down "$INST" >/dev/null 2>&1 || gk_warn "hack/containerd.sh down $INST failed"
    gk_umount_under "$ROOT" || true
  fi
  exit "$rc"
}
stop_systemdbus() {
  [ -n "$SYSTEMDBUS_PID" ] || return 0
  kill "$SYSTEMDBUS_PID" 2>/dev/null || true
  wait "$SYSTEMDBUS_PID" 2>/dev/null || true
  SYSTEMDBUS_PID=""
}
KBIN_DIR=$OUT/k8s-bin
trap cleanup EXIT

mkdir -p /run/gokubelet "$OUT"
exec 9>"$LOCK"
if ! flock -n 9; then
  note "waiting for $LOCK (another user of the cluster's node identity, e.g. the e2e tier)"
  flock 9
fi
what="set $SET${TRIAL:+ (trial focus $TRIAL)}"
[ -z "$SUBSET" ] || what="the $(grep -cv '^\s*\(#\|$\)' "$SUBSET") specs of $SUBSET"
echo "[node-e2e] upstream node e2e suite $KUBE_VERSION, $what, $WHO; output in $OUT"

stage "dependencies (Debian packages, only the missing ones)"
hack/install-deps.sh 9>&-

stage "upstream binaries: e2e_node.test, ginkgo$([ "$KIND" = upstream ] && echo ", kubelet") (built once, cached by version)"
targets=(e2e_node.test ginkgo agnhost nonewprivs)
[ "$KIND" = upstream ] && targets+=(kubelet)
hack/build-upstream.sh "${targets[@]}" 9>&- | sed 's/^/[node-e2e]    /'
commit=$(git rev-parse --short HEAD)
git diff --quiet HEAD -- cmd pkg go.mod go.sum 2>/dev/null || commit="$commit+dirty"
mkdir -p "$OUT/bin"
go build -o "$OUT/bin/scoreboard" ./test/conformance/scoreboard
# The kubelet under test, named kubelet, beside the suite's binary: that is
# where e2e_node.test looks first (the --k8s-bin-dir of upstream's local
# runner names that directory; the suite itself has no such flag).
rm -rf "$KBIN_DIR" && mkdir -p "$KBIN_DIR"
if [ "$KIND" = ours ]; then
  go build -o "$KBIN_DIR/kubelet" ./cmd/kubelet
else
  cp "$BIN/kubelet" "$KBIN_DIR/kubelet"
fi
ln -s "$BIN/e2e_node.test" "$KBIN_DIR/e2e_node.test"

stage "stopping the local cluster (its API server and kubelet hold the suite's ports; make cluster brings it back)"
hack/node.sh down >/dev/null 9>&- || true
hack/cluster.sh down >/dev/null 9>&- || true

stage "containerd instance '$INST' with the local and e2e images"
gk_instance "$INST"
CLEAN_INSTANCE=1
hack/containerd.sh down "$INST" >/dev/null 9>&-
gk_umount_under "$ROOT" || gk_die "leftover mounts under $ROOT"
rm -rf --one-file-system "$ROOT"
# Every `up` (hack/images.sh and hack/e2e-images.sh call it too) writes
# the instance's config, so the mirror is in the environment of all.
export GK_REGISTRY_MIRROR=$MIRROR
hack/containerd.sh up "$INST" 9>&-
# On a host without systemd the suite starts the kubelet with
# --runtime-cgroups=/docker-daemon and its Summary API spec expects the
# system container "runtime" there: containerd runs in that cgroup, where a
# service manager would have placed it. (The kubelet only reports it.)
gk_cgroup_join /docker-daemon "$(gk_ctrd_pid)"
# The local registry serves the image tars of this checkout.
keep_tars=""
[ -z "$MIRROR" ] || keep_tars=1
GK_IMAGES_KEEP_TARS=$keep_tars hack/images.sh "$INST" 9>&-
GK_IMAGES_KEEP_TARS=$keep_tars hack/e2e-images.sh "$INST" 9>&- 2>&1 | sed 's/^/[node-e2e]    /'
if [ -n "$MIRROR" ]; then
  # The images just built, as hack/images.sh and hack/e2e-images.sh name
  # their OCI layouts.
  {
    echo "registry.k8s.io/pause:$PAUSE_VERSION=$GK_IMAGES_WORK/pause.tar"
    hack/e2e-images.sh --list | while read -r ref; do
      n=${ref##*/}
      echo "$ref=$GK_E2E_IMAGES_WORK/${n%%:*}-${n##*:}.tar"
    done
  } >"$OUT/registry-images.txt"
  go build -o "$OUT/bin/ociregistry" ./hack/tools/ociregistry
  "$OUT/bin/ociregistry" -listen "$MIRROR" -images-file "$OUT/registry-images.txt" >"$OUT/registry.log" 2>&1 9>&- &
  REGISTRY_PID=$!
  for _ in $(seq 50); do
    curl -fsS -o /dev/null "http://$MIRROR/v2/" 2>/dev/null && break
    kill -0 "$REGISTRY_PID" 2>/dev/null || { cat "$OUT/registry.log" >&2; gk_die "the local registry did not start"; }
    sleep 0.2
  done
  curl -fsS -o /dev/null "http://$MIRROR/v2/" || gk_die "the local registry does not answer on $MIRROR"
  note "local registry on $MIRROR: $(wc -l <"$OUT/registry-images.txt") images, containerd's mirror of registry.k8s.io"
fi

# The base configuration: upstream's test/e2e_node/jenkins/default-kubelet-config.yaml
# (the suite's own defaults), plus what these machines need: cgroupfs on
# cgroup v1 (failCgroupV1: false, which ours defaults to), no swap check,
# the periodic image garbage collection off and nodefs.available as an
# absolute amount instead of 10% of the filesystem's size
# (test/kubelet-disk.yaml says why).
cat >"$OUT/kubelet-config.yaml" <<EOF
# Written by hack/node-e2e.sh.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: /
failCgroupV1: false
failSwapOn: false
podCIDR: "10.100.0.0/24"
volumeStatsAggPeriod: 10s
fileCheckFrequency: 10s
evictionPressureTransitionPeriod: 30s
imageGCHighThresholdPercent: 100
evictionHard:
  memory.available: 250Mi
  nodefs.available: 2Gi
  nodefs.inodesFree: 5%
evictionMinimumReclaim:
  nodefs.available: 5%
  nodefs.inodesFree: 5%
serializeImagePulls: false
EOF

if [ -n "$SUBSET" ]; then
  FOCUS=$("$OUT/bin/scoreboard" regexp -suite "$SUITE" -names "$SUBSET")
  SKIP=""
fi
ginkgo_args=(--procs="$PROCS" --timeout="$TIMEOUT" --seed="$SEED" --no-color --silence-skips --focus="$FOCUS")
[ -z "$SKIP" ] || ginkgo_args+=(--skip="$SKIP")
if [ -z "$TRIAL$SUBSET" ] && [ -f "$EXCLUSIONS" ]; then
  while read -r re; do ginkgo_args+=(--skip="$re"); done < <("$OUT/bin/scoreboard" regexp -suite "$SUITE" -exclusions "$EXCLUSIONS")
fi
rm -rf "$OUT/report" "$OUT/work"
mkdir -p "$OUT/report" "$OUT/work"
test_args=(
  --container-runtime-endpoint="unix://$GK_CTRD_SOCK"
  --prepull-images=false
  --kubelet-config-file="$OUT/kubelet-config.yaml"
  --report-dir="$OUT/report"
  --node-name="$(hostname)"
)

# The suite runs the kubelet under systemd-run whenever that program is on
# PATH, systemd running or not; here it is installed but systemd is not PID
# 1, so its start fails.
#  - The sets that restart or reconfigure the kubelet (node-e2e-serial,
#    node-e2e-plugins, node-e2e-groups) need the suite's systemd branch: it
#    stops, restarts and finds the kubelet only through sudo and systemctl.
#    Their PATH starts with hack/node-e2e-systemd, a stand-in for exactly
#    those requests (its README.md says what it does and what it refuses).
#  - The others take the suite's branch for hosts without systemd, which runs
#    the kubelet as a child: a PATH whose /usr/bin (and /bin, a link to it)
#    lacks systemd-run and systemctl.
nosd=$OUT/usr-bin-without-systemd-run
export FAKE_SYSTEMD_STATE=$OUT/fake-systemd
rm -rf "$FAKE_SYSTEMD_STATE"
if [ -d /run/systemd/system ]; then
  suite_path=$PATH
else
  case $SET in
    node-e2e-serial | node-e2e-plugins | node-e2e-groups) suite_path=$GK_REPO_ROOT/hack/node-e2e-systemd:$PATH ;;
    *)
      rm -rf "$nosd" && mkdir -p "$nosd"
      for f in /usr/bin/*; do
        case ${f##*/} in systemd-run | systemctl) continue ;; esac
        ln -s "$f" "$nosd/${f##*/}"
      done
      suite_path=$(tr ':' '\n' <<<"$PATH" | sed "s#^/usr/bin\$#$nosd#; s#^/bin\$#$nosd#" | paste -sd:) ;;
  esac
fi
# The same sets stop and start the container runtime through systemd's
# D-Bus API (GetUnitByPID, StopUnit, StartUnit), and count on systemd to
# restart a runtime they kill (Restart=always). Without systemd,
# hack/tools/systemdbus serves that on systemd's private socket for this
# instance's containerd as containerd.service, and the suite finds the
# runtime's pid in the instance's pid file.
if [ ! -d /run/systemd/system ] && [[ $suite_path == "$GK_REPO_ROOT/hack/node-e2e-systemd:"* ]]; then
  go build -o "$OUT/bin/systemdbus" ./hack/tools/systemdbus
  unit="$GK_REPO_ROOT/hack/node-e2e-systemd/containerd-unit"
  "$OUT/bin/systemdbus" -socket /run/systemd/private -unit containerd.service -pidfile "$GK_CTRD_PID" \
    -start "$unit start $INST /docker-daemon" -stop "$unit stop $INST /docker-daemon" -restart-sec 5s \
    >"$OUT/systemdbus.log" 2>&1 9>&- &
  SYSTEMDBUS_PID=$!
  for _ in $(seq 50); do
    [ -S /run/systemd/private ] && break
    kill -0 "$SYSTEMDBUS_PID" 2>/dev/null || { cat "$OUT/systemdbus.log" >&2; gk_die "the systemd D-Bus stand-in did not start"; }
    sleep 0.1
  done
  [ -S /run/systemd/private ] || gk_die "the systemd D-Bus stand-in does not serve /run/systemd/private"
  test_args+=(--container-runtime-pid-file="$GK_CTRD_PID")
  note "systemd D-Bus stand-in on /run/systemd/private for containerd.service (log: $OUT/systemdbus.log)"
fi

stage "running the suite, $PROCS ginkgo processes (log: $OUT/ginkgo.log)"
start_run=$SECONDS
set +e
# The suite writes its kubeconfig and token file into its working directory.
(cd "$OUT/work" && PATH=$suite_path "$BIN/ginkgo" "${ginkgo_args[@]}" "$KBIN_DIR/e2e_node.test" -- "${test_args[@]}") >"$OUT/ginkgo.log" 2>&1 9>&-
ginkgo_rc=$?
set -e
wall=$((SECONDS - start_run))
note "ginkgo exited with $ginkgo_rc after $((wall / 60))m$((wall % 60))s"
junit=$(ls "$OUT"/report/junit*.xml 2>/dev/null | head -n 1)
[ -n "$junit" ] && [ -s "$junit" ] || { tail -n 40 "$OUT/ginkgo.log" >&2; gk_die "no JUnit report in $OUT/report: the suite did not run; log: $OUT/ginkgo.log"; }

stage "cleaning up: containerd '$INST'"
pkill -TERM -f "^$KBIN_DIR/kubelet " 2>/dev/null || true
[ -z "$REGISTRY_PID" ] || { kill "$REGISTRY_PID" 2>/dev/null || true; REGISTRY_PID=""; }
stop_systemdbus
hack/containerd.sh down "$INST" >/dev/null 9>&-
gk_umount_under "$ROOT" || true
CLEAN_INSTANCE=""

if [ -n "$SUBSET" ]; then
  "$OUT/bin/scoreboard" record -junit "$junit" -suite "$SUITE" -set subset -kubelet "$KIND" -focus "$FOCUS" \
    -commit "$commit" -kube-version "$KUBE_VERSION" -wall "$wall" -procs "$PROCS" -seed "$SEED" -out "$OUT/results.json" | sed 's/^/[node-e2e]    /'
  stage "checking that every spec of $SUBSET passed"
  set +e
  "$OUT/bin/scoreboard" check -results "$OUT/results.json" -names "$SUBSET" | sed 's/^/[node-e2e]    /'
  rc=${PIPESTATUS[0]}
  set -e
  echo "[node-e2e] done in $(((SECONDS - T0) / 60))m$(((SECONDS - T0) % 60))s"
  exit "$rc"
fi
if [ -n "$TRIAL" ]; then
  "$OUT/bin/scoreboard" record -junit "$junit" -suite "$SUITE" -set "$SET-trial" -kubelet "$KIND" -focus "$FOCUS" -skip "$SKIP" \
    -commit "$commit" -kube-version "$KUBE_VERSION" -wall "$wall" -procs "$PROCS" -seed "$SEED" -out "$OUT/results.json" | sed 's/^/[node-e2e]    /'
  echo "[node-e2e] trial run done in $(((SECONDS - T0) / 60))m$(((SECONDS - T0) % 60))s: no report written (results: $OUT/results.json)"
  exit 0
fi
stage "recording the results"
mkdir -p "$RESULTS_DIR"
excl=()
[ -f "$EXCLUSIONS" ] && excl=(-exclusions "$EXCLUSIONS")
"$OUT/bin/scoreboard" record -junit "$junit" -suite "$SUITE" -set "$SET" -kubelet "$KIND" -focus "$FOCUS" -skip "$SKIP" \
  "${excl[@]}" -commit "$commit" -kube-version "$KUBE_VERSION" -wall "$wall" -procs "$PROCS" -seed "$SEED" \
  -out "$RESULTS_DIR/$SET.$KIND.json" | sed 's/^/[node-e2e]    /'
"$OUT/bin/scoreboard" report -set "$SET" -set-doc "$SET_DOC" -results-dir "$RESULTS_DIR" -out "docs/conformance-$SET.md"
"$OUT/bin/scoreboard" index -results-dir "$RESULTS_DIR" -out docs/conformance.md
echo "[node-e2e] wrote docs/conformance-$SET.md, the overview docs/conformance.md and $RESULTS_DIR/$SET.$KIND.json in $(((SECONDS - T0) / 60))m$(((SECONDS - T0) % 60))s"
