# bench/lib/peers.sh — the setup bench/http-peers.sh and bench/http2-peers.sh
# share, sourced by both: the packages they need, the kurabe binary, a work
# directory removed on exit, the 381-byte file nginx serves, free ports, and
# nginx started (with a given http{} body) and stopped.
#
# Owns the setup only; must not measure (each script has its own runners).
# Traffic goes to 127.0.0.1 only.

# peers_need CMD:PACKAGE...: apt-install the package of every command missing,
# besides nginx, /usr/bin/time and python3, which every peer bench needs.
peers_need() {
  local need=() pair
  command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
  [ -x /usr/bin/time ] || need+=(time)
  command -v python3 >/dev/null 2>&1 || need+=(python3)
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || need+=("${pair#*:}")
  done
  if [ ${#need[@]} -gt 0 ]; then
    echo "bench: installing ${need[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
  NGINX=$(command -v nginx || echo /usr/sbin/nginx)
}

# peers_kurabe: KURABE is the kurabe binary, built in release mode when unset.
peers_kurabe() {
  if [ -z "${KURABE:-}" ]; then
    echo "bench: cargo build --release -p kurabe" >&2
    cargo build --release -q -p kurabe
    KURABE="${CARGO_TARGET_DIR:-target}/release/kurabe"
  fi
}

# peers_workdir PREFIX: $work, a fresh directory holding index.html (381
# bytes), removed (after nginx is stopped) on exit.
peers_workdir() {
  work=$(mktemp -d "/tmp/$1.XXXXXX")
  chmod 755 "$work" # nginx workers run as an unprivileged user
  nginx_pid=""
  trap peers_cleanup EXIT
  trap 'exit 130' INT TERM
  head -c 381 /dev/zero | tr '\0' 'k' >"$work/index.html"
}

peers_cleanup() {
  stop_nginx
  rm -rf "$work"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# nginx_start WORKERS HTTP_BODY PORT...: nginx with `worker_processes WORKERS`,
# access log off, keep-alive unbounded, and HTTP_BODY inside http{}; returns
# once every PORT accepts connections (or after 5 s each).
nginx_start() {
  local workers=$1 body=$2 port
  shift 2
  cat >"$work/nginx.conf" <<EOF
worker_processes $workers;
worker_rlimit_nofile 65536;
daemon off;
pid $work/nginx.pid;
error_log $work/error.log warn;
events { worker_connections 16384; }
http {
  access_log off;
  keepalive_requests 1000000;
$body
}
EOF
  "$NGINX" -c "$work/nginx.conf" -p "$work" -e "$work/error.log" &
  nginx_pid=$!
  for port in "$@"; do
    for _ in $(seq 100); do
      python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null && break
      sleep 0.05
    done
  done
}

stop_nginx() {
  if [ -n "${nginx_pid:-}" ] && kill -0 "$nginx_pid" 2>/dev/null; then
    kill -QUIT "$nginx_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$nginx_pid" 2>/dev/null || break; sleep 0.1; done
  fi
  nginx_pid=""
}
