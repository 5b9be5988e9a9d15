#!/usr/bin/env bash
# Render an HTML report and screenshot it in headless Chromium, to check by
# eye that the page and its SVG charts render (no JS, no network needed).
#
#   scripts/html-screenshot.sh [STORE ID] [OUT.png]
#
# Without STORE and ID it imports the committed demo experiment
# (crates/kurabe/tests/data/report-demo-export.json) into a temporary store.
# Needs chromium (apt-get install -y chromium) and a built kurabe
# (KURABE=path, default target/debug/kurabe or $CARGO_TARGET_DIR/debug/kurabe).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
kurabe=${KURABE:-${CARGO_TARGET_DIR:-$root/target}/debug/kurabe}
[ -x "$kurabe" ] || { echo "html-screenshot: no kurabe binary at $kurabe; run cargo build or set KURABE" >&2; exit 2; }
chromium=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$chromium" ] || { echo "html-screenshot: chromium not found; apt-get install -y chromium" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ $# -ge 2 ]; then
    store=$1 id=$2 out=${3:-report.png}
else
    store=$work/demo.db id=e1 out=${1:-report.png}
    "$kurabe" results import "$root/crates/kurabe/tests/data/report-demo-export.json" --store "$store" >/dev/null
fi

html=$work/report.html
"$kurabe" report "$id" --store "$store" --format html -o "$html"

# No network, no profile state: the page must render from the file alone.
timeout 120 "$chromium" --headless=new --no-sandbox --disable-gpu --disable-quic \
    --no-first-run --disable-background-networking --disable-component-update \
    --disable-sync --user-data-dir="$work/profile" --hide-scrollbars \
    --screenshot="$out" --window-size=1200,${HEIGHT:-2400} "file://$html" >/dev/null 2>&1

[ -s "$out" ] || { echo "html-screenshot: chromium wrote no screenshot" >&2; exit 1; }
echo "html-screenshot: $(wc -c <"$out") bytes -> $out"
