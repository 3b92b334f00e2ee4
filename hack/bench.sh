#!/usr/bin/env bash
# Side-by-side benchmark: our kubelet against the upstream kubelet (same
# version as the control plane) on the local cluster, plus a floor driven
# straight through CRI. Writes docs/benchmarks.md and prints the table.
#
#   hack/bench.sh            (make bench)
#
# Environment: BENCH_ROUNDS (default 3), BENCH_ARGS (extra flags for
# test/bench, e.g. "-batch-large 20" for a quick try, or "-floor-only
# -floor-slots N" to time the floor alone with N start slots, which writes
# nothing), BENCH_OUT (default
# docs/benchmarks.md), BENCH_MODE=churn (make bench-churn: our kubelet only,
# BENCH_CHURN pods, default 2000; rewrites only the churn section),
# BENCH_MODE=scale (make bench-scale: virtual nodes against the API server's
# floor, Virtual Kubelet and KWOK, no container runtime; BENCH_SCALE pods on
# one node, default 1000, BENCH_ROUNDS rounds, then one round of
# BENCH_SCALE_LARGE on one node, default 10000, 0 for none, then one round of
# BENCH_SCALE_NODES nodes per contender, default 100, with
# BENCH_SCALE_PODS_PER_NODE pods each, default 100, 0 for none: our kubelet
# and KWOK play every node in one process, Virtual Kubelet, one node per
# process, sits that round out; rewrites only the scale section),
# BENCH_MODE=logs (make bench-logs: only the container-log tail benchmark,
# no cluster; rewrites only the logs section, and holds no lock). Holds
# /run/gokubelet/cluster.lock throughout, like the e2e tier, because both use
# the cluster's one node identity.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/versions.sh"
gk_require_root
cd "$GK_REPO_ROOT"

ROUNDS=${BENCH_ROUNDS:-3}
OUT=${BENCH_OUT:-docs/benchmarks.md}
BENCH_DIR=$GK_OUTPUT/bench
WORK=/var/lib/gokubelet/bench/run
LOCK=/run/gokubelet/cluster.lock

mkdir -p /run/gokubelet "$BENCH_DIR"

# The container-log step: kubectl logs --tail on a generated 100 MiB log
# (pkg/runtime/logs BenchmarkTail), a few seconds, no cluster; writes the
# logs section of $OUT. Part of every `make bench`; alone with
# BENCH_MODE=logs (make bench-logs).
bench_logs() {
  local out=$BENCH_DIR/logs-bench.txt
  go test -run '^$' -bench '^BenchmarkTail$' -benchtime "${BENCH_LOGS_TIMES:-10}x" ./pkg/runtime/logs >"$out"
  go build -o "$BENCH_DIR/bench" ./test/bench
  local commit
  commit=$(git rev-parse --short HEAD)
  git diff --quiet HEAD -- pkg/runtime/logs 2>/dev/null || commit="$commit (with uncommitted changes in pkg/runtime/logs)"
  "$BENCH_DIR/bench" -logs-bench "$out" -out "$OUT" -commit "$commit"
  echo "bench: wrote the logs section of $OUT" >&2
}
if [ "${BENCH_MODE:-}" = logs ]; then
  bench_logs
  exit 0
fi

exec 9>"$LOCK"
if ! flock -n 9; then
  echo "bench: waiting for $LOCK (another cluster user, e.g. the e2e tier)" >&2
  flock 9
fi

# Children get the lock's descriptor closed (9>&-): a daemon started below
# (containerd, a control-plane component) would otherwise inherit it and hold
# the lock after this script ends.
hack/install-deps.sh 9>&-

if [ "${BENCH_MODE:-}" = scale ]; then
  # Virtual nodes only: the control plane, the contenders' identity, the
  # contenders built from the Go module proxy (cached).
  mapfile -t contenders < <(hack/build-contenders.sh 9>&-)
  CLUSTER_NODE=0 hack/cluster.sh up >/dev/null 9>&-
  hack/node.sh stop >/dev/null 9>&-
  # --shared: every contender acts as this one identity (our kubelet's node
  # with identity: shared), so its flow schema counts each one's requests.
  vn_kubeconfig=$(hack/virtual-nodes.sh creds --shared 9>&-)
  admin=(kubectl --kubeconfig /var/lib/gokubelet/cluster/admin.kubeconfig)
  "${admin[@]}" apply -f hack/bench-scale.yaml >/dev/null
  trap '"${admin[@]}" delete --ignore-not-found -f hack/bench-scale.yaml >/dev/null' EXIT
  go build -o "$BENCH_DIR/kubelet" ./cmd/kubelet
  go build -o "$BENCH_DIR/bench" ./test/bench
  commit=$(git rev-parse --short HEAD)
  git diff --quiet HEAD -- cmd pkg go.mod go.sum 2>/dev/null || commit="$commit (with uncommitted changes in cmd/pkg)"
  rm -rf "$WORK/scale"
  mkdir -p "$WORK"
  # shellcheck disable=SC2086
  "$BENCH_DIR/bench" -ours "$BENCH_DIR/kubelet" -scale "${BENCH_SCALE:-1000}" -scale-rounds "$ROUNDS" \
    -scale-large "${BENCH_SCALE_LARGE:-10000}" \
    -scale-nodes "${BENCH_SCALE_NODES:-100}" -scale-pods-per-node "${BENCH_SCALE_PODS_PER_NODE:-100}" \
    -vk "${contenders[0]}" -vk-version "$VK_VERSION" -kwok "${contenders[1]}" -kwok-version "$KWOK_VERSION" \
    -kwok-config "$(dirname "$(dirname "${contenders[1]}")")/kwok.yaml" -contender-kubeconfig "$vn_kubeconfig" \
    -work-dir "$WORK" -out "$OUT" -commit "$commit" ${BENCH_ARGS:-} 9>&-
  echo "bench: wrote the scale section of $OUT; logs in $WORK/scale" >&2
  exit 0
fi
# The upstream kubelet, cached by version like the control plane (minutes on
# the first run).
[ "${BENCH_MODE:-}" = churn ] || hack/build-upstream.sh kubelet csi-mock >&2 9>&-
UPSTREAM_KUBELET=$UPSTREAM_CACHE/$KUBE_VERSION/bin/kubelet
CSI_MOCK=$UPSTREAM_CACHE/$KUBE_VERSION/bin/csi-mock

# The control plane only; the node kubelet of `make cluster` would claim the
# same Node.
CLUSTER_NODE=0 hack/cluster.sh up >/dev/null 9>&-
hack/node.sh stop >/dev/null 9>&-

hack/containerd.sh up bench 9>&-
hack/images.sh bench 9>&-

go build -o "$BENCH_DIR/kubelet" ./cmd/kubelet
go build -o "$BENCH_DIR/bench" ./test/bench

commit=$(git rev-parse --short HEAD)
git diff --quiet HEAD -- cmd pkg go.mod go.sum 2>/dev/null || commit="$commit (with uncommitted changes in cmd/pkg)"

# The upstream kubelet leaves its root dir bind-mounted on itself.
findmnt -rn -o TARGET | grep -E "^$WORK(/|$)" | sort -r | xargs -r -n1 umount -l || true
rm -rf "$WORK"
mkdir -p "$WORK"
if [ "${BENCH_MODE:-}" = churn ]; then
  # shellcheck disable=SC2086
  "$BENCH_DIR/bench" -ours "$BENCH_DIR/kubelet" -churn "${BENCH_CHURN:-2000}" \
    -cri "unix://$(hack/containerd.sh socket bench)" \
    -work-dir "$WORK" -out "$OUT" -commit "$commit" ${BENCH_ARGS:-} 9>&-
  echo "bench: wrote the churn section of $OUT; kubelet log in $WORK" >&2
  exit 0
fi
# hack/containerd.sh gives the bench containerd a runtime handler "crun" when
# Debian's crun is installed; the benchmark tries it and reports what it gives.
crun_args=()
if [ -x /usr/bin/crun ]; then crun_args=(-crun-handler crun); fi
# shellcheck disable=SC2086
"$BENCH_DIR/bench" -ours "$BENCH_DIR/kubelet" -upstream "$UPSTREAM_KUBELET" -csi-mock "$CSI_MOCK" "${crun_args[@]}" \
  -rounds "$ROUNDS" -cri "unix://$(hack/containerd.sh socket bench)" \
  -work-dir "$WORK" -out "$OUT" -commit "$commit" ${BENCH_ARGS:-} 9>&-
# -floor-only (an experiment: the floor alone, its figures in the log)
# writes no report, so the logs section is not rewritten either.
case " ${BENCH_ARGS:-} " in *" -floor-only "*) exit 0 ;; esac
echo "bench: wrote $OUT; kubelet logs in $WORK" >&2
bench_logs 9>&-
