#!/usr/bin/env bash
# Memory bounds with TLS (issue 7's targets, issue 10): peak RSS (/usr/bin/time -f %M) of every
# view, with --keylog, on captures of many TLS connections at a base size and at three times
# it. The connections are copies of captures/python-h2-nghttpd-tls.pcap (hyper-h2 over Python's
# ssl against nghttpd: one TLS 1.2 and one TLS 1.3 connection, 5 calls each) made by
# scripts/tls-many.py, in three shapes: sequential (one at a time), 2,000 open at once, and all
# open at once (far over --max-connections: evicted connections come back without their
# handshake and are counted, not decrypted). Targets: peak RSS <= 64 MiB, triple / base <= 1.2.
#
# usage: scripts/soak-tls.sh [CONNECTIONS]    (base, default 100000; the triple is 3x)
# env: BENCH_DIR (default /tmp/h2ledger-bench-tls) holds the captures; SHAPES (default
#      "sequential 2000 all") and VIEWS (default: all six, separated by commas) choose rows.
set -euo pipefail
BASE=${1:-100000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${BENCH_DIR:-/tmp/h2ledger-bench-tls}
PY=/usr/bin/python3
[ -x /usr/bin/time ] || { echo "soak-tls.sh: /usr/bin/time not found (apt-get install time)" >&2; exit 1; }
mkdir -p "$DIR"
(cd "$ROOT" && cargo build --release --bin h2ledger >&2)
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/h2ledger
T=$ROOT/captures/python-h2-nghttpd-tls
KEYS=$T.keylog

printf '| input | view | x1 MiB | x3 MiB | x3/x1 | decrypted x1 / x3 |\n|---|---|---:|---:|---:|---|\n'
for shape in ${SHAPES:-sequential 2000 all}; do
  for mult in 1 3; do
    conns=$((BASE * mult))
    copies=$((conns / 2))
    k=1; [ $shape = 2000 ] && k=1000; [ $shape = all ] && k=$copies   # 2 connections per copy
    f=$DIR/tls-many-$shape-$conns.pcap
    [ -s "$f" ] || "$PY" "$ROOT/scripts/tls-many.py" "$T.pcap" "$copies" "$f" --concurrent "$k"
  done
  b=$DIR/tls-many-$shape-$BASE.pcap; t=$DIR/tls-many-$shape-$((BASE * 3)).pcap
  dec() { "$BIN" replay "$1" --keylog "$KEYS" --format json 2>/dev/null | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["tls"]["decrypted"])'; }
  dx=$(dec "$b"); d3=$(dec "$t")
  IFS=, read -r -a views <<<"${VIEWS:-replay --format json,replay --analyze,replay --every 1s,calls,calls --format jsonl,frames --format jsonl}"
  for view in "${views[@]}"; do
    set -- $view
    cmd=$1; shift
    # shellcheck disable=SC2086
    /usr/bin/time -o "$DIR/rss" -f %M "$BIN" $cmd "$b" --keylog "$KEYS" "$@" >/dev/null 2>&1 || true
    m1=$(tail -1 "$DIR/rss")
    # shellcheck disable=SC2086
    /usr/bin/time -o "$DIR/rss" -f %M "$BIN" $cmd "$t" --keylog "$KEYS" "$@" >/dev/null 2>&1 || true
    m3=$(tail -1 "$DIR/rss")
    "$PY" -c "import sys; a,b=int(sys.argv[1]),int(sys.argv[2]); print('| %s x %s / %s | %s | %.1f | %.1f | %.2f | %s / %s |' % (sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6], a/1024, b/1024, b/a, sys.argv[7], sys.argv[8]))" \
      "$m1" "$m3" "$shape" "$BASE" "$((BASE * 3))" "$view" "$dx" "$d3"
  done
done
