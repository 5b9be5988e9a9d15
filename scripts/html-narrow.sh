#!/usr/bin/env bash
# Check that kurabe's HTML reports read on a narrow (phone) screen: each page
# is loaded in headless Chromium at 400 px wide and its scroll width is
# measured; a page wider than the window (a chart or table running off the
# right edge instead of scaling or scrolling in its own box) fails.
#
#   scripts/html-narrow.sh [WIDTH [PAGE.html...]]     (default 400)
#
# Reports checked: the experiment report of the committed demo export
# (crates/kurabe/tests/data/report-demo-export.json), of a `kurabe cmd`
# comparison and of a short soak run (the memory-over-requests chart), the
# `kurabe history` page of a plan run six times with a step in its work,
# the `kurabe site` index of that store, and any PAGE given. Collapsed
# <details> are opened before measuring. The soak and history pages take about half a minute
# to make. Exit 0 when every page fits, 1 when one does not (the widest
# elements are listed), 2 when chromium or kurabe is missing. Screenshots
# are left in $OUT (default: a temp dir, printed) for a look by eye.
# Needs chromium (apt-get install -y chromium) and a built kurabe
# (KURABE=path, default target/debug/kurabe or $CARGO_TARGET_DIR/debug/kurabe).
set -euo pipefail

width=${1:-400}
shift || true
root=$(cd "$(dirname "$0")/.." && pwd)
kurabe=${KURABE:-${CARGO_TARGET_DIR:-$root/target}/debug/kurabe}
[ -x "$kurabe" ] || { echo "html-narrow: no kurabe binary at $kurabe; run cargo build or set KURABE" >&2; exit 2; }
chromium=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$chromium" ] || { echo "html-narrow: chromium not found; apt-get install -y chromium" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"

# The pages.
store=$work/demo.db
"$kurabe" results import "$root/crates/kurabe/tests/data/report-demo-export.json" --store "$store" >/dev/null
"$kurabe" report e1 --store "$store" --format html -o "$work/experiment.html" 2>/dev/null
"$kurabe" cmd -q --runs 3 --no-save --html "$work/cmd.html" 'sleep 0.01' 'sleep 0.02' >/dev/null 2>&1
# A soak run: two short soaks of kurabe's own server, one leaking.
cat >"$work/soak.toml" <<'PLAN'
name = "narrow: soak"
repeat = 1
warmup = "1s"
[target]
command = ["{kurabe}", "serve", "--port", "{port}"]
ready = "http://127.0.0.1:{port}/"
startup_timeout = "20s"
[[variant]]
name = "leak 1024 B/request"
args = ["--leak-bytes", "1024"]
[[variant]]
name = "no leak"
args = ["--leak-bytes", "0"]
[[workload]]
name = "soak GET /"
http = { path = "/", soak = "3s", rate = 500, concurrency = 2, keep_alive = true }
metrics = ["requests_per_second", "pss_slope_bytes_per_request", "pss_growing", "pss_peak_bytes"]
PLAN
"$kurabe" run -q --store "$work/soak.db" "$work/soak.toml" >/dev/null 2>&1
"$kurabe" report e1 --store "$work/soak.db" --format html -o "$work/soak.html" 2>/dev/null
# A history: one plan run six times, its command's work doubling after three.
for pause in 0.01 0.01 0.01 0.02 0.02 0.02; do
    cat >"$work/history.toml" <<PLAN
name = "narrow: history of a command with a long name to wrap"
repeat = 2
[[variant]]
name = "sleep"
[[workload]]
name = "pause"
command = { command = "sleep $pause", runs = 3 }
PLAN
    "$kurabe" run -q --store "$work/history.db" "$work/history.toml" >/dev/null 2>&1
done
"$kurabe" history "narrow: history of a command with a long name to wrap" --store "$work/history.db" \
    --format html -o "$work/history.html" 2>/dev/null
"$kurabe" site --store "$work/history.db" -o "$work/site" >/dev/null 2>&1
cp "$work/site/index.html" "$work/site-index.html"
for extra in "$@"; do cp "$extra" "$work/$(basename "$extra")"; done

# Chromium's window is at least 500 px wide, so each page is shown in a
# WIDTH-px iframe (srcdoc: same origin, so the probe can measure it). After
# layout the probe writes the page's scroll width and the elements that run
# past the right edge outside any scrolling box into the title, which
# --dump-dom prints.
probe='<script>
const f = document.getElementById("f");
f.addEventListener("load", () => {
  const d = f.contentDocument, w = f.contentWindow.innerWidth, over = [];
  for (const s of d.querySelectorAll("details")) s.open = true;
  for (const e of d.body.querySelectorAll("*")) {
    const r = e.getBoundingClientRect();
    let clipped = false;
    for (let p = e.parentElement; p && p !== d.body; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === "auto" || o === "scroll" || o === "hidden") { clipped = true; break; }
    }
    if (!clipped && r.right > w + 1) over.push(e.tagName.toLowerCase() + "=" + Math.round(r.right));
  }
  document.title = "SCROLLWIDTH=" + d.documentElement.scrollWidth + " OVER=" + over.slice(0, 8).join(",");
});
</script>'

status=0
for page in "$work"/*.html; do
    name=$(basename "$page" .html)
    harness=$work/$name.narrow.htm
    {
        printf '<!doctype html><html><body style="margin:0"><iframe id="f" style="width:%spx;height:900px;border:0" srcdoc="' "$width"
        sed -e 's/&/\&amp;/g' -e 's/"/\&quot;/g' "$page"
        printf '"></iframe>%s</body></html>\n' "$probe"
    } >"$harness"
    flags=(--headless=new --no-sandbox --disable-gpu --no-first-run --disable-background-networking
        --disable-component-update --disable-sync --hide-scrollbars --user-data-dir="$work/profile"
        --window-size=500,900)
    dom=$(timeout 120 "$chromium" "${flags[@]}" --dump-dom "file://$harness" 2>/dev/null)
    timeout 120 "$chromium" "${flags[@]}" --screenshot="$out/$name-$width.png" "file://$harness" >/dev/null 2>&1 || true
    line=$(grep -o 'SCROLLWIDTH=[0-9]* OVER=[^<]*' <<<"$dom" || true)
    scroll=$(sed -n 's/SCROLLWIDTH=\([0-9]*\).*/\1/p' <<<"$line")
    if [ -z "$scroll" ]; then
        echo "html-narrow: $name: chromium gave no measurement" >&2
        status=1
    elif [ "$scroll" -gt "$width" ]; then
        echo "html-narrow: $name: FAIL, page is ${scroll} px wide at ${width} px (${line#* })"
        status=1
    else
        echo "html-narrow: $name: ok, ${scroll} px at ${width} px"
    fi
done
echo "html-narrow: screenshots in $out"
exit $status
