#!/usr/bin/env bash
# `calls -T parquet` against `calls -T jsonl` on the 1M-request capture of scripts/bench.sh
# (h2load -n 1000000 -c 10 -m 10 against nghttpd, made once in BENCH_DIR): write time (median
# of RUNS interleaved runs, each written to a file in BENCH_DIR) and file size, and DuckDB's
# answers over the Parquet against jq's over the JSON lines (scripts/parquet-answers.py).
# Results: docs/performance.md ("Parquet").
#
# usage: scripts/bench-parquet.sh [--quick] [--runs N]   (--quick: the 100k capture)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=${BENCH_DIR:-/tmp/h2ledger-bench}
RUNS=3
NAME=h2load-1M
N=1000000
REGEN=0
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) NAME=h2load-100k; N=100000 ;;
        --runs) RUNS=$2; shift ;;
        *) echo "bench-parquet.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done

say() { printf '%s\n' "$*" >&2; }
die() { say "bench-parquet.sh: $*"; exit 1; }
for t in tcpdump h2load nghttpd python3 jq; do
    command -v "$t" >/dev/null || die "$t not found"
done
python3 -c 'import duckdb' 2>/dev/null || die "python3 cannot import duckdb (pip install duckdb)"

mkdir -p "$BENCH_DIR"
WORK=$(mktemp -d)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"' EXIT
. "$ROOT/scripts/h2load-captures.sh"

# H2LEDGER_BIN: a binary already built (else cargo builds the release one).
if [ -n "${H2LEDGER_BIN:-}" ]; then
    H2L=$H2LEDGER_BIN
else
    cargo build --release --quiet --bin h2ledger --manifest-path "$ROOT/Cargo.toml"
    H2L=${CARGO_TARGET_DIR:-$ROOT/target}/release/h2ledger
fi
ensure_capture "$NAME" "$N"
F=$BENCH_DIR/$NAME.pcap
J=$BENCH_DIR/$NAME.calls.jsonl
Q=$BENCH_DIR/$NAME.calls.parquet

now() { date +%s.%N; }
tj=() tq=()
for r in $(seq 0 "$RUNS"); do
    t0=$(now); "$H2L" calls "$F" -T jsonl -q >"$J"; t1=$(now)
    "$H2L" calls "$F" -T parquet -w "$Q" -q; t2=$(now)
    # Run 0 warms the page cache.
    if [ "$r" -gt 0 ]; then
        tj+=("$(python3 -c "print($t1 - $t0)")")
        tq+=("$(python3 -c "print($t2 - $t1)")")
    fi
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
MJ=$(median "${tj[@]}") MQ=$(median "${tq[@]}")
SJ=$(stat -c %s "$J") SQ=$(stat -c %s "$Q")
SJZ=$(zstd -q -c "$J" | wc -c)
CALLS=$(grep -c '"record":"call"' "$J")

python3 "$ROOT/scripts/parquet-answers.py" jq calls "$J" >"$WORK/jq.json"
python3 "$ROOT/scripts/parquet-answers.py" duckdb calls "$Q" >"$WORK/duckdb.json"
SAME=$(python3 - "$WORK/jq.json" "$WORK/duckdb.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
ok = a["count"] == b["count"] and a["distinct"] == b["distinct"] and all(
    abs(float(a["sums"][k]) - float(b["sums"][k])) <= 1e-9 * max(1.0, abs(float(a["sums"][k])))
    for k in a["sums"])
print(f'equal (count {a["count"]}, sum(writes.client) {a["sums"]["writes.client"]}, '
      f'{len(a["distinct"]["method"])} method(s), statuses {a["distinct"]["status"]})' if ok
      else f"DIFFERENT: jq {a} duckdb {b}")
PY
)
# DuckDB's own time to answer from each file (the count and sums above).
python3 - "$J" "$Q" <<'PY' >"$WORK/duck-times"
import sys, time, duckdb
j, q = sys.argv[1:3]
con = duckdb.connect()
sql = "SELECT count(*), sum(writes.client), sum(duration_us) FROM {} WHERE record = 'call'"
for name, t in (("jsonl", f"read_json('{j}', format = 'newline_delimited')"), ("parquet", f"read_parquet('{q}')")):
    con.execute(sql.format(t)).fetchall()
    t0 = time.perf_counter(); con.execute(sql.format(t)).fetchall(); t1 = time.perf_counter()
    print(f"{name} {t1 - t0:.3f}")
PY
read -r _ DJ < <(sed -n 1p "$WORK/duck-times")
read -r _ DQ < <(sed -n 2p "$WORK/duck-times")

python3 - <<PY
calls, sj, sq, sjz = $CALLS, $SJ, $SQ, $SJZ
mj, mq, dj, dq = $MJ, $MQ, $DJ, $DQ
print(f"parquet on $NAME ({calls:,} calls; median of $RUNS runs, written to $BENCH_DIR):")
print(f"  calls -T jsonl      {mj:6.2f} s  {sj/1e6:8.1f} MB  ({sjz/1e6:.1f} MB through zstd -3)")
print(f"  calls -T parquet    {mq:6.2f} s  {sq/1e6:8.1f} MB  (zstd inside; {sq/sj*100:.1f}% of the JSON lines, {mq/mj:.2f}x their time)")
print(f"  DuckDB count+sums:  {dj:.3f} s from the JSON lines, {dq:.3f} s from the Parquet")
print("  DuckDB over the Parquet against jq over the JSON lines: $SAME")
PY
