#!/usr/bin/env bash
# Runs the test suite (or some tiers) N times in a row and reports which
# tests failed in which run, so a flaky test shows itself.
#
#   hack/test-repeat.sh [N]          (make test-repeat N=5 [TEST_TIERS="e2e"])
#
# Every run's full output is kept in _output/repeat/run-<i>.log; the report
# is printed and written to _output/repeat/report.md. Exits non-zero when
# any run failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
N=${1:-${N:-5}}
OUT=_output/repeat
rm -rf "$OUT"
mkdir -p "$OUT"
failed_runs=0
{
  echo "# make test, $N runs in a row"
  echo
  echo "$(date -u +%FT%TZ), commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- cmd pkg test hack 2>/dev/null || echo ' (with uncommitted changes)'), tiers: ${TEST_TIERS:-unit integration e2e conformance}"
  echo
  echo "| run | result | duration | failed tests |"
  echo "| --- | --- | --- | --- |"
} >"$OUT/report.md"
for i in $(seq 1 "$N"); do
  echo "== test-repeat: run $i of $N"
  start=$SECONDS
  hack/test.sh >"$OUT/run-$i.log" 2>&1
  rc=$?
  dur=$((SECONDS - start))
  # Failed tests: go test's "--- FAIL: Name" lines, and packages that
  # failed without one (a build failure, a crash, a timeout).
  fails=$(grep -oE -- '--- FAIL: [^ ]+' "$OUT/run-$i.log" | awk '{print $3}' | sort -u | paste -sd, -)
  pkgs=$(grep -E '^FAIL[[:space:]]+[^ ]+' "$OUT/run-$i.log" | awk '{print $2}' | sort -u | paste -sd, -)
  result=passed
  if [ "$rc" != 0 ]; then
    result=FAILED
    failed_runs=$((failed_runs + 1))
    [ -n "$fails" ] || fails="(no test named; packages: ${pkgs:-see log})"
  fi
  echo "| $i | $result | ${dur}s | ${fails:-} |" >>"$OUT/report.md"
  echo "== test-repeat: run $i $result in ${dur}s ${fails:+(failed: $fails)}"
done
echo >>"$OUT/report.md"
echo "$((N - failed_runs)) of $N runs passed." >>"$OUT/report.md"
cat "$OUT/report.md"
[ "$failed_runs" = 0 ]
