#!/usr/bin/env bash
# `replay -j 2` against `replay -j 1` (issue 39): a capture of h2load -c 100 (100 connections,
# 10 streams each) against nghttpd on lo, made once into BENCH_DIR (too large for captures/),
# then RUNS interleaved timed runs of each, the median of each and their ratio; the outputs
# compared byte for byte. The load average at the start and the end is printed with the figures:
# on a shared 2-core machine the ratio says little unless both are low.
#
# usage: scripts/bench-jobs.sh [REQUESTS] [RUNS]     (defaults 200000 and 5)
# Environment: BENCH_DIR (default /tmp/h2ledger-bench), REGEN=1 remakes the capture,
# ARGS="--analyze" adds options to every replay (the analysis merged: issue 39).

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=${BENCH_DIR:-/tmp/h2ledger-bench}
N=${1:-200000}
RUNS=${2:-5}
REGEN=${REGEN:-0}
read -r -a EXTRA <<<"${ARGS:-}"
BIN="$ROOT/target/release/h2ledger"
WORK=$(mktemp -d)
PIDS=()
say() { echo "bench-jobs: $*" >&2; }
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
say "capture: $pcap ($(stat -c %s "$pcap") bytes); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

say "options: ${EXTRA[*]:-(none)}"
"$BIN" replay "$pcap" -T json -j 1 "${EXTRA[@]}" >"$WORK/one.json"
"$BIN" replay "$pcap" -T json -j 2 "${EXTRA[@]}" >"$WORK/two.json"
if cmp -s "$WORK/one.json" "$WORK/two.json"; then
    say "-j 2 prints what -j 1 prints (JSON, byte for byte)"
else
    die "-j 2 differs from -j 1: $(diff "$WORK/one.json" "$WORK/two.json" | head -5)"
fi

t() { local s e; s=$(date +%s.%N); "$BIN" replay "$pcap" -q -j "$1" "${EXTRA[@]}" >/dev/null; e=$(date +%s.%N); echo "$e - $s" | bc; }
one=(); two=()
t 1 >/dev/null # warm-up: the file in the page cache
for _ in $(seq "$RUNS"); do
    one+=("$(t 1)")
    two+=("$(t 2)")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
m1=$(median "${one[@]}")
m2=$(median "${two[@]}")
say "replay -j 1: median ${m1} s of ${one[*]}"
say "replay -j 2: median ${m2} s of ${two[*]}"
say "speed-up -j 2 / -j 1: $(echo "scale=2; $m1 / $m2" | bc)x on $(nproc) cores; load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
