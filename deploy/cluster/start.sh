#!/usr/bin/env bash
# An example mcpx cluster on loopback: Redis, three mcpx replicas (each
# serving the built-in demo servers) and HAProxy in front, from the Debian
# packages redis-server and haproxy. See deploy/cluster/README.md.
#
#   deploy/cluster/start.sh [--mcpx PATH] [--dir DIR]
#
# Ports (environment): MCPX_FRONT_PORT (7400, HAProxy), MCPX_REPLICA_PORTS
# ("7401 7402 7403"), MCPX_REDIS_PORT (7479). Clients use
# http://127.0.0.1:$MCPX_FRONT_PORT/mcp. Every replica reads the one config
# DIR/mcpx.json, MCPX_REPLICA saying which it is. A replica that ends is
# started again after MCPX_RESTART_DELAY seconds (2); the others keep
# serving. Runs in the foreground; Ctrl-C or SIGTERM stops everything it
# started. Each process's pid is in DIR/NAME.pid and its log in DIR/NAME.log.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mcpx="$(command -v mcpx || true)"
dir=""
while [ $# -gt 0 ]; do
    case "$1" in
        --mcpx) mcpx="$2"; shift 2 ;;
        --dir) dir="$2"; shift 2 ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
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
delay="${MCPX_RESTART_DELAY:-2}"
read -r -a ports <<<"${MCPX_REPLICA_PORTS:-7401 7402 7403}"
[ "${#ports[@]}" = 3 ] || { echo "start.sh: MCPX_REPLICA_PORTS must name three ports" >&2; exit 2; }

# Redis, the replicas' supervisors and HAProxy, stopped in reverse order.
pids=()
stop() {
    trap - INT TERM EXIT
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[$i]}" 2>/dev/null || true; done
    wait 2>/dev/null || true
    echo "start.sh: stopped (files in $dir)"
    exit 0
}
trap stop INT TERM EXIT

# Every replica shares the requestState sealing key (and so the hop's key).
[ -s "$dir/state.key" ] || { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/state.key"; chmod 600 "$dir/state.key"; }

# Each process in a session of its own: a Ctrl-C reaches the script only,
# which stops them (replicas first, then HAProxy and Redis).
setsid redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no >"$dir/redis.log" 2>&1 &
pids+=($!); echo $! >"$dir/redis.pid"

# One config for all: `cluster.peers` names every replica, and each skips
# itself (MCPX_REPLICA).
cat >"$dir/mcpx.json" <<JSON
{
  "mcpServers": {
    "demo": {"command": "$mcpx", "args": ["example-server", "--demo"]}
  },
  "state": {"url": "redis://127.0.0.1:$redis_port/0", "keyFile": "$dir/state.key"},
  "cluster": {"peers": {
    "r1": "http://127.0.0.1:${ports[0]}",
    "r2": "http://127.0.0.1:${ports[1]}",
    "r3": "http://127.0.0.1:${ports[2]}"
  }}
}
JSON

# Replica rN, started again whenever it ends; SIGTERM stops it for good
# (a Ctrl-C is the script's to handle).
supervise() {
    local name="r$1" port="$2" pid=""
    # Its own lines on fd 3; bash's own note of a killed job is noise here.
    exec 3>&2 2>/dev/null
    trap '' INT
    trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null; [ -z "$pid" ] || wait "$pid" 2>/dev/null; exit 0' TERM
    while :; do
        MCPX_REPLICA="$name" setsid "$mcpx" serve --http "127.0.0.1:$port" --config "$dir/mcpx.json" >>"$dir/$name.log" 2>&1 3>&- &
        pid=$!
        echo "$pid" >"$dir/$name.pid"
        local status=0
        wait "$pid" || status=$?
        pid=""
        echo "start.sh: replica $name ended (status $status); starting it again in $delay s" >&3
        sleep "$delay" 3>&- &
        wait $! || true
        echo "start.sh: replica $name started again" >&3
    done
}
for i in 1 2 3; do
    supervise "$i" "${ports[$((i - 1))]}" &
    pids+=($!)
done

sed -e "s/@PORT@/$front/" -e "s/@R1@/${ports[0]}/" -e "s/@R2@/${ports[1]}/" -e "s/@R3@/${ports[2]}/" \
    "$here/haproxy.cfg.in" >"$dir/haproxy.cfg"
setsid haproxy -db -f "$dir/haproxy.cfg" >"$dir/haproxy.log" 2>&1 &
haproxy_pid=$!
pids+=("$haproxy_pid"); echo "$haproxy_pid" >"$dir/haproxy.pid"

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
# Redis and HAProxy are the cluster's ground: without one of them, stop.
wait -n "${pids[0]}" "$haproxy_pid" || true
echo "start.sh: Redis or HAProxy ended; stopping the cluster" >&2
