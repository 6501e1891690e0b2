#!/usr/bin/env bash
# `sniff --workers 1` against `sniff --workers 2` (issue 39): nghttpd on lo, h2load at full
# speed (100 connections, 10 streams each), sniffed live with the same kernel buffer (-B) per
# handle, the two interleaved RUNS times each in the same run of this script. Prints, per run:
# libpcap's received and kernel-dropped counts, the packets and calls in the report, and with
# two workers each worker's packets and connections (H2LEDGER_WORKER_REPORTS). The point: where
# this machine can push one worker to drop (h2load beside it uses the same 2 cores, so it may
# not get there), two drop none. The load average is printed at the start and the end.
#
# usage: scripts/bench-workers.sh [REQUESTS] [RUNS] [BUFFER_KIB]   (defaults 200000, 3, 1024)
# libpcap (TPACKET_V3, pcap-linux.c create_ring: tp_frame_size = MAXIMUM_SNAPLEN) cuts each
# handle's BUFFER_KIB into ceil(BUFFER_KIB / 256) blocks of 256 KiB; the line at the start says
# how many (docs/scale.md: on this machine rings of 2 or 3 blocks drop, 4 or more did not).
# LOAD_NICE=N runs nghttpd and h2load at nice N (default 0: the same priority as the sniffer),
# as a host whose traffic comes from other machines leaves the sniffer its cores.
# Needs root (live capture).

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=${1:-200000}
RUNS=${2:-3}
BUF=${3:-1024}
LOAD_NICE=${LOAD_NICE:-0}
BIN="$ROOT/target/release/h2ledger"
WORK=$(mktemp -d)
chmod 755 "$WORK"
PIDS=()
say() { echo "bench-workers: $*" >&2; }
die() { say "$*"; exit 1; }
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
[ "$(id -u)" = 0 ] || die "needs root (live capture on lo)"
[ -x "$BIN" ] || (cd "$ROOT" && cargo build --release -p h2ledger)
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
mkdir -p "$WORK/www"
printf 'h2ledger bench payload: %s\n' "$(printf 'x%.0s' {1..40})" >"$WORK/www/file"
port=$(free_port)
nice -n "$LOAD_NICE" nghttpd --no-tls -a 127.0.0.1 -d "$WORK/www" "$port" >"$WORK/nghttpd.log" 2>&1 &
PIDS+=("$!")
for _ in $(seq 50); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
    sleep 0.1
done
say "nghttpd on 127.0.0.1:$port; h2load -n $N -c 100 -m 10; -B $BUF KiB per handle ($(( (BUF + 255) / 256 )) libpcap blocks of 256 KiB); load at nice $LOAD_NICE; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

one() {
    local w=$1 rep="$WORK/rep-$1" sp
    rm -rf "$rep"; mkdir -p "$rep"
    H2LEDGER_WORKER_REPORTS="$rep" "$BIN" sniff -i lo --port "$port" --workers "$w" -B "$BUF" -T json \
        >"$WORK/out-$w.json" 2>"$WORK/err-$w.log" &
    sp=$!
    for _ in $(seq 100); do grep -q "listening on" "$WORK/err-$w.log" && break; sleep 0.1; done
    nice -n "$LOAD_NICE" h2load -n "$N" -c 100 -m 10 "http://127.0.0.1:$port/file" >"$WORK/h2load.log" 2>&1 || die "h2load failed"
    sleep 1
    kill -TERM "$sp"; wait "$sp" || die "sniff --workers $w failed: $(cat "$WORK/err-$w.log")"
    local split=""
    if [ "$w" -gt 1 ]; then
        split=$(for f in "$rep"/worker-*.json; do jq -r '"\(.capture.packets) packets/\(.connections) conns"' "$f"; done | paste -sd ' ' -)
        split="; per worker: ${split// / }"
    fi
    say "--workers $w: $(jq -r '"received \(.drops.received), dropped by kernel \(.drops.kernel) (interface \(.drops.interface)), packets \(.capture.packets), tcp gaps \(.tcp.gaps), calls \(.calls) of '"$N"'"' "$WORK/out-$w.json")$split ($(grep -oE 'finished in [0-9.]+m?s' "$WORK/h2load.log"))"
}
for _ in $(seq "$RUNS"); do
    one 1
    one 2
done
say "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
