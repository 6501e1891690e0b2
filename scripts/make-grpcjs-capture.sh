#!/usr/bin/env bash
# captures/grpcjs: grpc-js (npm @grpc/grpc-js, pinned in captures/src/grpc-js/package.json) as
# server and client in one Node process on 127.0.0.1, captured with tcpdump -i lo `tcp port P`.
# Writes captures/grpcjs/grpcjs.pcap, grpcjs.truth.json (what the client saw) and
# grpcjs.tshark.json (scripts/tshark-ledger.py). Needs root (tcpdump), node, npm (the registry)
# and tshark. usage: sudo scripts/make-grpcjs-capture.sh
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT="$ROOT/captures/grpcjs"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cp "$ROOT"/captures/src/grpc-js/{package.json,workload.js,echo.proto} "$WORK/"
(cd "$WORK" && npm install --no-audit --no-fund --silent)
node "$WORK/workload.js" >"$WORK/truth.json" 2>"$WORK/err.txt" &
NODE=$!
for _ in $(seq 100); do grep -q '^port ' "$WORK/err.txt" 2>/dev/null && break; sleep 0.05; done
P=$(awk '/^port /{print $2}' "$WORK/err.txt")
[ -n "$P" ] || { echo "make-grpcjs-capture: the workload printed no port" >&2; exit 1; }
tcpdump -i lo -U --immediate-mode -B 32768 -w "$WORK/grpcjs.pcap" "tcp port $P" 2>"$WORK/tcpdump.err" &
TD=$!
wait "$NODE"
sleep 0.5
kill "$TD"; wait "$TD" 2>/dev/null || true
grep -q '^0 packets dropped by kernel' "$WORK/tcpdump.err" || { cat "$WORK/tcpdump.err" >&2; exit 1; }
mkdir -p "$OUT"
cp "$WORK/grpcjs.pcap" "$OUT/grpcjs.pcap"
python3 -m json.tool "$WORK/truth.json" >"$OUT/grpcjs.truth.json"
python3 "$ROOT/scripts/tshark-ledger.py" "$OUT/grpcjs.pcap" --port "$P" >"$OUT/grpcjs.tshark.json"
echo "make-grpcjs-capture: port $P, $(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['calls_made'])" "$OUT/grpcjs.truth.json") calls" >&2
