#!/usr/bin/env bash
# Remake the proto-* captures (gRPC messages with a schema, for crates/h2ledger-proto), their
# ground truth and captures/README.proto.md (kept verbatim by scripts/captures-readme.py).
# Run as root (tcpdump).
#
# usage: sudo scripts/make-proto-captures.sh
#
# needs: tcpdump, capinfos (wireshark-common), protobuf-compiler, python3-grpcio and
#        python3-protobuf (/usr/bin/python3), golang-go, golang-google-grpc-dev,
#        golang-google-protobuf-dev, protoc-gen-go, protoc-gen-go-grpc.
#
# Each program serves h2ledger.test.v1.TestService (captures/src/proto-everything/everything.proto)
# on 127.0.0.1 port 0 and prints {"port": P}; tcpdump then starts on lo with "tcp port P",
# --immediate-mode, -B 32768; the program's client makes its calls once a file appears, and
# writes the ground truth: each message it sent, as MessageToDict (python) or protojson (Go)
# prints it, one JSON object per line in captures/<name>.truth.jsonl.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CAP=$ROOT/captures
SRC=$CAP/src/proto-everything
PY=/usr/bin/python3   # Debian's python3-grpcio only imports here
[ "$(id -u)" = 0 ] || { echo "make-proto-captures.sh: run as root" >&2; exit 1; }
for t in tcpdump capinfos protoc go; do
  command -v $t >/dev/null || { echo "make-proto-captures.sh: missing $t" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/h2ledger-proto-captures.XXXXXX)
chmod 755 "$WORK"
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
log() { echo "== $*" >&2; }

mkdir -p "$WORK/pb"
protoc -I "$SRC" -I /usr/include --python_out="$WORK/pb" "$SRC/everything.proto"
"$ROOT/scripts/build-proto-grpcgo.sh" "$WORK/bin" >/dev/null

# capture NAME CMD... : CMD must print {"port": P} and wait for $WORK/NAME.go before calling.
capture() {
  local n=$1; shift
  local go=$WORK/$n.go
  "$@" "$go" >"$WORK/$n.out" 2>"$WORK/$n.err" &
  local pid=$!; PIDS+=("$pid")
  local p=
  for _ in $(seq 100); do
    p=$(sed -n 's/.*"port": *\([0-9][0-9]*\).*/\1/p' "$WORK/$n.out" | head -1)
    [ -n "$p" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$p" ] || { echo "make-proto-captures.sh: $n did not report a port:" >&2; cat "$WORK/$n.err" >&2; exit 1; }
  tcpdump -Z root -B 32768 --immediate-mode -s 0 -i lo -w "$CAP/$n.pcap" "tcp port $p" 2>"$WORK/$n.tcpdump.err" &
  local dump=$!; PIDS+=("$dump")
  for _ in $(seq 100); do
    grep -q "listening on" "$WORK/$n.tcpdump.err" && break
    sleep 0.1
  done
  touch "$go"
  wait "$pid" || { echo "make-proto-captures.sh: $n failed:" >&2; cat "$WORK/$n.err" >&2; exit 1; }
  sleep 0.5
  kill -INT "$dump"; wait "$dump" || true
  grep -q "^0 packets dropped by kernel" "$WORK/$n.tcpdump.err" || {
    echo "make-proto-captures.sh: tcpdump dropped packets:" >&2; cat "$WORK/$n.tcpdump.err" >&2; exit 1; }
  tail -1 "$WORK/$n.out" >"$CAP/$n.workload.json"
  PORT[$n]=$p
  log "$n: port $p, $(capinfos -c -M "$CAP/$n.pcap" | sed -n 's/.*packets: *//p') packets, $(wc -l <"$CAP/$n.truth.jsonl") messages"
}
declare -A PORT

capture proto-grpcio "$PY" "$SRC/grpcio.py" "$WORK/pb" "$CAP/proto-grpcio.truth.jsonl"
capture proto-grpcio-gzip "$PY" "$SRC/grpcio.py" "$WORK/pb" "$CAP/proto-grpcio-gzip.truth.jsonl" --gzip
capture proto-grpcgo "$WORK/bin/proto-grpcgo" "$CAP/proto-grpcgo.truth.jsonl"

grpcio_version=$("$PY" -c 'import grpc; print(grpc.__version__)')
protobuf_version=$("$PY" -c 'import google.protobuf as p; print(p.__version__)')
{
  echo "## The proto captures (scripts/make-proto-captures.sh)"
  echo
  echo "gRPC messages of \`h2ledger.test.v1.TestService\` (\`src/proto-everything/everything.proto\`:"
  echo "every scalar type, packed and unpacked repeated fields, nested and repeated messages, maps"
  echo "with every kind of key, a oneof, enums (and an unknown enum number), Timestamp, Duration,"
  echo "Any, Struct/Value/ListValue, the wrappers, FieldMask, Empty, proto3 \`optional\`, a"
  echo "\`json_name\`, an empty message and ~200 KB messages that take several DATA frames), for"
  echo "crates/h2ledger-proto's tests. Calls, one after another on one connection: Empty, three"
  echo "Unary (two full messages, one of ~200 KB each way), ServerStream (5 responses, one of them"
  echo "empty), ClientStream (4 requests), Bidi (4 each way). \`<name>.truth.jsonl\` holds, for every"
  echo "message the program sent, \`{\"call\", \"method\", \"direction\", \"index\", \"message\"}\`, where"
  echo "\`message\` is the program's own JSON form of it. Remake them all with"
  echo "\`sudo scripts/make-proto-captures.sh\`; each is taken with \`tcpdump -i lo -B 32768"
  echo "--immediate-mode -s 0 -w FILE tcp port P\` (P read back from the server, bound to port 0)."
  echo
  echo "| capture | bytes | packets | port | made by | ground truth |"
  echo "|---|---|---|---|---|---|"
  for n in proto-grpcio proto-grpcio-gzip proto-grpcgo; do
    pk=$(capinfos -c -M "$CAP/$n.pcap" | sed -n 's/.*packets: *//p')
    case $n in
      proto-grpcio) how="/usr/bin/python3 src/proto-everything/grpcio.py PB_DIR TRUTH (python3-grpcio $grpcio_version, python3-protobuf $protobuf_version, messages from Debian's \`protoc --python_out\`, stubs written by hand with generic handlers)";
                    gt="\`json_format.MessageToDict(msg)\`, default options" ;;
      proto-grpcio-gzip) how="the same program with \`--gzip\`: channel and server \`compression=grpc.Compression.Gzip\` (grpc core sends a message uncompressed, flag 0, when gzip would not shrink it), the ~200 KB messages compressible, and one more Unary call with \`grpc.Compression.Deflate\`";
                    gt="\`json_format.MessageToDict(msg)\`, default options" ;;
      proto-grpcgo) how="src/proto-everything/grpcgo/main.go, built by scripts/build-proto-grpcgo.sh (grpc-go 1.33.3 and google.golang.org/protobuf 1.28.1 from Debian, GOPATH mode; code from Debian's protoc-gen-go and protoc-gen-go-grpc); one more Unary call with \`grpc.UseCompressor(\"gzip\")\`";
                    gt="\`protojson.Marshal(msg)\` (default options) through \`json.Compact\`" ;;
    esac
    echo "| \`$n.pcap\` | $(stat -c %s "$CAP/$n.pcap") | $pk | ${PORT[$n]} | $how | \`$n.truth.jsonl\`: $gt |"
  done
  echo
} >"$CAP/README.proto.md"
log "wrote captures/README.proto.md"
