#!/usr/bin/env bash
# Fidelity of `kurabe system` against the original UnixBench test programs.
#
# Runs each of the 12 index tests with UnixBench's own binary and with
# kurabe, interleaved (the order flips every round so drift hits both), for
# ROUNDS rounds with the same duration, and prints per test the median rate
# of each and the median ratio kurabe/original. Rates are computed the way
# UnixBench's Run driver does: COUNT per wall-clock elapsed time for lps/lpm
# tests, the program's own figure for KBps (file copy) and MWIPS.
#
# You build UnixBench yourself, outside this repository (kdlucas/byte-unixbench,
# `make` in UnixBench/), and point this script at its pgms directory:
#
#   UB_PGMS=/tmp/ub/UnixBench/pgms bench/system-fidelity.sh
#
# Environment:
#   UB_PGMS     UnixBench's built pgms/ directory (required)
#   UB_TESTDIR  its testdir/ with sort.src (default: $UB_PGMS/../testdir)
#   KURABE      kurabe binary (default: target/release/kurabe; build with
#               `cargo build --release -p kurabe`; the Execl helper is built in)
#   ROUNDS      rounds per test (default 5)
#   SECS        seconds per run (default 5; whole seconds, fstime needs >= 1).
#               Whetstone always runs ~10 s: UnixBench's build fixes its duration.
#   TESTS       space-separated test ids (default: all 12)
#   PAIRING     interleaved (default): one side after the other, the order
#               flipping every round; concurrent: both sides of a round run
#               at the same time, so load from other jobs hits both alike
#               (use it on a busy machine, where the load changes between
#               two back-to-back runs by more than the effect to measure;
#               the two sides then also share the CPUs with each other)
#
# Needs: bash, date, awk, sort, and jq or python3 to read kurabe's JSON.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${UB_PGMS:?set UB_PGMS to a built UnixBench pgms directory}"
UB_TESTDIR=${UB_TESTDIR:-$UB_PGMS/../testdir}
KURABE=${KURABE:-${CARGO_TARGET_DIR:-target}/release/kurabe}
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-5}
TESTS=${TESTS:-"dhry2reg whetstone-double execl fstime fsbuffer fsdisk pipe context1 spawn shell1 shell8 syscall"}
PAIRING=${PAIRING:-interleaved}
case $PAIRING in interleaved|concurrent) ;; *) echo "PAIRING must be interleaved or concurrent" >&2; exit 2 ;; esac

[ -x "$KURABE" ] || { echo "no kurabe binary at $KURABE; cargo build --release -p kurabe" >&2; exit 2; }
[ -x "$UB_PGMS/pipe" ] || { echo "no UnixBench programs in $UB_PGMS" >&2; exit 2; }
[ -f "$UB_TESTDIR/sort.src" ] || { echo "no sort.src in $UB_TESTDIR; set UB_TESTDIR" >&2; exit 2; }

# UnixBench's Run exports these; the shell test's speed depends on LANG.
export LANG=en_US.utf8 UB_BINDIR="$UB_PGMS"

work=$(mktemp -d "${TMPDIR:-/tmp}/kurabe-fidelity.XXXXXX")
trap 'rm -rf "$work"' EXIT
results=$work/results

now() { date +%s.%N; }

json_result() {
  if command -v jq >/dev/null 2>&1; then
    jq -r '.runs[0].tests[0].result'
  else
    python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["tests"][0]["result"])'
  fi
}

# The original: print the rate as Run computes it.
ub_rate() {
  local t=$1 s=$2 start end out count base
  case $t in
    whetstone-double) out=$("$UB_PGMS/whetstone-double" 2>&1 >/dev/null) ;;
    fstime)   out=$("$UB_PGMS/fstime" -c -t "$s" -d "$work" -b 1024 -m 2000 2>&1 >/dev/null) ;;
    fsbuffer) out=$("$UB_PGMS/fstime" -c -t "$s" -d "$work" -b 256 -m 500 2>&1 >/dev/null) ;;
    fsdisk)   out=$("$UB_PGMS/fstime" -c -t "$s" -d "$work" -b 4096 -m 8000 2>&1 >/dev/null) ;;
    shell1|shell8)
      start=$(now)
      out=$(cd "$UB_TESTDIR" && "$UB_PGMS/looper" "$s" "$UB_PGMS/multi.sh" "${t#shell}" 2>&1 >/dev/null)
      end=$(now) ;;
    *)
      start=$(now)
      out=$("$UB_PGMS/$t" "$s" 2>&1 >/dev/null)
      end=$(now) ;;
  esac
  count=$(printf '%s\n' "$out" | grep '^COUNT|' | tail -1 | cut -d'|' -f2)
  base=$(printf '%s\n' "$out" | grep '^COUNT|' | tail -1 | cut -d'|' -f3)
  if [ "$base" = 0 ]; then
    echo "$count"
  else
    awk -v c="$count" -v b="$base" -v s="$start" -v e="$end" 'BEGIN { printf "%.3f\n", c / ((e - s) / b) }'
  fi
}

ku_rate() {
  local t=$1 s=$2 mode=(--quick)
  # File copy: UnixBench's 2 s write and read phases and settling sleeps, as fstime does.
  case $t in fstime|fsbuffer|fsdisk) mode=() ;; whetstone-double) s=10 ;; esac
  TMPDIR=$work "$KURABE" system "${mode[@]}" --tests "$t" --seconds "$s" --passes 1 -c 1 --format json | json_result
}

echo "kurabe system fidelity: $ROUNDS rounds x ${SECS}s per test, $PAIRING; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$ROUNDS"); do
  for t in $TESTS; do
    if [ "$PAIRING" = concurrent ]; then
      ub_rate "$t" "$SECS" >"$work/ub.out" &
      ku=$(ku_rate "$t" "$SECS")
      wait $!
      ub=$(cat "$work/ub.out")
      printf '%s ub %s\n%s ku %s\n' "$t" "$ub" "$t" "$ku" >>"$results"
      printf 'round %d %-17s ub %s ku %s\n' "$round" "$t" "$ub" "$ku" >&2
      continue
    fi
    if [ $((round % 2)) -eq 1 ]; then order="ub ku"; else order="ku ub"; fi
    for side in $order; do
      v=$("${side}_rate" "$t" "$SECS")
      echo "$t $side $v" >>"$results"
      printf 'round %d %-17s %s %s\n' "$round" "$t" "$side" "$v" >&2
    done
  done
done
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

printf '\n%-17s %16s %16s %10s %s\n' TEST ORIGINAL KURABE RATIO "RATIO PER ROUND"
for t in $TESTS; do
  ub=$(awk -v t="$t" '$1 == t && $2 == "ub" { print $3 }' "$results" | median)
  ku=$(awk -v t="$t" '$1 == t && $2 == "ku" { print $3 }' "$results" | median)
  # Median of the per-round ratios (pairs from the same round).
  ratios=$(awk -v t="$t" '$1 == t { v[$2, ++n[$2]] = $3 } END { for (i = 1; i <= n["ub"]; i++) if (v["ub", i] > 0) printf "%.3f\n", v["ku", i] / v["ub", i] }' "$results")
  printf '%-17s %16.1f %16.1f %10s %s\n' "$t" "$ub" "$ku" "$(printf '%s\n' "$ratios" | median)" "$(echo $ratios)"
done
