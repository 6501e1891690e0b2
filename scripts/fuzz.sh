#!/usr/bin/env bash
# Runs every fuzz target of the crates that parse wire bytes for SECONDS each (default 60).
# Only stable Rust exists on these machines: cargo-fuzz runs with RUSTC_BOOTSTRAP=1.
# Crashes land in crates/<crate>/fuzz/artifacts/<target>/; keep each one as a regression test.
set -euo pipefail
secs=${1:-60}
cd "$(dirname "$0")/.."
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1
for dir in crates/*/fuzz; do
    crate=$(dirname "$dir")
    for t in "$dir"/fuzz_targets/*.rs; do
        target=$(basename "$t" .rs)
        echo "== $crate: $target for ${secs}s"
        (cd "$crate" && cargo fuzz run "$target" -- -max_total_time="$secs" -rss_limit_mb=2048)
    done
done
