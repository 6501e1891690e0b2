#!/usr/bin/env bash
# curl-upgrade-trailers.pcap: curl --http2 (Upgrade: h2c) to Go's h2c server, a response on the
# upgraded stream 1 with a Content-Length and then trailers. curl resets stream 1 once it has the
# body, and the trailers may cross that RST_STREAM on the wire: tshark counts them as TRAILERS (the
# second HEADERS the server sends on stream 1), and so must h2ledger. The crossing is a race: the
# script repeats the request until the capture holds at least one (checked with tshark), at most
# 5 rounds of 20 connections.
# usage (root): scripts/make-capture-upgrade-trailers.sh CAPDIR [GOH2C_BIN]
set -euo pipefail
cap=${1:?usage: $0 CAPDIR [GOH2C_BIN]}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
bin=${2:-$("$here/build-goh2c.sh" "$work/goh2c" | tail -1)}
n=curl-upgrade-trailers
for round in 1 2 3 4 5; do
  "$bin" -go "$work/never" >"$work/srv.out" 2>&1 &
  srv=$!
  for _ in $(seq 50); do grep -q port "$work/srv.out" 2>/dev/null && break; sleep 0.1; done
  port=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['port'])" "$work/srv.out")
  tcpdump -i lo -w "$cap/$n.pcap" --immediate-mode -B 32768 "tcp port $port" 2>"$work/td.log" &
  td=$!
  for _ in $(seq 100); do grep -q "listening on" "$work/td.log" && break; sleep 0.1; done
  u=http://127.0.0.1:$port
  for _ in $(seq 20); do curl -s --http2 -o /dev/null -o /dev/null "$u/late-trailers" "$u/slow"; done
  sleep 0.5
  kill -INT $td; wait $td || true
  kill $srv; wait $srv 2>/dev/null || true
  # A crossing: the client's RST_STREAM on a stream, then a HEADERS from the server on it.
  crossings=$(tshark -r "$cap/$n.pcap" -Y http2 -T fields -E occurrence=a -E aggregator=, \
      -e tcp.stream -e tcp.srcport -e http2.type -e http2.streamid 2>/dev/null | python3 -c '
import sys
port = sys.argv[1]
reset, n = set(), 0
for line in sys.stdin:
    conn, sp, types, sids = line.rstrip("\n").split("\t")
    for t, s in zip(types.split(","), sids.split(",")):
        if sp != port and t == "3":
            reset.add((conn, s))
        elif sp == port and t == "1" and (conn, s) in reset:
            n += 1
print(n)' "$port")
  echo "round $round: port $port, $crossings trailers crossed a RST_STREAM" >&2
  if [ "$crossings" -gt 0 ]; then
    echo "$port"
    exit 0
  fi
done
echo "no crossing in 5 rounds" >&2
exit 1
