#!/usr/bin/env bash
# Runs each fuzz target of mcpx-core for a bounded time, starting from the
# seed corpus kept in corpus/<target>/; exits non-zero on the first crash
# (libFuzzer prints the input it saved under target/artifacts/<target>/).
#
#   bash core/fuzz/run.sh [SECONDS_PER_TARGET [TARGET...]]
#
# Needs cargo-fuzz (`cargo install cargo-fuzz --locked`). On a stable
# toolchain RUSTC_BOOTSTRAP=1 lets it pass the sanitizer flags. Inputs found
# on the way go to target/corpus/<target>/, not into the repository; a crash
# becomes a unit test in core, not a seed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
export RUSTC_BOOTSTRAP=1
secs=${1:-25}
shift || true
if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo fuzz list)
fi
cargo fuzz build -O
for t in "${targets[@]}"; do
    mkdir -p "target/corpus/$t" "target/artifacts/$t"
    printf '==> fuzz %s for %ss\n' "$t" "$secs"
    cargo fuzz run -O "$t" "target/corpus/$t" "corpus/$t" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="target/artifacts/$t/" -print_final_stats=1 2>&1 |
        grep -v '^#[0-9]' || { echo "fuzz target $t failed"; exit 1; }
done
echo "fuzz: ${#targets[@]} targets ran ${secs}s each without a crash"
