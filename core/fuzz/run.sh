#!/usr/bin/env bash
# Runs each fuzz target of mcpx-core for a bounded time, starting from the
# seed corpus kept in corpus/<target>/, as many at once as the machine has
# cores (FUZZ_JOBS overrides; each libFuzzer process uses one); prints the
# targets' reports in the order they started, and exits non-zero if any
# crashed (libFuzzer prints the input it saved under target/artifacts/<target>/).
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
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
cargo fuzz build -O
mkdir -p target/logs

# One target's run, its output in target/logs/<target>.log.
fuzz_one() {
    local t="$1"
    mkdir -p "target/corpus/$t" "target/artifacts/$t"
    cargo fuzz run -O "$t" "target/corpus/$t" "corpus/$t" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="target/artifacts/$t/" -print_final_stats=1 >"target/logs/$t.log" 2>&1
}

# Waits for the oldest run still going and prints its report.
pids=()
names=()
failed=()
finish_oldest() {
    local t="${names[0]}" verdict=ok
    wait "${pids[0]}" || { verdict=failed; failed+=("$t"); }
    printf '==> fuzz %s for %ss: %s\n' "$t" "$secs" "$verdict"
    grep -v '^#[0-9]' "target/logs/$t.log" || true
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
}

for t in "${targets[@]}"; do
    [ "${#pids[@]}" -lt "$jobs" ] || finish_oldest
    fuzz_one "$t" &
    pids+=($!)
    names+=("$t")
done
while [ "${#pids[@]}" -gt 0 ]; do finish_oldest; done
if [ "${#failed[@]}" -gt 0 ]; then
    echo "fuzz target(s) failed: ${failed[*]}"
    exit 1
fi
echo "fuzz: ${#targets[@]} targets ran ${secs}s each without a crash, $jobs at a time"
