#!/usr/bin/env bash
# bench/http-target.sh — issue 23's HTTP/1.1 speed target, decided: kurabe http
# against wrk -t1 and wrk -t2 on loopback nginx `auto`, on `/` (served
# through nginx's index lookup) and `/index.html`, with kurabe's default
# thread count and with --threads 1, in interleaved rounds.
#
# Each round runs every (path, tool) pair once, in an order rotated by the
# round so drift hits every tool alike; tools:
#   kd   kurabe http -q -k -c C -t D            (default threads and engine)
#   k1   the same with --threads 1
#   bd, b1  the same with the BEFORE binary (only when BEFORE is set)
#   wrk1, wrk2  wrk -t1 / -t2 -cC -dD
#   floor  the minimal client of crates/kurabe-http/examples/floor.rs: one
#          send and one recv per request on C keep-alive connections, so the
#          figures show how far below wrk any client that makes one TCP
#          exchange per request can get on this machine (on loopback nearly
#          all of a client's CPU is the kernel's TCP work, the server's
#          receive processing included; see the medians' floor/wrk lines)
# Every round is printed (req/s, client CPU µs per request = user+sys of the
# client process from /usr/bin/time / completed requests, peak RSS), then per
# path the medians and, for each kurabe tool (and the floor) and each wrk, the ratio of the
# medians and the per-round ratios with their median, against the target:
# CPU per request <= 0.65x and req/s >= 1.00x of both wrk -t1 and wrk -t2.
#
# Env: ROUNDS (5), DURATION (5 s), CONC (50), PATHS ("/ /index.html"),
# KURABE (default: build target/release/kurabe), BEFORE (a second kurabe
# binary, optional), FLOOR (the floor client; default: build it), TOOLS
# (default: "kd k1 [bd b1] wrk1 wrk2 floor"), EXTRA (more
# kurabe flags for every kurabe tool). Traffic goes to 127.0.0.1 only; nginx
# is stopped on exit. Run it on a quiet machine: the load average is printed.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5}
CONC=${CONC:-50}
read -r -a paths <<<"${PATHS:-/ /index.html}"

# shellcheck source=bench/lib/peers.sh
. bench/lib/peers.sh
peers_need wrk:wrk
peers_kurabe
if [ -z "${FLOOR:-}" ]; then
  echo "bench: cargo build --release -p kurabe-http --example floor" >&2
  cargo build --release -q -p kurabe-http --example floor
  FLOOR="${CARGO_TARGET_DIR:-target}/release/examples/floor"
fi
peers_workdir kurabe-target
PORT=$(free_port)
# reuseport, as in http-peers.sh: the kernel spreads connections over the workers.
nginx_start auto "  server { listen 127.0.0.1:$PORT backlog=8192 reuseport; root $work; }" "$PORT"

# kurabe_run BIN ARGS...: "reqs rps" to $work/out, /usr/bin/time's "user sys rss" to $work/time.
kurabe_run() {
  local bin=$1
  shift
  # shellcheck disable=SC2086 # EXTRA is a list of flags
  ${PAUSE:-} /usr/bin/time -f '%U %S %M' -o "$work/time" "$bin" http -q -k -c "$CONC" -t "$DURATION" \
    --no-server-metrics --format json ${EXTRA:-} "$@" "$URL" >"$work/raw"
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["failed_requests"] == 0, r["errors"]
print(r["complete_requests"], r["requests_per_second"])' "$work/raw" >"$work/out"
}
run_kd() { kurabe_run "$KURABE"; }
run_k1() { kurabe_run "$KURABE" --threads 1; }
run_bd() { kurabe_run "$BEFORE"; }
run_b1() { kurabe_run "$BEFORE" --threads 1; }
wrk_run() {
  ${PAUSE:-} /usr/bin/time -f '%U %S %M' -o "$work/time" wrk -t"$1" -c"$CONC" -d"${DURATION}s" "$URL" >"$work/raw"
  python3 -c '
import re, sys
t = open(sys.argv[1]).read()
assert "Non-2xx" not in t and "Socket errors" not in t, t
print(re.search(r"(\d+) requests in", t).group(1), re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))' \
    "$work/raw" >"$work/out"
}
run_floor() {
  ${PAUSE:-} /usr/bin/time -f '%U %S %M' -o "$work/time" "$FLOOR" "127.0.0.1:$PORT" "$URL_PATH" "$CONC" "$DURATION" >"$work/raw"
  awk -v d="$DURATION" '/^requests/ {print $2, $2 / d}' "$work/raw" >"$work/out"
}
run_wrk1() { wrk_run 1; }
run_wrk2() { wrk_run 2; }

default_tools="kd k1"
[ -n "${BEFORE:-}" ] && default_tools+=" bd b1"
read -r -a tools <<<"${TOOLS:-$default_tools wrk1 wrk2 floor}"
runs=()
for p in "${paths[@]}"; do for t in "${tools[@]}"; do runs+=("$p $t"); done; done
n=${#runs[@]}
res="$work/results"
: >"$res"
echo "== nginx auto, http://127.0.0.1:$PORT{${paths[*]}}, -c $CONC, ${DURATION}s x $ROUNDS rounds, $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "   kurabe $KURABE${BEFORE:+, before $BEFORE}${EXTRA:+, extra flags: $EXTRA}"
for round in $(seq "$ROUNDS"); do
  for i in $(seq 0 $((n - 1))); do
    read -r path tool <<<"${runs[$(((i + (round - 1) * 3) % n))]}"
    URL="http://127.0.0.1:$PORT$path" URL_PATH=$path
    "run_$tool"
    read -r reqs rps <"$work/out"
    read -r user sys rss <"$work/time"
    cpu=$(python3 -c "print(round(($user + $sys) * 1e6 / max($reqs, 1), 3))")
    echo "$round $path $tool $rps $cpu $rss" >>"$res"
    printf ' r%d %-11s %-5s %9.0f req/s  cpu %6.3f us/req  rss %6d KB\n' "$round" "$path" "$tool" "$rps" "$cpu" "$rss"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$res" <<'EOF'
import statistics as st, sys
d = {}
for line in open(sys.argv[1]):
    rnd, path, tool, rps, cpu, rss = line.split()
    d.setdefault(path, {}).setdefault(tool, {})[int(rnd)] = (float(rps), float(cpu), int(rss))
verdicts = []
for path, tools in d.items():
    med = lambda t, i: st.median(v[i] for v in tools[t].values())
    print(f"\n== {path}: medians\n{'tool':6}{'req/s':>10}{'cpu us/req':>12}{'rss KB':>9}")
    for t in tools:
        print(f"{t:6}{med(t, 0):10.0f}{med(t, 1):12.3f}{med(t, 2):9.0f}")
    for k in (t for t in tools if not t.startswith("wrk")):
        floor = k == "floor"
        for w in (t for t in tools if t.startswith("wrk")):
            rounds = [r for r in tools[k] if r in tools[w]]
            cpu_r = [tools[k][r][1] / tools[w][r][1] for r in rounds]
            rps_r = [tools[k][r][0] / tools[w][r][0] for r in rounds]
            cpu, rps = med(k, 1) / med(w, 1), med(k, 0) / med(w, 0)
            ok = cpu <= 0.65 and rps >= 1.0
            if not floor:
                verdicts.append(ok)
            print(f"{k}/{w}: cpu {cpu:.3f} (rounds {' '.join(f'{x:.3f}' for x in cpu_r)}; median {st.median(cpu_r):.3f})"
                  f"  req/s {rps:.3f} (rounds {' '.join(f'{x:.3f}' for x in rps_r)}; median {st.median(rps_r):.3f})"
                  f"  {'(reference)' if floor else 'ok' if ok else 'MISS'}")
        if not floor and "floor" in tools:
            print(f"{k}/floor: cpu {med(k, 1) / med('floor', 1):.3f}  req/s {med(k, 0) / med('floor', 0):.3f}")
print(f"\ntarget (cpu <= 0.65x, req/s >= 1.00x, ratios of medians): {sum(verdicts)}/{len(verdicts)} pairs hold")
EOF
