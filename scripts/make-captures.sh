#!/usr/bin/env bash
# Regenerate every capture in captures/ (run as root; idempotent: outputs are
# replaced). Also writes the golden ledgers (captures/<name>.tshark.json, from
# scripts/tshark-ledger.py), the workloads' own counts
# (captures/<name>.workload.json) and captures/README.md.
#
# usage: sudo scripts/make-captures.sh [SECONDS_PER_PHASE]      (default 3)
#
# env:
#   WORKLOAD_BIN  path of a built h2ledger-workload binary (default: cargo build
#                 --release -p h2ledger-workload in this workspace)
#   GRPCGO_BIN    path of a built grpcgo-article (default: scripts/build-grpcgo.sh)
#
# needs: tcpdump, tshark + editcap + capinfos (wireshark-common), nghttp2-client,
#        nghttp2-server, golang-go, golang-google-grpc-dev, python3-grpcio
#        (/usr/bin/python3), iproute2, ethtool.
#
# Every capture is taken on loopback (or on lo inside a private network
# namespace). Servers bind port 0 (nghttpd can't: a free port is picked just
# before and the start is retried), the port is read back, then tcpdump starts
# with the filter "tcp port P" and --immediate-mode, we wait for "listening on",
# run the client, and stop tcpdump with SIGINT.
set -euo pipefail

SECS=${1:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CAP=$ROOT/captures
SCRIPTS=$ROOT/scripts
PY=/usr/bin/python3   # Debian's python3-grpcio only imports here
LEDGER=$SCRIPTS/tshark-ledger.py
[ "$(id -u)" = 0 ] || { echo "make-captures.sh: run as root" >&2; exit 1; }
for t in tcpdump tshark editcap capinfos nghttp nghttpd h2load go ip; do
  command -v $t >/dev/null || { echo "make-captures.sh: missing $t" >&2; exit 1; }
done
command -v ethtool >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y ethtool >/dev/null

WORK=$(mktemp -d /tmp/h2ledger-captures.XXXXXX)
chmod 755 "$WORK"
PIDS=()
NETNS=""
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  [ -n "$NETNS" ] && ip netns del "$NETNS" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
log() { echo "== $*" >&2; }

# ---------------------------------------------------------------- binaries
if [ -z "${WORKLOAD_BIN:-}" ]; then
  log "building h2ledger-workload"
  (cd "$ROOT" && cargo build --release -p h2ledger-workload >&2)
  WORKLOAD_BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/h2ledger-workload
fi
if [ -z "${GRPCGO_BIN:-}" ]; then
  log "building grpcgo-article"
  "$SCRIPTS/build-grpcgo.sh" "$WORK/bin" >&2
  GRPCGO_BIN=$WORK/bin/grpcgo-article
fi
PYWL=$CAP/src/python-grpcio/workload.py

# ---------------------------------------------------------------- helpers
# start_bg NAME CMD... : run CMD in background, stdout -> $WORK/NAME.out
start_bg() { local n=$1; shift; "$@" >"$WORK/$n.out" 2>"$WORK/$n.err" & LAST_PID=$!; PIDS+=("$LAST_PID"); }
# wait_port NAME PID : wait for a {"port":P} line on NAME's stdout, echo P
wait_port() {
  local n=$1 pid=$2 p
  for _ in $(seq 100); do
    p=$(sed -n 's/.*"port": *\([0-9][0-9]*\).*/\1/p' "$WORK/$n.out" | head -1)
    [ -n "$p" ] && { echo "$p"; return 0; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "make-captures.sh: $n did not report a port:" >&2; cat "$WORK/$n.err" >&2; return 1
}
# start_dump NAME CMD... : run a tcpdump command line in background, wait for "listening on"
start_dump() {
  local n=$1; shift
  : >"$WORK/$n.tcpdump.err"
  "$@" 2>"$WORK/$n.tcpdump.err" & DUMP_PID=$!; PIDS+=("$DUMP_PID")
  echo "$DUMP_PID" >"$WORK/$n.tcpdump.pid"
  for _ in $(seq 100); do
    grep -q "listening on" "$WORK/$n.tcpdump.err" && return 0
    kill -0 "$DUMP_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "make-captures.sh: tcpdump for $n did not start:" >&2; cat "$WORK/$n.tcpdump.err" >&2; return 1
}
# keep_from SRC DST N : DST = packets N..last of SRC (editcap 4.0 has no open "N-" range)
keep_from() {
  local last; last=$(capinfos -c -M -T -r "$1" | cut -f2)
  editcap -F pcap -r "$1" "$2" "$3-$last"
}
# stop_dump PID : SIGINT a tcpdump started by start_dump; fail if it dropped packets
stop_dump() {
  local pid=$1 f
  stop_pid "$pid"
  f=$(grep -l "^$pid\$" "$WORK"/*.tcpdump.pid 2>/dev/null | head -1 || true)
  f=${f%.pid}
  if [ -n "$f" ] && ! grep -q "^0 packets dropped by kernel" "$f.err"; then
    echo "make-captures.sh: tcpdump ($f.err) dropped packets:" >&2; cat "$f.err" >&2; exit 1
  fi
}
stop_pid() { kill -"${2:-INT}" "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
free_port() { "$PY" -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()'; }
wait_tcp() { # wait_tcp HOST PORT [NETNS]
  local pre=(); [ -n "${3:-}" ] && pre=(ip netns exec "$3")
  for _ in $(seq 50); do
    "${pre[@]}" "$PY" -c 'import socket,sys;socket.create_connection((sys.argv[1],int(sys.argv[2])),1).close()' "$1" "$2" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
# -B: with the default buffer, -i any lost packets here ("N packets dropped by kernel")
TD=(tcpdump -Z root -B 32768 --immediate-mode -s 0)
declare -A PORT     # capture name -> server port
declare -A HOWMADE  # capture name -> description
declare -A UPGRADE  # capture name -> 1 for an h2c upgrade capture (tshark-ledger.py --upgrade)

# ---------------------------------------------------------------- grpc-go (3 linktypes, one run)
log "grpcgo-article (lo Ethernet / any SLL2 nano / any SLL), ${SECS}s per phase"
rm -f "$CAP"/grpcgo-article*
start_bg gosrv "$GRPCGO_BIN" -serve 127.0.0.1:0; GOSRV=$LAST_PID
P=$(wait_port gosrv $GOSRV)
start_dump go-lo   "${TD[@]}" -i lo -w "$CAP/grpcgo-article.pcap" "tcp port $P"; D1=$DUMP_PID
start_dump go-any  "${TD[@]}" -i any --time-stamp-precision=nano -w "$WORK/any.pcap" "tcp port $P"; D2=$DUMP_PID
start_dump go-sll  "${TD[@]}" -i any -y LINUX_SLL -w "$CAP/grpcgo-article-sll.pcap" "tcp port $P"; D3=$DUMP_PID
"$GRPCGO_BIN" -connect 127.0.0.1:$P -seconds "$SECS" >"$WORK/go.json"
sleep 0.5
stop_dump $D1; stop_dump $D2; stop_dump $D3; stop_pid $GOSRV
editcap -F pcapng "$WORK/any.pcap" "$CAP/grpcgo-article-any.pcapng"
for n in grpcgo-article grpcgo-article-any grpcgo-article-sll; do
  cp "$WORK/go.json" "$CAP/$n.workload.json"; PORT[$n]=$P
done
HOWMADE[grpcgo-article]="grpcgo-article -serve 127.0.0.1:0 / -connect 127.0.0.1:P -seconds $SECS (1 caller x 24/s, then 8 callers x 3/s, one connection); tcpdump -i lo"
HOWMADE[grpcgo-article-any]="same run as grpcgo-article (captured simultaneously); tcpdump -i any --time-stamp-precision=nano, converted with editcap -F pcapng (tcpdump 4.99.3 has no --pcapng)"
HOWMADE[grpcgo-article-sll]="same run as grpcgo-article (captured simultaneously); tcpdump -i any -y LINUX_SLL"

# ---------------------------------------------------------------- tonic adaptive / fixed
for mode in adaptive fixed; do
  n=tonic-$mode
  log "$n"
  rm -f "$CAP/$n".*
  flag=(); [ $mode = fixed ] && flag=(--no-adaptive-window)
  start_bg tsrv "$WORKLOAD_BIN" --listen 127.0.0.1:0 "${flag[@]}"; TSRV=$LAST_PID
  P=$(wait_port tsrv $TSRV)
  start_dump $n "${TD[@]}" -i lo -w "$CAP/$n.pcap" "tcp port $P"; D=$DUMP_PID
  "$WORKLOAD_BIN" --connect 127.0.0.1:$P "${flag[@]}" --phase single:1:24:$SECS --phase fanout:8:3:$SECS >"$CAP/$n.workload.json"
  sleep 0.5
  stop_dump $D; stop_pid $TSRV
  PORT[$n]=$P
  HOWMADE[$n]="h2ledger-workload --listen 127.0.0.1:0 ${flag[*]} / --connect 127.0.0.1:P ${flag[*]} --phase single:1:24:$SECS --phase fanout:8:3:$SECS; tcpdump -i lo"
done

# ---------------------------------------------------------------- nghttpd + nghttp + h2load
n=nghttp-nghttpd
log "$n"
rm -f "$CAP/$n".*
DOC=$WORK/doc; mkdir -p "$DOC"
"$PY" - "$DOC" "$WORK/upload.bin" <<'EOF'
import sys
def blob(n, seed):
    out = bytearray(); x = seed
    while len(out) < n:
        x = (x * 6364136223846793005 + 1442695040888963407) & (2**64 - 1)
        out += x.to_bytes(8, "little")
    return bytes(out[:n])
d = sys.argv[1]
open(d + "/index.html", "w").write("<html><body>h2ledger</body></html>\n")
open(d + "/small.bin", "wb").write(blob(20000, 1))
open(d + "/medium.bin", "wb").write(blob(100000, 2))
open(sys.argv[2], "wb").write(blob(200 * 1024, 3))
EOF
for try in 1 2 3 4 5; do
  P=$(free_port)
  start_bg ngsrv nghttpd --no-tls -a 127.0.0.1 --echo-upload -d "$DOC" "$P"; NGSRV=$LAST_PID
  wait_tcp 127.0.0.1 "$P" && kill -0 $NGSRV 2>/dev/null && break
  stop_pid $NGSRV TERM; NGSRV=""
done
[ -n "$NGSRV" ] || { echo "make-captures.sh: nghttpd did not start" >&2; exit 1; }
start_dump $n "${TD[@]}" -i lo -w "$CAP/$n.pcap" "tcp port $P"; D=$DUMP_PID
U=http://127.0.0.1:$P
nghttp -nv "$U/index.html" >"$WORK/ng1.log"
nghttp -nv "$U/small.bin" "$U/medium.bin" >"$WORK/ng2.log"
nghttp -nv -d "$WORK/upload.bin" "$U/index.html" >"$WORK/ng3.log"
h2load -n 200 -c 2 -m 4 "$U/index.html" >"$WORK/h2load.log"
sleep 0.5
stop_dump $D; stop_pid $NGSRV TERM
h2ok=$(sed -n 's/^requests: .* \([0-9]*\) succeeded.*/\1/p' "$WORK/h2load.log")
printf '{"program":"nghttp+h2load","port":%s,"connections":5,"calls_made":%s,"nghttp_requests":4,"h2load":"%s"}\n' \
  "$P" $((4 + 200)) "$(grep '^requests:' "$WORK/h2load.log")" >"$CAP/$n.workload.json"
PORT[$n]=$P
HOWMADE[$n]="nghttpd --no-tls -a 127.0.0.1 --echo-upload -d DOC P (P picked by a python bind-and-close, retried); nghttp -nv U/index.html; nghttp -nv U/small.bin U/medium.bin; nghttp -nv -d upload.bin(200 KiB POST, echoed) U/index.html; h2load -n 200 -c 2 -m 4 U/index.html; tcpdump -i lo"

# ---------------------------------------------------------------- python grpcio over ::1
n=python-grpcio-ipv6
log "$n"
rm -f "$CAP/$n".*
start_bg pysrv "$PY" "$PYWL" --serve --host ::1; PYSRV=$LAST_PID
P=$(wait_port pysrv $PYSRV)
start_dump $n "${TD[@]}" -i lo -w "$CAP/$n.pcap" "tcp port $P"; D=$DUMP_PID
"$PY" "$PYWL" --connect "$P" --host ::1 --calls 30 --big 6 --big-size 102400 >"$CAP/$n.workload.json"
sleep 0.5
stop_dump $D; stop_pid $PYSRV
PORT[$n]=$P
HOWMADE[$n]="captures/src/python-grpcio/workload.py --serve --host ::1 / --connect P --host ::1 --calls 30 --big 6 --big-size 102400 (/usr/bin/python3, grpcio generic unary handler); tcpdump -i lo"

# ---------------------------------------------------------------- MTU 1500 namespace: spanning frames
n=spanning-mtu1500
log "$n"
rm -f "$CAP/$n".* "$CAP"/midframe.*
NETNS=h2ledger-mtu-$$
ip netns add $NETNS
ip netns exec $NETNS ip link set lo mtu 1500 up
# without this, lo hands tcpdump 16-64 KB GSO super-packets instead of MSS-sized segments
ip netns exec $NETNS ethtool -K lo tso off gso off gro off >/dev/null 2>&1 || true
P=8080  # the namespace is ours alone
start_bg nsng ip netns exec $NETNS nghttpd --no-tls -a 127.0.0.1 --echo-upload -d "$DOC" $P; NSNG=$LAST_PID
wait_tcp 127.0.0.1 $P $NETNS
start_dump $n ip netns exec $NETNS "${TD[@]}" -i lo -w "$CAP/$n.pcap" "tcp port $P"; D=$DUMP_PID
ip netns exec $NETNS nghttp -nv -d "$WORK/upload.bin" "http://127.0.0.1:$P/index.html" "http://127.0.0.1:$P/medium.bin" >"$WORK/ns.log"
sleep 0.5
stop_dump $D; stop_pid $NSNG TERM
ip netns del $NETNS; NETNS=""
printf '{"program":"nghttp","port":%s,"connections":1,"calls_made":2}\n' $P >"$CAP/$n.workload.json"
PORT[$n]=$P
HOWMADE[$n]="network namespace with lo mtu 1500 (ethtool -K lo tso off gso off gro off); nghttpd --no-tls -a 127.0.0.1 --echo-upload -d DOC 8080; nghttp -nv -d upload.bin(200 KiB POST, echoed) U/index.html U/medium.bin (one connection, 2 streams); tcpdump -i lo inside the namespace"

# midframe: drop the first N-1 packets of spanning-mtu1500 so that the first
# packet is a client segment whose payload starts inside a (multi-segment)
# DATA frame: same reassembled_in as the previous client segment (tshark -2),
# skipping the first such PDU (it shares segments with the preface).
n=midframe
log "$n"
FIRST=$(tshark -2 -r "$CAP/spanning-mtu1500.pcap" -d tcp.port==8080,http2 --disable-protocol grpc \
          -T fields -E occurrence=f -e frame.number -e tcp.dstport -e tcp.len -e tcp.reassembled_in 2>/dev/null |
        "$PY" -c '
import sys
prev = None
first_pdu = None
found = None
for line in sys.stdin:
    f = line.rstrip("\n").split("\t")
    if len(f) < 4 or f[1] != "8080" or f[2] in ("", "0"):
        continue
    if f[3] and prev == f[3]:
        # skip the PDU that also carries the preface/SETTINGS/HEADERS
        if first_pdu is None:
            first_pdu = f[3]
        elif f[3] != first_pdu and found is None:
            found = f[0]  # keep reading: no SIGPIPE for tshark under pipefail
    prev = f[3]
if found:
    print(found)
')
[ -n "$FIRST" ] || { echo "make-captures.sh: no mid-frame client segment found" >&2; exit 1; }
keep_from "$CAP/spanning-mtu1500.pcap" "$CAP/$n.pcap" "$FIRST"
PORT[$n]=8080
MIDFRAME_FIRST=$FIRST
HOWMADE[$n]="editcap -r spanning-mtu1500.pcap midframe.pcap $FIRST-LAST (drops packets 1..$((FIRST-1)); packet $FIRST of spanning-mtu1500 is a client segment that starts inside the 200 KiB upload's DATA frames)"

# midconn: grpcgo-article from the packet carrying the client's HEADERS of
# stream 21 (phase 1, sequential calls): no handshake, no preface, no
# SETTINGS exchange; the capture starts on a frame boundary.
n=midconn
log "$n"
rm -f "$CAP/$n".*
P=${PORT[grpcgo-article]}
FIRST=$(tshark -r "$CAP/grpcgo-article.pcap" -d tcp.port==$P,http2 --disable-protocol grpc \
          -Y "tcp.dstport==$P && http2.type==1 && http2.streamid==21" -T fields -e frame.number 2>/dev/null | sed -n 1p)
[ -n "$FIRST" ] || { echo "make-captures.sh: no stream-21 HEADERS in grpcgo-article.pcap" >&2; exit 1; }
keep_from "$CAP/grpcgo-article.pcap" "$CAP/$n.pcap" "$FIRST"
PORT[$n]=$P
MIDCONN_FIRST=$FIRST
HOWMADE[$n]="editcap -r grpcgo-article.pcap midconn.pcap $FIRST-LAST (starts at the packet with the client's HEADERS of stream 21, i.e. call 11 of phase 1; no SYN, preface or SETTINGS)"

# midconn-trailers-ipv6: python-grpcio-ipv6 from the packet after the server's
# response HEADERS of a big (100 KiB) call: the capture starts inside that
# response's DATA and holds its trailers, whose stream began before the cut.
n=midconn-trailers-ipv6
log "$n"
rm -f "$CAP/$n".*
P=${PORT[python-grpcio-ipv6]}
HDR=$(tshark -r "$CAP/python-grpcio-ipv6.pcap" -d tcp.port==$P,http2 --disable-protocol grpc \
          -Y "tcp.srcport==$P && http2.type==1" -T fields -e frame.number -e http2.type 2>/dev/null \
      | awk '$2=="1" {print $1; exit}')
[ -n "$HDR" ] || { echo "make-captures.sh: no lone response HEADERS in python-grpcio-ipv6.pcap" >&2; exit 1; }
FIRST=$((HDR + 1))
keep_from "$CAP/python-grpcio-ipv6.pcap" "$CAP/$n.pcap" "$FIRST"
PORT[$n]=$P
TRAILERS_FIRST=$FIRST
HOWMADE[$n]="editcap -r python-grpcio-ipv6.pcap $n.pcap $FIRST-LAST (starts right after the server's response HEADERS of a 100 KiB call: inside its DATA, before its trailers)"

# ---------------------------------------------------------------- snaplen 120
n=snaplen-cut
log "$n"
rm -f "$CAP/$n".*
start_bg pysrv2 "$PY" "$PYWL" --serve --host 127.0.0.1; PYSRV=$LAST_PID
P=$(wait_port pysrv2 $PYSRV)
start_dump $n      tcpdump -Z root -B 32768 --immediate-mode -s 120 -i lo -w "$CAP/$n.pcap" "tcp port $P"; D1=$DUMP_PID
start_dump $n-full "${TD[@]}" -i lo -w "$CAP/$n.full.pcap" "tcp port $P"; D2=$DUMP_PID
"$PY" "$PYWL" --connect "$P" --host 127.0.0.1 --calls 20 --big 3 --big-size 102400 >"$CAP/$n.workload.json"
sleep 0.5
stop_dump $D1; stop_dump $D2; stop_pid $PYSRV
PORT[$n]=$P; PORT[$n.full]=$P
cp "$CAP/$n.workload.json" "$CAP/$n.full.workload.json"
HOWMADE[$n]="workload.py --serve --host 127.0.0.1 / --connect P --calls 20 --big 3 --big-size 102400; tcpdump -s 120 -i lo (snaplen-cut.full.pcap: a second tcpdump -s 0 of the same run)"
HOWMADE[$n.full]="second tcpdump -s 0 -i lo running during the snaplen-cut run (same traffic, full snaplen)"

# ---------------------------------------------------------------- Node's http2 (push, padding, ...)
n=node-http2
log "$n"
rm -f "$CAP/$n".*
GO=$WORK/node-go; rm -f "$GO"
start_bg nodewl node "$CAP/src/node-http2/workload.js" "$GO"; NODEWL=$LAST_PID
P=$(wait_port nodewl $NODEWL)
start_dump $n "${TD[@]}" -i lo -w "$CAP/$n.pcap" "tcp port $P"; D=$DUMP_PID
touch "$GO"
wait $NODEWL
sleep 0.5
stop_dump $D
tail -1 "$WORK/nodewl.out" >"$CAP/$n.workload.json"
PORT[$n]=$P
HOWMADE[$n]="node captures/src/node-http2/workload.js (Node's http2, nghttp2 inside; server and client in one process, paddingStrategy MAX on both): GET /push (PUSH_PROMISE + pushed stream, trailers), PING with payload h2ledger, SETTINGS mid-connection (INITIAL_WINDOW_SIZE, MAX_FRAME_SIZE), 20 kB request and response headers (CONTINUATION), PRIORITY and RST_STREAM (CANCEL) on /slow, GET /last, GOAWAY from both; tcpdump -i lo"

# ---------------------------------------------------------------- Go net/http h2c + curl --parallel
n=go-h2c-curl
log "$n"
rm -f "$CAP/$n".*
GOH2C_BIN=${GOH2C_BIN:-$("$SCRIPTS/build-goh2c.sh" "$WORK/goh2c")}
GO=$WORK/goh2c-go; rm -f "$GO"
start_bg goh2c "$GOH2C_BIN" -go "$GO"; GOH2C=$LAST_PID
P=$(wait_port goh2c $GOH2C)
start_dump $n "${TD[@]}" -i lo -w "$CAP/$n.pcap" "tcp port $P"; D=$DUMP_PID
U=http://127.0.0.1:$P
curl -s --http2-prior-knowledge --parallel --parallel-immediate -o /dev/null -o /dev/null -o /dev/null "$U/hello" "$U/hello" "$U/trailers"
touch "$GO"
wait $GOH2C
sleep 0.5
stop_dump $D
printf '{"program":"go net/http h2c + curl %s --http2-prior-knowledge --parallel","port":%s,"connections":2,"calls_made":19,"go_calls":16,"curl_calls":3}\n' \
  "$(curl --version | head -1 | cut -d' ' -f2)" "$P" >"$CAP/$n.workload.json"
PORT[$n]=$P
HOWMADE[$n]="go-h2c -go FILE (captures/src/go-h2c, built by scripts/build-goh2c.sh: net/http server behind h2c.NewHandler, and http2.Transport with AllowHTTP as a prior-knowledge client); curl --http2-prior-knowledge --parallel --parallel-immediate U/hello U/hello U/trailers (3 connections); then the Go client: 10 GETs, 4 concurrent, a 100 KiB POST echoed, a response with trailers; tcpdump -i lo"

# ---------------------------------------------------------------- curl --http2 (Upgrade: h2c) to Go
n=curl-upgrade
log "$n"
rm -f "$CAP/$n".*
GO=$WORK/goh2c-up; rm -f "$GO"
start_bg goh2c-up "$GOH2C_BIN" -go "$GO"; GOH2C=$LAST_PID
P=$(wait_port goh2c-up $GOH2C)
start_dump $n "${TD[@]}" -i lo -w "$CAP/$n.pcap" "tcp port $P"; D=$DUMP_PID
U=http://127.0.0.1:$P
curl -s --http2 -o /dev/null -o /dev/null "$U/hello" "$U/trailers"
curl -s --http2 -o /dev/null -d @"$CAP/node-http2.workload.json" "$U/echo"
sleep 0.5
stop_dump $D; stop_pid $GOH2C
printf '{"program":"curl %s --http2 (Upgrade: h2c) to go net/http h2c","port":%s,"connections":2,"calls_made":3,"upgraded":2}\n' \
  "$(curl --version | head -1 | cut -d' ' -f2)" "$P" >"$CAP/$n.workload.json"
PORT[$n]=$P
UPGRADE[$n]=1
HOWMADE[$n]="go-h2c -go FILE (server only); curl --http2 U/hello U/trailers (GET /hello upgraded: HTTP/1.1 request, 101, answer on stream 1; /trailers on stream 3); curl --http2 -d @node-http2.workload.json U/echo (an upgraded POST); tcpdump -i lo"

# ---------------------------------------------------------------- trailers crossing a RST_STREAM
n=curl-upgrade-trailers
log "$n"
rm -f "$CAP/$n".*
P=$("$SCRIPTS/make-capture-upgrade-trailers.sh" "$CAP" "$GOH2C_BIN")
printf '{"program":"curl %s --http2 (Upgrade: h2c) to go net/http h2c, a Content-Length body then trailers on the upgraded stream","port":%s,"connections":20,"calls_made":40,"upgraded":20}\n' \
  "$(curl --version | head -1 | cut -d' ' -f2)" "$P" >"$CAP/$n.workload.json"
PORT[$n]=$P
UPGRADE[$n]=1
HOWMADE[$n]="scripts/make-capture-upgrade-trailers.sh captures (go-h2c server only, captures/src/go-h2c; 20 x curl --http2 U/late-trailers U/slow: the upgraded GET on stream 1 answered with a Content-Length body then trailers, which curl's RST_STREAM crosses; repeated until tshark sees at least one crossing); tcpdump -i lo"

# ---------------------------------------------------------------- hyper-h2 (python3-h2)
n=hyper-h2
log "$n"
rm -f "$CAP/$n".*
GO=$WORK/hyper-go; rm -f "$GO"
start_bg hyper "$PY" "$CAP/src/hyper-h2/workload.py" "$GO"; HYPER=$LAST_PID
P=$(wait_port hyper $HYPER)
start_dump $n "${TD[@]}" -i lo -w "$CAP/$n.pcap" "tcp port $P"; D=$DUMP_PID
touch "$GO"
wait $HYPER
sleep 0.5
stop_dump $D
tail -1 "$WORK/hyper.out" >"$CAP/$n.workload.json"
PORT[$n]=$P
HOWMADE[$n]="/usr/bin/python3 captures/src/hyper-h2/workload.py (Debian's python3-h2, client and server in one process): GET /push with priority (HEADERS PRIORITY flag) answered with a push (PUSH_PROMISE) and padded DATA; a padded POST with request trailers; PING with payload hyper-h2; SETTINGS mid-connection; GET /slow reset by the client (RST_STREAM); GET /last; GOAWAY from both; tcpdump -i lo"

# ---------------------------------------------------------------- python3-grpcio streaming
n=python-grpcio-streaming
log "$n"
rm -f "$CAP/$n".*
GO=$WORK/pystream-go; rm -f "$GO"
start_bg pystream "$PY" "$CAP/src/python-grpcio/streaming.py" "$GO"; PYS=$LAST_PID
P=$(wait_port pystream $PYS)
start_dump $n "${TD[@]}" -i lo -w "$CAP/$n.pcap" "tcp port $P"; D=$DUMP_PID
touch "$GO"
wait $PYS
sleep 0.5
stop_dump $D
tail -1 "$WORK/pystream.out" >"$CAP/$n.workload.json"
PORT[$n]=$P
HOWMADE[$n]="/usr/bin/python3 captures/src/python-grpcio/streaming.py (python3-grpcio generic handlers, one channel on 127.0.0.1): 3 server-streaming calls of 10 messages, 2 client-streaming calls of 8 messages, 2 bidi calls of 6 messages each way; tcpdump -i lo"

# ---------------------------------------------------------------- golden ledgers
NAMES=(grpcgo-article grpcgo-article-any grpcgo-article-sll tonic-adaptive tonic-fixed nghttp-nghttpd
       python-grpcio-ipv6 spanning-mtu1500 midconn midconn-trailers-ipv6 midframe snaplen-cut snaplen-cut.full
       node-http2 go-h2c-curl curl-upgrade curl-upgrade-trailers hyper-h2 python-grpcio-streaming)
capfile() { if [ -f "$CAP/$1.pcapng" ]; then echo "$1.pcapng"; else echo "$1.pcap"; fi; }
for n in "${NAMES[@]}"; do
  f=$(capfile "$n")
  log "ledger $f (port ${PORT[$n]})"
  up=(); [ -n "${UPGRADE[$n]:-}" ] && up=(--upgrade)
  "$PY" "$LEDGER" "$CAP/$f" --port "${PORT[$n]}" "${up[@]}" >"$CAP/$n.tshark.json"
done
# the expected ledger of midframe if it were decoded perfectly from the first
# frame header after the cut is not what tshark gives; record what the
# uncut capture says about packets after the cut, for comparison:
"$PY" "$LEDGER" "$CAP/spanning-mtu1500.pcap" --port 8080 --after-frame $((MIDFRAME_FIRST - 1)) >"$CAP/midframe.uncut-after.tshark.json"
"$PY" "$LEDGER" "$CAP/grpcgo-article.pcap" --port "${PORT[midconn]}" --after-frame $((MIDCONN_FIRST - 1)) >"$CAP/midconn.uncut-after.tshark.json"
"$PY" "$LEDGER" "$CAP/python-grpcio-ipv6.pcap" --port "${PORT[midconn-trailers-ipv6]}" --after-frame $((TRAILERS_FIRST - 1)) >"$CAP/midconn-trailers-ipv6.uncut-after.tshark.json"

# ---------------------------------------------------------------- README
{
  echo "{"
  first=1
  for n in "${NAMES[@]}"; do
    [ $first = 1 ] || echo ","
    first=0
    up=""; [ -n "${UPGRADE[$n]:-}" ] && up=', "upgrade": true'
    printf '  "%s": {"file": "%s", "port": %s%s, "how": %s}' "$n" "$(capfile "$n")" "${PORT[$n]}" "$up" \
      "$("$PY" -c 'import json,sys;print(json.dumps(sys.argv[1]))' "${HOWMADE[$n]:-${HOWMADE[${n%.full}]:-}}")"
  done
  echo; echo "}"
} >"$WORK/meta.json"
cp "$WORK/meta.json" "$CAP/manifest.json"   # file, port and recipe of each capture (read by the tests)
"$PY" "$SCRIPTS/captures-readme.py" "$CAP" "$WORK/meta.json" "$SECS" "$MIDFRAME_FIRST" "$MIDCONN_FIRST" >"$CAP/README.md"
log "done"; du -ch "$CAP"/*.pcap* | tail -1 >&2
