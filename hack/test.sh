#!/usr/bin/env bash
# README command 2 (make test): installs what the tests need, then runs the
# unit tests and, verbosely, the integration tests against a real containerd
# (instance "test", started by the tests' harness when absent).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
hack/install-deps.sh
go vet ./...
echo "== unit tests"
go test -count=1 $(go list ./... | grep -v /test/)
echo "== integration tests (real containerd)"
mkdir -p _output
set +e
GOKUBELET_CRI_ENDPOINT=${GOKUBELET_CRI_ENDPOINT:-unix:///run/gokubelet/test/containerd.sock} \
  go test -count=1 -p 1 -v -timeout 45m ./test/... 2>&1 | tee _output/integration.log
status=${PIPESTATUS[0]}
set -e
exit "$status"
