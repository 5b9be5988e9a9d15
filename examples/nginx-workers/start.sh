#!/bin/sh
# Starts nginx in the foreground on 127.0.0.1:PORT with WORKERS worker
# processes, from a private temporary prefix (config, pid, temp dirs, error
# log), so it needs no root and touches nothing of a system nginx.
#
#   sh start.sh PORT WORKERS     (WORKERS: a number or "auto")
set -eu
port=$1
workers=$2
here=$(cd "$(dirname "$0")" && pwd)
base=${TMPDIR:-/tmp}
# Prefixes of earlier runs (nginx is exec'd below, so nobody else removes them).
find "$base" -maxdepth 1 -name 'kurabe-nginx.*' -mmin +30 -exec rm -rf {} + 2>/dev/null || true
prefix=$(mktemp -d "$base/kurabe-nginx.XXXXXX")
mkdir -p "$prefix/logs"
sed -e "s|@PORT@|$port|" -e "s|@WORKERS@|$workers|" -e "s|@ROOT@|$here/www|" \
    -e "s|@PREFIX@|$prefix|g" "$here/nginx.conf.in" > "$prefix/nginx.conf"
exec nginx -p "$prefix/" -c "$prefix/nginx.conf" -e "$prefix/logs/error.log"
