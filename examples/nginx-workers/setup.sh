#!/bin/sh
# Installs what the nginx-workers example needs: Debian's nginx (the
# binary only; the example runs it from a private temporary prefix and
# never touches the system service). Safe to re-run.
set -eu
if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    # A fresh machine (or container) may have no package lists yet.
    $SUDO apt-get update
    $SUDO apt-get install -y --no-install-recommends nginx-light || $SUDO apt-get install -y nginx
fi
PATH="$PATH:/usr/sbin" nginx -v
