#!/usr/bin/env bash
# bench/tui-cost.sh — what the live views cost the client (issue 26's target:
# with --tui, client CPU per request rises by at most 5 % at ~100 k req/s).
#
# ROUNDS rounds (order rotated each round, so drift hits every variant alike)
# of the same closed-model run against loopback nginx (worker_processes 1,
# access log off, a 381-byte file):
#   plain  kurabe http -q -k -c CONC --threads THREADS -t DURATION URL
#   tui    the same with --tui
#   prom   the same with --prometheus-addr 127.0.0.1:PORT, scraped every
#          SCRAPE s by curl for the length of the run
# Every variant runs in a pseudo-terminal of 100×30 (`script -qc`, the
# size set with stty), so the only difference is the flag: the view draws
# there four times a second, as it would in a real terminal. kurabe's own
# CPU time (user+sys of its process from /usr/bin/time, start-up and the
# server sampler included, the same in every variant) over its complete
# requests gives µs per request. Prints every run, then per variant the
# medians of req/s and CPU µs per request, and the ratios tui/plain and
# prom/plain of the medians (target <= 1.05), also per round.
#
# Env: ROUNDS (5), DURATION (4, seconds), CONC (50), THREADS (1), SCRAPE (1,
# seconds between scrapes), KURABE (binary; default: build target/release/kurabe).
# Run it under /work/quiet.sh-like wrappers on a shared machine: ~20 s a round.
# Traffic goes to 127.0.0.1 only; nginx is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-4}
CONC=${CONC:-50}
THREADS=${THREADS:-1}
SCRAPE=${SCRAPE:-1}
RATE=${RATE:-}

# shellcheck source=bench/lib/peers.sh
. bench/lib/peers.sh
peers_need script:bsdutils curl:curl
peers_kurabe
peers_workdir kurabe-tui-cost

PORT=$(free_port)
nginx_start 1 "  server { listen 127.0.0.1:$PORT backlog=8192; root $work; }" "$PORT"
URL="http://127.0.0.1:$PORT/index.html"

# in_pty CMD: CMD in a 100×30 pseudo-terminal whose screen goes to /dev/null.
in_pty() {
  script -qfec "stty cols 100 rows 30; $1" /dev/null >/dev/null </dev/null
}

# kurabe_pty FLAGS: one run with FLAGS; "user sys" to $work/time, report to $work/r.json.
kurabe_pty() {
  rm -f "$work/r.json"
  in_pty "/usr/bin/time -f '%U %S %e' -o '$work/time' '$KURABE' http -q -k -c $CONC \
    --threads $THREADS -t $DURATION ${RATE:+--rate $RATE} --format json -o '$work/r.json' $1 '$URL'"
}

run_plain() { kurabe_pty ""; }
run_tui() { kurabe_pty "--tui"; }
run_prom() {
  local pport
  pport=$(free_port)
  rm -f "$work/scrapes" "$work/stop"
  (
    n=0
    while [ ! -e "$work/stop" ]; do
      # Until the endpoint is up, retry soon; then every SCRAPE seconds.
      if curl -sf -o /dev/null "http://127.0.0.1:$pport/metrics"; then
        n=$((n + 1))
        sleep "$SCRAPE"
      else
        sleep 0.05
      fi
    done
    echo "$n" >"$work/scrapes"
  ) &
  local scraper=$!
  kurabe_pty "--prometheus-addr 127.0.0.1:$pport"
  touch "$work/stop"
  wait "$scraper"
}

# requests rps of the report in $work/r.json (no failures allowed).
report_figures() {
  python3 -c "
import json; r = json.load(open('$work/r.json'))
assert r['failed_requests'] == 0, r['errors']
print(r['complete_requests'], r['requests_per_second'])"
}

results="$work/results"
: >"$results"
variants=(plain tui prom)
echo "== nginx 1 worker, -k -c $CONC --threads $THREADS ${RATE:+--rate $RATE }, ${DURATION}s x $ROUNDS rounds, scrape every ${SCRAPE}s"
for round in $(seq "$ROUNDS"); do
  echo " round $round"
  for i in 0 1 2; do
    v=${variants[$(((i + round - 1) % 3))]}
    "run_$v"
    read -r reqs rps < <(report_figures)
    read -r user sys wall <"$work/time"
    extra=""
    [ "$v" = prom ] && extra="scrapes $(cat "$work/scrapes")"
    python3 -c "print('$v', $rps, round(($user + $sys) * 1e6 / $reqs, 4), '$round', round(($user + $sys) * 1e3 / $wall, 2))" >>"$results"
    tail -1 "$results" | awk -v x="$extra" '{printf "  %-6s %10.0f req/s  cpu %7.4f us/req  %7.1f ms/s  %s\n", $1, $2, $3, $5, x}'
  done
done

echo
python3 - "$results" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
by, rounds = {}, {}
for v, rps, cpu, rnd, ms in rows:
    by.setdefault(v, []).append((float(rps), float(cpu), float(ms)))
    rounds.setdefault(rnd, {})[v] = float(cpu)
med = lambda v, i: statistics.median(x[i] for x in by[v])
print(f"== medians: {'variant':<7} {'req/s':>10} {'cpu us/req':>11} {'cpu ms/s':>9}")
for v in ("plain", "tui", "prom"):
    print(f"            {v:<7} {med(v, 0):>10.0f} {med(v, 1):>11.4f} {med(v, 2):>9.1f}")
for v in ("tui", "prom"):
    r = med(v, 1) / med("plain", 1)
    per = [rounds[k][v] / rounds[k]["plain"] for k in sorted(rounds)]
    print(f"{v}/plain cpu per request {r:.3f} (target <= 1.05: {'PASS' if r <= 1.05 else 'MISS'});"
          f" median of the per-round ratios {statistics.median(per):.3f};"
          f" per round {' '.join(f'{x:.3f}' for x in per)};"
          f" extra cpu {med(v, 2) - med('plain', 2):+.1f} ms/s")
EOF
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
