#!/usr/bin/env bash
# Runs the stdio hub's acceptance subset (tests/src/bin/edge_accept.rs: a
# client, two upstreams, a tool call to each, an input request relayed, a
# crash and restart, SIGTERM with a call in flight) against the built edge
# binaries as a board runs them: aarch64 and armv7 under qemu user
# emulation (Debian qemu-user-static), x86_64 natively; then a short run of
# the embedded benchmark (`bench --quick`, stdio rows: under emulation its
# numbers mean nothing, only that it runs there; ACCEPT_BENCH=0 skips it).
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
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user-static >/dev/null
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
    "$accept" "$bin" "${run[@]}" || { fail+=("$t"); continue; }
    [ "${ACCEPT_BENCH:-1}" = 1 ] || continue
    # Under qemu the bench cannot re-execute itself directly: told how.
    out="$(MCPX_BENCH_EXE="${run[*]} $root/$bin" timeout 300 "${run[@]}" "$bin" bench --quick --rounds 1 --only stdio 2>&1)" || true
    if grep -Eq 'mcpx serve +[0-9.]+ ' <<<"$out"; then
        log "$t: bench --quick: ok"
    else
        log "$t: bench --quick FAILED; its output:"
        sed 's/^/    /' <<<"$out" >&2
        fail+=("$t (bench)")
    fi
done
if [ ${#fail[@]} -gt 0 ]; then
    log "FAILED: ${fail[*]}"
    exit 1
fi
log "all passed: ${targets[*]}"
