#!/usr/bin/env bash
# Runs every fuzz target of the crates that see wire bytes (crates/*/fuzz) for SECONDS each
# (default 60), or until RUNS executions if given first (e.g. `scripts/fuzz.sh 3600 10000000`),
# under libFuzzer's memory limits: a run that grows past them is a finding, like a crash.
# Only stable Rust exists on these machines: cargo-fuzz runs with RUSTC_BOOTSTRAP=1.
# Crashes land in crates/<crate>/fuzz/artifacts/<target>/; keep each one in
# crates/<crate>/fuzz/regressions/ (the crate's fuzz_regressions/fuzz_harness test runs them).
set -euo pipefail
secs=${1:-60}
runs=${2:-0}
cd "$(dirname "$0")/.."
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1
for dir in crates/*/fuzz; do
    crate=$(dirname "$dir")
    for t in "$dir"/fuzz_targets/*.rs; do
        target=$(basename "$t" .rs)
        echo "== $crate: $target for ${secs}s${runs:+ or $runs runs}"
        log=$(mktemp)
        rc=0
        (cd "$crate" && cargo fuzz run "$target" -- -max_total_time="$secs" -runs="$runs" \
            -rss_limit_mb=1024 -malloc_limit_mb=512 -print_final_stats=1) >"$log" 2>&1 || rc=$?
        grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb)|(crash|leak|out-of-memory|timeout)' "$log" || true
        if [ "$rc" -ne 0 ]; then
            tail -40 "$log"
            echo "== $crate: $target FAILED (exit $rc); the input is in $crate/fuzz/artifacts/$target/"
            exit "$rc"
        fi
        rm -f "$log"
    done
done
