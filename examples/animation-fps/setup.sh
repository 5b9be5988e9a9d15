#!/bin/sh
# Installs what the animation-fps example needs: Debian's chromium and npm,
# then jQuery 1.12.4 (it honours jQuery.fx.interval; 3.x animates with
# requestAnimationFrame and ignores it) and the jquery-cycle plugin from npm
# into ./node_modules (not committed). Safe to re-run.
set -eu
cd "$(dirname "$0")"
missing=""
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
if [ -n "$missing" ]; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    # shellcheck disable=SC2086
    # A fresh machine (or container) may have no package lists yet.
    $SUDO apt-get update
    $SUDO apt-get install -y --no-install-recommends $missing
fi
if [ ! -f node_modules/jquery/dist/jquery.min.js ] || [ ! -f node_modules/jquery-cycle/index.js ] \
    || ! grep -q '"version": "1.12.4"' node_modules/jquery/package.json; then
    npm install --no-audit --no-fund --no-save --prefix . jquery@1.12.4 jquery-cycle@3.0.3
fi
chromium --version
grep '"version"' node_modules/jquery/package.json node_modules/jquery-cycle/package.json
