#!/usr/bin/env bash
# `replay A B C ...` (issue 39): FILES captures read by one command, `-j 2` against `-j 1`.
# The capture of scripts/bench-jobs.sh (h2load -c 100 against nghttpd on lo, made once into
# BENCH_DIR) is cut by `split --shards FILES` into FILES captures; the report of all of them
# must equal the whole capture's (JSON, byte for byte: each connection is whole in one file),
# with -j 1 and -j 2. Then RUNS interleaved timed runs of each, the medians and their ratio,
# with the load average at the start and the end: on a shared 2-core machine the ratio says
# little unless both are low.
#
# usage: scripts/bench-files.sh [REQUESTS] [RUNS] [FILES]     (defaults 1000000, 5 and 50)
# Environment: BENCH_DIR (default /tmp/h2ledger-bench), REGEN=1 remakes the capture.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=${BENCH_DIR:-/tmp/h2ledger-bench}
N=${1:-1000000}
RUNS=${2:-5}
FILES=${3:-50}
REGEN=${REGEN:-0}
BIN="$ROOT/target/release/h2ledger"
WORK=$(mktemp -d)
PIDS=()
say() { echo "bench-files: $*" >&2; }
die() { say "$*"; exit 1; }
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$BENCH_DIR"
[ -x "$BIN" ] || (cd "$ROOT" && cargo build --release -p h2ledger)
# shellcheck source=scripts/h2load-captures.sh
. "$ROOT/scripts/h2load-captures.sh"

name="jobs-c100-$N"
pcap="$BENCH_DIR/$name.pcap"
if [ "$REGEN" = 1 ] || [ ! -s "$pcap" ]; then
    make_capture "$name" "$N" "" "-c 100 -m 10"
fi
"$BIN" split "$pcap" --shards "$FILES" -w "$WORK/parts" >/dev/null 2>&1
files=("$WORK"/parts/*.pcap)
[ "${#files[@]}" = "$FILES" ] || die "split wrote ${#files[@]} files, not $FILES"
say "capture: $pcap ($(stat -c %s "$pcap") bytes) cut into $FILES files; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

"$BIN" replay "$pcap" -T json >"$WORK/whole.json"
for j in 1 2; do
    "$BIN" replay "${files[@]}" -T json -j "$j" >"$WORK/files.json"
    cmp -s "$WORK/whole.json" "$WORK/files.json" ||
        die "replay of the $FILES files -j $j differs from the whole: $(diff "$WORK/whole.json" "$WORK/files.json" | head -5)"
done
say "replay of the $FILES files, -j 1 and -j 2, prints what replay of the whole prints (JSON, byte for byte)"

t() { local s e; s=$(date +%s.%N); "$BIN" replay "${files[@]}" -q -j "$1" >/dev/null; e=$(date +%s.%N); echo "$e - $s" | bc; }
one=(); two=()
t 1 >/dev/null # warm-up: the files in the page cache
for _ in $(seq "$RUNS"); do
    one+=("$(t 1)")
    two+=("$(t 2)")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
m1=$(median "${one[@]}")
m2=$(median "${two[@]}")
say "replay of $FILES files -j 1: median ${m1} s of ${one[*]}"
say "replay of $FILES files -j 2: median ${m2} s of ${two[*]}"
say "speed-up -j 2 / -j 1: $(echo "scale=2; $m1 / $m2" | bc)x on $(nproc) cores; load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
