#!/usr/bin/env bash
# bench/http2-peers.sh — kurabe http --http2 against h2load, interleaved, on loopback nginx.
#
# nginx (`worker_processes 1`, a 381-byte file) listens for h2c (prior
# knowledge) and for h2 over TLS (self-signed certificate, ALPN). For each of
# h2c and TLS, ROUNDS rounds of
#   kurabe http --http2 -c C --streams M --threads 1 -t D   and   h2load -t1 -cC -mM -D D
# (order alternating each round, so drift hits both alike), then per tool the
# medians of req/s, client CPU µs per request (user+sys from /usr/bin/time),
# peak RSS and nginx's CPU µs per request (its worker's utime+stime from
# /proc: what the client costs the server, a figure a loaded machine moves
# far less than req/s), and the ratios kurabe/h2load. Then kurabe's RSS at
# -c BIG_CONC.
#
# With BEFORE (a second kurabe binary, e.g. the build before a change) it runs
# in every round too, and kurabe/before is printed beside kurabe/h2load.
#
# Env: ROUNDS (3), DURATION (10, seconds), CONC (50), STREAMS (10), BIG_CONC
# (5000), KURABE (path of the kurabe binary; default: build target/release/kurabe),
# BEFORE (optional).
# Traffic goes to 127.0.0.1 only; nginx is stopped on exit. The load average is
# printed with the figures: on a shared machine, read the ratios, not the rates.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
CONC=${CONC:-50}
STREAMS=${STREAMS:-10}
BIG_CONC=${BIG_CONC:-5000}

# shellcheck source=bench/lib/peers.sh
. bench/lib/peers.sh
peers_need h2load:nghttp2-client openssl:openssl
peers_kurabe
peers_workdir kurabe-bench-h2
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -subj /CN=127.0.0.1 -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null

H2C_PORT=$(free_port)
TLS_PORT=$(free_port)
# nginx before 1.25 spells HTTP/2 as a listen parameter.
nginx_start 1 "  http2_max_concurrent_streams 128;
  server {
    listen 127.0.0.1:$H2C_PORT http2 backlog=8192;
    listen 127.0.0.1:$TLS_PORT ssl http2 backlog=8192;
    ssl_certificate $work/cert.pem;
    ssl_certificate_key $work/key.pem;
    root $work;
  }" "$H2C_PORT" "$TLS_PORT"

# Each runner writes "reqs rps" to $work/out and /usr/bin/time's "user sys maxrss_kb" to $work/time.
run_kurabe() { # URL CONC [BINARY]
  /usr/bin/time -f '%U %S %M' -o "$work/time" \
    "${3:-$KURABE}" http -q --http2 --insecure --streams "$STREAMS" -c "$2" --threads 1 -t "$DURATION" \
    --no-server-metrics --format json "$1" >"$work/raw"
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["failed_requests"] == 0, r["errors"]
print(r["complete_requests"], r["requests_per_second"])' "$work/raw" >"$work/out"
}

run_before() { run_kurabe "$1" "$2" "$BEFORE"; }

run_h2load() { # URL CONC
  /usr/bin/time -f '%U %S %M' -o "$work/time" \
    h2load -t1 -c"$2" -m"$STREAMS" -D "$DURATION" "$1" >"$work/raw"
  python3 -c '
import re, sys
t = open(sys.argv[1]).read()
done = int(re.search(r"requests: \d+ total, \d+ started, (\d+) done", t).group(1))
rps = float(re.search(r"finished in [\d.]+s, ([\d.]+) req/s", t).group(1))
print(done, rps)' "$work/raw" >"$work/out"
}

# nginx's workers' CPU so far, in clock ticks (utime + stime).
nginx_ticks() {
  local t=0 p f
  for p in $(pgrep -P "$nginx_pid"); do
    read -r -a f <"/proc/$p/stat"
    t=$((t + f[13] + f[14]))
  done
  echo "$t"
}
HZ=$(getconf CLK_TCK)

# record TOOL PROTO TICKS: append "reqs rps cpu_us_per_req rss_kb nginx_us_per_req"
# to $work/TOOL-PROTO; TICKS is nginx_ticks from before the run.
record() {
  read -r reqs rps <"$work/out"
  read -r user sys rss <"$work/time"
  local server
  server=$(($(nginx_ticks) - $3))
  python3 -c "import sys; r=max(int(sys.argv[1]),1); print(r, sys.argv[2], (float(sys.argv[3])+float(sys.argv[4]))*1e6/r, sys.argv[5], int(sys.argv[6])*1e6/int(sys.argv[7])/r)" \
    "$reqs" "$rps" "$user" "$sys" "$rss" "$server" "$HZ" >>"$work/$1-$2"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for proto in h2c tls; do
  if [ "$proto" = h2c ]; then url="http://127.0.0.1:$H2C_PORT/index.html"; else url="https://127.0.0.1:$TLS_PORT/index.html"; fi
  for round in $(seq "$ROUNDS"); do
    if [ $((round % 2)) -eq 1 ]; then order="kurabe h2load"; else order="h2load kurabe"; fi
    if [ -n "${BEFORE:-}" ]; then
      if [ $((round % 2)) -eq 1 ]; then order="$order before"; else order="before $order"; fi
    fi
    for tool in $order; do
      ticks=$(nginx_ticks)
      "run_$tool" "$url" "$CONC"
      record "$tool" "$proto" "$ticks"
      echo "round $round $proto $tool: $(tail -1 "$work/$tool-$proto") (load $(cut -d' ' -f1 /proc/loadavg))"
    done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$work" "${BEFORE:-}" <<'EOF'
import statistics, sys
work = sys.argv[1]
tools = ["kurabe", "h2load"] + (["before"] if sys.argv[2] else [])
def rows(tool, proto):
    return [list(map(float, l.split())) for l in open(f"{work}/{tool}-{proto}")]
print(f"\n{'':14}{'req/s':>12}{'CPU µs/req':>12}{'RSS MiB':>10}{'nginx µs/req':>14}")
for proto in ["h2c", "tls"]:
    med = {}
    for tool in tools:
        r = rows(tool, proto)
        med[tool] = [statistics.median(x[i] for x in r) for i in (1, 2, 3, 4)]
        rps, cpu, rss, server = med[tool]
        print(f"{tool + ' ' + proto:14}{rps:12.0f}{cpu:12.2f}{rss / 1024:10.1f}{server:14.2f}")
    k, h = med["kurabe"], med["h2load"]
    # Per-round ratios too: a loaded machine moves both tools of a round alike.
    pairs = list(zip(rows("kurabe", proto), rows("h2load", proto)))
    def per(i):
        return ", ".join(f"{a[i] / b[i]:.2f}" for a, b in pairs)
    print(f"  kurabe/h2load: req/s {k[0] / h[0]:.2f}× (per round {per(1)}), target ≥ 1.00×")
    print(f"  kurabe/h2load: CPU per request {k[1] / h[1]:.2f}× (per round {per(2)}), target ≤ 0.80×")
    print(f"  kurabe/h2load: nginx CPU per request {k[3] / h[3]:.2f}× (per round {per(4)})")
    if "before" in med:
        b = med["before"]
        bp = list(zip(rows("kurabe", proto), rows("before", proto)))
        pb = ", ".join(f"{x[2] / y[2]:.3f}" for x, y in bp)
        print(f"  kurabe/before: CPU per request {k[1] / b[1]:.3f}× (per round {pb}), req/s {k[0] / b[0]:.3f}×")
EOF

echo
for c in "$CONC" "$BIG_CONC"; do
  /usr/bin/time -f '%U %S %M' -o "$work/time" \
    "$KURABE" http -q --http2 --streams "$STREAMS" -c "$c" --threads 1 -t 5 --no-server-metrics \
    --format json "http://127.0.0.1:$H2C_PORT/index.html" >"$work/raw"
  read -r _ _ rss <"$work/time"
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(f"kurabe h2c -c {sys.argv[2]}: peak RSS {int(sys.argv[3]) / 1024:.1f} MiB, {r['"'"'complete_requests'"'"']} completed, {r['"'"'failed_requests'"'"']} failed")' \
    "$work/raw" "$c" "$rss"
done
