#!/usr/bin/env bash
# An example mcpx cluster on loopback: Redis, three mcpx replicas (each
# serving the built-in demo servers) and HAProxy in front, from the Debian
# packages redis-server and haproxy. See deploy/cluster/README.md.
#
#   deploy/cluster/start.sh [--mcpx PATH] [--dir DIR]
#
# Ports (environment): MCPX_FRONT_PORT (7400, HAProxy), MCPX_REPLICA_PORTS
# ("7401 7402 7403"), MCPX_REDIS_PORT (7479). Clients use
# http://127.0.0.1:$MCPX_FRONT_PORT/mcp. Runs in the foreground; Ctrl-C or
# SIGTERM stops everything it started. Each process's pid is in DIR/NAME.pid
# and its log in DIR/NAME.log.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mcpx="$(command -v mcpx || true)"
dir=""
while [ $# -gt 0 ]; do
    case "$1" in
        --mcpx) mcpx="$2"; shift 2 ;;
        --dir) dir="$2"; shift 2 ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) echo "start.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -n "$mcpx" ] && [ -x "$mcpx" ] || { echo "start.sh: no mcpx binary (put it on PATH or pass --mcpx PATH)" >&2; exit 1; }
for tool in redis-server haproxy; do
    command -v "$tool" >/dev/null || { echo "start.sh: $tool is missing (apt-get install -y redis-server haproxy)" >&2; exit 1; }
done
[ -n "$dir" ] || dir="$(mktemp -d -t mcpx-cluster.XXXXXX)"
mkdir -p "$dir"
front="${MCPX_FRONT_PORT:-7400}"
redis_port="${MCPX_REDIS_PORT:-7479}"
read -r -a ports <<<"${MCPX_REPLICA_PORTS:-7401 7402 7403}"
[ "${#ports[@]}" = 3 ] || { echo "start.sh: MCPX_REPLICA_PORTS must name three ports" >&2; exit 2; }

pids=()
stop() {
    trap - INT TERM EXIT
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    echo "start.sh: stopped (files in $dir)"
}
trap stop INT TERM EXIT

# Every replica shares the requestState sealing key (and so the hop's key).
[ -s "$dir/state.key" ] || { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/state.key"; chmod 600 "$dir/state.key"; }

redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no >"$dir/redis.log" 2>&1 &
pids+=($!); echo $! >"$dir/redis.pid"

for i in 1 2 3; do
    peers=""
    for j in 1 2 3; do
        [ "$j" = "$i" ] && continue
        peers+="${peers:+, }\"r$j\": \"http://127.0.0.1:${ports[$((j - 1))]}\""
    done
    cat >"$dir/r$i.json" <<JSON
{
  "mcpServers": {
    "demo": {"command": "$mcpx", "args": ["example-server", "--demo"]}
  },
  "state": {"url": "redis://127.0.0.1:$redis_port/0", "keyFile": "$dir/state.key"},
  "cluster": {"replica": "r$i", "peers": {$peers}}
}
JSON
    "$mcpx" serve --http "127.0.0.1:${ports[$((i - 1))]}" --config "$dir/r$i.json" >"$dir/r$i.log" 2>&1 &
    pids+=($!); echo $! >"$dir/r$i.pid"
done

sed -e "s/@PORT@/$front/" -e "s/@R1@/${ports[0]}/" -e "s/@R2@/${ports[1]}/" -e "s/@R3@/${ports[2]}/" \
    "$here/haproxy.cfg.in" >"$dir/haproxy.cfg"
haproxy -db -f "$dir/haproxy.cfg" >"$dir/haproxy.log" 2>&1 &
pids+=($!); echo $! >"$dir/haproxy.pid"

# Ready when HAProxy answers /health through a replica (at most 15 s).
healthy() {
    exec 3<>"/dev/tcp/127.0.0.1/$front" || return 1
    printf 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
    local status
    status="$(head -c 12 <&3)"
    exec 3>&-
    [[ "$status" == *" 200"* ]]
}
up=""
for _ in $(seq 150); do
    if healthy 2>/dev/null; then up=1; break; fi
    sleep 0.1
done
[ -n "$up" ] || { echo "start.sh: the cluster did not come up within 15 s (logs in $dir)" >&2; exit 1; }
echo "start.sh: cluster up: http://127.0.0.1:$front/mcp (replicas on ${ports[*]}, Redis on $redis_port; files in $dir)"
wait -n "${pids[@]}" || true
echo "start.sh: a process of the cluster ended; stopping the others" >&2
