#!/usr/bin/env bash
# Builds the static mcpx-edge binaries for small hosts with the size
# profile `edge` (opt-level z, fat LTO, panic=abort, stripped):
#   x86_64-unknown-linux-musl      static, linked with rust-lld
#   aarch64-unknown-linux-musl     static, linked with rust-lld
#   (the musl ones static-pie with packed relocations, no unwind tables)
#   armv7-unknown-linux-gnueabihf  static glibc (+crt-static), linked by
#                                  Debian's gcc-arm-linux-gnueabihf
# Results: target/<triple>/edge/mcpx-edge.
#
#   edge/build.sh [TRIPLE...]        default: all three
#   EDGE_FEATURES=tls edge/build.sh  extra cargo features for mcpx-edge
#
# Installs what is missing: rustup targets, and (as root, with apt-get)
# gcc-arm-linux-gnueabihf for armv7; with tls, also a C compiler for ring
# on the musl targets (musl-tools, gcc-aarch64-linux-gnu).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
log() { printf 'edge/build: %s\n' "$*" >&2; }
die() { printf 'edge/build: error: %s\n' "$*" >&2; exit 1; }

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl armv7-unknown-linux-gnueabihf)
features=()
[ -z "${EDGE_FEATURES:-}" ] || features=(--features "$EDGE_FEATURES")
# The tls build leaves out the embedded benchmark (its budget: check-size.sh).
case ",${EDGE_FEATURES:-}," in *,tls,*) features+=(--no-default-features) ;; esac
# ring (under tls and oauth) compiles C and assembly for the target.
needs_cc=0
case ",${EDGE_FEATURES:-}," in *,tls,* | *,oauth,*) needs_cc=1 ;; esac

installed="$(rustup target list --installed)"
apt_updated=0
apt_install() {
    command -v apt-get >/dev/null || die "$1 is missing and there is no apt-get: install it by hand"
    if [ "$apt_updated" = 0 ]; then apt-get update -qq; apt_updated=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null
}

for t in "${targets[@]}"; do
    grep -qx "$t" <<<"$installed" || { log "rustup target add $t"; rustup target add "$t"; }
    env_var="CARGO_TARGET_$(tr 'a-z-' 'A-Z_' <<<"$t")_RUSTFLAGS"
    case "$t" in
        *-linux-musl)
            # Size (edge/README.md, "Budget"): relative relocations packed
            # (RELR, musl >= 1.2.4) and no unwind tables: with panic=abort
            # nothing unwinds, and a stripped binary's backtrace names nothing.
            flags="-C linker=rust-lld -C target-feature=+crt-static -C link-arg=-zpack-relative-relocs -C link-arg=--icf=all -C link-arg=-T$root/edge/no-unwind.ld"
            if [ "$needs_cc" = 1 ]; then
                case "$t" in
                    x86_64-*) cc=musl-gcc; pkg=musl-tools ;;
                    aarch64-*) cc=aarch64-linux-gnu-gcc; pkg=gcc-aarch64-linux-gnu ;;
                esac
                command -v "$cc" >/dev/null || { log "apt-get install $pkg"; apt_install "$pkg"; }
                export "CC_$(tr '-' '_' <<<"$t")=$cc"
            fi
            ;;
        armv7-unknown-linux-gnueabihf)
            command -v arm-linux-gnueabihf-gcc >/dev/null || { log "apt-get install gcc-arm-linux-gnueabihf"; apt_install gcc-arm-linux-gnueabihf; }
            flags="-C linker=arm-linux-gnueabihf-gcc -C target-feature=+crt-static"
            ;;
        *) die "no recipe for target $t" ;;
    esac
    log "building $t"
    env "$env_var=$flags" cargo build --quiet -p mcpx-edge --profile edge --target "$t" "${features[@]}"
    bin="target/$t/edge/mcpx-edge"
    [ -f "$bin" ] || die "$bin was not produced"
    log "$bin: $(stat -c %s "$bin") bytes"
done
