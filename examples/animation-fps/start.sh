#!/bin/sh
# Starts headless Chromium on slideshow.html?interval=INTERVAL with the
# flags that keep it off the network, and a fresh profile, HOME, cache and
# TMPDIR (Chromium writes outside its profile too) in a private temp dir.
#
#   sh start.sh INTERVAL_MS
set -eu
here=$(cd "$(dirname "$0")" && pwd)
base=${TMPDIR:-/tmp}
# Temp dirs of earlier runs (chromium is exec'd below, so nobody else removes them).
find "$base" -maxdepth 1 -name 'kurabe-chromium.*' -mmin +30 -exec rm -rf {} + 2>/dev/null || true
dir=$(mktemp -d "$base/kurabe-chromium.XXXXXX")
mkdir -p "$dir/tmp"
export HOME="$dir" XDG_CONFIG_HOME="$dir/config" XDG_CACHE_HOME="$dir/cache" TMPDIR="$dir/tmp"
exec chromium --headless=new --remote-debugging-port=0 \
    --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-crash-reporter --user-data-dir="$dir/profile" \
    --enable-logging=stderr --v=0 \
    "file://$here/slideshow.html?interval=$1"
