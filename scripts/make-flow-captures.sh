#!/usr/bin/env bash
# Remake the flow-control / gRPC message captures of issue 11 (run as root; outputs replaced):
#   captures/grpcgo-flow-static.pcap  grpc-go 1.33, 64 KiB static stream windows, 1 MiB messages
#   captures/grpcgo-flow-bdp.pcap     same calls, BDP estimator on, uploads gzip-compressed
#   captures/nghttp-window.pcap       nghttpd serving 256 KiB to nghttp -w 14 -W 16
#   captures/goh2c-post.pcap          Go net/http h2c (x/net/http2/h2c), one 3 MiB POST
#   captures/node-padded.pcap         Node http2 with paddingStrategy MAX (padded DATA)
#   captures/tonic-small-window.pcap  tonic health checks with 4-byte stream windows
# and for each <name>: <name>.flow.json = scripts/tshark-flow.py <capture> --port P (the
# tshark cross-check the tests compare with), captures/flow-manifest.json (ports) and
# captures/flow-captures.md (the section scripts/captures-readme.py appends to README.md; it is
# also appended here, replacing the previous copy).
# env: WORKLOAD_BIN (default: cargo build --release -p h2ledger-workload)
#
# usage: sudo scripts/make-flow-captures.sh
# needs: tcpdump, tshark, nghttp2-client, nghttp2-server, golang-go, golang-google-grpc-dev,
#        golang-golang-x-net-dev, nodejs.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CAP=$ROOT/captures
PY=/usr/bin/python3
[ "$(id -u)" = 0 ] || { echo "make-flow-captures.sh: run as root" >&2; exit 1; }
for t in tcpdump tshark nghttp nghttpd go node; do
  command -v $t >/dev/null || { echo "make-flow-captures.sh: missing $t" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/h2ledger-flow.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
log() { echo "== $*" >&2; }

# gobuild NAME : GOPATH build of captures/src/NAME against Debian's Go sources -> $WORK/NAME
gobuild() {
  mkdir -p "$WORK/gopath/src/h2ledger"
  cp -r "$CAP/src/$1" "$WORK/gopath/src/h2ledger/$1"
  (cd "$WORK/gopath/src/h2ledger/$1" && GO111MODULE=off GOPATH="/usr/share/gocode:$WORK/gopath" GOFLAGS= go build -o "$WORK/$1" .)
}
start_bg() { local n=$1; shift; "$@" >"$WORK/$n.out" 2>"$WORK/$n.err" & LAST_PID=$!; PIDS+=("$LAST_PID"); }
wait_port() {
  local n=$1 pid=$2 p
  for _ in $(seq 100); do
    p=$(sed -n 's/.*"port": *\([0-9][0-9]*\).*/\1/p' "$WORK/$n.out" | head -1)
    [ -n "$p" ] && { echo "$p"; return 0; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "make-flow-captures.sh: $n did not report a port:" >&2; cat "$WORK/$n.err" >&2; return 1
}
TD=(tcpdump -Z root -B 32768 --immediate-mode -s 0 -i lo)
start_dump() { # start_dump NAME FILE PORT
  "${TD[@]}" -w "$2" "tcp port $3" 2>"$WORK/$1.tcpdump.err" & DUMP_PID=$!; PIDS+=("$DUMP_PID")
  for _ in $(seq 100); do grep -q "listening on" "$WORK/$1.tcpdump.err" && return 0; sleep 0.1; done
  echo "make-flow-captures.sh: tcpdump for $1 did not start" >&2; return 1
}
stop_dump() { # stop_dump NAME PID
  kill -INT "$2" 2>/dev/null || true; wait "$2" 2>/dev/null || true
  grep -q "^0 packets dropped by kernel" "$WORK/$1.tcpdump.err" || {
    echo "make-flow-captures.sh: tcpdump for $1 dropped packets" >&2; cat "$WORK/$1.tcpdump.err" >&2; exit 1; }
}
free_port() { "$PY" -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()'; }
declare -A PORT
# self_run NAME CMD... : a program that prints {"port":P}, pauses, then runs its client
self_run() {
  local n=$1; shift
  log "$n"
  rm -f "$CAP/$n".*
  start_bg "$n" "$@"; local pid=$LAST_PID
  local p; p=$(wait_port "$n" $pid)
  start_dump "$n" "$CAP/$n.pcap" "$p"; local d=$DUMP_PID
  wait $pid || { echo "make-flow-captures.sh: $n failed:" >&2; cat "$WORK/$n.err" >&2; exit 1; }
  sleep 0.3
  stop_dump "$n" $d
  tail -1 "$WORK/$n.out" >"$CAP/$n.workload.json"
  PORT[$n]=$p
}

log "building grpcgo-flow, goh2c, h2ledger-workload"
if [ -z "${WORKLOAD_BIN:-}" ]; then
  (cd "$ROOT" && cargo build --release -p h2ledger-workload >&2)
  WORKLOAD_BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/h2ledger-workload
fi
gobuild grpcgo-flow
gobuild goh2c
self_run grpcgo-flow-static "$WORK/grpcgo-flow" -static-window -messages 2 -size 1048576 -pause 2s
self_run grpcgo-flow-bdp "$WORK/grpcgo-flow" -gzip -messages 2 -size 1048576 -pause 2s
self_run goh2c-post "$WORK/goh2c" -mb 3 -pause 2s
self_run node-padded node "$CAP/src/node-padded/padded.js" 2000

n=tonic-small-window
log "$n"
rm -f "$CAP/$n".*
start_bg tsrv "$WORKLOAD_BIN" --listen 127.0.0.1:0 --no-adaptive-window --stream-window 4; TSRV=$LAST_PID
P=$(wait_port tsrv $TSRV)
start_dump $n "$CAP/$n.pcap" "$P"; D=$DUMP_PID
"$WORKLOAD_BIN" --connect 127.0.0.1:$P --no-adaptive-window --stream-window 4 --phase single:1:20:1 >"$CAP/$n.workload.json"
sleep 0.3
stop_dump $n $D; kill $TSRV; wait $TSRV 2>/dev/null || true
PORT[$n]=$P

n=nghttp-window
log "$n"
rm -f "$CAP/$n".*
mkdir -p "$WORK/doc"
head -c 262144 /dev/urandom >"$WORK/doc/big.bin"
for _ in 1 2 3 4 5; do
  P=$(free_port)
  start_bg ngsrv nghttpd --no-tls -a 127.0.0.1 -d "$WORK/doc" "$P"; NGSRV=$LAST_PID
  sleep 0.5; kill -0 $NGSRV 2>/dev/null && break
done
start_dump $n "$CAP/$n.pcap" "$P"; D=$DUMP_PID
nghttp -n -w 14 -W 16 "http://127.0.0.1:$P/big.bin" >"$WORK/ng.log"
sleep 0.3
stop_dump $n $D; kill $NGSRV; wait $NGSRV 2>/dev/null || true
echo '{"program":"nghttp -n -w 14 -W 16","bytes":262144}' >"$CAP/$n.workload.json"
PORT[$n]=$P

{
  echo "{"
  first=1
  for k in grpcgo-flow-static grpcgo-flow-bdp goh2c-post node-padded nghttp-window tonic-small-window; do
    [ $first = 1 ] || echo ","
    first=0
    printf '  "%s": {"file": "%s.pcap", "port": %s}' "$k" "$k" "${PORT[$k]}"
  done
  echo; echo "}"
} >"$CAP/flow-manifest.json"
for k in "${!PORT[@]}"; do
  "$PY" "$ROOT/scripts/tshark-flow.py" "$CAP/$k.pcap" --port "${PORT[$k]}" >"$CAP/$k.flow.json"
done
"$PY" "$ROOT/scripts/flow-captures-readme.py" "$CAP"
"$PY" - "$CAP" <<'PYEOF'
import sys
cap = sys.argv[1]
r = open(cap + "/README.md").read()
mark = "\n## Flow-control and gRPC message captures (issue 11)"
if mark in r:
    r = r[: r.index(mark)]
open(cap + "/README.md", "w").write(r.rstrip("\n") + "\n" + open(cap + "/flow-captures.md").read())
PYEOF
ls -la "$CAP"/*flow* "$CAP"/goh2c* "$CAP"/node-padded* "$CAP"/nghttp-window* >&2
