#!/usr/bin/env bash
# Runs the stdio hub's acceptance subset (tests/src/bin/edge_accept.rs: a
# client, two upstreams, a tool call to each, an input request relayed, a
# crash and restart, SIGTERM with a call in flight) against the built edge
# binaries as a board runs them: aarch64 and armv7 under qemu user
# emulation (Debian qemu-user-static), x86_64 natively.
#
#   edge/accept.sh [TRIPLE...]   default: all three; build with edge/build.sh first
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
log() { printf 'edge/accept: %s\n' "$*" >&2; }
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl armv7-unknown-linux-musleabihf)

if ! command -v qemu-aarch64-static >/dev/null || ! command -v qemu-arm-static >/dev/null; then
    command -v apt-get >/dev/null || { log "qemu-user-static is missing and there is no apt-get"; exit 1; }
    log "apt-get install qemu-user-static"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user-static >/dev/null
fi
cargo build -q -p mcpx-tests --bin edge-accept
accept="${CARGO_TARGET_DIR:-target}/debug/edge-accept"

fail=()
for t in "${targets[@]}"; do
    bin="target/$t/edge/mcpx-edge"
    case "$t" in
        aarch64-*) run=(qemu-aarch64-static) ;;
        armv7-*) run=(qemu-arm-static) ;;
        *) run=() ;;
    esac
    if [ ! -x "$bin" ]; then
        log "$t: $bin missing (run edge/build.sh)"
        fail+=("$t")
        continue
    fi
    log "$t${run:+ under ${run[*]}}"
    "$accept" "$bin" "${run[@]}" || fail+=("$t")
done
if [ ${#fail[@]} -gt 0 ]; then
    log "FAILED: ${fail[*]}"
    exit 1
fi
log "all passed: ${targets[*]}"
