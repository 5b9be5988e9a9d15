#!/usr/bin/env bash
# bench/probe-cost.sh — what `kurabe watch` itself costs, at 10 Hz on a 20-process tree.
#
# Two trees of 20 processes: "small" (sh + 19 sleeps) and "20x20MiB" (20 perl
# processes, each with 20 MiB of private, touched memory, so smaps_rollup has
# real pages to walk). For ROUNDS rounds, interleaved, it runs
#   kurabe watch -p ROOT --interval 0.1 --duration DURATION --format json
#   top -b -d 0.1 -n N -p <the 20 PIDs>          (the peer people use; no PSS)
# each under /usr/bin/time, and prints per tree the medians of: the tool's own
# CPU % of one core (user+sys / elapsed, from /usr/bin/time, start-up included),
# and from kurabe's report: samples, processes per sample, the sampler's own
# CPU % (thread CPU clock) and µs per process per sample, and deferred PSS reads.
# Target (issue 3): kurabe's own CPU ≤ 1 % of one core.
#
# Env: ROUNDS (3), DURATION (20, seconds), KURABE (path of the kurabe binary;
# default: cargo build --release, then target/release/kurabe).
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-20}
command -v jq >/dev/null || { echo "bench: needs jq" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench: needs /usr/bin/time (package time)" >&2; exit 2; }

if [ -z "${KURABE:-}" ]; then
  echo "bench: cargo build --release -p kurabe" >&2
  cargo build --release -q -p kurabe
  KURABE="${CARGO_TARGET_DIR:-target}/release/kurabe"
fi

work=$(mktemp -d /tmp/kurabe-probe-cost.XXXXXX)
tree_pid=""
stop_tree() {
  if [ -n "$tree_pid" ]; then
    kill -- -"$tree_pid" 2>/dev/null || true
    wait "$tree_pid" 2>/dev/null || true
  fi
  tree_pid=""
}
cleanup() { stop_tree; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# Start a tree in its own process group; sets tree_pid and waits for 20 processes.
start_tree() {
  case "$1" in
    small)
      setsid sh -c 'for i in $(seq 19); do sleep 100000 & done; wait' &
      ;;
    20x20MiB)
      setsid perl -e 'my $d = "x" x (20 << 20); for (1 .. 19) { if (!fork()) { my $e = "y" x (20 << 20); sleep 100000 while 1 } } sleep 100000 while 1' &
      ;;
  esac
  tree_pid=$!
  for _ in $(seq 100); do
    n=$(pgrep -g "$tree_pid" | wc -l)
    [ "$n" -ge 20 ] && return 0
    sleep 0.1
  done
  echo "bench: tree $1 did not reach 20 processes" >&2
  exit 1
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
cpu_pct() { awk '{printf "%.3f\n", ($1+$2)/$3*100}' "$1"; }

printf '%-9s %-6s %10s %8s %8s %12s %14s %9s\n' tree tool "own CPU %" samples procs "sampler %" "µs/proc/sample" deferred
for tree in small 20x20MiB; do
  start_tree "$tree"
  pids=$(pgrep -g "$tree_pid" | awk 'NR <= 20' | paste -sd, -)
  : >"$work/k_cpu"; : >"$work/t_cpu"; : >"$work/k_us"; : >"$work/k_samp"; : >"$work/k_n"; : >"$work/k_procs"; : >"$work/k_def"
  for r in $(seq "$ROUNDS"); do
    run_kurabe() {
      /usr/bin/time -f '%U %S %e' -o "$work/time" \
        "$KURABE" watch -p "$tree_pid" --interval 0.1 --duration "$DURATION" --format json -o "$work/r.json"
      cpu_pct "$work/time" >>"$work/k_cpu"
      jq -r '.sampler.us_per_process_sample' "$work/r.json" >>"$work/k_us"
      jq -r '.sampler.cpu_percent' "$work/r.json" >>"$work/k_samp"
      jq -r '.samples' "$work/r.json" >>"$work/k_n"
      jq -r '.processes_max' "$work/r.json" >>"$work/k_procs"
      jq -r '.sampler.pss_reads_deferred' "$work/r.json" >>"$work/k_def"
    }
    run_top() {
      /usr/bin/time -f '%U %S %e' -o "$work/time" \
        top -b -d 0.1 -n $((DURATION * 10)) -p "$pids" >/dev/null
      cpu_pct "$work/time" >>"$work/t_cpu"
    }
    if [ $((r % 2)) -eq 1 ]; then run_kurabe; run_top; else run_top; run_kurabe; fi
  done
  k=$(median <"$work/k_cpu"); t=$(median <"$work/t_cpu")
  printf '%-9s %-6s %10.3f %8s %8s %12.3f %14.1f %9s\n' "$tree" kurabe "$k" "$(median <"$work/k_n")" \
    "$(median <"$work/k_procs")" "$(median <"$work/k_samp")" "$(median <"$work/k_us")" "$(median <"$work/k_def")"
  printf '%-9s %-6s %10.3f\n' "$tree" top "$t"
  awk -v k="$k" -v t="$t" -v tr="$tree" 'BEGIN {if (t > 0) printf "%-9s ratio  kurabe/top own CPU = %.2f×\n", tr, k/t}'
  stop_tree
done
