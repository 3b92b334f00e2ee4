#!/usr/bin/env bash
# The conformance scoreboard (make conformance): runs the upstream end-to-end
# suite of the pinned version against a kubelet that is the node of the
# local cluster, and writes the report. See docs/conformance-run.md.
#
#   hack/conformance.sh
#
# Environment:
#   CONFORMANCE_KUBELET   ours (default) | upstream: the upstream kubelet of
#                         KUBE_VERSION, same settings, same cluster and containerd
#   CONFORMANCE_SET       node (default): [NodeConformance] without [Serial],
#                           [Disruptive], [Flaky], [Slow]
#                         full: every [Conformance] spec that may run in
#                           parallel (without [Serial], [Disruptive], [Flaky]),
#                           the set that certifies a distribution less the
#                           serial part
#                         serial: the [Serial] specs of [NodeConformance] and
#                           [Conformance] (without [Disruptive], [Flaky])
#                         node-e2e, node-e2e-serial, node-e2e-plugins,
#                         node-e2e-groups: upstream's node e2e
#                           suite, which starts the kubelet itself
#                           (hack/node-e2e.sh)
#   CONFORMANCE_SUBSET    FILE: run exactly the specs FILE lists (one full name a
#                         line) and fail unless every one passes; writes no
#                         report (the CI tier of hack/test.sh uses
#                         test/conformance/subset.txt)
#   CONFORMANCE_PROCS     ginkgo processes (default 4; 1 for the serial set)
#   CONFORMANCE_TIMEOUT   ginkgo suite timeout (default 3h)
#   CONFORMANCE_SEED      ginkgo's random seed, which orders the specs
#                         (default 1796042239, the seed of the upstream
#                         kubelet's recorded node-e2e-plugins run): runs of
#                         both kubelets with one seed meet the specs in the
#                         same order, which the [Serial] sets depend on
#
# A full run writes test/conformance/results/<set>.<kubelet>.json,
# regenerates the set's page docs/conformance-<set>.md from the last results
# of both kubelets, and the overview of every set, docs/conformance.md.
# Run logs, the JUnit report and the kubelet log stay in
# _output/conformance/<set>-<kubelet>/. Exits non-zero when the run itself
# could not be done (or, with CONFORMANCE_SUBSET, when a listed spec did not
# pass); failing specs of a full run are the report's content, not an error.
# INT or TERM while the suite runs stops ginkgo, which still writes its
# report: the specs that ran are recorded (and the report regenerated) as
# for a whole run, said to be interrupted, and the exit status is 130.
#
# Holds /run/gokubelet/cluster.lock (like the e2e tier and make bench: one
# node identity). Replaces the node of `make cluster`: its kubelet is stopped
# and its pods removed (hack/node.sh down); `make cluster` brings it back.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/versions.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib-cluster.sh"
gk_require_root
cd "$GK_REPO_ROOT"

KIND=${CONFORMANCE_KUBELET:-ours}
SET=${CONFORMANCE_SET:-node}
case $SET in node-e2e | node-e2e-serial | node-e2e-plugins | node-e2e-groups) exec hack/node-e2e.sh ;; esac
SUBSET=${CONFORMANCE_SUBSET:-}
TIMEOUT=${CONFORMANCE_TIMEOUT:-3h}
SEED=${CONFORMANCE_SEED:-1796042239}
[[ $SEED =~ ^[1-9][0-9]*$ ]] || gk_die "CONFORMANCE_SEED must be a positive integer, not '$SEED'"
case $KIND in
  ours) WHO="our kubelet" ;;
  upstream) WHO="the upstream kubelet $KUBE_VERSION" ;;
  *) gk_die "CONFORMANCE_KUBELET must be ours or upstream, not '$KIND'" ;;
esac

case $SET in
  node)
    FOCUS='\[NodeConformance\]'
    SKIP='\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Slow\]'
    SET_DOC='the [NodeConformance] specs that may run in parallel'
    PROCS=${CONFORMANCE_PROCS:-4} ;;
  full)
    FOCUS='\[Conformance\]'
    SKIP='\[Serial\]|\[Disruptive\]|\[Flaky\]'
    SET_DOC='every [Conformance] spec that may run in parallel'
    PROCS=${CONFORMANCE_PROCS:-4} ;;
  serial)
    FOCUS='(\[NodeConformance\]|\[Conformance\]).*\[Serial\]|\[Serial\].*(\[NodeConformance\]|\[Conformance\])'
    SKIP='\[Disruptive\]|\[Flaky\]'
    SET_DOC='the [Serial] specs of [NodeConformance] and [Conformance]'
    PROCS=${CONFORMANCE_PROCS:-1} ;;
  *) gk_die "CONFORMANCE_SET must be node, full, serial, node-e2e, node-e2e-serial, node-e2e-plugins or node-e2e-groups, not '$SET'" ;;
esac

BIN=$UPSTREAM_CACHE/$KUBE_VERSION/bin
KUBECTL=$BIN/kubectl
EXCLUSIONS=test/conformance/exclusions.txt
RESULTS_DIR=test/conformance/results
if [ -n "$SUBSET" ]; then
  [ -f "$SUBSET" ] || gk_die "CONFORMANCE_SUBSET: $SUBSET not found"
  OUT=$GK_OUTPUT/conformance/subset-$KIND
else
  OUT=$GK_OUTPUT/conformance/$SET-$KIND
fi
WORK=/var/lib/gokubelet/conformance/kubelet
INST=conformance
ADMIN=$CLUSTER_DIR/admin.kubeconfig
LOCK=/run/gokubelet/cluster.lock
KUBELET_PORT=10250
HEALTHZ_PORT=10248

# ---- progress ------------------------------------------------------------------

T0=$SECONDS
stage_name="" stage_start=$SECONDS
stage() {
  [ -z "$stage_name" ] || echo "[conformance]    (took $((SECONDS - stage_start))s)"
  stage_name=$1 stage_start=$SECONDS
  echo "[conformance] == $1"
}
note() { echo "[conformance]    $*"; }
kc() { "$KUBECTL" --kubeconfig "$ADMIN" "$@"; }

# ---- the kubelet ---------------------------------------------------------------

KUBELET_PID=""
stop_kubelet() {
  [ -n "$KUBELET_PID" ] || return 0
  if kill -0 "$KUBELET_PID" 2>/dev/null; then
    kill -TERM "$KUBELET_PID" 2>/dev/null || true
    local i
    for i in $(seq 1 150); do kill -0 "$KUBELET_PID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$KUBELET_PID" 2>/dev/null && kill -KILL "$KUBELET_PID" 2>/dev/null || true
  fi
  KUBELET_PID=""
}

# Both kubelets get the same configuration; failCgroupV1: false is what the
# upstream kubelet needs on these cgroup v1 machines (ours defaults to it).
# The kubelet API listens on the node IP (the apiserver proxies logs, exec
# and port-forward there), accepts client certificates of the cluster CA and
# allows what they ask: the apiserver's is system:masters.
write_kubelet_config() {
  local node_ip=$1
  mkdir -p "$WORK/static" "$WORK/root" "$WORK/pod-logs"
  cat >"$WORK/config.yaml" <<EOF
# Written by hack/conformance.sh.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: $WORK/static
containerRuntimeEndpoint: unix://$GK_CTRD_SOCK
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
address: $node_ip
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $HEALTHZ_PORT
podLogsDir: $WORK/pod-logs
clusterDomain: $CLUSTER_DOMAIN
clusterDNS: ["$CLUSTER_DNS_IP"]
resolvConf: /etc/resolv.conf
tlsCertFile: $PKI_DIR/kubelet-serving.crt
tlsPrivateKeyFile: $PKI_DIR/kubelet-serving.key
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: $PKI_DIR/ca.crt
authorization:
  mode: AlwaysAllow
EOF
  cat "$GK_REPO_ROOT/test/kubelet-disk.yaml" >>"$WORK/config.yaml"
}

start_kubelet() {
  local bin=$1 node_name=$2 node_ip=$3 args
  args=(--config "$WORK/config.yaml" --root-dir "$WORK/root" --kubeconfig "$CLUSTER_DIR/node.kubeconfig"
    --hostname-override "$node_name" --node-ip "$node_ip" -v 2)
  # The upstream kubelet's default is /var/lib/kubelet/pki, not under --root-dir.
  [ "$KIND" = upstream ] && args+=(--cert-dir "$WORK/root/pki")
  setsid "$bin" "${args[@]}" >"$OUT/kubelet.log" 2>&1 </dev/null &
  KUBELET_PID=$!
  local i
  for i in $(seq 1 600); do
    curl -fsS "http://127.0.0.1:$HEALTHZ_PORT/healthz" >/dev/null 2>&1 && return 0
    kill -0 "$KUBELET_PID" 2>/dev/null || { tail -n 30 "$OUT/kubelet.log" >&2; gk_die "$WHO exited; log: $OUT/kubelet.log"; }
    sleep 0.1
  done
  tail -n 30 "$OUT/kubelet.log" >&2
  gk_die "the healthz of $WHO did not answer within 60s; log: $OUT/kubelet.log"
}

# Removes what earlier runs left in the API: namespaces the e2e framework made
# (label e2e-run) and their pods, which no kubelet will finalize now.
clean_leftovers() {
  local ns
  ns=$(kc get namespaces -l e2e-run -o name 2>/dev/null | sed 's|^namespace/||')
  [ -n "$ns" ] || return 0
  note "removing $(wc -w <<<"$ns") namespaces left by earlier runs"
  # shellcheck disable=SC2086
  kc delete namespace $ns --wait=false >/dev/null 2>&1 || true
  for n in $ns; do
    kc -n "$n" delete pods --all --force --grace-period=0 >/dev/null 2>&1 || true
  done
  local i
  for i in $(seq 1 60); do
    [ -z "$(kc get namespaces -l e2e-run -o name 2>/dev/null)" ] && return 0
    sleep 2
  done
  note "warning: some namespaces of earlier runs are still terminating: $(kc get namespaces -l e2e-run -o name | tr '\n' ' ')"
}

cleanup() {
  local rc=$?
  stop_kubelet
  if [ -n "${CLEAN_INSTANCE:-}" ]; then
    hack/containerd.sh down "$INST" >/dev/null 2>&1 || gk_warn "hack/containerd.sh down $INST failed"
    gk_umount_under "$WORK" || true
  fi
  exit "$rc"
}
trap cleanup EXIT
# INT or TERM before the suite runs: stop. While it runs: pass it to ginkgo,
# which stops the specs and still writes its report, and record what ran
# (the results then say the run was interrupted), then exit 130.
interrupted=""
ginkgo_pid=""
on_signal() {
  if [ -z "$ginkgo_pid" ]; then exit 130; fi
  interrupted=1
  note "interrupted: stopping ginkgo; the specs that ran are recorded"
  kill -TERM "$ginkgo_pid" 2>/dev/null || true
}
trap on_signal INT TERM

# ---- the run -------------------------------------------------------------------

mkdir -p /run/gokubelet "$OUT"
exec 9>"$LOCK"
if ! flock -n 9; then
  note "waiting for $LOCK (another user of the cluster's node identity, e.g. the e2e tier)"
  flock 9
fi
what="set $SET"
[ -z "$SUBSET" ] || what="the $(grep -cv '^\s*\(#\|$\)' "$SUBSET") specs of $SUBSET"
echo "[conformance] upstream e2e suite $KUBE_VERSION, $what, $WHO; output in $OUT"

# Children get the lock's descriptor closed (9>&-): a daemon started below
# would otherwise inherit it and hold the lock after this script ends.
stage "dependencies (Debian packages, only the missing ones)"
hack/install-deps.sh 9>&-

stage "upstream binaries: e2e.test, ginkgo, kubectl, kube-proxy, CoreDNS$([ "$KIND" = upstream ] && echo ", kubelet") (built once, cached by version)"
targets=(e2e.test ginkgo kubectl kube-proxy agnhost nonewprivs)
[ "$KIND" = upstream ] && targets+=(kubelet)
hack/build-upstream.sh "${targets[@]}" 9>&- | sed 's/^/[conformance]    /'
hack/build-coredns.sh 9>&- | sed 's/^/[conformance]    /'
mkdir -p "$OUT/bin"
# The commit the results are recorded against: the tree's as the kubelet
# is built (it may move on while the suite runs).
commit=$(git rev-parse --short HEAD)
git diff --quiet HEAD -- cmd pkg go.mod go.sum 2>/dev/null || commit="$commit+dirty"
go build -o "$OUT/bin/scoreboard" ./test/conformance/scoreboard
if [ "$KIND" = ours ]; then
  go build -o "$OUT/bin/kubelet" ./cmd/kubelet
  KUBELET_BIN=$OUT/bin/kubelet
else
  KUBELET_BIN=$BIN/kubelet
fi

stage "control plane, kube-proxy and CoreDNS (hack/cluster.sh up)"
CLUSTER_NODE=0 hack/cluster.sh up >/dev/null 9>&-
# shellcheck disable=SC1091
. "$CLUSTER_DIR/kubelet-env"
[ -n "$CLUSTER_DNS" ] || gk_die "the cluster runs without add-ons (CLUSTER_ADDONS=0); the suite needs kube-proxy and CoreDNS"
node_status=$(hack/node.sh status 2>/dev/null || true)
if grep -q 'kubelet: running\|containerd: running' <<<"$node_status"; then
  note "stopping the node of make cluster and removing its pods (make cluster brings it back)"
fi
hack/node.sh down >/dev/null 9>&-

stage "containerd instance '$INST' with the local and e2e images"
gk_instance "$INST"
CLEAN_INSTANCE=1
# A clean runtime: no pod of an earlier run survives.
hack/containerd.sh down "$INST" >/dev/null 9>&-
gk_umount_under "$WORK" || gk_die "leftover mounts under $WORK"
rm -rf --one-file-system "$WORK"
hack/containerd.sh up "$INST" 9>&-
hack/images.sh "$INST" 9>&-
hack/e2e-images.sh "$INST" 9>&- 2>&1 | sed 's/^/[conformance]    /'

stage "starting $WHO as node $NODE_NAME"
clean_leftovers
# A fresh Node object: nothing a previous kubelet reported (labels, images,
# annotations) carries over to this one.
kc delete node "$NODE_NAME" --ignore-not-found >/dev/null
write_kubelet_config "$NODE_IP"
start_kubelet "$KUBELET_BIN" "$NODE_NAME" "$NODE_IP"
# (kubectl wait fails at once while the Node does not exist yet.)
for i in $(seq 1 240); do
  [ "$(kc get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ] && break
  kill -0 "$KUBELET_PID" 2>/dev/null || { tail -n 30 "$OUT/kubelet.log" >&2; gk_die "$WHO exited; log: $OUT/kubelet.log"; }
  [ "$i" -lt 240 ] || { tail -n 30 "$OUT/kubelet.log" >&2; gk_die "node $NODE_NAME not Ready within 120s; log: $OUT/kubelet.log"; }
  sleep 0.5
done
# kube-proxy (1.37) exits when its Node object is deleted (pkg/proxy's
# NodeManager), as it was above for a fresh Node: start it again now that the
# kubelet registered the node (cluster.sh up starts only what is not running).
CLUSTER_NODE=0 hack/cluster.sh up >/dev/null 9>&-
for i in $(seq 1 120); do
  curl -fsS "http://127.0.0.1:$KUBE_PROXY_HEALTHZ_PORT/healthz" >/dev/null 2>&1 && break
  [ "$i" -lt 120 ] || gk_die "kube-proxy not healthy within 60s; log: $CLUSTER_LOG_DIR/kube-proxy.log"
  sleep 0.5
done
# The framework's first check of the nodes comes before the suite's specs,
# and the next one 30 s later (e2enode.WaitForAllNodesSchedulable polls every
# 30 s): a new Node still carries the not-ready taint until the node
# lifecycle controller sees it Ready. Wait for the taints to go here.
for i in $(seq 1 120); do
  taints=$(kc get node "$NODE_NAME" -o go-template='{{range .spec.taints}}{{if or (eq .effect "NoSchedule") (eq .effect "NoExecute")}}{{.key}} {{end}}{{end}}' 2>/dev/null || echo "?")
  [ -n "$taints" ] || break
  [ "$i" -lt 120 ] || { note "warning: node $NODE_NAME still has the taints $taints after 60s; the suite waits for them to go"; break; }
  sleep 0.5
done
others=$(kc get pods -A --field-selector "spec.nodeName=$NODE_NAME" -o name 2>/dev/null | wc -l)
[ "$others" = 0 ] || note "warning: $others pods of other workloads are bound to the node and run beside the tests"
# Other Node objects: the framework waits until every schedulable node is
# Ready and free of NoSchedule/NoExecute taints (cordoned ones it ignores).
# NotReady or tainted ones (a stopped kubelet's leftover, a virtual node)
# take no test pods and are tolerated by count; a Ready, schedulable,
# untainted one would run test pods on a kubelet that is not under test, so
# the run stops.
tmpl='{{range .items}}{{.metadata.name}}{{"\t"}}{{range .status.conditions}}{{if eq .type "Ready"}}{{.status}}{{end}}{{end}}{{"\t"}}{{if .spec.unschedulable}}true{{else}}false{{end}}{{"\t"}}{{range .spec.taints}}{{if or (eq .effect "NoSchedule") (eq .effect "NoExecute")}}{{.key}} {{end}}{{end}}{{"\n"}}{{end}}'
other_nodes=$(kc get nodes -o go-template="$tmpl" | awk -F'\t' -v me="$NODE_NAME" '$1 != "" && $1 != me && $3 != "true"')
live=$(awk -F'\t' '$2 == "True" && $4 == "" { print $1 }' <<<"$other_nodes")
[ -z "$live" ] || gk_die "other nodes are Ready, schedulable and untainted, test pods would run there: $(echo $live); stop their kubelets or cordon them"
tolerated=$(awk 'NF' <<<"$other_nodes" | wc -l)
[ "$tolerated" = 0 ] || note "warning: $tolerated other nodes are NotReady or tainted ($(awk -F'\t' '{ print $1 }' <<<"$other_nodes" | tr '\n' ' ')); tolerated with --allowed-not-ready-nodes=$tolerated"

focus=$FOCUS skip=$SKIP
if [ -n "$SUBSET" ]; then
  focus=$("$OUT/bin/scoreboard" regexp -names "$SUBSET")
  skip=""
fi
ginkgo_args=(--procs="$PROCS" --timeout="$TIMEOUT" --seed="$SEED" --no-color --silence-skips --focus="$focus")
[ -z "$skip" ] || ginkgo_args+=(--skip="$skip")
while read -r re; do ginkgo_args+=(--skip="$re"); done < <("$OUT/bin/scoreboard" regexp -exclusions "$EXCLUSIONS")
rm -rf "$OUT/report"
mkdir -p "$OUT/report" "$OUT/e2e-output"
e2e_args=(
  --provider=local
  --kubeconfig="$ADMIN"
  --kubectl-path="$KUBECTL"
  --report-dir="$OUT/report"
  --e2e-output-dir="$OUT/e2e-output"
  --dns-domain="$CLUSTER_DOMAIN"
  --node-os-distro=debian
  --repo-root="$(go env GOMODCACHE)/k8s.io/kubernetes@$KUBE_VERSION"
  --allowed-not-ready-nodes="$tolerated"
  --node-schedulable-timeout=5m
  --system-pods-startup-timeout=5m
  --minStartupPods=0
  --disable-log-dump
)

# The count is for the progress line only (awk's regular expressions are
# close enough to Go's for these); the results count what ran.
nspecs=$("$BIN/e2e.test" --list-tests 2>/dev/null | sed -n 's/^    [^ ]*:[0-9]*: //p' | F=$focus S=$skip awk '
  { t = "Kubernetes e2e suite " $0 } t ~ ENVIRON["F"] && (ENVIRON["S"] == "" || t !~ ENVIRON["S"]) { n++ } END { print n + 0 }' 2>/dev/null || echo "?")
stage "running the suite: $nspecs specs (before exclusions), $PROCS ginkgo processes (log: $OUT/ginkgo.log)"
start_run=$SECONDS
# A progress line a minute, counted from ginkgo's output (• a spec done).
(
  while sleep 60; do
    # (grep finds nothing before the first spec ends: not an error here)
    done_n=$( (grep -o '•' "$OUT/ginkgo.log" 2>/dev/null || true) | wc -l)
    failed_n=$(grep -c '^• \[\(FAILED\|TIMEDOUT\|PANICKED\|INTERRUPTED\)\]' "$OUT/ginkgo.log" 2>/dev/null || true)
    note "$(((SECONDS - start_run) / 60)) min: $done_n specs done, ${failed_n:-0} failed so far"
  done
) 9>&- &
progress_pid=$!
set +e
KUBECONFIG=$ADMIN "$BIN/ginkgo" "${ginkgo_args[@]}" "$BIN/e2e.test" -- "${e2e_args[@]}" >"$OUT/ginkgo.log" 2>&1 9>&- &
ginkgo_pid=$!
# wait returns early (above 128) when a trapped signal arrives; wait again
# until ginkgo has ended (and is reaped: kill -0 then fails).
while :; do
  wait "$ginkgo_pid"
  ginkgo_rc=$?
  kill -0 "$ginkgo_pid" 2>/dev/null || break
done
ginkgo_pid=""
set -e
kill "$progress_pid" 2>/dev/null || true
wait "$progress_pid" 2>/dev/null || true
wall=$((SECONDS - start_run))
note "ginkgo exited with $ginkgo_rc after $((wall / 60))m$((wall % 60))s"
junit=$OUT/report/junit_01.xml
[ -s "$junit" ] || { tail -n 40 "$OUT/ginkgo.log" >&2; gk_die "no JUnit report ($junit): the suite did not run; log: $OUT/ginkgo.log"; }

stage "cleaning up: test namespaces, the kubelet, containerd '$INST'"
for i in $(seq 1 90); do
  [ -z "$(kc get namespaces -l e2e-run -o name 2>/dev/null)" ] && break
  sleep 2
done
left=$(kc get namespaces -l e2e-run -o name 2>/dev/null | wc -l)
[ "$left" = 0 ] || note "$left test namespaces still terminating after 3 min with $WHO (removed at the next run)"
stop_kubelet
hack/containerd.sh down "$INST" >/dev/null 9>&-
gk_umount_under "$WORK" || true
CLEAN_INSTANCE=""

stage "recording the results$([ -z "$interrupted" ] || echo " (interrupted: only the specs that ran)")"
if [ -n "$SUBSET" ]; then
  "$OUT/bin/scoreboard" record -junit "$junit" -set subset -kubelet "$KIND" -focus "$focus" \
    -commit "$commit" -kube-version "$KUBE_VERSION" -wall "$wall" -procs "$PROCS" -seed "$SEED" -out "$OUT/results.json" | sed 's/^/[conformance]    /'
  stage "checking that every spec of $SUBSET passed"
  set +e
  "$OUT/bin/scoreboard" check -results "$OUT/results.json" -names "$SUBSET" | sed 's/^/[conformance]    /'
  rc=${PIPESTATUS[0]}
  set -e
  echo "[conformance] done in $(((SECONDS - T0) / 60))m$(((SECONDS - T0) % 60))s"
  [ -z "$interrupted" ] || exit 130
  exit "$rc"
fi
mkdir -p "$RESULTS_DIR"
"$OUT/bin/scoreboard" record -junit "$junit" -set "$SET" -kubelet "$KIND" -focus "$FOCUS" -skip "$SKIP" \
  -exclusions "$EXCLUSIONS" -commit "$commit" -kube-version "$KUBE_VERSION" -wall "$wall" -procs "$PROCS" -seed "$SEED" \
  -out "$RESULTS_DIR/$SET.$KIND.json" | sed 's/^/[conformance]    /'
report=docs/conformance-$SET.md
"$OUT/bin/scoreboard" report -set "$SET" -set-doc "$SET_DOC" -results-dir "$RESULTS_DIR" -out "$report"
"$OUT/bin/scoreboard" index -results-dir "$RESULTS_DIR" -out docs/conformance.md
stage "done"
echo "[conformance] wrote $report and $RESULTS_DIR/$SET.$KIND.json in $(((SECONDS - T0) / 60))m$(((SECONDS - T0) % 60))s"
if [ -n "$interrupted" ]; then
  note "the run was interrupted: $RESULTS_DIR/$SET.$KIND.json counts only the specs that ran"
  exit 130
fi
