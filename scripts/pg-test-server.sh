#!/usr/bin/env bash
# A throwaway PostgreSQL server for kurabe's tests.
#
#   scripts/pg-test-server.sh start DIR   # prints the URL on stdout
#   scripts/pg-test-server.sh stop DIR
#
# start: initdb into DIR/data (as user postgres when run as root: initdb
# refuses root), listen on a Unix socket in DIR and on 127.0.0.1 at a free
# port, with TLS (a self-signed certificate for "localhost", DIR/ca.pem) when
# openssl is installed. Creates role `kurabe` (password in the URL, scram
# over TCP; the socket trusts local users) owning database `kurabe`.
# Prints the TCP URL, e.g. postgres://kurabe:PW@127.0.0.1:PORT/kurabe;
# DIR/url holds it too, DIR/socket-url the Unix-socket form.
# stop: fast shutdown, then DIR is removed.
# Exit status 3: no PostgreSQL server binaries are installed (the tests'
# kurabe-testkit skips then, outside CI).
#
# Debian's server binaries live in /usr/lib/postgresql/<major>/bin, which is
# not on PATH; the newest installed major is used (PG_BIN overrides).
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd=$1 dir=$2

find_bin() {
  if [ -n "${PG_BIN:-}" ]; then echo "$PG_BIN"; return; fi
  if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then
    dirname "$(command -v pg_ctl)"; return
  fi
  local best
  best=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n | tail -1 || true)
  if [ -z "$best" ] || [ ! -x "$best/initdb" ]; then
    echo "pg-test-server: no PostgreSQL server binaries found (apt-get install postgresql, or set PG_BIN)" >&2
    exit 3
  fi
  echo "$best"
}

# Run a server binary as the owner of the data directory.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null && return
  # No python: pick from the ephemeral range until nothing listens there.
  local p
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 20000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  echo "pg-test-server: no free port found" >&2; exit 1
}

case $cmd in
start)
  bin=$(find_bin)
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$dir"
    # The postgres user must be able to reach DIR (mktemp makes /tmp/x 0700 root).
    chmod 0755 "$dir"
  fi
  pw=$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')
  as_owner sh -c "umask 077; printf '%s\n' '$pw' > '$dir/pwfile'"
  as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
    --pwfile="$dir/pwfile" -E UTF8 --no-instructions >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2; exit 1; }
  rm -f "$dir/pwfile"
  port=$(free_port)
  tls_conf=""
  if command -v openssl >/dev/null 2>&1; then
    # A test CA (DIR/ca.pem) and a server certificate it signs for
    # "localhost": webpki rejects a self-signed CA used as the server's own.
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=kurabe-test-ca \
      -keyout "$dir/ca.key" -out "$dir/ca.pem" >/dev/null 2>&1
    openssl req -newkey rsa:2048 -nodes -subj /CN=localhost \
      -keyout "$dir/server.key" -out "$dir/server.csr" >/dev/null 2>&1
    printf 'subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n' >"$dir/server.ext"
    openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
      -CAcreateserial -days 2 -extfile "$dir/server.ext" -out "$dir/server.crt" >/dev/null 2>&1
    install -m 0600 -o "$(stat -c %u "$dir/data")" "$dir/server.key" "$dir/data/server.key"
    install -m 0644 -o "$(stat -c %u "$dir/data")" "$dir/server.crt" "$dir/data/server.crt"
    rm -f "$dir/ca.key" "$dir/server.key" "$dir/server.crt" "$dir/server.csr" "$dir/server.ext" "$dir/ca.srl"
    chmod 0644 "$dir/ca.pem"
    tls_conf="ssl = on"
  fi
  as_owner sh -c "cat >> '$dir/data/postgresql.conf'" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 100
fsync = off
synchronous_commit = off
full_page_writes = off
$tls_conf
EOF
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null || {
    cat "$dir/server.log" >&2; exit 1; }
  psql=$bin/psql
  [ -x "$psql" ] || psql=psql
  as_owner "$psql" -h "$dir" -p "$port" -U postgres -d postgres -qAt -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE kurabe LOGIN PASSWORD '$pw'" -c "CREATE DATABASE kurabe OWNER kurabe" >/dev/null
  url="postgres://kurabe:$pw@127.0.0.1:$port/kurabe"
  echo "$url" >"$dir/url"
  echo "postgres://kurabe@$(printf %s "$dir" | sed 's,/,%2F,g'):$port/kurabe" >"$dir/socket-url"
  echo "$url"
  ;;
stop)
  [ -d "$dir/data" ] || { echo "pg-test-server: no server in $dir" >&2; exit 1; }
  bin=$(find_bin)
  as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null 2>&1 || true
  rm -rf "$dir"
  ;;
*) usage ;;
esac
