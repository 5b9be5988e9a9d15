#!/usr/bin/env bash
# bench/fleet-scaling.sh — does distributed load scale? 1 worker vs 3 workers.
#
# Sets up the test hosts (scripts/netns-hosts.sh: a target namespace and three
# worker namespaces on a bridge), a throwaway PostgreSQL
# (scripts/pg-test-server.sh, reached through its Unix socket, which every
# network namespace of this machine shares), a CPU-cheap target
# (`kurabe serve`, 13-byte body, no work) in the target namespace, and three
# `kurabe worker --cpus CPUS` (each in its own cgroup with that CPU quota).
# Then ROUNDS interleaved rounds (order alternates: 1,3 then 3,1 …) of
#   kurabe http URL -k -c N*CPW -t DURATION --workers N
# for N = 1 and 3, and prints each run's merged req/s, the medians and the
# ratio median(3) / median(1). Target: ≥ 2.7.
#
# Env: ROUNDS (5), DURATION (5, seconds), CPUS (0.1 per worker), CPW (8
# connections per worker), TARGET_THREADS (2), KURABE (binary; default: build
# the release binary). Needs root. Traffic stays on the bridge between the
# namespaces; everything is removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5}
CPUS=${CPUS:-0.1}
CPW=${CPW:-8}
TARGET_THREADS=${TARGET_THREADS:-2}
export NETNS_PREFIX=kfb NETNS_SUBNET=10.77.8

[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (network namespaces, cgroups)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "bench: needs python3 (medians)" >&2; exit 2; }

if [ -z "${KURABE:-}" ]; then
  echo "bench: cargo build --release -p kurabe" >&2
  cargo build --release -q -p kurabe --bin kurabe
  KURABE="$(realpath "${CARGO_TARGET_DIR:-target}")/release/kurabe"
fi

work=$(mktemp -d /tmp/kurabe-fleet-bench.XXXXXX)
chmod 755 "$work" # the PostgreSQL server runs as user postgres
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  scripts/netns-hosts.sh down || true
  scripts/pg-test-server.sh stop "$work/pg" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

scripts/netns-hosts.sh up 3 >/dev/null
scripts/pg-test-server.sh start "$work/pg" >/dev/null
STORE=$(cat "$work/pg/socket-url")

ip netns exec kfb-target "$KURABE" serve --bind 10.77.8.2 --port 0 --threads "$TARGET_THREADS" >"$work/serve.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/serve.out" ] && break; sleep 0.05; done
URL=$(head -1 "$work/serve.out")
for i in 1 2 3; do
  # nsenter, not `ip netns exec`: the latter remounts /sys in a new mount
  # namespace, which hides the cgroup filesystem that --cpus needs.
  nsenter --net="/run/netns/kfb-w$i" "$KURABE" worker --store "$STORE" --cpus "$CPUS" --name "w$i" >"$work/w$i.log" 2>&1 &
  pids+=($!)
done

echo "fleet-scaling: target $URL (threads $TARGET_THREADS), 3 workers at --cpus $CPUS, $CPW connections per worker, ${DURATION}s per run, $ROUNDS rounds; load average: $(cut -d' ' -f1-3 /proc/loadavg)"

run() { # N -> req/s
  local n=$1
  "$KURABE" http "$URL" -q -k -c $((n * CPW)) -t "$DURATION" --workers "$n" \
    --store "$STORE" --wait-workers 30s --format json 2>"$work/coord.err" \
    | python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["requests_per_second"])' 2>/dev/null \
    || { cat "$work/coord.err" "$work"/w*.log >&2; exit 1; }
}

one=() three=()
for r in $(seq 1 "$ROUNDS"); do
  if (( r % 2 )); then order="1 3"; else order="3 1"; fi
  for n in $order; do
    v=$(run "$n")
    if [ "$n" = 1 ]; then one+=("$v"); else three+=("$v"); fi
    echo "round $r: $n worker(s): $v req/s"
  done
done

python3 - "${one[*]}" "${three[*]}" <<'PY'
import statistics, sys
one = [float(x) for x in sys.argv[1].split()]
three = [float(x) for x in sys.argv[2].split()]
m1, m3 = statistics.median(one), statistics.median(three)
print(f"median req/s: 1 worker {m1:.0f}, 3 workers {m3:.0f}")
print(f"ratio 3/1: {m3 / m1:.2f}x (target >= 2.7x)")
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
