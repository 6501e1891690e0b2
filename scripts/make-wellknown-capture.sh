#!/usr/bin/env bash
# Remake captures/proto-wellknown.pcap (the schemas h2ledger knows without --proto: gRPC health,
# reflection v1 and v1alpha, google.rpc.Status details), its ground truth
# captures/proto-wellknown.truth.jsonl, its workload line and captures/README.wellknown.md (kept
# verbatim in captures/README.md by scripts/captures-readme.py). Run as root (tcpdump).
#
# usage: sudo scripts/make-wellknown-capture.sh
#
# needs: tcpdump, capinfos (wireshark-common), golang-go, golang-google-grpc-dev,
#        golang-google-genproto-dev.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CAP=$ROOT/captures
[ "$(id -u)" = 0 ] || { echo "make-wellknown-capture.sh: run as root" >&2; exit 1; }
for t in tcpdump capinfos go; do
  command -v $t >/dev/null || { echo "make-wellknown-capture.sh: missing $t" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/h2ledger-wellknown.XXXXXX)
chmod 755 "$WORK"
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
"$ROOT/scripts/build-grpcgo-wellknown.sh" "$WORK/bin" >/dev/null
n=proto-wellknown
"$WORK/bin/grpcgo-wellknown" "$CAP/$n.truth.jsonl" "$WORK/go" >"$WORK/out" 2>"$WORK/err" &
pid=$!; PIDS+=("$pid")
p=
for _ in $(seq 100); do
  p=$(sed -n 's/.*"port": *\([0-9][0-9]*\).*/\1/p' "$WORK/out" | head -1)
  [ -n "$p" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
[ -n "$p" ] || { echo "make-wellknown-capture.sh: no port:" >&2; cat "$WORK/err" >&2; exit 1; }
tcpdump -Z root -B 32768 --immediate-mode -s 0 -i lo -w "$CAP/$n.pcap" "tcp port $p" 2>"$WORK/tcpdump.err" &
dump=$!; PIDS+=("$dump")
for _ in $(seq 100); do
  grep -q "listening on" "$WORK/tcpdump.err" && break
  sleep 0.1
done
touch "$WORK/go"
wait "$pid" || { echo "make-wellknown-capture.sh: the program failed:" >&2; cat "$WORK/err" >&2; exit 1; }
sleep 0.5
kill -INT "$dump"; wait "$dump" || true
grep -q "^0 packets dropped by kernel" "$WORK/tcpdump.err" || {
  echo "make-wellknown-capture.sh: tcpdump dropped packets:" >&2; cat "$WORK/tcpdump.err" >&2; exit 1; }
tail -1 "$WORK/out" >"$CAP/$n.workload.json"
bytes=$(stat -c %s "$CAP/$n.pcap")
packets=$(capinfos -c -M "$CAP/$n.pcap" | sed -n 's/.*packets: *//p')
{
  echo "## The well-known schemas' capture (scripts/make-wellknown-capture.sh)"
  echo
  echo "What h2ledger decodes without \`--proto\` (crates/h2ledger-proto/proto/, decision 350), on"
  echo "one connection between grpc-go 1.33.3's server and client (Debian's golang-google-grpc-dev"
  echo "and golang-google-genproto-dev, GOPATH build by scripts/build-grpcgo-wellknown.sh): health"
  echo "Check (SERVING, then NOT_FOUND for an unknown service) and Watch (SERVING, NOT_SERVING,"
  echo "cancelled), reflection v1alpha and v1 (list_services, file_containing_symbol; grpc-go 1.33"
  echo "has only v1alpha, so v1 relays to it in-process), and three calls failed with"
  echo "\`status.WithDetails\` (every google.rpc error detail type). The ground truth"
  echo "\`proto-wellknown.truth.jsonl\` is each failed call's google.rpc.Status as the program's"
  echo "jsonpb printed it; \`proto-wellknown.workload.json\` what its client saw."
  echo
  echo "| capture | bytes | packets | port | made by |"
  echo "|---|---|---|---|---|"
  echo "| \`$n.pcap\` | $bytes | $packets | $p | captures/src/grpcgo-wellknown/main.go, \`tcpdump -i lo -B 32768 --immediate-mode -s 0 tcp port P\` |"
  echo
} >"$CAP/README.wellknown.md"
echo "== $n: port $p, $packets packets" >&2
