#!/usr/bin/env bash
# Where the bytes of mcpx-edge go (x86_64 musl, the edge profile): prints two
# markdown tables for edge/README.md.
#   1. each optional feature's cost: the stripped binary built with it added
#      to the plain build, against the plain build;
#   2. the plain build's code by part: the sizes of its symbols (a build
#      with symbols kept, otherwise the same) summed by the module path in
#      their names. After LTO much is inlined into its callers, so a part's
#      figure is what kept its own name: a lower bound, not an exact cost.
#
#   edge/sizes.sh      (takes one edge build per feature: about 15 minutes on 2 cores)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
t=x86_64-unknown-linux-musl
bin="target/$t/edge/mcpx-edge"
size_with() { # FEATURES -> bytes of the stripped binary
    EDGE_FEATURES="$1" bash edge/build.sh "$t" 2>/dev/null || { echo "edge/sizes: the build with '$1' failed" >&2; exit 1; }
    stat -c %s "$bin"
}

plain=$(size_with "")
echo "| build (x86_64 musl, stripped) | bytes | against plain |"
echo "|---|---:|---:|"
echo "| plain (\`edge/build.sh\`) | $plain | |"
for f in tls oauth consent signin secrets skills activity traces apps; do
    s=$(size_with "$f")
    note=""
    [ "$f" != tls ] || note=" (without \`bench\`)"
    printf '| + `%s`%s | %d | %+d |\n' "$f" "$note" "$s" "$((s - plain))"
done

# Symbols of the plain build, kept.
echo
sym_bin="$(mktemp)"
trap 'rm -f "$sym_bin"' EXIT
CARGO_PROFILE_EDGE_STRIP=none bash edge/build.sh "$t" 2>/dev/null
cp "$bin" "$sym_bin"
bash edge/build.sh "$t" 2>/dev/null # the stripped plain build back in place
nm -S -C "$sym_bin" | python3 -c '
import re, sys
PARTS = [
    (r"rustls|\bring::|ring_core", "TLS (rustls, ring)"),
    (r"mcpx_posix::remote::oauth", "OAuth client (remote/oauth)"),
    (r"mcpx_posix::remote", "remote servers (Streamable HTTP client)"),
    (r"mcpx_posix::hub::tasks|mcpx_posix::serve::task_store|mcpx_core::task", "tasks"),
    (r"mcpx_posix::policy|mcpx_posix::hub::policy|mcpx_posix::hub::stages", "policy (limits, audit, catalogs, stages)"),
    (r"status_page|mcpx_posix::http::html", "status page"),
    (r"mcpx_posix::reload", "reload"),
    (r"mcpx_posix::config", "config parsing"),
    (r"mcpx_posix::http", "HTTP listener (the rest)"),
    (r"mcpx_posix::hub", "hub (the rest)"),
    (r"mcpx_posix::bench", "embedded benchmark"),
    (r"mcpx_posix::example", "demo server"),
    (r"mcpx_posix::cluster", "replicas (hub side)"),
    (r"mcpx_posix", "runtime (the rest of mcpx-posix)"),
    (r"mcpx_core", "mcpx-core (sans-IO protocol)"),
    (r"serde_json|serde::", "serde_json"),
    (r"^<?(std|core|alloc)::", "Rust std, core, alloc"),
    (r"async_|smol|polling|futures_|blocking|event_listener|concurrent_queue", "async runtime (smol)"),
    (r"::", "other crates"),
    (r"", "C (musl libc, compiler builtins)"),
]
sums = {}
for line in sys.stdin:
    f = line.split(None, 3)
    if len(f) < 4 or f[2] not in "TtWw":
        continue
    name = f[3].strip()
    part = next(p for rx, p in PARTS if re.search(rx, name))
    sums[part] = sums.get(part, 0) + int(f[1], 16)
print("| part (code under its own name, plain build) | KiB |")
print("|---|---:|")
for part, b in sorted(sums.items(), key=lambda kv: -kv[1]):
    print(f"| {part} | {b // 1024} |")
print(f"| all named code | {sum(sums.values()) // 1024} |")
'
