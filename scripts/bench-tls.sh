#!/usr/bin/env bash
# TLS decryption cost: `h2ledger replay` of an HTTP/2-over-TLS capture with its key log
# against the replay of the same traffic in cleartext (h2c). The same program makes both:
# the tonic workload (crates/h2ledger-workload: server and client in one process, one
# connection, 100 callers, N Health/Check calls, unpaced), once over h2c and once with
# `--tls` (TLS 1.3 from rustls on ring, ALPN h2; the client writes the key log through
# rustls' KeyLogFile, SSLKEYLOGFILE). tcpdump -i lo records both; the counts of both are
# printed beside the times. The captures are replayed in RUNS rounds (plus a warm-up) and the
# medians are compared. Target (issue 10): TLS <= 1.5 x cleartext.
#
# usage: sudo scripts/bench-tls.sh [N] [RUNS]        env: BENCH_DIR (default /tmp/h2ledger-bench-tls)
set -euo pipefail
N=${1:-100000}
RUNS=${2:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${BENCH_DIR:-/tmp/h2ledger-bench-tls}
PY=/usr/bin/python3
[ "$(id -u)" = 0 ] || { echo "bench-tls.sh: run as root (tcpdump)" >&2; exit 1; }
for t in tcpdump; do command -v $t >/dev/null || { echo "bench-tls.sh: missing $t" >&2; exit 1; }; done
mkdir -p "$DIR"
PIDS=()
trap 'for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done' EXIT
(cd "$ROOT" && cargo build --release --bin h2ledger >&2 && cargo build --release -p h2ledger-workload >&2)
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/h2ledger
WL=${CARGO_TARGET_DIR:-$ROOT/target}/release/h2ledger-workload

# capture KIND [WORKLOAD FLAGS]: DIR/tonic-KIND-N.pcap (and for tls DIR/tonic-tls-N.keylog)
capture() {
  local kind=$1; shift
  rm -f "$DIR/tonic-$kind-$N".* "$DIR/$kind.in"
  mkfifo "$DIR/$kind.in"
  # --wait: the workload prints its port, then waits for a line (the capture is open by then).
  SSLKEYLOGFILE=$DIR/tonic-$kind-$N.keylog "$WL" --wait "$@" --calls "$N" --phase "bench:100:1000000:600" \
    <"$DIR/$kind.in" >"$DIR/tonic-$kind-$N.workload.json" & local W=$!; PIDS+=($W)
  exec 3>"$DIR/$kind.in"
  for _ in $(seq 100); do [ -s "$DIR/tonic-$kind-$N.workload.json" ] && break; sleep 0.1; done
  local port
  port=$("$PY" -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["port"])' "$DIR/tonic-$kind-$N.workload.json")
  tcpdump -Z root -B 131072 -s 0 -i lo -w "$DIR/tonic-$kind-$N.pcap" "tcp port $port" 2>"$DIR/$kind.err" & local D=$!; PIDS+=($D)
  for _ in $(seq 100); do grep -q "listening on" "$DIR/$kind.err" && break; sleep 0.1; done
  echo go >&3; exec 3>&-
  wait $W || { echo "bench-tls.sh: the $kind workload failed" >&2; tail -1 "$DIR/tonic-$kind-$N.workload.json" >&2; exit 1; }
  sleep 1; kill -INT $D; wait $D || true
  rm -f "$DIR/$kind.in"
  grep -q "^0 packets dropped by kernel" "$DIR/$kind.err" || { cat "$DIR/$kind.err" >&2; exit 1; }
}
if [ ! -s "$DIR/tonic-tls-$N.pcap" ] || [ ! -s "$DIR/tonic-tls-$N.keylog" ] || [ ! -s "$DIR/tonic-clear-$N.pcap" ]; then
  capture clear
  capture tls --tls
  rm -f "$DIR/tonic-clear-$N.keylog"
fi

# "WALL CPU" (CPU = user + sys) seconds of one replay.
one() { { /usr/bin/time -f "%e %U %S" "$@" >/dev/null; } 2>&1 | tail -1 | awk '{print $1, $2 + $3}'; }
calls() { "$@" --format json | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
fr = lambda s: sum(d["sides"][s]["frames"].values())
print("calls %d, frames %d/%d, writes %d/%d, tls records %d/%d, TLS connections decrypted %d"
      % (d["calls"], fr("client"), fr("server"), d["sides"]["client"]["writes"], d["sides"]["server"]["writes"],
         d["sides"]["client"].get("tls_records", 0), d["sides"]["server"].get("tls_records", 0),
         d.get("tls", {}).get("decrypted", 0)))'; }
echo "workload: $(tail -1 "$DIR/tonic-clear-$N.workload.json" | cut -c1-120)"
echo "cleartext: $(calls "$BIN" replay "$DIR/tonic-clear-$N.pcap")"
echo "tls:       $(calls "$BIN" replay "$DIR/tonic-tls-$N.pcap" --keylog "$DIR/tonic-tls-$N.keylog")"
# RUNS rounds (after a warm-up of each), each replaying the three in turn, so that the load
# of the shared machine falls alike on all; the medians of each, and of the per-round ratio.
CLEAR=("$BIN" replay "$DIR/tonic-clear-$N.pcap" --format json)
TLS=("$BIN" replay "$DIR/tonic-tls-$N.pcap" --keylog "$DIR/tonic-tls-$N.keylog" --format json)
# The same TLS capture without its key log: packets, reassembly and record framing only.
NOKEY=("$BIN" replay "$DIR/tonic-tls-$N.pcap" --format json)
"${CLEAR[@]}" >/dev/null; "${TLS[@]}" >/dev/null; "${NOKEY[@]}" >/dev/null
for _ in $(seq "$RUNS"); do
  echo "$(one "${CLEAR[@]}") $(one "${TLS[@]}") $(one "${NOKEY[@]}")"
done >"$DIR/times"
ls -l "$DIR/tonic-clear-$N.pcap" "$DIR/tonic-tls-$N.pcap" | awk '{print $5, $9}'
"$PY" - "$RUNS" "$DIR/times" <<'PYEOF'
import statistics as st, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[2]) if l.strip()]
med = [st.median(r[i] for r in rows) for i in range(6)]
cw, cc, tw, tcpu, nw, nc = med
ratios = [r[3] / r[1] for r in rows if r[1] > 0]
print("replay medians of %s rounds (wall / CPU s): cleartext %.2f / %.2f, TLS with key log %.2f / %.2f, "
      "TLS without key log %.2f / %.2f" % (sys.argv[1], cw, cc, tw, tcpu, nw, nc))
print("TLS / cleartext: CPU %.2f (per-round median %.2f, min %.2f, max %.2f), wall %.2f (target <= 1.5)"
      % (tcpu / cc, st.median(ratios), min(ratios), max(ratios), tw / cw))
PYEOF
