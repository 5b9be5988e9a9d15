#!/usr/bin/env bash
# bench/http-peers.sh — kurabe http against wrk and ab, interleaved, on loopback nginx.
#
# For nginx with `worker_processes 1` and `auto`, runs ROUNDS rounds of
#   kurabe http -k -c C --threads 1 -t D --engine io_uring   (kurabe)
#   the same with --engine epoll                               (k-epoll)
#   the same with --pipeline 16 (engine auto: the one auto picks)  (k-pipe16)
#   wrk -t1 -cC -dD, ab -k -cC -tD -n 10000000
#   floor: a minimal client built from crates/kurabe-http/examples/floor.rs
#     that makes one send and one recv per request on C keep-alive connections
# (order rotated each round so drift hits every tool alike) against a 381-byte
# file, and prints per tool the medians of: req/s, p50/p99 latency, client CPU
# µs per request (user+sys of the client process from /usr/bin/time) and peak
# RSS, then the ratios kurabe/wrk and kurabe/floor. Then a --rate accuracy
# check and an RSS check at -c 5000.
#
# Env: ROUNDS (3), DURATION (10, seconds), CONC (50), KURABE (path of the kurabe
# binary; default: build target/release/kurabe), FLOOR (path of the floor
# client; default: build it), RATE (20000), BIG_CONC (5000), TOOLS (the list above).
# Traffic goes to 127.0.0.1 only; nginx is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
CONC=${CONC:-50}
RATE=${RATE:-20000}
BIG_CONC=${BIG_CONC:-5000}

# shellcheck source=bench/lib/peers.sh
. bench/lib/peers.sh
peers_need wrk:wrk ab:apache2-utils
peers_kurabe
if [ -z "${FLOOR:-}" ]; then
  echo "bench: cargo build --release -p kurabe-http --example floor" >&2
  cargo build --release -q -p kurabe-http --example floor
  FLOOR="${CARGO_TARGET_DIR:-target}/release/examples/floor"
fi
peers_workdir kurabe-bench

# start_nginx WORKERS: nginx on a free port; URL is the file's address.
start_nginx() {
  PORT=$(free_port)
  # reuseport: the kernel spreads the client's connections over the workers.
  # Without it one worker often accepts all 50 (they arrive in one burst) and
  # "auto" silently runs as a single worker, for whichever tool is unlucky.
  nginx_start "$1" "  server { listen 127.0.0.1:$PORT backlog=8192 reuseport; root $work; }" "$PORT"
  URL="http://127.0.0.1:$PORT/index.html"
}

# Each runner writes "reqs rps p50_us p99_us" to $work/out and /usr/bin/time's
# "user sys maxrss_kb" to $work/time.
# --no-server-metrics: wrk and ab do not sample the server either; this compares
# the cost of generating load (the sampler adds ~10 /proc reads a second).
# kurabe_json ARGS...: one kurabe run with ARGS, "reqs rps p50 p99" to $work/out.
kurabe_json() {
  /usr/bin/time -f '%U %S %M' -o "$work/time" \
    "$KURABE" http -q -k -c "$CONC" --threads 1 -t "$DURATION" --no-server-metrics \
    --format json "$@" "$URL" >"$work/raw"
  python3 - "$work/raw" >"$work/out" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print(r["complete_requests"], r["requests_per_second"], r["latency_us"]["p50"], r["latency_us"]["p99"])
EOF
}
run_kurabe() { kurabe_json --engine io_uring; }
run_k-epoll() { kurabe_json --engine epoll; }
run_k-pipe16() { kurabe_json --pipeline 16; }

# The floor: one send + one recv per request; no latency figures (printed as 0).
run_floor() {
  /usr/bin/time -f '%U %S %M' -o "$work/time" \
    "$FLOOR" "127.0.0.1:$PORT" /index.html "$CONC" "$DURATION" >"$work/raw"
  awk -v d="$DURATION" '/^requests/ {print $2, $2 / d, 0, 0}' "$work/raw" >"$work/out"
}

run_wrk() {
  /usr/bin/time -f '%U %S %M' -o "$work/time" \
    wrk -t1 -c"$CONC" -d"${DURATION}s" --latency "$URL" >"$work/raw"
  python3 - "$work/raw" >"$work/out" <<'EOF'
import re, sys
t = open(sys.argv[1]).read()
def us(v, unit):
    return float(v) * {"us": 1, "ms": 1e3, "s": 1e6}[unit]
p = {m[0]: us(m[1], m[2]) for m in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", t, re.M)}
reqs = int(re.search(r"(\d+) requests in", t).group(1))
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
print(reqs, rps, p["50"], p["99"])
EOF
}

run_ab() {
  /usr/bin/time -f '%U %S %M' -o "$work/time" \
    ab -q -k -c "$CONC" -t "$DURATION" -n 10000000 "$URL" >"$work/raw" 2>/dev/null || true
  python3 - "$work/raw" >"$work/out" <<'EOF'
import re, sys
t = open(sys.argv[1]).read()
reqs = int(re.search(r"Complete requests:\s+(\d+)", t).group(1))
rps = float(re.search(r"Requests per second:\s+([\d.]+)", t).group(1))
p = {m[0]: float(m[1]) * 1000 for m in re.findall(r"^\s+(50|99)%\s+(\d+)", t, re.M)}
print(reqs, rps, p["50"], p["99"])
EOF
}

results="$work/results"
: >"$results"

# measure WORKERS TOOL: one run, appended to $results as
# "workers tool rps p50 p99 cpu_us_per_req rss_kb round" ($round is the caller's).
measure() {
  local workers=$1 tool=$2
  "run_$tool"
  read -r reqs rps p50 p99 <"$work/out"
  read -r user sys rss <"$work/time"
  python3 -c "
reqs, u, s = $reqs, $user, $sys
cpu = (u + s) * 1e6 / reqs if reqs else float('nan')
print('$workers', '$tool', $rps, $p50, $p99, round(cpu, 2), $rss, '$round')" >>"$results"
  tail -1 "$results" | awk '{printf "  %-8s %10.0f req/s  p50 %7.0f us  p99 %7.0f us  cpu %6.2f us/req  rss %6d KB\n", $2, $3, $4, $5, $6, $7}'
}

read -r -a tools <<<"${TOOLS:-kurabe k-epoll k-pipe16 wrk ab floor}"
for workers in 1 auto; do
  start_nginx "$workers"
  echo "== nginx worker_processes $workers, $URL, -c $CONC, ${DURATION}s x $ROUNDS rounds"
  for round in $(seq "$ROUNDS"); do
    echo " round $round"
    n=${#tools[@]}
    for i in $(seq 0 $((n - 1))); do
      measure "$workers" "${tools[$(((i + round - 1) % n))]}"
    done
  done
  stop_nginx
done

echo
echo "== medians (${ROUNDS} rounds, ${DURATION}s each, -c $CONC)"
python3 - "$results" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
med = {}
by_round = {}
for w, tool, *vals, rnd in rows:
    med.setdefault((w, tool), []).append([float(v) for v in vals])
    by_round.setdefault((w, rnd), {})[tool] = [float(v) for v in vals]
def m(w, tool, i):
    return statistics.median(v[i] for v in med[(w, tool)])
TOOLS = ("kurabe", "k-epoll", "k-pipe16", "wrk", "ab", "floor")
print(f"{'nginx':<6} {'tool':<8} {'req/s':>10} {'p50 us':>8} {'p99 us':>8} {'cpu us/req':>11} {'rss KB':>8}")
for w in ("1", "auto"):
    for tool in TOOLS:
        if (w, tool) in med:
            print(f"{w:<6} {tool:<8} {m(w,tool,0):>10.0f} {m(w,tool,1):>8.0f} {m(w,tool,2):>8.0f} {m(w,tool,3):>11.2f} {m(w,tool,4):>8.0f}")
print("(kurabe = --engine io_uring, k-epoll = --engine epoll, k-pipe16 = --pipeline 16)")
print()
for w in ("1", "auto"):
    for k in ("kurabe", "k-epoll", "k-pipe16"):
        if (w, k) in med and (w, "floor") in med:
            print(f"nginx {w:<4}: {k}/floor cpu per request {m(w, k, 3) / m(w, 'floor', 3):.2f}x the minimal client's")
    if (w, "k-pipe16") in med and (w, "wrk") in med:
        print(f"nginx {w:<4}: k-pipe16/wrk cpu per request {m(w, 'k-pipe16', 3) / m(w, 'wrk', 3):.3f} (target <= 0.30 of wrk unpipelined)")
    for k in ("kurabe", "k-epoll"):
      if (w, k) in med and (w, "wrk") in med:
        cpu = m(w, k, 3) / m(w, "wrk", 3)
        rps = m(w, k, 0) / m(w, "wrk", 0)
        print(f"nginx {w:<4}: {k}/wrk  cpu per request {cpu:.3f} (target <= 0.65)   req/s {rps:.3f} (target >= 1.05 with auto)")
        # The same ratios within each round (runs seconds apart), then their median:
        # less exposed to load from other processes drifting across the whole run.
        pairs = [r for (ww, _), r in sorted(by_round.items()) if ww == w and k in r and "wrk" in r]
        cpu_r = [r[k][3] / r["wrk"][3] for r in pairs]
        rps_r = [r[k][0] / r["wrk"][0] for r in pairs]
        print(f"            per round: cpu {' '.join(f'{x:.3f}' for x in cpu_r)} (median {statistics.median(cpu_r):.3f})"
              f"   req/s {' '.join(f'{x:.3f}' for x in rps_r)} (median {statistics.median(rps_r):.3f})")
EOF
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "== --rate accuracy: $RATE req/s for ${DURATION}s, -c $CONC, nginx auto"
start_nginx auto
"$KURABE" http -q -k -c "$CONC" -t "$DURATION" --rate "$RATE" --format json "$URL" >"$work/raw"
python3 - "$work/raw" "$RATE" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1])); want = float(sys.argv[2])
got = r["rate"]["achieved_per_s"]
print(f"requested {want:.0f}/s  achieved {got:.1f}/s  error {100*(got-want)/want:+.2f}%  "
      f"late sends {r['rate']['late_sends']}  p99 corrected {r['latency_us']['p99']} us, "
      f"uncorrected {r['rate']['latency_uncorrected_us']['p99']} us  failed {r['failed_requests']}")
EOF

echo
echo "== client peak RSS: -c $CONC for 2 s vs ${DURATION}s (independent of request count), -c $BIG_CONC"
rss_of() {
  /usr/bin/time -f '%M' -o "$work/time" "$KURABE" http -q -k "$@" --format json "$URL" >"$work/raw"
  python3 -c "
import json; r = json.load(open('$work/raw'))
print(f\"{r['complete_requests']:>9} requests  {r['failed_requests']} failed  engine {r.get('engine')}  peak RSS $(cat "$work/time") KB\")"
}
echo -n "  -c $CONC -t 2:           "; rss_of -c "$CONC" -t 2
echo -n "  -c $CONC -t $DURATION:          "; rss_of -c "$CONC" -t "$DURATION"
(
  ulimit -n $((BIG_CONC * 2 + 1024)) 2>/dev/null || ulimit -n 65536 2>/dev/null || true
  echo -n "  -c $BIG_CONC -t $DURATION:        "; rss_of -c "$BIG_CONC" -t "$DURATION" -s 30
)
stop_nginx
