#!/usr/bin/env bash
# bench/sets-large.sh — issue 24's large-set targets: a 1 GB targets file
# starts sending within a second, and kurabe's peak RSS stays under 64 MiB,
# in every order, over HTTP/1.1 and HTTP/2.
#
# Two files of about SIZE_MB MiB each (page cache warmed by one read):
#   hdr  `GET /t/N` with an `X-Id: N` header, a blank line between targets
#   wgt  `# @weight K` (K = 1 + N % 5) before each `GET /t/N`
# ROUNDS rounds, the cases' order rotated each round, of
#   kurabe http --targets FILE --order ORDER --seed 1 -k -c 10 -n 1000 [--http2 --streams 8] URL
# for ORDER in sequential, round-robin, weighted, random (wgt: weighted and
# random, the orders that index it). URL (loopback nginx, one worker, HTTP/1.1
# on one port and h2c on another) replaces the targets' placeholder origin.
# nginx logs each request's $msec; the first request's delay is its first
# line at or after the moment kurabe was started. Peak RSS is /usr/bin/time's.
# Prints every run, then per case the medians and PASS/MISS against 1 s and
# 64 MiB; with BASE, each case also runs with that binary right after (an
# older build: the peer in the same run), and the summary gives the ratios
# of the medians, KURABE's over BASE's.
#
# Env: ROUNDS (3), SIZE_MB (1024), KURABE (binary; default: build
# target/release/kurabe), BASE (a second binary, optional), CASES (a regex
# the case names must match, e.g. 'wgt|h2'), KEEP (a directory to keep and
# reuse the two files in; default: a temporary one, removed). Traffic goes
# to 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
SIZE_MB=${SIZE_MB:-1024}

# shellcheck source=bench/lib/peers.sh
. bench/lib/peers.sh
peers_need
peers_kurabe
peers_workdir kurabe-sets-large
files=${KEEP:-$work}
mkdir -p "$files"

# The two files, written once (reused from KEEP when already SIZE_MB large).
make_set() {
  local kind=$1 out=$files/$1.txt
  if [ -f "$out" ] && [ "$(stat -c %s "$out")" -ge $((SIZE_MB << 20)) ]; then return; fi
  echo "bench: writing $out (~$SIZE_MB MiB)" >&2
  python3 - "$kind" "$out" "$((SIZE_MB << 20))" <<'EOF'
import sys
kind, out, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
origin = "http://127.0.0.1:1"
with open(out, "w", buffering=1 << 20) as f:
    n, written = 0, 0
    while written < size:
        if kind == "hdr":
            rows = [f"GET {origin}/t/{i}\nX-Id: {i}\n\n" for i in range(n, n + 10000)]
        else:
            rows = [f"# @weight {1 + i % 5}\nGET {origin}/t/{i}\n\n" for i in range(n, n + 10000)]
        s = "".join(rows)
        f.write(s)
        written += len(s)
        n += 10000
EOF
}
make_set hdr
make_set wgt
cat "$files/hdr.txt" "$files/wgt.txt" >/dev/null # page cache warm

H1=$(free_port)
H2=$(free_port)
nginx_start 1 "  log_format ms '\$msec';
  server { listen 127.0.0.1:$H1; listen 127.0.0.1:$H2 http2;
    access_log $work/access.log ms; location / { return 200 'ok'; } }" "$H1" "$H2"

cases=(h1:hdr:sequential h1:hdr:round-robin h1:hdr:weighted h1:hdr:random h1:wgt:weighted h1:wgt:random
  h2:hdr:sequential h2:hdr:round-robin h2:hdr:weighted h2:hdr:random h2:wgt:weighted h2:wgt:random)
if [ -n "${CASES:-}" ]; then
  mapfile -t cases < <(printf '%s\n' "${cases[@]}" | grep -E "$CASES")
fi
bins=(new)
if [ -n "${BASE:-}" ]; then bins+=(base); fi
results="$work/results"
: >"$results"
echo "== $(stat -c %s "$files/hdr.txt") and $(stat -c %s "$files/wgt.txt") bytes, $ROUNDS rounds, -k -c 10 -n 1000"
for round in $(seq "$ROUNDS"); do
  echo " round $round"
  for i in $(seq 0 $((${#cases[@]} - 1))); do
    c=${cases[$(((i + round - 1) % ${#cases[@]}))]}
    IFS=: read -r proto kind order <<<"$c"
    case $proto in
      h1) args=("http://127.0.0.1:$H1") ;;
      h2) args=(--http2 --streams 8 "http://127.0.0.1:$H2") ;;
    esac
    for bin in "${bins[@]}"; do
      exe=$KURABE
      if [ "$bin" = base ]; then exe=$BASE; fi
      start=$(date +%s.%N)
      /usr/bin/time -f '%e %M' -o "$work/time" \
        "$exe" http -q --no-server-metrics --format json --targets "$files/$kind.txt" \
        --order "$order" --seed 1 -k -c 10 -n 1000 "${args[@]}" >"$work/raw"
      python3 - "$work/raw" "$work/access.log" "$start" "$work/time" "$c" "$round" "$bin" >>"$results" <<'EOF'
import json, sys
raw, log, start, timef, case, rnd, bin = sys.argv[1:]
r = json.load(open(raw))
assert r["complete_requests"] == 1000 and r["failed_requests"] == 0, (r["complete_requests"], r["errors"])
start = float(start)
first = min(float(l) for l in open(log) if l.strip() and float(l) >= start - 0.0005)
wall, rss = open(timef).read().split()
print(case, round(first - start, 3), round(int(rss) / 1024, 1), wall, rnd, bin)
EOF
      tail -1 "$results" | awk '{printf "  %-22s %-4s first request %6.3f s  peak RSS %7.1f MiB  wall %s s\n", $1, $6, $2, $3, $4}'
    done
  done
done

echo
python3 - "$results" <<'EOF'
import statistics, sys
by = {}
for case, first, rss, wall, rnd, bin in (l.split() for l in open(sys.argv[1]) if l.strip()):
    by.setdefault((case, bin), []).append((int(rnd), float(first), float(rss)))
print(f"== medians  {'case':<22} {'bin':<4} {'first s':>8} {'max RSS MiB':>12}")
miss, n = 0, 0
for (case, bin), v in by.items():
    v.sort()
    first = statistics.median(x[1] for x in v)
    rss = max(x[2] for x in v)
    verdict, ratio = "", ""
    if bin == "new":
        ok = first <= 1.0 and rss <= 64
        miss, n = miss + (not ok), n + 1
        verdict = "PASS" if ok else "MISS"
        base = by.get((case, "base"))
        if base:
            ratio = (f" new/base: first request {first / statistics.median(x[1] for x in base):.3f},"
                     f" RSS {rss / max(x[2] for x in base):.3f}")
    print(f"            {case:<22} {bin:<4} {first:>8.3f} {rss:>12.1f}  {verdict:<4}{ratio}"
          f" (per round {' '.join(f'{x[1]:.3f}' for x in v)})")
print(f"targets: first request <= 1 s (median), peak RSS <= 64 MiB: {n - miss} of {n} cases pass")
EOF
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
