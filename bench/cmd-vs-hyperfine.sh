#!/usr/bin/env bash
# bench/cmd-vs-hyperfine.sh — `kurabe cmd` against hyperfine: accuracy and cost.
#
# Accuracy: for each command of 5 ms and more (two sleeps and a CPU-bound
# loop), through the shell (each tool subtracts the shell's start-up) and
# with -N, ROUNDS rounds, the two tools in alternating order, each
#   kurabe cmd  -w 3 -r RUNS --no-save --export-json …  CMD
#   hyperfine   -w 3 -r RUNS           --export-json …  CMD
# and the median over rounds of each tool's mean wall time; printed with
# the ratio kurabe/hyperfine and the difference (target: within 2 %).
#
# Cost: `true` with -N, OVERHEAD_RUNS runs, the tools alternating for ROUNDS
# rounds; the tool's own wall time (start to exit) and CPU time (user +
# system of the tool and everything it ran, from /usr/bin/time) divided by
# the number of runs are its cost per run (target: kurabe's no higher than
# hyperfine's), with the ratios kurabe/hyperfine. CPU time is the figure
# a busy machine disturbs least. kurabe
# is measured twice: saving to a fresh store (the default; one fsync'd
# commit per block) and with --no-save.
#
# Then, when strace is there, system calls per run of `true -N` over all
# processes (600 runs less 100), a count the load does not change.
#
# Prints the load average first: figures from a busy machine say so.
# Env: ROUNDS (5), RUNS (30), OVERHEAD_RUNS (1000), KURABE (path of the
# kurabe binary; default: cargo build --release, then target/release/kurabe).
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-5}
RUNS=${RUNS:-30}
OVERHEAD_RUNS=${OVERHEAD_RUNS:-1000}
command -v jq >/dev/null || { echo "bench: needs jq" >&2; exit 2; }
command -v hyperfine >/dev/null || { echo "bench: needs hyperfine" >&2; exit 2; }

if [ -z "${KURABE:-}" ]; then
  echo "bench: cargo build --release -p kurabe" >&2
  cargo build --release -q -p kurabe
  KURABE="${CARGO_TARGET_DIR:-target}/release/kurabe"
fi

work=$(mktemp -d /tmp/kurabe-cmd-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)  ($(nproc) CPUs)"
echo "hyperfine: $(hyperfine --version)   kurabe: $("$KURABE" --version)"

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

kurabe_mean() {
  "$KURABE" cmd -q -w 3 -r "$RUNS" --no-save --export-json "$work/k.json" "$@" >/dev/null
  jq '.results[0].mean' "$work/k.json"
}
hyperfine_mean() {
  hyperfine -w 3 -r "$RUNS" --style none --export-json "$work/h.json" "$@" >/dev/null 2>&1
  jq '.results[0].mean' "$work/h.json"
}

echo
echo "accuracy: mean wall time, median of $ROUNDS rounds of $RUNS runs (tools alternating)"
printf '%-40s %11s %12s %8s %8s\n' command kurabe_ms hyperfine_ms k/h diff
for c in 'sleep 0.005' 'sleep 0.02' "perl -e 'my \$x = 0; \$x += \$_ for 1 .. 300000'"; do
  for mode in shell -N; do
    flags=(); [ "$mode" = -N ] && flags=(-N)
    : >"$work/k"; : >"$work/h"
    for r in $(seq "$ROUNDS"); do
      if [ $((r % 2)) -eq 1 ]; then
        kurabe_mean "${flags[@]}" "$c" >>"$work/k"; hyperfine_mean "${flags[@]}" "$c" >>"$work/h"
      else
        hyperfine_mean "${flags[@]}" "$c" >>"$work/h"; kurabe_mean "${flags[@]}" "$c" >>"$work/k"
      fi
    done
    k=$(median <"$work/k"); h=$(median <"$work/h")
    awk -v c="$(printf '%.33s' "$c") ($mode)" -v k="$k" -v h="$h" \
      'BEGIN { printf "%-40s %11.3f %12.3f %8.3f %+7.2f%%\n", c, k*1e3, h*1e3, k/h, (k/h-1)*100 }'
  done
done

# Wall and CPU seconds of one tool invocation: "WALL CPU".
elapsed() {
  /usr/bin/time -f '%e %U %S' -o "$work/time" "$@" >/dev/null 2>&1
  awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' "$work/time"
}

echo
echo "cost per run on \`true\` with -N, $OVERHEAD_RUNS runs, median of $ROUNDS rounds (tools alternating)"
: >"$work/ok"; : >"$work/on"; : >"$work/oh"
for r in $(seq "$ROUNDS"); do
  rm -f "$work/store.db"*
  k=(elapsed "$KURABE" cmd -q -N -r "$OVERHEAD_RUNS" --store "$work/store.db" true)
  kn=(elapsed "$KURABE" cmd -q -N -r "$OVERHEAD_RUNS" --no-save true)
  h=(elapsed hyperfine -N -r "$OVERHEAD_RUNS" --style none true)
  if [ $((r % 2)) -eq 1 ]; then
    "${k[@]}" >>"$work/ok"; "${kn[@]}" >>"$work/on"; "${h[@]}" >>"$work/oh"
  else
    "${h[@]}" >>"$work/oh"; "${kn[@]}" >>"$work/on"; "${k[@]}" >>"$work/ok"
  fi
done
hw=$(cut -d' ' -f1 "$work/oh" | median); hc=$(cut -d' ' -f2 "$work/oh" | median)
printf '%-20s %14s %18s %9s %9s\n' tool 'wall µs/run' 'CPU µs/run' 'k/h wall' 'k/h CPU'
for t in "kurabe (saved):ok" "kurabe --no-save:on" "hyperfine:oh"; do
  name=${t%%:*}; f=${t##*:}
  w=$(cut -d' ' -f1 "$work/$f" | median); c=$(cut -d' ' -f2 "$work/$f" | median)
  awk -v n="$name" -v w="$w" -v c="$c" -v hw="$hw" -v hc="$hc" -v runs="$OVERHEAD_RUNS" \
    'BEGIN { printf "%-20s %14.1f %18.1f %9.3f %9.3f\n", n, w/runs*1e6, c/runs*1e6, w/hw, c/hc }'
done

# Load-independent: system calls per run of `true -N` over all processes
# (strace -f -c; LONG runs less SHORT runs, so start-up cancels).
if command -v strace >/dev/null; then
  syscalls() { strace -f -c -o "$work/strace" "$@" >/dev/null 2>&1; awk '$NF == "total" { print $4 }' "$work/strace"; }
  per_run() {
    local a b
    a=$(syscalls "$@" -r 100 true); b=$(syscalls "$@" -r 600 true)
    echo $(( (b - a) / 500 ))
  }
  ks=$(per_run "$KURABE" cmd -q -N --no-save)
  hs=$(per_run hyperfine -N --style none)
  echo
  awk -v k="$ks" -v h="$hs" 'BEGIN { printf "system calls per run of `true -N`: kurabe %d, hyperfine %d, k/h %.3f\n", k, h, k/h }'
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
