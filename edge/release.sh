#!/usr/bin/env bash
# Builds the release of mcpx-edge: the three static binaries (edge/build.sh),
# each checked stripped, in a tarball with the systemd unit, the procd init
# script, the example config and a CycloneDX SBOM of the crates compiled
# into it (from Cargo.lock), and SHA256SUMS over binaries and tarballs.
#
#   edge/release.sh [OUTDIR]      default: dist/
#   EDGE_FEATURES=tls (default)   HTTPS to remote servers; EDGE_FEATURES= for the plain build
#
# Output (VERSION from Cargo.toml, TRIPLE per target):
#   OUTDIR/mcpx-edge-VERSION-TRIPLE.tar.gz   mcpx-edge-VERSION-TRIPLE/{mcpx-edge,
#                                            mcpx.service, mcpx.init, config.json,
#                                            sbom.cdx.json}
#   OUTDIR/mcpx-edge-VERSION-TRIPLE          the binary alone
#   OUTDIR/SHA256SUMS
# The tarballs are reproducible for a commit: file times are the commit's
# (SOURCE_DATE_EPOCH), owners 0, names sorted, gzip without a timestamp.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
log() { printf 'edge/release: %s\n' "$*" >&2; }
die() { printf 'edge/release: error: %s\n' "$*" >&2; exit 1; }

out="${1:-dist}"
export EDGE_FEATURES="${EDGE_FEATURES-tls}"
targets=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl armv7-unknown-linux-musleabihf)
version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)"
[ -n "$version" ] || die "no version in Cargo.toml's [workspace.package]"

bash edge/build.sh "${targets[@]}"
# After the build: set before it, it would make cargo build again.
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}"

mkdir -p "$out"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
features=()
[ -z "$EDGE_FEATURES" ] || features=(--features "$EDGE_FEATURES")
case ",$EDGE_FEATURES," in *,tls,*) features+=(--no-default-features) ;; esac
rustc_version="$(rustc -V | cut -d' ' -f2)"
sums=()
for t in "${targets[@]}"; do
    bin="target/$t/edge/mcpx-edge"
    [ -f "$bin" ] || die "$bin missing"
    # The edge profile strips at link time; a symbol table left means it did not.
    if readelf -SW "$bin" | grep '\.symtab' >/dev/null; then die "$bin is not stripped"; fi
    name="mcpx-edge-$version-$t"
    dir="$stage/$name"
    mkdir -p "$dir"
    install -m 755 "$bin" "$dir/mcpx-edge"
    install -m 644 edge/deploy/mcpx.service edge/deploy/config.json "$dir/"
    install -m 755 edge/deploy/mcpx.init "$dir/"
    # The musl linked in (edge/build.sh): its libc.a names its version.
    case "$t" in
        armv7-*) libc=target/edge-sysroot/armv7-musl/usr/lib/arm-linux-musleabihf/libc.a ;;
        *) libc="$(rustc --print sysroot)/lib/rustlib/$t/lib/self-contained/libc.a" ;;
    esac
    musl="$(strings "$libc" | awk '/^1\.[0-9]+\.[0-9]+$/ && !v { v = $0 } END { print v }')"
    [ -n "$musl" ] || die "no musl version in $libc"
    # The crates compiled into this binary: normal dependencies for this
    # target and feature set (build scripts and macros do not ship).
    cargo tree -q -p mcpx-edge --target "$t" -e normal "${features[@]}" --prefix none --format '{p}|{l}' \
        | python3 edge/sbom.py "$name" "$version" "$t" "$rustc_version" "$musl" "${EDGE_FEATURES:-plain}" >"$dir/sbom.cdx.json"
    find "$dir" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
        -C "$stage" -cf - "$name" | gzip -9n >"$out/$name.tar.gz"
    install -m 755 "$bin" "$out/$name"
    sums+=("$name" "$name.tar.gz")
    log "$out/$name.tar.gz: $(stat -c %s "$out/$name.tar.gz") bytes ($(stat -c %s "$bin") bytes stripped)"
done
(cd "$out" && sha256sum "${sums[@]}" >SHA256SUMS && sha256sum -c --quiet SHA256SUMS)
log "$out/SHA256SUMS: $(wc -l <"$out/SHA256SUMS") files"
