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
# Off the network: no background services (updates, sync, metrics, safe
# browsing, sign-in, translate, …) and, as a backstop, a host resolver that
# answers NOTFOUND for every name. The page is a file:// URL and needs none.
# Left: the resolver's IPv6 probe, a UDP connect() to 2001:4860:4860::8888
# that sends no packet (checked with strace; see README.md).
exec chromium --headless=new --remote-debugging-port=0 \
    --no-sandbox --disable-gpu --no-first-run --no-default-browser-check \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-default-apps --disable-extensions \
    --disable-component-extensions-with-background-pages \
    --disable-client-side-phishing-detection --disable-domain-reliability \
    --disable-crash-reporter --disable-breakpad --no-pings \
    --metrics-recording-only --no-service-autorun --disable-quic \
    --disable-features=OptimizationHints,MediaRouter,Translate,AutofillServerCommunication,CertificateTransparencyComponentUpdater \
    --host-resolver-rules="MAP * ~NOTFOUND" \
    --user-data-dir="$dir/profile" \
    --enable-logging=stderr --v=0 \
    "file://$here/slideshow.html?interval=$1"
