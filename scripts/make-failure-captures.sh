#!/usr/bin/env bash
# Make the failed-call captures of issue 38 into captures/failures/ (run as root; outputs
# replaced), each with a real server and client:
#   grpcgo-not-found.pcap        grpc-go's own health server (health.NewServer) asked for an
#                                unknown service: 10 Checks answered NOT_FOUND "unknown service"
#                                after one SERVING (grpcgo-findings -mode errors)
#   grpcgo-deadline.pcap         a Check handler taking 50 ms, the client's deadline 10 ms: 10
#                                calls end DEADLINE_EXCEEDED, each stream reset by the client with
#                                RST_STREAM CANCEL (grpcgo-findings -mode deadline)
#   nginx-keepalive-requests.pcap nginx (Debian 12) h2c with keepalive_requests 100; h2load -n 300
#                                -c 1 -m 10 GET /file: after 100 requests nginx sends GOAWAY
#                                NO_ERROR, the streams h2load opened above its last_stream_id are
#                                not processed, and h2load fails the rest
#   grpcgo-cancel.pcap           a Check handler taking 50 ms; the client cancels each of 20
#                                calls' context after 5 ms (no deadline): RST_STREAM CANCEL
#                                each (grpcgo-findings -mode cancel)
#   grpcgo-slow.pcap             a Check handler taking 1.1 s behind grpc.MaxConcurrentStreams(2);
#                                3 callers at once: every call takes over a second, the third
#                                waits for a stream slot first (grpcgo-findings -mode slots)
#   grpcgo-rising.pcap           a Check handler taking 2 ms; 40 Checks one after another: the
#                                first half SERVING, then three of four UNAVAILABLE "backend pool
#                                exhausted" (grpcgo-findings -mode rising; method-errors-rise)
#   grpcgo-nginx-retries.pcap    grpc-go's client through nginx (grpc_pass, keepalive_requests 25)
#                                to a grpc-go server: 40 callers x 3 Checks; nginx's GOAWAY
#                                NO_ERROR cuts streams above its last_stream_id and grpc-go
#                                retries each on a new connection (goaway-retries)
#   nghttp-slow-reader.pcap      nghttpd serving a 192 KiB file to nghttp -w 10 -W 10 (1,023-byte
#                                windows): the server stalls on its windows again and again
#                                (flow-stall; the plot's window panel, docs/ledger.md "The plot")
#   nghttpd-slots.pcap           nghttpd -m 2 (SETTINGS_MAX_CONCURRENT_STREAMS 2); h2load -n 200
#                                -c 1 -m 50 GET /file: h2load keeps 2 streams in flight, the other
#                                calls wait for a slot
# plus captures/failures/manifest.json (port, how, the client's last line, the ids each must
# raise; crates/h2ledger/tests/it/findings.rs) and NAME.tshark.json (scripts/tshark-ledger.py
# CAPTURE --port P). Each capture: tcpdump -i lo "tcp port P" --immediate-mode -B 32768,
# refused when tcpdump reports drops.
#
# usage: sudo scripts/make-failure-captures.sh [NAME...]   (only those; the manifest's other
#        entries are kept)
# needs: tcpdump, tshark, nginx, nghttpd, h2load, golang-go, golang-google-grpc-dev
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/captures/failures
PY=/usr/bin/python3
[ "$(id -u)" = 0 ] || { echo "make-failure-captures.sh: run as root" >&2; exit 1; }
for t in tcpdump tshark nginx nghttpd h2load go; do
  command -v $t >/dev/null || command -v /usr/sbin/$t >/dev/null || {
    echo "make-failure-captures.sh: missing $t" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/h2ledger-failures.XXXXXX)
chmod 755 "$WORK"
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
log() { echo "== $*" >&2; }
mkdir -p "$OUT"
"$ROOT/scripts/build-grpcgo-findings.sh" "$WORK" >/dev/null

declare -A PORT HOW LAST IDS
ONLY=" $* "
want() { [ "$ONLY" = "  " ] || [[ "$ONLY" == *" $1 "* ]]; }
free_port() { "$PY" -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()'; }
TD=(tcpdump -Z root -B 32768 --immediate-mode -s 0 -i lo)
start_dump() { # start_dump NAME PORT
  "${TD[@]}" -w "$OUT/$1.pcap" "tcp port $2" 2>"$WORK/$1.tcpdump.err" & DUMP_PID=$!; PIDS+=("$DUMP_PID")
  for _ in $(seq 100); do grep -q "listening on" "$WORK/$1.tcpdump.err" && return 0; sleep 0.1; done
  echo "make-failure-captures.sh: tcpdump for $1 did not start" >&2; return 1
}
stop_dump() { # stop_dump NAME
  sleep 0.3; kill -INT "$DUMP_PID"; wait "$DUMP_PID" 2>/dev/null || true
  grep -q "^0 packets dropped by kernel" "$WORK/$1.tcpdump.err" || {
    echo "make-failure-captures.sh: tcpdump for $1 dropped packets" >&2; cat "$WORK/$1.tcpdump.err" >&2; exit 1; }
}

grpcgo() { # grpcgo NAME IDS ARGS...
  local n=$1 ids=$2; shift 2
  want "$n" || return 0
  log "$n"
  "$WORK/grpcgo-findings" -go "$WORK/$n.go" "$@" >"$WORK/$n.prog" 2>"$WORK/$n.err" & local pid=$!; PIDS+=("$pid")
  local p=""
  for _ in $(seq 100); do p=$(head -1 "$WORK/$n.prog" 2>/dev/null | "$PY" -c 'import json,sys;print(json.load(sys.stdin)["port"])' 2>/dev/null) && [ -n "$p" ] && break; sleep 0.1; done
  start_dump "$n" "$p"
  touch "$WORK/$n.go"
  wait "$pid"
  stop_dump "$n"
  PORT[$n]=$p; HOW[$n]="grpcgo-findings $*"; LAST[$n]=$(tail -1 "$WORK/$n.prog"); IDS[$n]=$ids
}
grpcgo grpcgo-not-found "call-errors method-errors" -mode errors -calls 10
grpcgo grpcgo-deadline "call-errors deadline-exceeded" -mode deadline -calls 10 -handler 50ms -timeout 10ms
grpcgo grpcgo-cancel "call-errors cancel-storm" -mode cancel -calls 20 -handler 50ms -timeout 5ms
grpcgo grpcgo-slow "slow-calls stream-slots-full" -mode slots -callers 3 -calls 1 -handler 1100ms
grpcgo grpcgo-rising "call-errors method-errors-rise" -mode rising -calls 40 -handler 2ms

n=nginx-keepalive-requests
if want "$n"; then
log "$n"
p=$(free_port)
mkdir -p "$WORK/www"; head -c 2000 /dev/urandom >"$WORK/www/file"; chmod -R a+rX "$WORK/www"
cat >"$WORK/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $WORK/nginx.pid;
error_log $WORK/nginx.err;
events {}
http {
  access_log off;
  server {
    listen 127.0.0.1:$p http2;
    root $WORK/www;
    keepalive_requests 100;
  }
}
CONF
nginx -c "$WORK/nginx.conf" & NGPID=$!; PIDS+=("$NGPID")
for _ in $(seq 100); do "$PY" -c "import socket;socket.create_connection(('127.0.0.1',$p),0.2)" 2>/dev/null && break; sleep 0.1; done
start_dump "$n" "$p"
h2load -n 300 -c 1 -m 10 "http://127.0.0.1:$p/file" >"$WORK/$n.prog" 2>&1 || true
stop_dump "$n"
kill "$NGPID"; wait "$NGPID" 2>/dev/null || true
PORT[$n]=$p; HOW[$n]="nginx $(nginx -v 2>&1 | sed 's/.*nginx\///') keepalive_requests 100; h2load -n 300 -c 1 -m 10 /file"
LAST[$n]=$(grep "^requests:" "$WORK/$n.prog"); IDS[$n]="goaway-cut-calls"
fi

n=grpcgo-nginx-retries
if want "$n"; then
log "$n"
np=$(free_port)
"$WORK/grpcgo-findings" -go "$WORK/$n.go" -mode slots -callers 40 -calls 3 -handler 20ms -via "127.0.0.1:$np" >"$WORK/$n.prog" 2>"$WORK/$n.err" & gpid=$!; PIDS+=("$gpid")
sp=""
for _ in $(seq 100); do sp=$(head -1 "$WORK/$n.prog" 2>/dev/null | "$PY" -c 'import json,sys;print(json.load(sys.stdin)["port"])' 2>/dev/null) && [ -n "$sp" ] && break; sleep 0.1; done
cat >"$WORK/nginx-grpc.conf" <<CONF
worker_processes 1;
daemon off;
pid $WORK/nginx-grpc.pid;
error_log $WORK/nginx-grpc.err;
events {}
http {
  access_log off;
  server {
    listen 127.0.0.1:$np http2;
    keepalive_requests 25;
    location / { grpc_pass grpc://127.0.0.1:$sp; }
  }
}
CONF
nginx -c "$WORK/nginx-grpc.conf" & NGPID=$!; PIDS+=("$NGPID")
for _ in $(seq 100); do "$PY" -c "import socket;socket.create_connection(('127.0.0.1',$np),0.2)" 2>/dev/null && break; sleep 0.1; done
start_dump "$n" "$np"
touch "$WORK/$n.go"
wait "$gpid"
stop_dump "$n"
kill "$NGPID"; wait "$NGPID" 2>/dev/null || true
PORT[$n]=$np; HOW[$n]="grpcgo-findings -mode slots -callers 40 -calls 3 -handler 20ms -via nginx $(nginx -v 2>&1 | sed 's/.*nginx\///') (grpc_pass, keepalive_requests 25)"
LAST[$n]=$(tail -1 "$WORK/$n.prog"); IDS[$n]="goaway-cut-calls goaway-retries"
fi

n=nghttp-slow-reader
if want "$n"; then
log "$n"
p=$(free_port)
mkdir -p "$WORK/www"; head -c 196608 /dev/urandom >"$WORK/www/big.bin"; chmod -R a+rX "$WORK/www"
nghttpd --no-tls -a 127.0.0.1 -d "$WORK/www" "$p" >"$WORK/$n.server" 2>&1 & NGPID=$!; PIDS+=("$NGPID")
for _ in $(seq 100); do "$PY" -c "import socket;socket.create_connection(('127.0.0.1',$p),0.2)" 2>/dev/null && break; sleep 0.1; done
start_dump "$n" "$p"
nghttp -n -s -w 10 -W 10 "http://127.0.0.1:$p/big.bin" >"$WORK/$n.prog" 2>&1 || true
stop_dump "$n"
kill "$NGPID"; wait "$NGPID" 2>/dev/null || true
PORT[$n]=$p; HOW[$n]="nghttpd --no-tls (nghttp2 $(nghttpd --version | sed 's/.*nghttp2\///')); nghttp -n -s -w 10 -W 10 /big.bin (196,608 bytes)"
LAST[$n]=$(grep -E "^ *[0-9]+ .*big.bin" "$WORK/$n.prog" | tail -1 | tr -s ' '); IDS[$n]="flow-stall"
fi

n=nghttpd-slots
if want "$n"; then
log "$n"
p=$(free_port)
nghttpd --no-tls -m 2 -a 127.0.0.1 -d "$WORK/www" "$p" >"$WORK/$n.server" 2>&1 & NGPID=$!; PIDS+=("$NGPID")
for _ in $(seq 100); do "$PY" -c "import socket;socket.create_connection(('127.0.0.1',$p),0.2)" 2>/dev/null && break; sleep 0.1; done
start_dump "$n" "$p"
h2load -n 200 -c 1 -m 50 "http://127.0.0.1:$p/file" >"$WORK/$n.prog" 2>&1 || true
stop_dump "$n"
kill "$NGPID"; wait "$NGPID" 2>/dev/null || true
PORT[$n]=$p; HOW[$n]="nghttpd --no-tls -m 2 (nghttp2 $(nghttpd --version | sed 's/.*nghttp2\///')); h2load -n 200 -c 1 -m 50 /file"
LAST[$n]=$(grep "^requests:" "$WORK/$n.prog"); IDS[$n]="stream-slots-full"
fi

for n in "${!PORT[@]}"; do
  "$PY" "$ROOT/scripts/tshark-ledger.py" "$OUT/$n.pcap" --port "${PORT[$n]}" >"$OUT/$n.tshark.json"
done
for n in "${!PORT[@]}"; do
  echo "$n"$'\t'"${PORT[$n]}"$'\t'"${HOW[$n]}"$'\t'"${LAST[$n]}"$'\t'"${IDS[$n]}"
done >"$WORK/made.tsv"
"$PY" - "$OUT/manifest.json" "$WORK/made.tsv" <<'PYEOF'
import json, os, sys
path = sys.argv[1]
m = json.load(open(path)) if os.path.exists(path) else {}
for line in open(sys.argv[2]):
    n, port, how, last, ids = line.rstrip("\n").split("\t")
    m[n] = {"port": int(port), "how": how, "client": last, "must_raise": ids.split()}
with open(path, "w") as f:
    f.write("{\n" + ",\n".join(json.dumps(k) + ": " + json.dumps(m[k], sort_keys=True)
                               for k in sorted(m)) + "\n}\n")
PYEOF
ls -l "$OUT"
