#!/usr/bin/env bash
# README command 2 (make test): installs what the tests need, brings up the
# project's test containerd (instance "test") with the local images, then
# runs the unit tests and, verbosely, the integration tests against it.
# Nothing is skipped: tests that need containerd get its endpoint.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
hack/install-deps.sh
hack/containerd.sh up test
hack/images.sh test
export GOKUBELET_CRI_ENDPOINT=unix://$(hack/containerd.sh socket test)
go vet ./...
echo "== unit tests (and the runtime manager against containerd)"
go test -count=1 $(go list ./... | grep -v /test/)
echo "== integration tests (the kubelet binary against containerd)"
mkdir -p _output
set +e
go test -count=1 -p 1 -v -timeout 45m ./test/... 2>&1 | tee _output/integration.log
status=${PIPESTATUS[0]}
set -e
exit "$status"
