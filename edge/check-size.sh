#!/usr/bin/env bash
# Fails when a stripped mcpx-edge binary is over budget; prints the sizes.
#   budget, for each of x86_64 and aarch64 musl and armv7 musleabihf:
#   ≤ 2.0 MiB; built with TLS (EDGE_FEATURES containing "tls"; without the
#   embedded benchmark and private-key JWT signing; the rest of the OAuth
#   client is in every build) ≤ 2.5 MiB.
# Builds first unless EDGE_NO_BUILD=1 (then it checks what is there).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
judged=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl armv7-unknown-linux-musleabihf)
if [ "${EDGE_NO_BUILD:-0}" != 1 ]; then
    bash edge/build.sh "${judged[@]}"
fi
case ",${EDGE_FEATURES:-}," in
    *,tls,*) budget=$((2560 * 1024)); label="2.5 MiB (with tls and OAuth)" ;;
    *) budget=$((2048 * 1024)); label="2.0 MiB" ;;
esac
fail=0
for t in "${judged[@]}"; do
    bin="target/$t/edge/mcpx-edge"
    if [ ! -f "$bin" ]; then
        echo "edge size: $t: missing ($bin)"
        fail=1
        continue
    fi
    size=$(stat -c %s "$bin")
    mib=$(awk -v s="$size" 'BEGIN { printf "%.2f", s / 1048576 }')
    if [ "$size" -le "$budget" ]; then
        echo "edge size: $t: $size bytes ($mib MiB) ≤ $label: ok"
    else
        echo "edge size: $t: $size bytes ($mib MiB) > $label: OVER BUDGET"
        fail=1
    fi
done
exit "$fail"
