#!/usr/bin/env bash
# README command 2 (make test): installs what the tests need, brings up the
# project's test containerd (instance "test") with the local images, builds
# (once, cached) the upstream control plane, then runs the test tiers:
#
#   unit          go vet, the README layout check, unit tests (and the CRI
#                 runtime manager against containerd instance "test-rt")
#   integration   the kubelet binary against containerd (test/integration),
#                 twice: on containerd 2.x (CONTAINERD_VERSION, instance
#                 "test-rt") and on Debian's containerd 1.6 (instance "test16")
#   e2e           a real local cluster driven as a user would (test/e2e)
#   conformance   the upstream e2e specs of test/conformance/subset.txt (specs
#                 this kubelet passes) against it on the local cluster, with
#                 hack/conformance.sh; the full run is `make conformance`
#   node-e2e      the specs of upstream's node e2e suite listed in
#                 test/conformance/subset-node-e2e.txt, with hack/node-e2e.sh:
#                 e2e_node.test starts this kubelet itself (it stops the
#                 local cluster, whose ports it needs)
#
# Two lanes run side by side: the runtime lane (unit, then integration) on a
# containerd instance of its own ("test-rt"; its kubelets keep their pods
# under a cgroup root of their own), and the cluster lane (the upstream
# builds, e2e, conformance, node-e2e) on instance "test" and the local
# cluster. They share one thing, the host's fixed device plugin socket
# (/var/lib/kubelet/device-plugins/kubelet.sock, served by every kubelet):
# the end-to-end device plugin test waits for the runtime lane to end
# (GOKUBELET_TEST_DEVICE_PLUGIN_DIR_FREE), then restarts its kubelet, which
# creates the socket anew. The runtime lane's output goes to
# _output/test-runtime-lane.log and is printed once both lanes end. Most of the
# cluster lane's time is waiting (certificate lifetimes, call timeouts, an
# outage of two minutes), so the runtime lane costs it little; on a first
# run the conformance tiers' suites (e2e.test, e2e_node.test) build beside
# the end-to-end tier for the same reason.
#
# Nothing is skipped: tests that need containerd get its endpoint. Each stage
# prints a progress line with its duration, so a newcomer sees where the time
# goes. TEST_TIERS selects tiers (default "unit integration e2e conformance
# node-e2e");
# the logs of the tiers are kept in _output/test-<tier>.log, the process logs
# of failed tests in _output/test-logs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
TIERS=${TEST_TIERS:-unit integration e2e conformance node-e2e}
mkdir -p _output
# Process logs of failed tests (framework.LogOnFailure) are this run's only:
# a stale file of an earlier run would push a new log to "-2".
rm -rf _output/test-logs

t0=$SECONDS
stage_start=$SECONDS
stage() { # stage NAME: closes the previous stage's line, opens the next
  if [ -n "${current:-}" ]; then
    echo "== $current: done in $((SECONDS - stage_start))s"
  fi
  current=$1
  stage_start=$SECONDS
  [ -n "$current" ] && echo "== $current ..."
  return 0
}
wants() { [[ " $TIERS " == *" $1 "* ]]; }

stage "dependencies (Debian packages: containerd 1.6, runc, CNI plugins, etcd, umoci, busybox)"
hack/install-deps.sh
. hack/versions.sh
if [ "$CONTAINERD_FLAVOR" = debian ]; then ctrd_name="Debian's containerd 1.6"; else ctrd_name="containerd $CONTAINERD_VERSION"; fi
# The kubelets under test evict below 2 GiB available on this machine's own
# disk (test/kubelet-disk.yaml: absolute, because a filesystem's size
# can be far above what its users may write, as on these machines). Below
# that the node is, correctly, under DiskPressure and rejects every new pod
# as Evicted, so tests would fail far from the cause: say it here instead.
# A first run on a fresh machine writes about 12 GB of caches.
disk_avail_gib() { df --output=avail -B1G "$1" | awk 'NR == 2 { print $1 + 0 }'; }
mkdir -p /var/lib/gokubelet
avail_gib=$(disk_avail_gib /var/lib/gokubelet)
if [ "$avail_gib" -lt 6 ]; then
  echo "== FAILED: the filesystem of /var/lib/gokubelet has ${avail_gib} GiB available; the kubelets under test are under DiskPressure below 2 GiB and the run itself writes more. Free some space (e.g. go clean -cache) and re-run." >&2
  exit 1
elif [ "$avail_gib" -lt 16 ]; then
  echo "== warning: the filesystem of /var/lib/gokubelet has only ${avail_gib} GiB available; a first run writes about 12 GB of caches, and below 2 GiB the kubelets under test reject new pods as Evicted."
fi
stage "test $ctrd_name and local images (the first run builds containerd from the Go module proxy: minutes; cached after)"
hack/containerd.sh up test
hack/images.sh test
export GOKUBELET_CRI_ENDPOINT=unix://$(hack/containerd.sh socket test)

status=0
# The unit tier's `go vet ./...` checks every package of the module, test
# files included, with all of vet's analyzers: go test's own vet pass (a
# subset of them) would only repeat it, at about a second of CPU a package
# on a cold cache.
vet_flag=
if wants unit; then vet_flag=-vet=off; fi
# tier NAME GO-TEST-ARGS...: runs one Go test tier, logs it, remembers a
# failure. tier_env adds environment variables (KEY=value) for it.
tier_env=()
tier() {
  local name=$1
  shift
  set +e
  env "${tier_env[@]}" go test -count=1 $vet_flag "$@" 2>&1 | tee "_output/test-$name.log"
  local rc=${PIPESTATUS[0]}
  set -e
  if [ "$rc" != 0 ]; then
    echo "== $name: FAILED (see _output/test-$name.log)"
    status=1
  fi
}

# runtime_lane: the unit and integration tiers, on containerd instance
# test-rt (and test16 for containerd 1.6); exits non-zero if one failed.
runtime_lane() {
  set -e
  # The integration kubelets serve the device plugins' registration socket
  # on the host's fixed /var/lib/kubelet/device-plugins/kubelet.sock, as
  # every kubelet does: the end-to-end tier's device plugin test waits for
  # this file (however the lane ends) so that no kubelet of this lane takes
  # its sample plugin's registration.
  trap '[ -z "${lane_done:-}" ] || touch "$lane_done"' EXIT
  current=""
  export GOKUBELET_TEST_INSTANCE=test-rt
  stage "containerd instance test-rt ($ctrd_name) and its images, for the unit and integration tiers"
  hack/containerd.sh up test-rt
  hack/images.sh test-rt
  export GOKUBELET_CRI_ENDPOINT=unix://$(hack/containerd.sh socket test-rt)
  if wants unit; then
    stage "unit tests (go vet, layout check, packages; the runtime manager against containerd)"
    go vet ./...
    go run ./hack/tools/layout -check
    tier unit $(go list ./... | grep -v /test/) ./test/bench ./test/conformance/... ./test/framework
  fi
  if wants integration; then
    stage "integration tests on $ctrd_name (the kubelet binary against containerd)"
    tier integration -p 1 -v -timeout 30m ./test/integration
    # The same tier on Debian's containerd 1.6, still supported: its own
    # instance (so test-rt keeps 2.x), stopped afterwards (its images stay).
    stage "integration tests on Debian's containerd 1.6 (instance test16)"
    CONTAINERD_FLAVOR=debian hack/containerd.sh up test16
    CONTAINERD_FLAVOR=debian hack/images.sh test16
    tier_env=(CONTAINERD_FLAVOR=debian GOKUBELET_TEST_INSTANCE=test16 "GOKUBELET_CRI_ENDPOINT=unix://$(hack/containerd.sh socket test16)")
    tier integration-containerd16 -p 1 -v -timeout 30m ./test/integration
    tier_env=()
    CONTAINERD_FLAVOR=debian hack/containerd.sh down test16 >/dev/null
  fi
  hack/containerd.sh down test-rt >/dev/null
  stage ""
  return "$status"
}

# finish_lane waits for the runtime lane running beside, prints its output
# and counts its failure; on any exit, so that no tier outlives this script.
lane_pid=
finish_lane() {
  [ -n "$lane_pid" ] || return 0
  echo "== waiting for the unit and integration tiers"
  local rc=0
  wait "$lane_pid" || rc=$?
  lane_pid=
  echo "== the unit and integration tiers' output (_output/test-runtime-lane.log):"
  cat _output/test-runtime-lane.log
  if [ "$rc" != 0 ]; then
    echo "== unit and integration tiers: FAILED (see above)"
    status=1
  fi
}
trap finish_lane EXIT
if wants unit || wants integration; then
  stage ""
  if wants e2e || wants conformance || wants node-e2e; then
    echo "== unit and integration tiers: running beside the rest (output in _output/test-runtime-lane.log, printed when they end)"
    lane_done=$PWD/_output/.runtime-lane-done
    rm -f "$lane_done"
    export GOKUBELET_TEST_DEVICE_PLUGIN_DIR_FREE=$lane_done
    runtime_lane >_output/test-runtime-lane.log 2>&1 &
    lane_pid=$!
  else
    set +e
    runtime_lane 2>&1 | tee _output/test-runtime-lane.log
    rc=${PIPESTATUS[0]}
    set -e
    [ "$rc" = 0 ] || status=1
  fi
fi

if wants e2e || wants conformance; then
  stage "upstream control plane and kube-proxy (the first run builds them from the Go module proxy: minutes; cached after)"
  hack/build-upstream.sh kube-apiserver kube-controller-manager kube-scheduler kube-proxy
  stage "upstream kubelets $KUBE_VERSION and $KUBE_PREVIOUS_VERSION for the takeover tests (the first run builds them: minutes; cached after)"
  hack/build-upstream.sh kubelet
  export GOKUBELET_UPSTREAM_KUBELET=$UPSTREAM_CACHE/$KUBE_VERSION/bin/kubelet
  KUBE_VERSION=$KUBE_PREVIOUS_VERSION hack/build-upstream.sh kubelet
  export GOKUBELET_UPSTREAM_KUBELET_PREVIOUS=$UPSTREAM_CACHE/$KUBE_PREVIOUS_VERSION/bin/kubelet
  stage "upstream's mock CSI driver, sample device plugin and DRA test driver $KUBE_VERSION for the plugin tests (the first run builds them: minutes; cached after)"
  hack/build-upstream.sh csi-mock
  export GOKUBELET_CSI_MOCK=$UPSTREAM_CACHE/$KUBE_VERSION/bin/csi-mock
  hack/build-upstream.sh sample-device-plugin
  export GOKUBELET_SAMPLE_DEVICE_PLUGIN=$UPSTREAM_CACHE/$KUBE_VERSION/bin/sample-device-plugin
  hack/build-upstream.sh dra-test-driver
  export GOKUBELET_DRA_TEST_DRIVER=$UPSTREAM_CACHE/$KUBE_VERSION/bin/dra-test-driver
  stage "the CSI controller sidecars (external-provisioner, external-attacher, external-resizer): csi-provisioner, csi-attacher and csi-resizer for the CSI tests (the first run builds them: minutes; cached after)"
  csi_sidecars=$(hack/build-csi-sidecars.sh)
  GOKUBELET_CSI_PROVISIONER=$(sed -n 1p <<<"$csi_sidecars")
  GOKUBELET_CSI_ATTACHER=$(sed -n 2p <<<"$csi_sidecars")
  GOKUBELET_CSI_RESIZER=$(sed -n 3p <<<"$csi_sidecars")
  export GOKUBELET_CSI_PROVISIONER GOKUBELET_CSI_ATTACHER GOKUBELET_CSI_RESIZER
fi

# The suites of the conformance tiers build while the end-to-end tier runs,
# which mostly waits (a first run; later ones find them cached).
prebuild_pid=
if wants e2e && { wants conformance || wants node-e2e; }; then
  hack/build-upstream.sh e2e.test e2e_node.test ginkgo kubectl agnhost nonewprivs >_output/test-prebuild.log 2>&1 &
  prebuild_pid=$!
fi
# finish_prebuild waits for that build; a failure is the conformance
# tiers' to report (they build what is missing themselves).
finish_prebuild() {
  [ -n "$prebuild_pid" ] || return 0
  wait "$prebuild_pid" || echo "== building the conformance suites beside the end-to-end tier failed (_output/test-prebuild.log): the conformance tiers try again"
  prebuild_pid=
}
trap 'finish_prebuild; finish_lane' EXIT
if wants e2e; then
  stage "end-to-end tests (a local cluster: etcd, kube-apiserver, controller-manager, scheduler, this kubelet)"
  # -parallel 5: the tests that wait side by side at the end of the tier
  # (parallelOnSharedKubelet) all at once; the others run one at a time.
  tier e2e -p 1 -parallel 5 -v -timeout 45m ./test/e2e
fi
if [ -n "$prebuild_pid" ]; then
  stage "the upstream suites e2e.test and e2e_node.test (built beside the end-to-end tier on a first run)"
  finish_prebuild
fi
if wants conformance; then
  stage "conformance subset (upstream e2e specs of test/conformance/subset.txt; the first run builds the suite, kube-proxy and CoreDNS: minutes)"
  set +e
  CONFORMANCE_SUBSET=test/conformance/subset.txt hack/conformance.sh 2>&1 | tee _output/test-conformance.log
  rc=${PIPESTATUS[0]}
  set -e
  if [ "$rc" != 0 ]; then
    echo "== conformance: FAILED (see _output/test-conformance.log)"
    status=1
  fi
fi
if wants node-e2e; then
  stage "node e2e subset (upstream e2e_node.test specs of test/conformance/subset-node-e2e.txt; the first run builds the suite: minutes)"
  set +e
  CONFORMANCE_SET=node-e2e CONFORMANCE_SUBSET=test/conformance/subset-node-e2e.txt hack/node-e2e.sh 2>&1 | tee _output/test-node-e2e.log
  rc=${PIPESTATUS[0]}
  set -e
  if [ "$rc" != 0 ]; then
    echo "== node-e2e: FAILED (see _output/test-node-e2e.log)"
    status=1
  fi
fi
stage ""
finish_lane
echo "== make test: $([ $status = 0 ] && echo passed || echo FAILED) in $((SECONDS - t0))s (tiers: $TIERS)"
exit "$status"
