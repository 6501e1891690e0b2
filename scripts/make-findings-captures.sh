#!/usr/bin/env bash
# Remake the findings captures of issue 21 (run as root; outputs replaced), in captures/findings/:
#   ATTACK-nghttpd.pcap, ATTACK-goh2c.pcap   captures/src/h2-attacks/attack.py (Debian python3-h2)
#       against nghttpd (nghttp2 1.52, Debian's, with its CVE-2023-44487 and CVE-2024-28182
#       fixes) and Go's net/http h2c server (captures/src/go-h2c -serve, x/net 0.7.0 from
#       Debian): the servers' own RST_STREAM / GOAWAY reactions are in the capture
#   refused-stream-nghttpd.pcap   nghttpd -m 4, 16 requests sent before its SETTINGS is read
#   grpcgo-keepalive.pcap         grpc-go client keepalive Time 10s + PermitWithoutStream vs a
#                                 grpc-go server with default enforcement (GOAWAY too_many_pings)
#   grpcgo-slots.pcap             grpc-go server MaxConcurrentStreams(2), 16 callers x 4 calls
#   grpcgo-bigstatus.pcap         grpc-go UNAVAILABLE with a 20,000-byte grpc-message: the
#                                 status block is HEADERS + CONTINUATION (decision 454)
#   big503-goh2c.pcap             go-h2c's /big503 (a 503 with a 20,000-byte header) asked by
#                                 nghttp: HEADERS with END_STREAM + CONTINUATION
# and for each NAME: NAME.tshark.json (scripts/tshark-ledger.py, the frames the findings rest
# on, as Wireshark counts them), captures/findings/manifest.json (port, how it was made, what
# the program printed, the ids that must fire) and captures/findings-captures.md (the section of
# captures/README.md; replaced there too). Each capture: tcpdump -i lo "tcp port P"
# --immediate-mode -B 32768, refused when tcpdump reports drops or the file exceeds 1 MB.
#
# usage: sudo scripts/make-findings-captures.sh
# needs: tcpdump, tshark, nghttp2-server, golang-go, golang-google-grpc-dev,
#        golang-golang-x-net-dev, python3-h2.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CAP=$ROOT/captures
OUT=$CAP/findings
PY=/usr/bin/python3
ATTACK=$CAP/src/h2-attacks/attack.py
[ "$(id -u)" = 0 ] || { echo "make-findings-captures.sh: run as root" >&2; exit 1; }
for t in tcpdump tshark nghttpd nghttp go; do
  command -v $t >/dev/null || { echo "make-findings-captures.sh: missing $t" >&2; exit 1; }
done
"$PY" -c "import h2" || { echo "make-findings-captures.sh: missing python3-h2" >&2; exit 1; }
WORK=$(mktemp -d /tmp/h2ledger-findings.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
log() { echo "== $*" >&2; }
mkdir -p "$OUT"
rm -f "$OUT"/*.pcap "$OUT"/*.tshark.json "$OUT"/*.out.json

"$ROOT/scripts/build-goh2c.sh" "$WORK" >/dev/null
"$ROOT/scripts/build-grpcgo-findings.sh" "$WORK" >/dev/null
# grpcgo-flow (the window-held target), GOPATH build against Debian's grpc-go.
mkdir -p "$WORK/gopath/src/h2ledger"
cp -r "$ROOT/captures/src/grpcgo-flow" "$WORK/gopath/src/h2ledger/grpcgo-flow"
(cd "$WORK/gopath/src/h2ledger/grpcgo-flow" && GO111MODULE=off GOPATH="/usr/share/gocode:$WORK/gopath" GOFLAGS= go build -o "$WORK/grpcgo-flow" .)
mkdir -p "$WORK/doc"
echo "hello" >"$WORK/doc/index.html"
head -c 1048576 /dev/urandom >"$WORK/doc/big.bin"

free_port() { "$PY" -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()'; }
TD=(tcpdump -Z root -B 32768 --immediate-mode -s 0 -i lo)
start_dump() { # start_dump NAME PORT
  "${TD[@]}" -w "$OUT/$1.pcap" "tcp port $2" 2>"$WORK/$1.tcpdump.err" & DUMP_PID=$!; PIDS+=("$DUMP_PID")
  for _ in $(seq 100); do grep -q "listening on" "$WORK/$1.tcpdump.err" && return 0; sleep 0.1; done
  echo "make-findings-captures.sh: tcpdump for $1 did not start" >&2; return 1
}
stop_dump() { # stop_dump NAME
  sleep 0.3
  kill -INT "$DUMP_PID" 2>/dev/null || true; wait "$DUMP_PID" 2>/dev/null || true
  grep -q "^0 packets dropped by kernel" "$WORK/$1.tcpdump.err" || {
    echo "make-findings-captures.sh: tcpdump for $1 dropped packets" >&2; cat "$WORK/$1.tcpdump.err" >&2; exit 1; }
  local size; size=$(stat -c %s "$OUT/$1.pcap")
  [ "$size" -le 1048576 ] || { echo "make-findings-captures.sh: $1.pcap is $size bytes (> 1 MB)" >&2; exit 1; }
}
start_nghttpd() { # start_nghttpd [OPTS...] -> NGPORT, NGPID
  for _ in 1 2 3 4 5; do
    NGPORT=$(free_port)
    nghttpd --no-tls -a 127.0.0.1 -d "$WORK/doc" "$@" "$NGPORT" >"$WORK/nghttpd.log" 2>&1 & NGPID=$!
    PIDS+=("$NGPID")
    sleep 0.5; kill -0 $NGPID 2>/dev/null && return 0
  done
  echo "make-findings-captures.sh: nghttpd did not start" >&2; exit 1
}
start_goh2c() { # -> GOPORT, GOPID
  "$WORK/go-h2c" -serve >"$WORK/goh2c.out" 2>&1 & GOPID=$!; PIDS+=("$GOPID")
  for _ in $(seq 100); do
    GOPORT=$(sed -n 's/.*"port": *\([0-9][0-9]*\).*/\1/p' "$WORK/goh2c.out" | head -1)
    [ -n "$GOPORT" ] && return 0; sleep 0.1
  done
  echo "make-findings-captures.sh: go-h2c did not start" >&2; exit 1
}

declare -A PORT HOW
# attack NAME PORT PATTERN ARGS... : one capture of attack.py PATTERN against PORT
attack() {
  local n=$1 p=$2 pat=$3; shift 3
  log "$n"
  start_dump "$n" "$p"
  "$PY" "$ATTACK" "$pat" "$p" "$@" >"$OUT/$n.out.json"
  stop_dump "$n"
  PORT[$n]=$p
  HOW[$n]="attack.py $pat P $*"
}

start_nghttpd
start_goh2c
for server in nghttpd goh2c; do
  if [ $server = nghttpd ]; then P=$NGPORT; BIG=/big.bin; ECHO=/index.html; else P=$GOPORT; BIG=/big; ECHO=/echo; fi
  attack rapid-reset-$server "$P" rapid-reset --n 2000
  attack made-you-reset-$server "$P" made-you-reset --n 1500 --path "$ECHO"
  attack reset-flood-$server "$P" reset-flood --n 1500
  attack continuation-flood-$server "$P" continuation-flood --n 1000
  attack ping-flood-$server "$P" ping-flood --n 5000
  attack settings-flood-$server "$P" settings-flood --n 3000
  attack empty-frames-flood-$server "$P" empty-frames-flood --n 2000 --path "$ECHO"
  attack priority-flood-$server "$P" priority-flood --n 3000
  attack window-update-flood-$server "$P" window-update-flood --n 3000
  attack zero-window-$server "$P" zero-window --n 2 --path "$BIG" --hold 3
  [ $server = nghttpd ] && attack window-held-$server "$P" window-held --n 1 --path "$BIG" --hold 5
  attack hpack-bomb-$server "$P" hpack-bomb --n 300
done
# A 503 whose header block Go's server splits over HEADERS (END_STREAM) and CONTINUATION
# (decision 454), asked by nghttp on one connection (distinct queries: nghttp asks each URL once).
log big503-goh2c
start_dump big503-goh2c "$GOPORT"
U=http://127.0.0.1:$GOPORT
nghttp -ns "$U/hello" "$U/big503?1" "$U/big503?2" "$U/big503?3" "$U/big503?4" >"$WORK/big503.nghttp"
stop_dump big503-goh2c
codes=$(awk '$5 ~ /^[0-9][0-9][0-9]$/ {n[$5]++} END {s=""; for (c in n) s=s (s?",":"") "\"" c "\":" n[c]; print s}' "$WORK/big503.nghttp")
printf '{"client":"nghttp %s -ns (one connection)","port":%s,"statuses":{%s}}\n' \
  "$(nghttp --version | awk '{print $2}' | sed 's/nghttp2\///')" "$GOPORT" "$codes" >"$OUT/big503-goh2c.out.json"
PORT[big503-goh2c]=$GOPORT
HOW[big503-goh2c]="nghttp -ns U/hello U/big503?1 U/big503?2 U/big503?3 U/big503?4"
kill $NGPID $GOPID 2>/dev/null || true

# A real grpc-go server's windows held: a Download of 4 x 1 MiB, no WINDOW_UPDATE for 5 s.
"$WORK/grpcgo-flow" -serve 9s -size 1048576 >"$WORK/grpcgo-flow.out" 2>"$WORK/grpcgo-flow.err" & GFPID=$!; PIDS+=("$GFPID")
GFPORT=""
for _ in $(seq 100); do
  GFPORT=$(sed -n 's/.*"port": *\([0-9][0-9]*\).*/\1/p' "$WORK/grpcgo-flow.out" | head -1)
  [ -n "$GFPORT" ] && break; sleep 0.1
done
[ -n "$GFPORT" ] || { echo "make-findings-captures.sh: grpcgo-flow did not start" >&2; cat "$WORK/grpcgo-flow.err" >&2; exit 1; }
attack window-held-grpcgo "$GFPORT" window-held --n 1 --path /flow.Flow/Download --grpc 4 --hold 5
kill $GFPID 2>/dev/null || true

start_nghttpd -m 4
attack refused-stream-nghttpd "$NGPORT" refused-stream --n 16
HOW[refused-stream-nghttpd]="nghttpd -m 4; attack.py refused-stream P --n 16"
kill $NGPID 2>/dev/null || true

# grpc-go: the program listens, waits for FILE, then runs its client.
grpcgo() { # grpcgo NAME ARGS...
  local n=$1; shift
  log "$n"
  "$WORK/grpcgo-findings" -go "$WORK/$n.go" "$@" >"$WORK/$n.prog" 2>"$WORK/$n.err" & local pid=$!; PIDS+=("$pid")
  local p=""
  for _ in $(seq 100); do
    p=$(sed -n 's/.*"port": *\([0-9][0-9]*\).*/\1/p' "$WORK/$n.prog" | head -1)
    [ -n "$p" ] && break; sleep 0.1
  done
  [ -n "$p" ] || { echo "make-findings-captures.sh: $n did not start" >&2; cat "$WORK/$n.err" >&2; exit 1; }
  start_dump "$n" "$p"
  touch "$WORK/$n.go"
  wait $pid || { echo "make-findings-captures.sh: $n failed" >&2; cat "$WORK/$n.err" >&2; exit 1; }
  stop_dump "$n"
  tail -1 "$WORK/$n.prog" >"$OUT/$n.out.json"
  PORT[$n]=$p
  HOW[$n]="grpcgo-findings $*"
}
grpcgo grpcgo-keepalive -mode keepalive -seconds 70
grpcgo grpcgo-slots -mode slots -callers 16 -calls 4 -handler 20ms
grpcgo grpcgo-bigstatus -mode bigstatus -calls 10 -message 20000

for n in "${!PORT[@]}"; do
  "$PY" "$ROOT/scripts/tshark-ledger.py" "$OUT/$n.pcap" --port "${PORT[$n]}" >"$OUT/$n.tshark.json"
done
{
  for n in "${!PORT[@]}"; do printf '%s\t%s\t%s\n' "$n" "${PORT[$n]}" "${HOW[$n]}"; done
} | "$PY" "$ROOT/scripts/findings-captures-readme.py" "$CAP"
ls -la "$OUT" >&2
