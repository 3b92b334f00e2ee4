# See README.md. Every target installs what it needs, idempotently.
SHELL := /bin/bash
GO ?= go
OUT := _output

.PHONY: all build run stop down test images cluster cluster-down deps clean

all: build

build:
	$(GO) build -o $(OUT)/bin/kubelet ./cmd/kubelet

# README command 1: a standalone node running examples/static-pods.
run:
	hack/node.sh up

stop:
	hack/node.sh stop

down:
	hack/node.sh down

# README command 2. TEST_TIERS="unit integration e2e conformance" selects tiers.
test:
	hack/test.sh

# The suite N times in a row, with a report of which tests failed in which
# run (_output/repeat/report.md): make test-repeat N=5 [TEST_TIERS=e2e].
N ?= 5
.PHONY: test-repeat
test-repeat:
	hack/test-repeat.sh $(N)

deps:
	hack/install-deps.sh

# Import the local images (pause, test image) into the node's containerd.
images:
	hack/images.sh node

# A local control plane (etcd, kube-apiserver, controller-manager, scheduler,
# kube-proxy and CoreDNS)
# with this kubelet joined as its node.
cluster:
	hack/cluster.sh up

cluster-down:
	hack/cluster.sh down

clean:
	rm -rf $(OUT)

# Every Go fuzz target (func FuzzXxx beside the code), one after another,
# FUZZTIME each (default 10m): static pods, kubelet and virtual-node config,
# subPath, the atomic writer, the API's authorization mapping, CRI log lines
# and tails. make test runs their seed corpora as ordinary tests.
FUZZTIME ?= 10m
.PHONY: fuzz
fuzz:
	FUZZTIME=$(FUZZTIME) hack/fuzz.sh

# Side-by-side benchmark against the upstream kubelet on the local cluster;
# writes docs/benchmarks.md (see there). Well under 30 minutes here.
.PHONY: bench bench-churn bench-scale bench-logs
bench:
	hack/bench.sh

# kubectl logs --tail of 10 and 10,000 lines on a generated 100 MiB log
# (pkg/runtime/logs BenchmarkTail; seconds, no cluster); also the last step
# of make bench. Writes docs/benchmarks.md's logs section.
bench-logs:
	BENCH_MODE=logs hack/bench.sh

# Thousands of pods created and deleted through our kubelet; reports what
# the node accumulates (dead containers, images, logs, pod directories,
# cgroups) and the kubelet's RSS in docs/benchmarks.md's churn section.
# BENCH_CHURN=N sets the number of pods (default 2000).
bench-churn:
	BENCH_MODE=churn hack/bench.sh

# The conformance scoreboard: the upstream e2e suite's parallel
# [NodeConformance] specs against this kubelet as the local cluster's node;
# writes docs/conformance-node.md (both kubelets' columns) and the overview
# of every set, docs/conformance.md. 30-60 minutes, plus
# the first build of the suite. Variables: CONFORMANCE_KUBELET=upstream (the
# upstream kubelet, for the comparison column), CONFORMANCE_SET=full
# or serial (other spec sets), CONFORMANCE_SUBSET=FILE (just those specs, as
# make test does). See docs/conformance-run.md.
.PHONY: conformance
conformance:
	hack/conformance.sh

# Virtual nodes at scale: 1,000 pods created at once onto one mock-backed
# virtual node, against the API server's floor, Virtual Kubelet's mock
# provider and KWOK (both built from the Go module proxy), then one round of
# 10,000, then one round of 100 virtual nodes in one process with 100 pods
# each (Virtual Kubelet, one node per process, sits that out); pods/s and
# memory per virtual pod and per virtual node in docs/benchmarks.md's scale
# section. BENCH_SCALE, BENCH_SCALE_LARGE, BENCH_SCALE_NODES,
# BENCH_SCALE_PODS_PER_NODE (0: skip) and BENCH_ROUNDS set the sizes.
bench-scale:
	BENCH_MODE=scale hack/bench.sh
