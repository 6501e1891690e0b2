#!/usr/bin/env bash
# Runs every fuzz target of the crates that see wire bytes (crates/*/fuzz) for SECONDS each
# (default 60), or until RUNS executions if given (e.g. `scripts/fuzz.sh 7200 10000000`), under
# libFuzzer's memory limits: a run that grows past them is a finding, like a crash. A third
# argument runs only the targets whose name it matches (`scripts/fuzz.sh 3600 10000000 run`).
# Each target starts from its corpus (fuzz/corpus/<target>, kept between runs, not committed)
# plus the crate's fuzz/regressions/ inputs and what fuzz/make_seeds.py writes (the run target:
# the small captures/*.pcap) as seeds, and prints its final stats: executions,
# exec/s, seconds, peak RSS (the figures docs/performance.md, "Fuzzing", records).
# Built without a sanitizer (FUZZ_SANITIZER=address brings ASan back): the crates forbid
# unsafe code, ASan made the run target 5.6 times slower, and every target includes
# crates/h2ledger-run/fuzz/malloc_limit.rs, which does -malloc_limit_mb's job without one.
# Only stable Rust exists on these machines: cargo-fuzz runs with RUSTC_BOOTSTRAP=1.
# Crashes land in crates/<crate>/fuzz/artifacts/<target>/; keep each one in
# crates/<crate>/fuzz/regressions/ (the crate's fuzz_regressions/fuzz_harness test runs them).
set -euo pipefail
secs=${1:-60}
runs=${2:-0}
# libFuzzer's -runs=0 means no execution at all (the corpus is read, nothing is fuzzed): no RUNS
# is -runs=-1, no limit.
fuzz_runs=$([ "$runs" = 0 ] && echo -1 || echo "$runs")
only=${3:-}
cd "$(dirname "$0")/.."
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1
san=${FUZZ_SANITIZER:-none}
# One target directory for every fuzz crate: the crates they share are built once.
tdir="$PWD/target/fuzz-$san"
for dir in crates/*/fuzz; do
    crate=$(dirname "$dir")
    for t in "$dir"/fuzz_targets/*.rs; do
        target=$(basename "$t" .rs)
        if [ -n "$only" ] && [[ "$target" != *"$only"* ]]; then
            continue
        fi
        echo "== $crate: $target for ${secs}s$([ "$runs" != 0 ] && echo " or $runs runs")"
        log=$(mktemp)
        rc=0
        mkdir -p "$dir/corpus/$target"
        if [ -f "$dir/make_seeds.py" ]; then
            python3 "$dir/make_seeds.py" "$dir/corpus/$target" >/dev/null
        fi
        if ! (cd "$crate" && cargo fuzz build -s "$san" --target-dir "$tdir" "$target") >"$log" 2>&1; then
            tail -40 "$log"
            exit 1
        fi
        start=$(date +%s)
        (cd "$crate" && cargo fuzz run -s "$san" --target-dir "$tdir" "$target" \
            "fuzz/corpus/$target" fuzz/regressions -- -max_total_time="$secs" -runs="$fuzz_runs" \
            -rss_limit_mb=1024 -malloc_limit_mb=512 -print_final_stats=1) >"$log" 2>&1 || rc=$?
        grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)|^Done |(crash|leak|out-of-memory|timeout)' "$log" |
            grep -v '^WARNING: Failed to find function' || true
        echo "stat::wall_seconds: $(($(date +%s) - start))"
        if [ "$rc" -ne 0 ]; then
            tail -40 "$log"
            echo "== $crate: $target FAILED (exit $rc); the input is in $crate/fuzz/artifacts/$target/"
            exit "$rc"
        fi
        rm -f "$log"
    done
done
