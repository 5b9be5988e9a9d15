#!/bin/sh
# unixbench-compare, step by step: this machine measured by `kurabe system`
# against a UnixBench report (the text file UnixBench's ./Run writes under
# results/), test by test.
#
#   sh steps.sh [UNIXBENCH_REPORT]     (default: reference/ in this directory)
#
# KURABE: kurabe binary (default: kurabe on PATH). KURABE_QUICK=1: the
# quick index (about 35 s per copy count) instead of the full one.
set -eu
cd "$(dirname "$0")"
KURABE=${KURABE:-kurabe}
report=${1:-reference/unixbench-6.0.0-vm-2026-11-29-1copy.txt}
# The tests the reference report ran (a full UnixBench run has all 12).
tests=${TESTS:-dhry2reg,whetstone-double,execl,pipe,context1,spawn,syscall,shell1}
out=${OUT:-out}
mkdir -p "$out"

echo "# 1. Import the UnixBench report into kurabe's result model"
"$KURABE" system import "$report" -o "$out/reference.json"
"$KURABE" system import "$report" --format text | sed -n '1,40p'

echo "# 2. Measure this machine with kurabe system (same tests, 1 copy)"
quick=""
[ "${KURABE_QUICK:-1}" = 1 ] && quick="--quick"
# shellcheck disable=SC2086
"$KURABE" system $quick --tests "$tests" -c 1 --format json -o "$out/here.json"

echo "# 3. Compare test by test: here relative to the report"
"$KURABE" system compare "$out/reference.json" "$out/here.json"
"$KURABE" system compare "$out/reference.json" "$out/here.json" --format md > "$out/compare.md"
echo "(Markdown: $out/compare.md)"
