#!/usr/bin/env bash
# bench/targets-peers.sh — a 10 000-target request set (issue 24's speed
# target) against one URL and against wrk -t1 cycling the same requests
# from a Lua script, interleaved, on loopback nginx.
#
# ROUNDS rounds (order rotated each round) of, all -k -c CONC for DURATION s:
#   k-one   kurabe http --threads 1 URL                 (one URL, repeated)
#   k-set   kurabe http --threads 1 --targets SET       (10 000 distinct GETs, round-robin)
#   wrk-lua wrk -t1 -s cycle.lua                        (the same 10 000 requests, in turn)
# nginx (worker_processes auto, access log off) answers every path with the
# same 381-byte file, so only the client's work differs. Prints every run,
# then per tool the medians of req/s and client CPU µs per request (user+sys
# from /usr/bin/time) and the ratios k-set/k-one (target <= 1.10) and
# k-set/wrk-lua (target <= 0.70), also per round.
#
# With BEFORE (a second kurabe binary, e.g. the build before a change), its
# b-one and b-set runs join each round and the ratios k-one/b-one and
# k-set/b-set (issue 34: held within 1.03) are printed too.
#
# Env: ROUNDS (5), DURATION (5), CONC (50), TARGETS (10000), KURABE (binary;
# default: build target/release/kurabe), BEFORE (optional). Traffic goes to
# 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5}
CONC=${CONC:-50}
TARGETS=${TARGETS:-10000}

# shellcheck source=bench/lib/peers.sh
. bench/lib/peers.sh
peers_need wrk:wrk
peers_kurabe
peers_workdir kurabe-targets

PORT=$(free_port)
nginx_start auto "  server { listen 127.0.0.1:$PORT backlog=8192 reuseport; root $work;
    location /t/ { try_files /index.html =404; } }" "$PORT"
URL="http://127.0.0.1:$PORT/index.html"
for i in $(seq 0 $((TARGETS - 1))); do
  printf 'GET http://127.0.0.1:%s/t/%s\n\n' "$PORT" "$i"
done >"$work/set.txt"
cat >"$work/cycle.lua" <<EOF
local reqs, n, i = {}, $TARGETS, -1
init = function(args)
  for k = 0, n - 1 do reqs[k] = wrk.format("GET", "/t/" .. k) end
end
request = function()
  i = (i + 1) % n
  return reqs[i]
end
EOF

# Each runner writes "reqs rps" to $work/out, /usr/bin/time "user sys rss" to $work/time.
kurabe_run() {
  local bin=$KURABE
  if [ "$1" = --before ]; then bin=$BEFORE; shift; fi
  /usr/bin/time -f '%U %S %M' -o "$work/time" \
    "$bin" http -q -k -c "$CONC" --threads 1 -t "$DURATION" --no-server-metrics \
    --format json "$@" >"$work/raw"
  python3 -c "
import json; r = json.load(open('$work/raw'))
assert r['failed_requests'] == 0, r['errors']
print(r['complete_requests'], r['requests_per_second'])" >"$work/out"
}
run_k-one() { kurabe_run "$URL"; }
run_k-set() { kurabe_run --targets "$work/set.txt"; }
run_b-one() { kurabe_run --before "$URL"; }
run_b-set() { kurabe_run --before --targets "$work/set.txt"; }
run_wrk-lua() {
  /usr/bin/time -f '%U %S %M' -o "$work/time" \
    wrk -t1 -c"$CONC" -d"${DURATION}s" -s "$work/cycle.lua" "$URL" >"$work/raw"
  python3 - "$work/raw" >"$work/out" <<'EOF'
import re, sys
t = open(sys.argv[1]).read()
print(int(re.search(r"(\d+) requests in", t).group(1)), float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1)))
EOF
}

results="$work/results"
: >"$results"
tools=(k-one k-set wrk-lua)
[ -n "${BEFORE:-}" ] && tools+=(b-one b-set)
echo "== nginx auto, -c $CONC, ${DURATION}s x $ROUNDS rounds, set of $TARGETS targets"
for round in $(seq "$ROUNDS"); do
  echo " round $round"
  for i in $(seq 0 $((${#tools[@]} - 1))); do
    tool=${tools[$(((i + round - 1) % ${#tools[@]}))]}
    "run_$tool"
    read -r reqs rps <"$work/out"
    read -r user sys rss <"$work/time"
    python3 -c "print('$tool', $rps, round(($user + $sys) * 1e6 / $reqs, 3), $rss, '$round')" >>"$results"
    tail -1 "$results" | awk '{printf "  %-8s %10.0f req/s  cpu %6.3f us/req  rss %6d KB\n", $1, $2, $3, $4}'
  done
done

echo
python3 - "$results" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
by = {}
rounds = {}
for tool, rps, cpu, rss, rnd in rows:
    by.setdefault(tool, []).append((float(rps), float(cpu), float(rss)))
    rounds.setdefault(rnd, {})[tool] = float(cpu)
med = lambda t, i: statistics.median(v[i] for v in by[t])
print(f"== medians: {'tool':<8} {'req/s':>10} {'cpu us/req':>11} {'rss KB':>8}")
for t in ("k-one", "k-set", "wrk-lua", "b-one", "b-set"):
    if t not in by:
        continue
    print(f"            {t:<8} {med(t,0):>10.0f} {med(t,1):>11.3f} {med(t,2):>8.0f}")
for a, b, target in (("k-set", "k-one", 1.10), ("k-set", "wrk-lua", 0.70),
                     ("k-one", "b-one", 1.03), ("k-set", "b-set", 1.03)):
    if b not in by:
        continue
    r = med(a, 1) / med(b, 1)
    per = [rounds[k][a] / rounds[k][b] for k in sorted(rounds)]
    print(f"{a}/{b} cpu per request {r:.3f} (target <= {target:.2f}: {'PASS' if r <= target else 'MISS'});"
          f" per round {' '.join(f'{x:.3f}' for x in per)}")
EOF
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
