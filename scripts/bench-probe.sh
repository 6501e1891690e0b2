#!/usr/bin/env bash
# The cost of `--keys-from` on the program watched (issue 37): the handshake rate of h2load
# against nghttpd over TLS 1.3 (Debian's libssl.so.3, stripped: the probe found by call sites),
# each connection one request (`h2load -n C -c C -m 1`: C handshakes), in ROUNDS alternated
# rounds: without h2ledger; with the probe alone (`sniff --keys-from NGHTTPD_PID` capturing
# another port, so only the uprobe runs per handshake); and with `sniff --keys-from` capturing
# and decrypting the traffic too (on this 2-core machine it competes with nghttpd and h2load
# for the CPU: that is the cost of watching, not of the probe); and the attach
# time, from starting `sniff --keys-from` to its "listening on" line, for each library at hand:
# libssl.so.3 (nghttpd), OpenSSL inside /usr/bin/node, BoringSSL inside PyPI's grpcio wheel
# (scripts/grpcio-wheel.sh's venv). Medians are printed; nothing is asserted (machine speed).
#
# usage: sudo scripts/bench-probe.sh [C] [ROUNDS]     env: BENCH_DIR (default /tmp/h2ledger-bench-probe)
set -euo pipefail
C=${1:-500}
ROUNDS=${2:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${BENCH_DIR:-/tmp/h2ledger-bench-probe}
PY=/usr/bin/python3
[ "$(id -u)" = 0 ] || { echo "bench-probe.sh: run as root (uprobes)" >&2; exit 1; }
for t in nghttpd h2load openssl; do command -v $t >/dev/null || { echo "bench-probe.sh: missing $t" >&2; exit 1; }; done
mkdir -p "$DIR/doc"
PIDS=()
trap 'for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done' EXIT
(cd "$ROOT" && cargo build --release --bin h2ledger >&2)
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/h2ledger
echo hello >"$DIR/doc/index.html"
[ -s "$DIR/key.pem" ] || openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
  -subj /CN=localhost -keyout "$DIR/key.pem" -out "$DIR/cert.pem" 2>/dev/null
free_port() { "$PY" -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# sniff_start PORT PID: `sniff --keys-from PID` of PORT in the background (SNIFF), until
# "listening on"; prints the seconds it took.
sniff_start() {
  local t0 t1
  # Emptied here: the background shell's own truncation may come after the first look.
  : >"$DIR/sniff.err"
  t0=$(date +%s.%N)
  "$BIN" sniff -i lo --port "$1" --keys-from "$2" -T json >"$DIR/sniff.out" 2>"$DIR/sniff.err" & SNIFF=$!; PIDS+=("$SNIFF")
  for _ in $(seq 1200); do grep -q "listening on" "$DIR/sniff.err" && break; kill -0 $SNIFF 2>/dev/null || break; sleep 0.05; done
  if ! grep -q "listening on" "$DIR/sniff.err"; then
    local how="still running after 60 s"
    kill -0 $SNIFF 2>/dev/null || { wait $SNIFF; how="exit status $?"; } || true
    echo "bench-probe.sh: sniff --keys-from $2 did not start ($how):" >&2; cat "$DIR/sniff.err" >&2; exit 1
  fi
  t1=$(date +%s.%N)
  "$PY" -c "print('%.3f' % ($t1 - $t0))"
}
sniff_stop() { kill -INT "$SNIFF" 2>/dev/null || true; wait "$SNIFF" 2>/dev/null || true; }

P=$(free_port)
nghttpd -a 127.0.0.1 -d "$DIR/doc" "$P" "$DIR/key.pem" "$DIR/cert.pem" >"$DIR/nghttpd.log" 2>&1 & NG=$!; PIDS+=("$NG")
for _ in $(seq 50); do "$PY" -c "import socket; socket.create_connection(('127.0.0.1', $P), 0.2)" 2>/dev/null && break; sleep 0.1; done

# rate: handshakes (= requests) per second of one h2load run.
rate() {
  h2load -n "$C" -c "$C" -m 1 "https://127.0.0.1:$P/index.html" >"$DIR/h2load.log" 2>&1
  grep -q "$C succeeded, 0 failed" "$DIR/h2load.log" || { cat "$DIR/h2load.log" >&2; exit 1; }
  sed -n 's/^finished in [^,]*, \([0-9.]*\) req\/s.*/\1/p' "$DIR/h2load.log"
}
rate >/dev/null # warm-up
: >"$DIR/without"; : >"$DIR/probe"; : >"$DIR/with"; : >"$DIR/attach-libssl"; : >"$DIR/decrypted"
OTHER=$(free_port)
for r in $(seq "$ROUNDS"); do
  rate >>"$DIR/without"
  sniff_start "$OTHER" "$NG" >/dev/null
  rate >>"$DIR/probe"
  sniff_stop
  sniff_start "$P" "$NG" >>"$DIR/attach-libssl"
  rate >>"$DIR/with"
  sleep 0.3
  sniff_stop
  "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["calls"], d["connections"])' "$DIR/sniff.out" >>"$DIR/decrypted"
  echo "round $r: without $(tail -1 "$DIR/without") req/s, probe only $(tail -1 "$DIR/probe"), with sniff $(tail -1 "$DIR/with") req/s, attach $(tail -1 "$DIR/attach-libssl") s, decrypted (calls, connections) $(tail -1 "$DIR/decrypted")" >&2
done
kill "$NG" 2>/dev/null || true
W=$(median <"$DIR/without"); B=$(median <"$DIR/probe"); A=$(median <"$DIR/with")
echo "h2load -n $C -c $C -m 1 against nghttpd (TLS 1.3, libssl.so.3), $ROUNDS rounds, medians:"
echo "  handshakes/s without h2ledger:          $W"
echo "  handshakes/s with the probe alone:      $B  (ratio $("$PY" -c "print('%.2f' % ($B / $W))"))"
echo "  handshakes/s with sniff --keys-from:    $A  (ratio $("$PY" -c "print('%.2f' % ($A / $W))"))"
echo "  attach, libssl.so.3 (nghttpd):  $(median <"$DIR/attach-libssl") s"

# Attach time for the static libraries at hand.
attach_of() { # attach_of NAME CMD...: start CMD (prints its port first), attach, report
  local name=$1; shift
  "$@" >"$DIR/$name.out" 2>/dev/null & local pid=$!; PIDS+=("$pid")
  for _ in $(seq 100); do [ -s "$DIR/$name.out" ] && break; sleep 0.1; done
  local port; port=$(head -1 "$DIR/$name.out" | tr -dc 0-9)
  # Not in $(...): SNIFF must be set in this shell for sniff_stop.
  sniff_start "$port" "$pid" >"$DIR/attach-one"
  sniff_stop
  local t; t=$(cat "$DIR/attach-one")
  kill "$pid" 2>/dev/null || true
  echo "  attach, $name: $t s"
}
if command -v node >/dev/null; then
  cat >"$DIR/h2.js" <<'EOF'
const http2 = require('http2'); const fs = require('fs');
const s = http2.createSecureServer({key: fs.readFileSync(process.argv[2]), cert: fs.readFileSync(process.argv[3])});
s.on('stream', (st) => { st.respond({':status': 200}); st.end('hello'); });
s.listen(0, '127.0.0.1', () => { console.log(s.address().port); });
EOF
  attach_of "OpenSSL inside node" node "$DIR/h2.js" "$DIR/key.pem" "$DIR/cert.pem"
fi
WHEEL=/opt/h2l-grpcio-venv/bin/python
if [ -x "$WHEEL" ]; then
  cat >"$DIR/grpcio.py" <<'EOF'
import sys, time, grpc
from concurrent import futures
s = grpc.server(futures.ThreadPoolExecutor(2))
creds = grpc.ssl_server_credentials([(open(sys.argv[1], 'rb').read(), open(sys.argv[2], 'rb').read())])
port = s.add_secure_port('127.0.0.1:0', creds)
s.start(); print(port, flush=True); time.sleep(600)
EOF
  attach_of "BoringSSL inside the grpcio wheel" "$WHEEL" "$DIR/grpcio.py" "$DIR/key.pem" "$DIR/cert.pem"
fi
