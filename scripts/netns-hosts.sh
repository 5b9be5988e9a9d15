#!/usr/bin/env bash
# Test hosts on one machine: network namespaces joined by veth pairs to a bridge.
#
#   scripts/netns-hosts.sh up [WORKERS]   create (idempotent) the bridge, a target
#                                         namespace and WORKERS worker namespaces (default 3)
#   scripts/netns-hosts.sh down           remove them all (idempotent)
#   scripts/netns-hosts.sh status         print the hosts as NAME ADDRESS lines
#
# Layout (prefix and subnet overridable with NETNS_PREFIX and NETNS_SUBNET):
#   bridge  ${P}-br     ${S}.1/24  in the root namespace: PostgreSQL listens here
#   target  ${P}-target ${S}.2     for `kurabe serve`
#   workers ${P}-w1..N  ${S}.11..  for `kurabe worker`
# Nothing is routed or NATed out: the bridge has no uplink and forwarding is not
# touched, so load generated in these namespaces stays on this machine.
# Needs root (CAP_NET_ADMIN). Prints `NAME ADDRESS` lines on up/status.
set -euo pipefail

P=${NETNS_PREFIX:-kfl}
S=${NETNS_SUBNET:-10.77.0}
BR="${P}-br"

die() { echo "netns-hosts: $*" >&2; exit 2; }

[[ $(id -u) -eq 0 ]] || die "needs root (network namespaces need CAP_NET_ADMIN); run with sudo"
command -v ip >/dev/null || die "the 'ip' command (iproute2) is missing: apt-get install iproute2"
[[ ${#P} -le 8 ]] || die "NETNS_PREFIX '$P' is too long: interface names are limited to 15 characters"

have_ns() { ip netns list | awk -v ns="$1" '$1 == ns {found = 1} END {exit !found}'; }
have_link() { ip link show "$1" >/dev/null 2>&1; }

# host NAME IFACE ADDRESS: a namespace with one veth end on the bridge.
host() {
  local ns=$1 ifc=$2 addr=$3
  have_ns "$ns" || ip netns add "$ns"
  ip -n "$ns" link set lo up
  if ! ip -n "$ns" link show eth0 >/dev/null 2>&1; then
    have_link "$ifc" && ip link del "$ifc"
    ip link add "$ifc" type veth peer name eth0 netns "$ns"
  fi
  ip link set "$ifc" master "$BR" up
  ip -n "$ns" addr replace "$addr/24" dev eth0
  ip -n "$ns" link set eth0 up
  echo "$ns $addr"
}

up() {
  local workers=${1:-3}
  [[ $workers =~ ^[0-9]+$ && $workers -ge 1 && $workers -le 80 ]] || die "WORKERS must be 1..80, got '$workers'"
  if ! have_link "$BR"; then
    ip link add "$BR" type bridge
  fi
  ip addr replace "$S.1/24" dev "$BR"
  ip link set "$BR" up
  echo "${BR} $S.1"
  host "${P}-target" "${P}-vt" "$S.2"
  for i in $(seq 1 "$workers"); do
    host "${P}-w$i" "${P}-v$i" "$S.$((10 + i))"
  done
  # Fewer workers than last time: remove the extra ones.
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^${P}-w[0-9]+$" || true); do
    local n=${ns#"${P}"-w}
    if (( n > workers )); then ip netns del "$ns"; fi
  done
  # Wait until the target answers from the bridge (link-up takes a moment).
  command -v ping >/dev/null || return 0
  for _ in $(seq 1 50); do
    ping -c1 -W1 "$S.2" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  die "the target namespace ($S.2) does not answer ping from the bridge"
}

down() {
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^${P}-(target|w[0-9]+)$" || true); do
    # Processes still running inside would keep the namespace alive: end them.
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
    ip netns del "$ns"
  done
  for l in $(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "^${P}-v(t|[0-9]+)$" || true); do
    ip link del "$l" 2>/dev/null || true
  done
  if have_link "$BR"; then ip link del "$BR"; fi
}

status() {
  have_link "$BR" && echo "${BR} $S.1"
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^${P}-(target|w[0-9]+)$" | sort -V || true); do
    echo "$ns $(ip -n "$ns" -4 -o addr show dev eth0 | awk '{print $4}' | cut -d/ -f1)"
  done
}

case ${1:-} in
  up) up "${2:-3}" ;;
  down) down ;;
  status) status ;;
  *) die "usage: $0 up [WORKERS] | down | status" ;;
esac
