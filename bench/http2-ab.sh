#!/usr/bin/env bash
# bench/http2-ab.sh — two kurabe binaries' HTTP/2 client cost, interleaved, on loopback nginx h2c.
#
# For a change to the HTTP/2 worker: is the fast path (no --check) as cheap
# as before? nginx (`worker_processes 1`, a 381-byte file) listens for h2c;
# ROUNDS rounds of
#   kurabe http -q --http2 -k -c C --threads 1 -t D      with KURABE_A, then KURABE_B
# (order alternating each round, so drift hits both alike), plus, when
# CHECKS is set (e.g. CHECKS="--check body~k --check header:content-type~html"),
# the same run of KURABE_B with those checks, for what checking costs.
# Then per variant the medians of req/s and client CPU µs per request
# (user+sys from /usr/bin/time over completed requests), and B/A per round.
#
# Env: KURABE_A, KURABE_B (required: the two binaries, e.g. main's and the
# branch's release builds), ROUNDS (5), DURATION (5, seconds), CONC (50),
# CHECKS (none). Traffic goes to 127.0.0.1 only; nginx is stopped on exit.
# Run it under a quiet machine (or /work/quiet.sh-like pause of other load):
# the per-round ratios are the figure, the rates move with the load.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${KURABE_A:?set KURABE_A to the baseline kurabe binary}"
: "${KURABE_B:?set KURABE_B to the kurabe binary under test}"
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5}
CONC=${CONC:-50}
CHECKS=${CHECKS:-}

# shellcheck source=bench/lib/peers.sh
. bench/lib/peers.sh
peers_need
peers_workdir kurabe-bench-h2ab
PORT=$(free_port)
nginx_start 1 "  http2_max_concurrent_streams 128;
  server {
    listen 127.0.0.1:$PORT http2 backlog=8192;
    root $work;
  }" "$PORT"
URL="http://127.0.0.1:$PORT/index.html"

# run NAME BINARY [ARGS...]: one run; appends "reqs rps cpu_us_per_req" to $work/NAME.
run() {
  local name=$1 bin=$2
  shift 2
  /usr/bin/time -f '%U %S' -o "$work/time" \
    "$bin" http -q --http2 -k -c "$CONC" --threads 1 -t "$DURATION" --no-server-metrics \
    --format json "$@" "$URL" >"$work/raw"
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["failed_requests"] == 0, r["errors"]
user, sys_ = map(float, open(sys.argv[2]).read().split())
n = max(r["complete_requests"], 1)
print(n, r["requests_per_second"], (user + sys_) * 1e6 / n)' "$work/raw" "$work/time" >>"$work/$name"
  echo "round $round $name: $(tail -1 "$work/$name") (load $(cut -d' ' -f1 /proc/loadavg))"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$ROUNDS"); do
  if [ $((round % 2)) -eq 1 ]; then order="a b"; else order="b a"; fi
  for v in $order; do
    if [ "$v" = a ]; then run a "$KURABE_A"; else run b "$KURABE_B"; fi
  done
  if [ -n "$CHECKS" ]; then
    # shellcheck disable=SC2086 # CHECKS is a list of flags
    run b+checks "$KURABE_B" $CHECKS
  fi
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$work" "${CHECKS:+b+checks}" <<'PY'
import os, statistics, sys
work = sys.argv[1]
rows = {v: [list(map(float, l.split())) for l in open(f"{work}/{v}")]
        for v in ["a", "b"] + ([sys.argv[2]] if sys.argv[2] else [])}
print(f"\n{'':10}{'req/s':>10}{'CPU µs/req':>12}")
med = {}
for v, r in rows.items():
    med[v] = [statistics.median(x[i] for x in r) for i in (1, 2)]
    print(f"{v:10}{med[v][0]:10.0f}{med[v][1]:12.2f}")
for v in rows:
    if v == "a":
        continue
    per = lambda i: ", ".join(f"{b[i] / a[i]:.3f}" for a, b in zip(rows["a"], rows[v]))
    print(f"{v}/a: req/s {med[v][0] / med['a'][0]:.3f}× (per round {per(1)})")
    print(f"{v}/a: CPU per request {med[v][1] / med['a'][1]:.3f}× (per round {per(2)})")
PY
