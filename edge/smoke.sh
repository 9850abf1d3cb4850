#!/usr/bin/env bash
# Runs the edge binaries the way a board would: the aarch64 and armv7 ones
# under qemu user emulation (Debian qemu-user-static), the x86_64 one
# natively. For each: --version, the example server answering a tools/call
# directly, the same call through the hub (`serve --config`), and a short
# run of the embedded benchmark (`bench --quick`; SMOKE_BENCH=0 skips it;
# under emulation its numbers mean nothing, only that it runs).
#
#   edge/smoke.sh [TRIPLE...]    default: all three; build with edge/build.sh first
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
log() { printf 'edge/smoke: %s\n' "$*" >&2; }
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl armv7-unknown-linux-musleabihf)

if ! command -v qemu-aarch64-static >/dev/null || ! command -v qemu-arm-static >/dev/null; then
    command -v apt-get >/dev/null || { log "qemu-user-static is missing"; exit 1; }
    log "apt-get install qemu-user-static"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user-static >/dev/null
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail=0

# requests TEXT: an MCP session that calls echo with TEXT, paced so that
# every answer is in before end of input.
requests() {
    printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"edge-smoke","version":"0"}}}'
    sleep "${SMOKE_PACE:-2}"
    printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/initialized"}'
    printf '%s\n' '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
    sleep "${SMOKE_PACE:-2}"
    printf '%s\n' "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"$1\"}}}"
    sleep "${SMOKE_PACE:-2}"
}

check() { # NAME FILE TEXT
    if grep -q "\"id\":3" "$2" && grep -q "$3" "$2"; then
        log "$1: ok"
    else
        log "$1: FAILED; output was:"
        sed 's/^/    /' "$2" >&2
        fail=1
    fi
}

for t in "${targets[@]}"; do
    bin="$root/target/$t/edge/mcpx-edge"
    case "$t" in
        aarch64-*) run=(qemu-aarch64-static) ;;
        armv7-*) run=(qemu-arm-static) ;;
        *) run=() ;;
    esac
    if [ ! -x "$bin" ]; then
        log "$t: $bin missing (run edge/build.sh)"
        fail=1
        continue
    fi
    if v=$("${run[@]}" "$bin" --version); then log "$t: --version: $v"; else log "$t: --version FAILED"; fail=1; continue; fi

    text="smoke-$t"
    requests "$text" | timeout 60 "${run[@]}" "$bin" example-server --demo >"$tmp/direct.out" 2>"$tmp/direct.err" || true
    check "$t: example-server tools/call" "$tmp/direct.out" "$text"

    # The hub runs under qemu, and so does its upstream (the same binary).
    cmd=$( [ ${#run[@]} -gt 0 ] && echo "${run[0]}" || echo "$bin" )
    args=$( [ ${#run[@]} -gt 0 ] && echo "[\"$bin\", \"example-server\", \"--demo\"]" || echo '["example-server", "--demo"]' )
    cat >"$tmp/config.json" <<JSON
{"mcpServers": {"example": {"command": "$cmd", "args": $args, "prefix": ""}}, "logLevel": "warn"}
JSON
    requests "$text-hub" | timeout 60 "${run[@]}" "$bin" serve --config "$tmp/config.json" >"$tmp/hub.out" 2>"$tmp/hub.err" || true
    check "$t: tools/call through the hub" "$tmp/hub.out" "$text-hub"

    if [ "${SMOKE_BENCH:-1}" = 1 ]; then
        # Under qemu the bench cannot re-execute itself directly: tell it how.
        if MCPX_BENCH_EXE="${run[*]} $bin" timeout 300 "${run[@]}" "$bin" bench --quick --rounds 1 --only stdio \
            >"$tmp/bench.out" 2>"$tmp/bench.err" && grep -Eq 'mcpx serve +[0-9.]+ ' "$tmp/bench.out"; then
            log "$t: bench --quick: ok"
        else
            log "$t: bench --quick FAILED; output was:"
            sed 's/^/    /' "$tmp/bench.out" "$tmp/bench.err" >&2
            fail=1
        fi
    fi
done
exit "$fail"
