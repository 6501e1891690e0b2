#!/usr/bin/env bash
# The Spark job of dist/spark/ in local mode with two executor threads (local[2]), over 50
# captures, against the one-machine answers (issue 39 point 5; docs/spark.md):
#   1. a real capture of 200 connections (h2load -c 200 against nghttpd on loopback, tcpdump),
#      cut by `h2ledger split --shards 50` into 50 captures, each connection whole in one;
#   2. spark-submit --master local[2] --files h2ledger dist/spark/h2ledger_spark.py;
#   3. its merged report (h2ledger merge of the 50 replays) equals `replay` of the 50 joined
#      again with mergecap, apart from names and times (scripts/spark-check.py);
#   4. its p99 latency per method per minute, Spark SQL over the partitioned Parquet, equals
#      the nearest rank computed from `calls -T jsonl` of the joined file; its Parquet holds
#      every call, under capture=NAME/hour=H.
# Needs root (tcpdump on lo), nghttp2-client/server, tcpdump, mergecap (wireshark-common),
# Java 17 and the venv of scripts/spark-venv.sh (made when missing).
#
# usage: scripts/spark-test.sh [--keep]   (SPARK_DIR, default /tmp/h2ledger-spark: work files)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SPARK_DIR=${SPARK_DIR:-/tmp/h2ledger-spark}
VENV=${H2LEDGER_SPARK_VENV:-/opt/h2l-spark-venv}
KEEP=0
[ "${1:-}" = --keep ] && KEEP=1

say() { printf '%s\n' "$*" >&2; }
die() { say "spark-test.sh: $*"; exit 1; }

for t in tcpdump h2load nghttpd mergecap java cargo; do
    command -v "$t" >/dev/null || die "$t not found"
done
[ "$(id -u)" -eq 0 ] || die "tcpdump on lo needs root"
"$ROOT/scripts/spark-venv.sh" "$VENV"

cargo build --release --quiet --bin h2ledger --manifest-path "$ROOT/Cargo.toml"
H2L=${CARGO_TARGET_DIR:-$ROOT/target}/release/h2ledger
"$H2L" merge --help >/dev/null 2>&1 || die "this h2ledger has no merge subcommand (issue 39 point 1)"

mkdir -p "$SPARK_DIR"
BENCH_DIR=$SPARK_DIR
REGEN=0
WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
. "$ROOT/scripts/h2load-captures.sh"

# 1. 200 connections, 20,000 requests; made once, kept in SPARK_DIR.
ensure_capture spark-200c 20000 "" "-c 200 -m 10"
CAP=$SPARK_DIR/spark-200c.pcap
IN=$SPARK_DIR/in
rm -rf "$IN"
"$H2L" split "$CAP" --shards 50 -w "$IN" 2>/dev/null
n=$(ls "$IN" | wc -l)
[ "$n" = 50 ] || die "split made $n captures, not 50"
mergecap -F pcap -w "$SPARK_DIR/joined.pcap" "$IN"/*.pcap
"$H2L" replay "$SPARK_DIR/joined.pcap" -T json >"$SPARK_DIR/one-machine.json"
"$H2L" calls "$SPARK_DIR/joined.pcap" -T jsonl -q >"$SPARK_DIR/one-machine.calls.jsonl"

# 2. The job, two executor threads.
OUT=$SPARK_DIR/out
rm -rf "$OUT"
t0=$(date +%s.%N)
PYSPARK_PYTHON="$VENV/bin/python" "$VENV/bin/spark-submit" --master 'local[2]' \
    --conf spark.ui.enabled=false --files "$H2L" \
    "$ROOT/dist/spark/h2ledger_spark.py" --input "$IN" --out "$OUT" 2>"$WORK/spark.log" \
    || { tail -40 "$WORK/spark.log" >&2; die "the job failed"; }
t1=$(date +%s.%N)
grep '^h2ledger_spark:' "$WORK/spark.log" >&2 || true

# 3 and 4.
"$VENV/bin/python" "$ROOT/scripts/spark-check.py" "$SPARK_DIR/one-machine.json" \
    "$SPARK_DIR/one-machine.calls.jsonl" "$OUT"
say "spark-test.sh: passed; the job took $(python3 -c "print(f'{$t1 - $t0:.1f}')") s over 50 captures"
[ "$KEEP" = 1 ] || rm -rf "$OUT" "$IN"
