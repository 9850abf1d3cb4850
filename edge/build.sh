#!/usr/bin/env bash
# Builds the static mcpx-edge binaries for small hosts with the size
# profile `edge` (opt-level z, fat LTO, panic=abort, stripped), and the
# standard library rebuilt for size with it (below):
#   x86_64-unknown-linux-musl       static-pie, linked with rust-lld
#   aarch64-unknown-linux-musl      static-pie, linked with rust-lld
#     (both with packed relocations and no unwind tables)
#   armv7-unknown-linux-musleabihf  static, Thumb-2, against Debian's musl
#                                   for armhf, linked by Debian's
#                                   gcc-arm-linux-gnueabihf
# Results: target/<triple>/edge/mcpx-edge.
#
#   edge/build.sh [TRIPLE...]        default: all three
#   EDGE_FEATURES=tls edge/build.sh  extra cargo features for mcpx-edge
#
# The standard library: rebuilt from the toolchain's own source (rustup
# component rust-src) with `-Z build-std`, on the stable toolchain through
# RUSTC_BOOTSTRAP=1 (only these builds), without std's backtrace
# symbolizer (a stripped binary's backtrace names nothing) and with its
# `optimize_for_size` variants: about 300 KiB less on x86_64. It is also
# how armv7 gets musl: rustup offers no prebuilt std for
# armv7-unknown-linux-musleabihf here.
#
# Installs what is missing: rust-src, rustup targets, and (as root, with
# apt-get) gcc-arm-linux-gnueabihf for armv7 and gcc-aarch64-linux-gnu for
# aarch64 (their libgcc; with tls, their C compilers build ring), with tls
# musl-tools for x86_64 (ring's C). For armv7 it fetches Debian's
# musl-dev for armhf (pinned by digest) into target/edge-sysroot/.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
log() { printf 'edge/build: %s\n' "$*" >&2; }
die() { printf 'edge/build: error: %s\n' "$*" >&2; exit 1; }

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl armv7-unknown-linux-musleabihf)
features=()
[ -z "${EDGE_FEATURES:-}" ] || features=(--features "$EDGE_FEATURES")
# The tls build leaves out the embedded benchmark (its budget: check-size.sh).
case ",${EDGE_FEATURES:-}," in *,tls,*) features+=(--no-default-features) ;; esac
# ring (under tls and oauth) compiles C and assembly for the target.
needs_cc=0
case ",${EDGE_FEATURES:-}," in *,tls,* | *,oauth,*) needs_cc=1 ;; esac

apt_updated=0
apt_install() {
    command -v apt-get >/dev/null || die "$1 is missing and there is no apt-get: install it by hand"
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    if [ "$apt_updated" = 0 ]; then $sudo apt-get update -qq; apt_updated=1; fi
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null
}
need_cmd() { # COMMAND PACKAGE
    command -v "$1" >/dev/null || { log "apt-get install $2"; apt_install "$2"; }
}

rustup component list --installed | grep '^rust-src' >/dev/null || { log "rustup component add rust-src"; rustup component add rust-src; }

# Debian bookworm's musl 1.2.3 for armhf: libc.a and the start files.
MUSL_ARMHF_DEB=http://deb.debian.org/debian/pool/main/m/musl/musl-dev_1.2.3-1_armhf.deb
MUSL_ARMHF_SHA256=3a9dbb8ae66716f117dce87558fb47a161db0eebf0700cc6bf84ef6871ce7d38
armhf_sysroot() { # prints the folder with libc.a, the start files and mcpx.specs
    local dir="$root/target/edge-sysroot/armv7-musl" lib
    lib="$dir/usr/lib/arm-linux-musleabihf"
    if [ ! -f "$lib/mcpx.specs" ]; then
        need_cmd curl curl
        mkdir -p "$dir"
        log "fetching $MUSL_ARMHF_DEB"
        curl -fsSL -o "$dir/musl-dev.deb" "$MUSL_ARMHF_DEB" || die "cannot fetch $MUSL_ARMHF_DEB"
        echo "$MUSL_ARMHF_SHA256  $dir/musl-dev.deb" | sha256sum -c --quiet - || die "musl-dev for armhf: digest mismatch"
        dpkg-deb -x "$dir/musl-dev.deb" "$dir"
        # std's unwind crate asks for libunwind; gcc's libgcc_eh is one.
        cp "$(dirname "$(arm-linux-gnueabihf-gcc -print-libgcc-file-name)")/libgcc_eh.a" "$lib/libunwind.a"
        # gcc with musl's start files and libc instead of glibc's.
        cat >"$lib/mcpx.specs" <<SPECS
*link_libgcc:
-L$lib

*startfile:
$lib/crt1.o $lib/crti.o

*endfile:
$lib/crtn.o

*link:
-nostdlib -static
SPECS
    fi
    printf '%s\n' "$dir"
}

installed="$(rustup target list --installed)"
# One cargo run for every target: each target's fat-LTO link is one long
# single-threaded step, and in one run cargo keeps the other core busy with
# another target's crates meanwhile.
target_args=()
target_flags=()
for t in "${targets[@]}"; do
    env_var="CARGO_TARGET_$(tr 'a-z-' 'A-Z_' <<<"$t")_RUSTFLAGS"
    cc_var="$(tr '-' '_' <<<"$t")"
    # Size (edge/README.md, "Budget"): no unwind tables: with panic=abort
    # nothing unwinds, and a stripped binary's backtrace names nothing.
    no_unwind="$root/edge/no-unwind.ld"
    case "$t" in
        x86_64-unknown-linux-musl | aarch64-unknown-linux-musl)
            # The target's musl start files and libc.a come with its rustup
            # target. Relative relocations packed (RELR: that musl is >= 1.2.4).
            grep -qx "$t" <<<"$installed" || { log "rustup target add $t"; rustup target add "$t"; }
            flags="-C linker=rust-lld -C target-feature=+crt-static -C link-arg=-zpack-relative-relocs -C link-arg=--icf=all -C link-arg=-T$no_unwind"
            case "$t" in
                x86_64-*)
                    [ "$needs_cc" = 0 ] || { need_cmd musl-gcc musl-tools; export "CC_$cc_var=musl-gcc"; }
                    ;;
                aarch64-*)
                    need_cmd aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu
                    [ "$needs_cc" = 0 ] || export "CC_$cc_var=aarch64-linux-gnu-gcc"
                    # musl's printf of a long double (128-bit here) needs
                    # soft-float routines that a rebuilt compiler_builtins
                    # leaves out: gcc's libgcc has them.
                    flags+=" -C link-arg=$(aarch64-linux-gnu-gcc -print-libgcc-file-name)"
                    ;;
            esac
            ;;
        armv7-unknown-linux-musleabihf)
            need_cmd arm-linux-gnueabihf-gcc gcc-arm-linux-gnueabihf
            sys="$(armhf_sysroot)"
            # Thumb-2 (about 30% smaller than ARM code, on every ARMv7-A);
            # a plain static executable (musl 1.2.3 cannot unpack RELR).
            flags="-C linker=arm-linux-gnueabihf-gcc -C link-self-contained=no -C target-feature=+crt-static,+thumb-mode -C relocation-model=static -C link-arg=-specs=$sys/usr/lib/arm-linux-musleabihf/mcpx.specs -C link-arg=-Wl,-T,$no_unwind"
            export "CC_$cc_var=arm-linux-gnueabihf-gcc"
            export "CFLAGS_$cc_var=-nostdinc -isystem $sys/usr/include/arm-linux-musleabihf -isystem $(arm-linux-gnueabihf-gcc -print-file-name=include)"
            ;;
        *) die "no recipe for target $t" ;;
    esac
    target_args+=(--target "$t")
    target_flags+=("$env_var=$flags")
done
log "building ${targets[*]}"
out="$(mktemp)"
rc=0
env RUSTC_BOOTSTRAP=1 "${target_flags[@]}" cargo build --quiet -p mcpx-edge --profile edge "${target_args[@]}" "${features[@]}" \
    -Z build-std=std,panic_abort -Z build-std-features=optimize_for_size >"$out" 2>&1 || rc=$?
# rustc calls thumb-mode an unstable target feature, once per crate.
grep -v -e 'unstable feature specified for `-Ctarget-feature`: `thumb-mode`' -e 'this feature is not stably supported' -e '^ *|$' -e '^$' "$out" >&2 || true
rm -f "$out"
[ "$rc" = 0 ] || die "cargo build for ${targets[*]} failed (exit $rc)"
for t in "${targets[@]}"; do
    bin="target/$t/edge/mcpx-edge"
    [ -f "$bin" ] || die "$bin was not produced"
    log "$bin: $(stat -c %s "$bin") bytes"
done
