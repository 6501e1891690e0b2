#!/usr/bin/env bash
# TLS decryption cost: `h2ledger replay` of an HTTP/2-over-TLS capture with its key log
# against the replay of the same workload in cleartext (h2c). curl (OpenSSL 3, SSLKEYLOGFILE)
# makes N requests (default 100 000) with --parallel --parallel-max 100 over HTTP/2 and TLS
# 1.3 (TLS_AES_128_GCM_SHA256, AES-NI) to nghttpd; the cleartext twin is h2load -n N -c 1
# -m 100 against nghttpd --no-tls (curl 7.88's --parallel with --http2-prior-knowledge fails
# with "Error in the HTTP2 framing layer", and h2load writes no key log). tcpdump -i lo
# records both; the frame counts of both are printed beside the times. Then each capture is replayed RUNS times (plus a warm-up) and the medians are
# compared. Target (issue 10): TLS <= 1.5 x cleartext.
#
# usage: sudo scripts/bench-tls.sh [N] [RUNS]        env: BENCH_DIR (default /tmp/h2ledger-bench-tls)
set -euo pipefail
N=${1:-100000}
RUNS=${2:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${BENCH_DIR:-/tmp/h2ledger-bench-tls}
PY=/usr/bin/python3
[ "$(id -u)" = 0 ] || { echo "bench-tls.sh: run as root (tcpdump)" >&2; exit 1; }
for t in tcpdump nghttpd h2load curl openssl; do command -v $t >/dev/null || { echo "bench-tls.sh: missing $t" >&2; exit 1; }; done
mkdir -p "$DIR"
PIDS=()
trap 'for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done' EXIT
(cd "$ROOT" && cargo build --release --bin h2ledger >&2)
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/h2ledger
free_port() { "$PY" -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()'; }

if [ ! -s "$DIR/tls-$N.pcap" ] || [ ! -s "$DIR/tls-$N.keylog" ] || [ ! -s "$DIR/clear-$N.pcap" ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$DIR/key.pem" -out "$DIR/cert.pem" -days 30 -subj /CN=localhost 2>/dev/null
  mkdir -p "$DIR/doc"; echo "<html>h2ledger</html>" >"$DIR/doc/index.html"
  PT=$(free_port); PC=$(free_port)
  nghttpd -a 127.0.0.1 -d "$DIR/doc" "$PT" "$DIR/key.pem" "$DIR/cert.pem" >/dev/null 2>&1 & PIDS+=($!)
  nghttpd --no-tls -a 127.0.0.1 -d "$DIR/doc" "$PC" >/dev/null 2>&1 & PIDS+=($!)
  sleep 0.5
  for kind in tls clear; do
    port=$PT; [ $kind = clear ] && port=$PC
    rm -f "$DIR/$kind-$N.pcap"; [ $kind = tls ] && rm -f "$DIR/tls-$N.keylog"
    tcpdump -Z root -B 131072 -s 0 -i lo -w "$DIR/$kind-$N.pcap" "tcp port $port" 2>"$DIR/$kind.err" & D=$!; PIDS+=($D)
    for _ in $(seq 100); do grep -q "listening on" "$DIR/$kind.err" && break; sleep 0.1; done
    if [ $kind = tls ]; then
      SSLKEYLOGFILE=$DIR/tls-$N.keylog curl -sk --http2 --tlsv1.3 --tls13-ciphers TLS_AES_128_GCM_SHA256 \
        --parallel --parallel-max 100 "https://127.0.0.1:$port/index.html?[1-$N]" >/dev/null
    else
      h2load -n "$N" -c 1 -m 100 "http://127.0.0.1:$port/index.html" >/dev/null
    fi
    sleep 1; kill -INT $D; wait $D || true
    grep -q "^0 packets dropped by kernel" "$DIR/$kind.err" || { cat "$DIR/$kind.err" >&2; exit 1; }
  done
fi

# median wall time of RUNS replays (after one warm-up), in seconds
median() {
  local ts=() t
  "$@" >/dev/null
  for _ in $(seq "$RUNS"); do
    t=$( { /usr/bin/time -f %e "$@" >/dev/null; } 2>&1 | tail -1 )
    ts+=("$t")
  done
  printf '%s\n' "${ts[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p"
}
calls() { "$@" --format json | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
fr = lambda s: sum(d["sides"][s]["frames"].values())
print("calls %d, frames %d/%d, writes %d/%d, tls records %d/%d, TLS connections decrypted %d"
      % (d["calls"], fr("client"), fr("server"), d["sides"]["client"]["writes"], d["sides"]["server"]["writes"],
         d["sides"]["client"]["tls_records"], d["sides"]["server"]["tls_records"], d["tls"]["decrypted"]))'; }
echo "cleartext: $(calls "$BIN" replay "$DIR/clear-$N.pcap")"
echo "tls:       $(calls "$BIN" replay "$DIR/tls-$N.pcap" --keylog "$DIR/tls-$N.keylog")"
tc=$(median "$BIN" replay "$DIR/clear-$N.pcap" --format json)
tt=$(median "$BIN" replay "$DIR/tls-$N.pcap" --keylog "$DIR/tls-$N.keylog" --format json)
# The same TLS capture without its key log: packets, reassembly and record framing only.
tn=$(median "$BIN" replay "$DIR/tls-$N.pcap" --format json)
ls -l "$DIR/clear-$N.pcap" "$DIR/tls-$N.pcap" | awk '{print $5, $9}'
"$PY" -c "import sys; c,t,n=map(float,sys.argv[1:4]); print('replay median of %s runs: cleartext (h2load) %.2f s, TLS with key log %.2f s (ratio %.2f; target <= 1.5), TLS without key log %.2f s' % (sys.argv[4], c, t, t/c, n))" "$tc" "$tt" "$tn" "$RUNS"
