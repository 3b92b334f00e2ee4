#!/usr/bin/env bash
# make fuzz: runs every Go fuzz target of the repository (func FuzzXxx in a
# _test.go file beside the code it fuzzes), one after another, each for
# FUZZTIME (default 10m). What a target finds is written by Go to the
# package's testdata/fuzz/<target>/; commit it with the fix as a
# regression seed, which `make test` then runs with the other seeds.
#
#   make fuzz                        every target, 10 minutes each
#   FUZZTIME=1m make fuzz            shorter
#   FUZZ_TARGETS="FuzzTail FuzzWrite" make fuzz    only these
#   FUZZ_PARALLEL=1 make fuzz        fuzzing workers (default GOMAXPROCS)
#
# Targets are found by their declaration, so a new one is included without
# editing this script. The run stops at the first target that fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
FUZZTIME=${FUZZTIME:-10m}

mapfile -t found < <(grep -rl --include='*_test.go' -E '^func Fuzz[A-Z0-9_][A-Za-z0-9_]*\(f \*testing\.F\)' cmd pkg internal 2>/dev/null | sort |
  while read -r file; do
    for name in $(grep -oE '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //'); do
      echo "./$(dirname "$file") $name"
    done
  done)
[ "${#found[@]}" -gt 0 ] || { echo "fuzz: no fuzz targets found" >&2; exit 1; }

start=$SECONDS
ran=0
for entry in "${found[@]}"; do
  pkg=${entry% *}
  name=${entry#* }
  if [ -n "${FUZZ_TARGETS:-}" ] && ! [[ " $FUZZ_TARGETS " == *" $name "* ]]; then
    continue
  fi
  echo "== fuzz: $name in $pkg for $FUZZTIME" >&2
  t0=$SECONDS
  go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" ${FUZZ_PARALLEL:+-parallel "$FUZZ_PARALLEL"} "$pkg"
  echo "== fuzz: $name: clean after $((SECONDS - t0))s" >&2
  ran=$((ran + 1))
done
echo "== fuzz: $ran targets clean in $((SECONDS - start))s" >&2
