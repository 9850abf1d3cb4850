#!/usr/bin/env bash
# Small-host figures of the static edge build (x86_64 musl) beside the
# desktop build, as one markdown table on stdout: binary size, start-up,
# idle RSS with 1 and 8 upstreams, peak RSS under 64 HTTP clients,
# allocations and instructions per forwarded call. Both run the same
# mcpx-bench (echo upstream, no peers); allocations are counted in their
# count-alloc builds, instructions by callgrind. The HTTP rows run both
# with the desktop caps (MCPX_LIMITS, as mcpx-bench sets them): mcpx-edge's
# own would refuse most of 64 sessions.
#
#   edge/figures.sh                        build, measure, print the table
#   FIGURES_NO_BUILD=1 edge/figures.sh     measure what is built
#   FIGURES_ROUNDS=N                       rounds of footprint and HTTP (default 3)
#   FIGURES_KEEP=DIR                       keep mcpx-bench's output and JSON in DIR
#
# Needs valgrind and python3. Exits non-zero when a figure could not be
# measured. About 2 minutes on 2 cores once built (3 rounds).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
log() { printf 'edge/figures: %s\n' "$*" >&2; }
die() { printf 'edge/figures: error: %s\n' "$*" >&2; exit 1; }

command -v valgrind >/dev/null || die "valgrind is missing (instructions per call): install it"
command -v python3 >/dev/null || die "python3 is missing (it writes the table)"
target="${CARGO_TARGET_DIR:-target}"
edge="$target/x86_64-unknown-linux-musl/edge/mcpx-edge"
edge_alloc="$target/figures/mcpx-edge-count-alloc"
desktop="$target/release/mcpx"
desktop_alloc="$target/release/mcpx-bench-hub"
bench="$target/release/mcpx-bench"

if [ "${FIGURES_NO_BUILD:-0}" != 1 ]; then
    log "building mcpx, mcpx-bench and its helpers (release)"
    cargo build --quiet --release -p mcpx-posix -p mcpx-bench --bins
    log "building mcpx-bench-hub (count-alloc)"
    cargo build --quiet --release -p mcpx-bench --features count-alloc --bin mcpx-bench-hub
    # The count-alloc edge build first, copied aside: both land on the same
    # path, which keeps the plain one.
    EDGE_FEATURES=count-alloc bash edge/build.sh x86_64-unknown-linux-musl
    mkdir -p "$(dirname "$edge_alloc")"
    cp "$edge" "$edge_alloc"
    bash edge/build.sh x86_64-unknown-linux-musl
fi
for f in "$bench" "$desktop" "$desktop_alloc" "$edge" "$edge_alloc"; do
    [ -x "$f" ] || die "$f is missing: run without FIGURES_NO_BUILD=1"
done

out="${FIGURES_KEEP:-}"
if [ -z "$out" ]; then
    out="$(mktemp -d)"
    trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"
measure() { # NAME BINARY COUNT-ALLOC-BUILD
    log "measuring $2 (footprint, http, alloc, instr)"
    "$bench" --mcpx "$2" --alloc-hub "$3" --no-peers --rounds "${FIGURES_ROUNDS:-3}" \
        --only footprint,http,alloc,instr --json "$out/$1.json" >"$out/$1.txt" 2>"$out/$1.log" \
        || { tail -n 20 "$out/$1.log" >&2; log "mcpx-bench failed for $2"; }
}
measure edge "$edge" "$edge_alloc"
measure desktop "$desktop" "$desktop_alloc"

python3 - "$out" "$edge" "$desktop" <<'EOF'
import json, os, sys

out, bins = sys.argv[1], {"edge": sys.argv[2], "desktop": sys.argv[3]}
docs = {}
for name in bins:
    try:
        with open(os.path.join(out, name + ".json")) as f:
            docs[name] = json.load(f)
    except (OSError, ValueError) as e:
        docs[name] = {"rows": []}
        print(f"edge/figures: {name}: no JSON ({e})", file=sys.stderr)

def row(name, section, payload, conc=None, target=None):
    for r in docs[name].get("rows", []):
        if r.get("section") != section or r.get("payload_bytes") != payload:
            continue
        if target is not None and r.get("target") != target:
            continue
        if conc is not None and conc not in (r.get("upstreams"), r.get("clients"), r.get("in_flight")):
            continue
        return r
    return None

missing = []
def fig(name, label, section, payload, conc, field, target=None):
    r = row(name, section, payload, conc, target)
    v = (r or {}).get("median", {}).get(field)
    if v is None:
        why = (r or {}).get("error", "no such row")
        missing.append(f"{name}: {label}: {why}")
    return v

mib = lambda k: None if k is None else f"{k / 1024:.2f} MiB"
ms = lambda v: None if v is None else f"{v:.1f}"
count = lambda v: None if v is None else f"{v:,.0f}"

def size(name):
    try:
        n = os.path.getsize(bins[name])
    except OSError as e:
        missing.append(f"{name}: binary size: {e}")
        return None
    return f"{n:,} B ({n / 1048576:.2f} MiB)"

rows = [
    ("binary size (stripped)", size, "≤ 2,097,152 B (2.0 MiB, the edge budget)"),
    ("start→initialize ms (1 upstream)",
     lambda n: ms(fig(n, "start→initialize", "footprint", 0, 1, "start_to_initialize_ms", "mcpx serve")), "≤ 10 ms"),
    ("start→first call ms (1 upstream)",
     lambda n: ms(fig(n, "start→first call", "footprint", 0, 1, "start_to_first_call_ms", "mcpx serve")), ""),
    ("RSS idle, 1 upstream",
     lambda n: mib(fig(n, "RSS idle 1", "footprint", 0, 1, "rss_idle_kib", "mcpx serve")), ""),
    ("RSS idle, 8 upstreams",
     lambda n: mib(fig(n, "RSS idle 8", "footprint", 0, 8, "rss_idle_kib", "mcpx serve")), "≤ 3 MiB (edge)"),
    ("RSS peak, 64 HTTP clients × 64 KiB (desktop caps)",
     lambda n: mib(fig(n, "peak 64 x 64 KiB", "http", 65536, 64, "rss_kib")), "≤ 16 MiB"),
    ("RSS peak, 64 HTTP clients × 16 B (desktop caps)",
     lambda n: mib(fig(n, "peak 64 x 16 B", "http", 16, 64, "rss_kib")), "≤ 16 MiB"),
    ("allocations per forwarded call, 16 B",
     lambda n: (lambda v: None if v is None else f"{v:.2f}")(fig(n, "allocations 16 B", "alloc", 16, None, "allocs_per_call")), "0"),
    ("instructions per forwarded call, 16 B",
     lambda n: count(fig(n, "instructions 16 B", "instr", 16, None, "instructions_per_call")), ""),
    ("instructions per forwarded call, 64 KiB",
     lambda n: count(fig(n, "instructions 64 KiB", "instr", 65536, None, "instructions_per_call")), ""),
]
print("| figure | mcpx-edge (x86_64 musl, static) | mcpx (desktop, x86_64 glibc) | target |")
print("|---|---:|---:|---|")
for label, get, target in rows:
    cells = [get(n) or "not measured" for n in ("edge", "desktop")]
    print(f"| {label} | {cells[0]} | {cells[1]} | {target} |")
for m in missing:
    print(f"edge/figures: not measured: {m}", file=sys.stderr)
sys.exit(1 if missing else 0)
EOF
