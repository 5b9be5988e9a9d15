#!/usr/bin/env bash
# bench/probe-accuracy.sh — `kurabe watch` / `kurabe mem` against the kernel's own
# accounting and the usual tools, measured in the same run (issue 3, "Accuracy").
#
# Per round (ROUNDS, default 3):
#   busy     kurabe watch -- /usr/bin/time perl <5 s busy loop>: CPU s vs time's U+S,
#            CPU % vs time's (U+S)/elapsed
#   quota    the same under --cpus 0.5
#   forks    sh loop of 300 × sha256sum, with the cgroup and with --no-cgroup
#            (rusage + /proc only): CPU s vs time's U+S
#   shared   perl parent writing 200 MiB + 4 forked workers: Σ PSS vs `smem -t`
#            taken while kurabe watches, and Σ RSS (over-count)
#   mem      kurabe mem --format json used_bytes vs free -b "used" read just before/after
# Env: ROUNDS (3), KURABE (binary; default cargo build --release).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
for t in jq smem free /usr/bin/time perl; do command -v "$t" >/dev/null || { echo "bench: needs $t" >&2; exit 2; }; done
if [ -z "${KURABE:-}" ]; then
  cargo build --release -q -p kurabe
  KURABE="${CARGO_TARGET_DIR:-target}/release/kurabe"
fi
work=$(mktemp -d /tmp/kurabe-probe-acc.XXXXXX)
trap 'rm -rf "$work"' EXIT
BUSY='$e = time + 5; 1 while time < $e'

timed_watch() { # flags... -- cmd...
  local flags=() ; while [ "$1" != "--" ]; do flags+=("$1"); shift; done; shift
  "$KURABE" watch --format json "${flags[@]}" -- /usr/bin/time -f '%U %S %e' -o "$work/t" "$@" >"$work/r.json"
  read -r u s e <"$work/t"
  jq -r --arg u "$u" --arg s "$s" --arg e "$e" '
    (($u|tonumber) + ($s|tonumber)) as $ref | ($ref / ($e|tonumber) * 100) as $refpct |
    "cpu_s \(.cpu_seconds*1000|round/1000) (\(.cpu_source)) proc \(.cpu_seconds_proc*1000|round/1000) time \($ref*1000|round/1000)  diff \((.cpu_seconds-$ref)/$ref*10000|round/100) %  |  cpu% \(.cpu_percent_mean*10|round/10) vs time \($refpct*10|round/10)  diff \((.cpu_percent_mean-$refpct)*100|round/100) pt  p95 \(.cpu_percent_p95*10|round/10)"' "$work/r.json"
}

for r in $(seq "$ROUNDS"); do
  echo "== round $r"
  printf 'busy    '; timed_watch --interval 0.5 -- perl -MTime::HiRes=time -e "$BUSY"
  printf 'quota   '; timed_watch --interval 0.5 --cpus 0.5 -- perl -MTime::HiRes=time -e "$BUSY"
  printf 'forks   '; timed_watch --interval 0.5 -- sh -c 'for i in $(seq 300); do sha256sum /bin/ls >/dev/null; done'
  printf 'forks-nocg '; timed_watch --interval 0.5 --no-cgroup -- sh -c 'for i in $(seq 300); do sha256sum /bin/ls >/dev/null; done'

  rm -f "$work/ready"
  cat >"$work/shared.pl" <<'PL'
my $d = "x" x (200 << 20); my @p;
for (1 .. 4) { my $p = fork(); if (!$p) { sleep 1000 while 1 } push @p, $p }
open(my $f, ">", $ARGV[0]); print $f "@p"; close $f; sleep 1000 while 1
PL
  "$KURABE" watch --format json --interval 0.5 --duration 6 -- perl "$work/shared.pl" "$work/ready" >"$work/s.json" &
  kp=$!
  for _ in $(seq 200); do [ -s "$work/ready" ] && break; sleep 0.05; done
  sleep 1
  smem_kib=$(smem -t -c "pss" -P "^perl $work/shared[.]pl" | tail -1 | tr -d ' ')
  wait $kp
  jq -r --arg sm "$smem_kib" '.rss_overcounts as $o | [.series[] | select(.processes == 5)] | last as $p |
    "shared  Σ PSS \($p.pss_bytes/1048576*10|round/10) MiB vs smem \(($sm|tonumber)/1024*10|round/10) MiB diff \(($p.pss_bytes/1024 - ($sm|tonumber))/($sm|tonumber)*10000|round/100) %  Σ RSS \($p.rss_bytes/1048576*10|round/10) MiB overcount=\($o)"' "$work/s.json"

  f1=$(free -b | awk '/^Mem:/ {print $3}')
  k=$("$KURABE" mem --format json --top 0 | jq .used_bytes)
  f2=$(free -b | awk '/^Mem:/ {print $3}')
  echo "mem     kurabe used $k  free before $f1 after $f2  diff vs mean $(( k - (f1 + f2) / 2 )) bytes"
done
