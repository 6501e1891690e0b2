#!/usr/bin/env bash
# Speed of `h2ledger replay` against tcpdump's read floor and tshark's HTTP/2 dissector, on a
# large generated capture (and the same packets as pcapng, pcapng with a secrets block, gzip,
# zstd and on standard input, each against tcpdump reading the same bytes, and a bulk capture of
# 10 MB fetches against its own read floor: issue 24), plus
# peak memory, a frame-count cross-check against tshark, and the
# HPACK decoder benchmark (crates/h2ledger-bench). Method and results: docs/performance.md.
#
# usage: scripts/bench.sh [--quick | --full] [--regen] [--runs N] [--tshark-runs N]
#                         [--no-tshark] [--no-hpack]
#
#   --quick        the 100k-request capture
#   --full         the 1M-request capture, however long tshark takes on it
#   (neither)      auto: the 1M capture if tshark's time on the 100k capture, scaled by 10,
#                  says the whole run fits in BENCH_BUDGET seconds (default 600), else 100k
#   --regen        remake the capture even if BENCH_DIR already holds it
#   --runs N       timed runs of tcpdump and h2ledger (default 5, plus 1 warm-up)
#   --tshark-runs N  timed runs of tshark (default 3, no warm-up)
#   --no-tshark    skip tshark (and the frame-count cross-check)
#   --no-hpack     skip the HPACK decoder benchmark
#   --sniff N      also sniff h2load's N requests at full speed (10 connections x 10 streams)
#                  live on lo, once at the default capture buffer and once at -B 131072, and
#                  report calls seen and drops (default 200000; 0 skips); then the CPU cost of
#                  --metrics scraped every 100 ms against --analyze and plain sniff
#                  (METRICS_RUNS interleaved runs, default 3; 0 skips)
#   --no-proto     skip `calls --messages` on the gRPC captures of 100k small messages (made
#                  once by scripts/proto-bench.py, python3-grpcio: 50,000 unary calls, and
#                  500 Bidi calls of 100 messages each way)
#
# Environment: BENCH_DIR (default /tmp/h2ledger-bench) holds captures and results, outside the
# repository; BENCH_BUDGET (seconds, default 600) for the auto choice.
#
# Timing is noisy on a shared machine, so every number that matters is a ratio to a baseline
# measured in the same run: `tcpdump -r F -w /dev/null`, the cost of reading the file.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=${BENCH_DIR:-/tmp/h2ledger-bench}
BENCH_BUDGET=${BENCH_BUDGET:-600}
MODE=auto
REGEN=0
RUNS=5
TSHARK_RUNS=3
DO_TSHARK=1
DO_HPACK=1
SNIFF_N=200000
DO_PROTO=1

while [ $# -gt 0 ]; do
    case "$1" in
        --quick) MODE=quick ;;
        --full) MODE=full ;;
        --regen) REGEN=1 ;;
        --runs) RUNS=$2; shift ;;
        --tshark-runs) TSHARK_RUNS=$2; shift ;;
        --no-tshark) DO_TSHARK=0 ;;
        --no-hpack) DO_HPACK=0 ;;
        --sniff) SNIFF_N=$2; shift ;;
        --no-proto) DO_PROTO=0 ;;
        -h|--help) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done

say() { printf '%s\n' "$*" >&2; }
die() { say "bench.sh: $*"; exit 1; }

for t in tcpdump h2load nghttpd python3 cargo; do
    command -v "$t" >/dev/null || die "$t not found (just bench installs: libpcap-dev tshark tcpdump nghttp2-client nghttp2-server)"
done
[ "$DO_TSHARK" = 0 ] || command -v tshark >/dev/null || die "tshark not found"
[ "$(id -u)" -eq 0 ] || die "tcpdump on lo needs root (run as root or with sudo)"
if [ ! -x /usr/bin/time ]; then
    say "installing GNU time (for peak RSS)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null
fi
HYPERFINE=$(command -v hyperfine || true)

mkdir -p "$BENCH_DIR"
WORK="$BENCH_DIR/run"
rm -rf "$WORK"
mkdir -p "$WORK"

PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

# free_port, make_capture, ensure_capture (shared with scripts/soak.sh).
. "$ROOT/scripts/h2load-captures.sh"

# median_seconds NAME RUNS WARMUP COMMAND: runs COMMAND through hyperfine (or a date loop) and
# prints the median wall-clock seconds. Output goes to /dev/null unless COMMAND redirects it.
median_seconds() {
    local name=$1 runs=$2 warmup=$3 cmd=$4
    if [ -n "$HYPERFINE" ]; then
        "$HYPERFINE" --style none --runs "$runs" --warmup "$warmup" \
            --export-json "$WORK/$name.hyperfine.json" "$cmd" >/dev/null 2>"$WORK/$name.hyperfine.err" \
            || { cat "$WORK/$name.hyperfine.err" >&2; die "$name failed"; }
        python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0]["median"])' \
            "$WORK/$name.hyperfine.json"
    else
        local i t0 t1
        for ((i = 0; i < warmup; i++)); do bash -c "$cmd" >/dev/null 2>&1; done
        for ((i = 0; i < runs; i++)); do
            t0=$(date +%s.%N)
            bash -c "$cmd" >/dev/null 2>&1
            t1=$(date +%s.%N)
            python3 -c "print($t1 - $t0)"
        done >"$WORK/$name.times"
        sort -g "$WORK/$name.times" | python3 -c 'import sys,statistics; print(statistics.median(float(l) for l in sys.stdin))'
    fi
}

# interleaved RUNS NAME CMD [NAME CMD ...]: one warm-up of each command, then RUNS rounds that
# run every command once, in order, so that all of them see the machine in the same state (its
# speed moves by 2x within minutes). Writes $WORK/NAME.times, one wall time per round.
interleaved() {
    local runs=$1 i j t0 t1
    shift
    local -a names=() cmds=()
    while [ $# -gt 0 ]; do names+=("$1"); cmds+=("$2"); shift 2; done
    for j in "${!cmds[@]}"; do
        bash -c "${cmds[$j]}" >/dev/null 2>&1
        : >"$WORK/${names[$j]}.times"
    done
    for ((i = 0; i < runs; i++)); do
        for j in "${!cmds[@]}"; do
            t0=$(date +%s.%N)
            bash -c "${cmds[$j]}" >/dev/null 2>&1
            t1=$(date +%s.%N)
            python3 -c "print($t1 - $t0)" >>"$WORK/${names[$j]}.times"
        done
    done
}

# peak_rss_kib COMMAND...: GNU time's "Maximum resident set size" (KiB), output discarded.
peak_rss_kib() {
    /usr/bin/time -v "$@" >/dev/null 2>"$WORK/time.out" || true
    sed -n 's/.*Maximum resident set size (kbytes): //p' "$WORK/time.out"
}

# --- Build ------------------------------------------------------------------------------
cd "$ROOT"
say "building h2ledger (release)"
cargo build --release -p h2ledger --quiet
H2L="$ROOT/target/release/h2ledger"

# --- Which capture ----------------------------------------------------------------------
TSHARK_100K=""
if [ "$MODE" = quick ] || [ "$MODE" = auto ]; then
    ensure_capture h2load-100k 100000
fi
if [ "$MODE" = auto ]; then
    if [ "$DO_TSHARK" = 1 ]; then
        p=$(cat "$BENCH_DIR/h2load-100k.port")
        say "auto: timing tshark once on the 100k capture"
        t0=$(date +%s.%N)
        tshark -r "$BENCH_DIR/h2load-100k.pcap" -d "tcp.port==$p,http2" -q -z http2,tree >/dev/null 2>&1
        t1=$(date +%s.%N)
        TSHARK_100K=$(python3 -c "print(round($t1 - $t0, 2))")
        # Full run ~ tshark 10x, TSHARK_RUNS timed runs + 1 for its RSS, plus about a minute
        # for the capture (if missing), tcpdump and h2ledger.
        est=$(python3 -c "print(int(10 * $TSHARK_100K * ($TSHARK_RUNS) + 60 + (0 if __import__('os').path.exists('$BENCH_DIR/h2load-1M.pcap') else 60)))")
        if [ "$est" -le "$BENCH_BUDGET" ]; then MODE=full; else MODE=quick; fi
        say "auto: tshark took ${TSHARK_100K}s on 100k requests; estimated full run ${est}s (budget ${BENCH_BUDGET}s): using --$MODE"
    else
        MODE=full
    fi
fi
if [ "$MODE" = full ]; then
    NAME=h2load-1M; ensure_capture "$NAME" 1000000
else
    NAME=h2load-100k
fi
F="$BENCH_DIR/$NAME.pcap"
P=$(cat "$BENCH_DIR/$NAME.port")
[ -s "$BENCH_DIR/$NAME.meta" ] && DROPS=$(sed -n 's/^drops=//p' "$BENCH_DIR/$NAME.meta") || DROPS="?"

# --- Ledger once: packets for throughput, frames for the cross-check -------------------
"$H2L" replay "$F" --format json --port "$P" >"$WORK/ledger.json"
PACKETS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["capture"]["packets"])' "$WORK/ledger.json")
FILE_BYTES=$(stat -c %s "$F")

say "capture: $F ($FILE_BYTES bytes, $PACKETS packets, port $P, tcpdump drops: $DROPS)"
say "timing: $RUNS interleaved rounds (+1 warm-up) of tcpdump, replay and the line views; $TSHARK_RUNS runs of tshark (${HYPERFINE:-bash date loop})"

# --- The same packets in every input format (issue 24) ----------------------------------
# Made once next to the capture (reused while newer than it): pcapng as editcap writes it,
# pcapng with a Decryption Secrets Block (one key log line for a connection nobody made: the
# key scan reads it, no packet changes), nanosecond pcap (editcap -F nsecpcap), big-endian
# pcapng with two interfaces (scripts/pcapng-be.py: no common tool writes that order), gzip and
# zstd.
FNS="$BENCH_DIR/$NAME-ns.pcap" FBE="$BENCH_DIR/$NAME-be2.pcapng"
FNG="$BENCH_DIR/$NAME.pcapng" FDSB="$BENCH_DIR/$NAME-dsb.pcapng" FGZ="$BENCH_DIR/$NAME.pcap.gz" FZST="$BENCH_DIR/$NAME.pcap.zst"
command -v editcap >/dev/null || die "editcap not found (apt-get install tshark)"
command -v zstd >/dev/null || die "zstd not found (apt-get install zstd)"
fresh() { [ -s "$1" ] && [ "$1" -nt "$F" ]; }
fresh "$FNG" || { say "making $FNG (editcap -F pcapng)"; editcap -F pcapng "$F" "$FNG"; }
if ! fresh "$FDSB"; then
    say "making $FDSB (editcap --inject-secrets)"
    printf 'CLIENT_RANDOM %064d %096d\n' 1 2 >"$WORK/dsb.keylog"
    editcap --inject-secrets "tls,$WORK/dsb.keylog" -F pcapng "$F" "$FDSB"
fi
fresh "$FNS" || { say "making $FNS (editcap -F nsecpcap)"; editcap -F nsecpcap "$F" "$FNS"; }
fresh "$FBE" || { say "making $FBE (scripts/pcapng-be.py)"; python3 "$ROOT/scripts/pcapng-be.py" "$F" "$FBE"; }
fresh "$FGZ" || { say "making $FGZ (gzip)"; gzip -c "$F" >"$FGZ"; }
fresh "$FZST" || { say "making $FZST (zstd)"; zstd -q -c "$F" >"$FZST"; }
# The other end of the range: a bulk capture (h2load fetching a 10 MB file 20 times over 2
# connections, about 200 MB in 5,400 loopback packets and 16 KiB DATA frames), timed against
# its own read floor. The h2load capture is the worst case for a decoder: 15 frames a packet.
FB="$BENCH_DIR/h2load-bulk.pcap"
ensure_capture h2load-bulk 20 10000000 "-c 2 -m 1"

# --- Time -------------------------------------------------------------------------------
# tcpdump, replay, the line views (issue 12) and each input format against tcpdump reading the
# same bytes (issue 24) in interleaved rounds: each ratio below is the median of the per-round
# ratios, each seconds figure the median of the rounds.
interleaved "$RUNS" tcpdump "tcpdump -r $F -w /dev/null" \
    h2ledger "$H2L replay $F --format json > /dev/null" \
    h2ledger-port "$H2L replay $F --format json --port $P > /dev/null" \
    frames-jsonl "$H2L frames $F --format jsonl > /dev/null" \
    calls-jsonl "$H2L calls $F --format jsonl > /dev/null" \
    analyze "$H2L replay $F --format json --analyze > /dev/null" \
    tcpdump-pcapng "tcpdump -r $FNG -w /dev/null" \
    h2ledger-pcapng "$H2L replay $FNG --format json > /dev/null" \
    tcpdump-dsb "tcpdump -r $FDSB -w /dev/null" \
    h2ledger-dsb "$H2L replay $FDSB --format json > /dev/null" \
    tcpdump-ns "tcpdump -r $FNS -w /dev/null" \
    h2ledger-ns "$H2L replay $FNS --format json > /dev/null" \
    tcpdump-be "tcpdump -r $FBE -w /dev/null" \
    h2ledger-be "$H2L replay $FBE --format json > /dev/null" \
    tcpdump-gz "gzip -dc $FGZ | tcpdump -r - -w /dev/null" \
    h2ledger-gz "$H2L replay $FGZ --format json > /dev/null" \
    tcpdump-zst "zstd -dc $FZST | tcpdump -r - -w /dev/null" \
    h2ledger-zst "$H2L replay $FZST --format json > /dev/null" \
    tcpdump-stdin "tcpdump -r - -w /dev/null < $F" \
    h2ledger-stdin "$H2L replay - --format json < $F > /dev/null"
# The bulk capture against its read floor (made above).
interleaved "$RUNS" tcpdump-bulk "tcpdump -r $FB -w /dev/null" \
    h2ledger-bulk "$H2L replay $FB --format json > /dev/null"
N_FRAMES=$("$H2L" frames "$F" --format jsonl | tail -1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["frames"])')
N_CALLS=$("$H2L" calls "$F" --format jsonl | tail -1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["calls"])')
T_TSHARK=""
if [ "$DO_TSHARK" = 1 ]; then
    # The last timed run's output is kept for the cross-check; GNU time around it records the
    # peak RSS (a fork+exec, negligible next to tshark's seconds).
    T_TSHARK=$(median_seconds tshark "$TSHARK_RUNS" 0 \
        "/usr/bin/time -f %M -o $WORK/tshark.rss tshark -r $F -d tcp.port==$P,http2 -q -z http2,tree > $WORK/tshark-tree.txt 2>/dev/null")
fi

# --- Memory -----------------------------------------------------------------------------
RSS_TCPDUMP=$(peak_rss_kib tcpdump -r "$F" -w /dev/null)
RSS_H2L=$(peak_rss_kib "$H2L" replay "$F" --format json)
RSS_H2LP=$(peak_rss_kib "$H2L" replay "$F" --format json --port "$P")
RSS_TSHARK=$([ -s "$WORK/tshark.rss" ] && tail -1 "$WORK/tshark.rss" || echo "")

# --- Report -----------------------------------------------------------------------------
python3 - "$WORK/ledger.json" "$WORK/tshark-tree.txt" <<EOF
import json, re, statistics, sys
def times(name):
    return [float(l) for l in open(f"$WORK/{name}.times") if l.strip()]
rounds = {k: times(n) for k, n in [("tcpdump", "tcpdump"), ("h2ledger", "h2ledger"),
          ("h2ledger --port", "h2ledger-port"), ("frames", "frames-jsonl"), ("calls", "calls-jsonl")]}
def ratio(a, b):
    """The median over rounds of a's time / b's time in the same round."""
    return statistics.median(x / y for x, y in zip(rounds[a], rounds[b]))
def spread(a, b):
    """The lowest and highest of the per-round ratios: how far the machine moved them."""
    r = [x / y for x, y in zip(rounds[a], rounds[b])]
    return f"{min(r):.2f}-{max(r):.2f}"
runs = {k: str(statistics.median(v)) for k, v in rounds.items()}
runs["tshark"] = "$T_TSHARK"
rss = {"tcpdump": "$RSS_TCPDUMP", "h2ledger": "$RSS_H2L", "h2ledger --port": "$RSS_H2LP", "tshark": "$RSS_TSHARK"}
cmds = {
    "tcpdump": "tcpdump -r F -w /dev/null",
    "h2ledger": "h2ledger replay F --format json",
    "h2ledger --port": "h2ledger replay F --format json --port $P",
    "tshark": "tshark -r F -d tcp.port==$P,http2 -q -z http2,tree",
}
packets, size = $PACKETS, $FILE_BYTES
base = float(runs["tcpdump"])
print()
print("capture: $F")
print(f"  {size} bytes, {packets} packets, mode --$MODE, tcpdump drops while capturing: $DROPS")
print()
print(f"{'tool':<17} {'median s':>9} {'/ tcpdump':>10} {'packets/s':>11} {'MB/s':>8} {'peak RSS MiB':>13}")
for k in ["tcpdump", "h2ledger", "h2ledger --port", "tshark"]:
    if not runs.get(k):
        continue
    t = float(runs[k])
    r = f"{int(rss[k]) / 1024:.1f}" if rss[k] else "-"
    x = ratio(k, "tcpdump") if k in rounds else t / base
    print(f"{k:<17} {t:>9.3f} {x:>9.2f}x {packets / t:>11.0f} {size / t / 1e6:>8.1f} {r:>13}")
if runs["tshark"]:
    t = float(runs["tshark"])
    print(f"\nh2ledger / tshark: {float(runs['h2ledger']) / t:.4f} (tshark is {t / float(runs['h2ledger']):.1f}x slower)")
print(f"h2ledger peak RSS / tcpdump peak RSS: {int(rss['h2ledger']) / int(rss['tcpdump']):.2f}")
print("(each ratio is the median of the per-round ratios; seconds are medians of the rounds)")
for name, key, n, unit in [("frames --format jsonl", "frames", "$N_FRAMES", "frames"),
                           ("calls --format jsonl", "calls", "$N_CALLS", "calls")]:
    t, n = float(runs[key]), int(n)
    fastest = min(rounds[key])
    print(f"{name}: {t:.3f} s, {ratio(key, 'h2ledger'):.2f}x replay, {n / t / 1e6:.2f}M {unit}/s "
          f"(fastest round {n / fastest / 1e6:.2f}M/s; {n} {unit})")
# Issue 24: every ratio of the issue in one table, from the rounds above.
print("\nissue 24 (each the median of the per-round ratios, 'rounds' their lowest and highest; F.pcapng = editcap -F pcapng F, "
      "F-dsb.pcapng = the same with a Decryption Secrets Block, F-ns.pcap = editcap -F nsecpcap F, "
      "F-be2.pcapng = scripts/pcapng-be.py F: big-endian, two interfaces; Fbulk = h2load-bulk.pcap, "
      "20 fetches of a 10 MB file):")
print(f"  {'run':<44} {'against':<44} {'ratio':>6} {'rounds':>11} {'target':>7}")
for name, run, floor, target in [
    ("h2ledger", "replay F -T json", "tcpdump", "<= 3"),
    ("h2ledger-bulk", "replay Fbulk -T json", "tcpdump-bulk", ""),
    ("h2ledger-pcapng", "replay F.pcapng -T json", "tcpdump-pcapng", ""),
    ("h2ledger-pcapng", "replay F.pcapng -T json", "h2ledger", "<= 1.2"),
    ("h2ledger-dsb", "replay F-dsb.pcapng -T json", "tcpdump-dsb", ""),
    ("h2ledger-dsb", "replay F-dsb.pcapng -T json", "h2ledger", "<= 1.2"),
    ("h2ledger-ns", "replay F-ns.pcap -T json", "tcpdump-ns", ""),
    ("h2ledger-ns", "replay F-ns.pcap -T json", "h2ledger", "<= 1.2"),
    ("h2ledger-be", "replay F-be2.pcapng -T json", "tcpdump-be", ""),
    ("h2ledger-be", "replay F-be2.pcapng -T json", "h2ledger", "<= 1.2"),
    ("h2ledger-gz", "replay F.gz -T json", "tcpdump-gz", ""),
    ("h2ledger-zst", "replay F.zst -T json", "tcpdump-zst", ""),
    ("h2ledger-stdin", "replay - -T json < F", "tcpdump-stdin", ""),
    ("analyze", "replay F -T json --analyze", "h2ledger", "<= 1.5"),
    ("calls-jsonl", "calls F -T jsonl", "h2ledger", "<= 2"),
    ("frames-jsonl", "frames F -T jsonl", "h2ledger", "<= 3"),
]:
    if name not in rounds:
        rounds[name] = times(name)
    if floor not in rounds:
        rounds[floor] = times(floor)
    against = {"tcpdump": "tcpdump -r F -w /dev/null", "h2ledger": "replay F -T json",
               "tcpdump-pcapng": "tcpdump -r F.pcapng -w /dev/null",
               "tcpdump-dsb": "tcpdump -r F-dsb.pcapng -w /dev/null",
               "tcpdump-ns": "tcpdump -r F-ns.pcap -w /dev/null",
               "tcpdump-be": "tcpdump -r F-be2.pcapng -w /dev/null",
               "tcpdump-gz": "gzip -dc F.gz | tcpdump -r - -w /dev/null",
               "tcpdump-zst": "zstd -dc F.zst | tcpdump -r - -w /dev/null",
               "tcpdump-stdin": "tcpdump -r - -w /dev/null < F",
               "tcpdump-bulk": "tcpdump -r Fbulk -w /dev/null"}[floor]
    print(f"  {run:<44} {against:<44} {ratio(name, floor):>5.2f}x {spread(name, floor):>11} {target:>7}")
print("  live: sniff vs tcpdump CPU per packet under h2load is printed at the end (--sniff N)")
print("\ncommands (F = the capture):")
for k, c in cmds.items():
    if runs[k]:
        print(f"  {k:<16} {c}")

if not runs["tshark"]:
    sys.exit(0)
# Cross-check: tshark's http2,tree counts frames by type over both sides; fold the ledger's
# per-side split (HEADERS/TRAILERS, PING/PING_ACK, SETTINGS/SETTINGS_ACK) the same way.
ledger = json.load(open(sys.argv[1]))
s = ledger["sides"]
fold = {"HEADERS": ["HEADERS", "TRAILERS"], "PING": ["PING", "PING_ACK"],
        "SETTINGS": ["SETTINGS", "SETTINGS_ACK"]}
ours = {}
for side in ("client", "server"):
    for k, v in s[side]["frames"].items():
        t = next((t for t, ks in fold.items() if k in ks), k)
        ours[t] = ours.get(t, 0) + int(v)
tree = {}
for line in open(sys.argv[2]):
    m = re.match(r"^  ([A-Z_]+)\s+(\d+)\s", line)
    if m:
        tree[m.group(1)] = int(m.group(2))
ok = True
print("\nframe counts, both sides (h2ledger vs tshark -z http2,tree):")
for t in sorted(set(ours) | set(tree)):
    a, b = ours.get(t, 0), tree.get(t, 0)
    if a == 0 and b == 0:
        continue
    same = a == b
    ok &= same
    print(f"  {t:<14} {a:>10} {b:>10}  {'OK' if same else 'MISMATCH'}")
print("frame counts:", "OK" if ok else "MISMATCH")
EOF

# --- gRPC messages (issue 22) -------------------------------------------------------------
# `calls -T jsonl --messages --proto everything.proto` on two captures of 100,000 small
# messages made by scripts/proto-bench.py (python3-grpcio): 50,000 unary calls, and 500 Bidi
# calls of 100 messages each way (the default --max-messages lists them all); against
# `calls -T jsonl` on the same capture, in interleaved rounds. Target: 500k messages/s.
ensure_proto_capture() { # ensure_proto_capture NAME PROTO-BENCH-ARGS...
    local name=$1 f="$BENCH_DIR/$1.pcap" pb="$BENCH_DIR/proto-pb" go out err pid p="" dump
    shift
    [ -s "$f" ] && [ "$REGEN" = 0 ] && return 0
    command -v protoc >/dev/null && /usr/bin/python3 -c 'import grpc' 2>/dev/null \
        || { say "proto capture: needs protoc and python3-grpcio (apt-get install protobuf-compiler python3-grpcio)"; return 1; }
    say "making $f (scripts/proto-bench.py $*, python3-grpcio; about a minute)"
    mkdir -p "$pb"
    protoc -I "$ROOT/captures/src/proto-everything" -I /usr/include --python_out="$pb" \
        "$ROOT/captures/src/proto-everything/everything.proto"
    go="$WORK/$name.go" out="$WORK/$name.out" err="$WORK/$name.err"
    /usr/bin/python3 "$ROOT/scripts/proto-bench.py" "$pb" "$@" "$go" >"$out" 2>"$err" &
    pid=$!
    PIDS+=("$pid")
    for _ in $(seq 100); do
        p=$(sed -n 's/.*"port": *\([0-9][0-9]*\).*/\1/p' "$out" | head -1)
        [ -n "$p" ] && break
        sleep 0.1
    done
    [ -n "$p" ] || { cat "$err" >&2; die "proto-bench.py did not report its port"; }
    tcpdump -Z root -B 131072 --immediate-mode -s 0 -i lo -w "$f.tmp" "tcp port $p" 2>"$WORK/$name.tcpdump" &
    dump=$!
    PIDS+=("$dump")
    for _ in $(seq 100); do grep -q "listening on" "$WORK/$name.tcpdump" && break; sleep 0.1; done
    touch "$go"
    wait "$pid" || { cat "$err" >&2; die "proto-bench.py failed"; }
    sleep 0.5
    kill -INT "$dump"; wait "$dump" || true
    grep -q "^0 packets dropped by kernel" "$WORK/$name.tcpdump" \
        || { cat "$WORK/$name.tcpdump" >&2; die "tcpdump dropped packets of $name"; }
    mv "$f.tmp" "$f"
}
proto_speed() { # proto_speed NAME: interleaved rounds, then messages/s
    local name=$1 pf="$BENCH_DIR/$1.pcap" proto="$ROOT/captures/src/proto-everything/everything.proto"
    interleaved "$RUNS" "$name-calls" "$H2L calls $pf -T jsonl > /dev/null" \
        "$name-messages" "$H2L calls $pf -T jsonl --messages --proto $proto > /dev/null"
    /usr/bin/time -f "%U %S" -o "$WORK/$name.cpu" "$H2L" calls "$pf" -T jsonl --messages --proto "$proto" >"$WORK/$name.jsonl"
    python3 - "$WORK/$name.jsonl" "$WORK/$name.cpu" "$WORK" "$pf" "$RUNS" "$name" <<'EOF'
import json, statistics, sys
out, cpu, work, pf, runs, name = sys.argv[1:7]
msgs = calls = 0
for line in open(out):
    r = json.loads(line)
    if r["record"] == "call":
        calls += 1
        msgs += len(r["request_messages"] or []) + len(r["response_messages"] or [])
plain = [float(l) for l in open(f"{work}/{name}-calls.times") if l.strip()]
dec = [float(l) for l in open(f"{work}/{name}-messages.times") if l.strip()]
u, s = (float(x) for x in open(cpu).read().split())
t = statistics.median(dec)
print(f"  {name}: {msgs} messages in {calls} calls: {t:.3f} s (median of {runs} rounds), "
      f"{msgs / t / 1e3:.0f}k messages/s (fastest round {msgs / min(dec) / 1e3:.0f}k/s); "
      f"without --messages {statistics.median(plain):.3f} s; CPU {u + s:.2f} s (user {u:.2f}, sys {s:.2f})")
EOF
}
if [ "$DO_PROTO" = 1 ] && ensure_proto_capture proto-100k 50000 \
        && ensure_proto_capture proto-bidi-100k 500 --bidi 100; then
    echo
    echo "gRPC messages: calls -T jsonl --messages --proto everything.proto (target 500k messages/s):"
    proto_speed proto-100k
    proto_speed proto-bidi-100k
fi

# --- Live sniff at full speed -------------------------------------------------------------
# The zero-drop figure the test suite does not assert (it sniffs at a rate a loaded machine
# holds): h2load as fast as it goes, h2ledger sniffing lo, at the default buffer and at 128 MiB.
sniff_full_speed() { # sniff_full_speed LABEL [SNIFF ARGS...]
    local label=$1 docroot="$WORK/sniff-docroot" port srv sn
    shift
    mkdir -p "$docroot"
    echo ok >"$docroot/file"
    port=$(free_port)
    nghttpd --no-tls -a 127.0.0.1 -d "$docroot" "$port" >/dev/null 2>&1 &
    srv=$!
    PIDS+=("$srv")
    sleep 0.5
    "$H2L" sniff --port "$port" --format json "$@" >"$WORK/sniff-$label.json" 2>"$WORK/sniff-$label.err" &
    sn=$!
    PIDS+=("$sn")
    for _ in $(seq 100); do grep -q "listening on" "$WORK/sniff-$label.err" && break; sleep 0.1; done
    h2load -n "$SNIFF_N" -c 10 -m 10 "http://127.0.0.1:$port/file" >"$WORK/sniff-h2load-$label.log" 2>&1 || true
    sleep 1
    kill -TERM "$sn" 2>/dev/null || true
    wait "$sn" || true
    kill "$srv" 2>/dev/null || true
    wait "$srv" 2>/dev/null || true
    python3 - "$WORK/sniff-$label.json" "$label" "$SNIFF_N" "$WORK/sniff-h2load-$label.log" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
h = open(sys.argv[4]).read()
m = re.search(r"finished in ([0-9.]+)(m?s), ([0-9.]+) req/s", h)
rate = f"{float(m.group(3)):,.0f} requests/s" if m else "h2load rate unknown"
dr = d.get("drops") or {}
print(f"  {sys.argv[2]:<18} {d.get('calls', 0):>8} of {sys.argv[3]} calls seen, {rate}, "
      f"dropped by kernel {dr.get('kernel', '?')}, by interface {dr.get('interface', '?')}")
PY
}
if [ "$SNIFF_N" -gt 0 ]; then
    echo
    echo "sniff at full speed (h2load -n $SNIFF_N -c 10 -m 10 against nghttpd on lo):"
    sniff_full_speed "default -B"
    sniff_full_speed "-B 131072" -B 131072
fi

# --- What --metrics costs -----------------------------------------------------------------
# Issue 23: a scrape every 100 ms during h2load at full speed costs the sniffer at most 5% more
# CPU than without --metrics. CPU time (user + system, /usr/bin/time) per packet captured, of
# `sniff --analyze` (what --metrics implies), `sniff --metrics` scraped every 100 ms, and plain
# `sniff`, interleaved METRICS_RUNS times on the same h2load load; medians, and the ratios.
METRICS_RUNS=${METRICS_RUNS:-3}
sniff_cpu() { # sniff_cpu LABEL [SNIFF ARGS...]: appends "LABEL cpu_s packets" to $WORK/cpu.txt
    local label=$1 docroot="$WORK/sniff-docroot" port srv sn mport scraper=""
    shift
    mkdir -p "$docroot"
    echo ok >"$docroot/file"
    port=$(free_port)
    nghttpd --no-tls -a 127.0.0.1 -d "$docroot" "$port" >/dev/null 2>&1 &
    srv=$!
    PIDS+=("$srv")
    sleep 0.5
    local args=("$@")
    if [ "$label" = metrics ]; then
        mport=$(free_port)
        args+=(--metrics "127.0.0.1:$mport")
    fi
    /usr/bin/time -f '%U %S' -o "$WORK/cpu-$label.time" \
        "$H2L" sniff --port "$port" --format json -B 131072 "${args[@]}" >"$WORK/cpu-$label.json" 2>"$WORK/cpu-$label.err" &
    sn=$!
    PIDS+=("$sn")
    for _ in $(seq 100); do grep -q "listening on" "$WORK/cpu-$label.err" && break; sleep 0.1; done
    if [ "$label" = metrics ]; then
        ( while :; do curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$mport/metrics" || true; sleep 0.1; done ) &
        scraper=$!
    fi
    h2load -n "$SNIFF_N" -c 10 -m 10 "http://127.0.0.1:$port/file" >/dev/null 2>&1 || true
    sleep 1
    [ -n "$scraper" ] && { kill "$scraper" 2>/dev/null || true; wait "$scraper" 2>/dev/null || true; }
    kill -TERM "$(pgrep -P "$sn" | head -1)" 2>/dev/null || true
    wait "$sn" || true
    kill "$srv" 2>/dev/null || true
    wait "$srv" 2>/dev/null || true
    python3 - "$WORK/cpu-$label.time" "$WORK/cpu-$label.json" "$label" >>"$WORK/cpu.txt" <<'PY'
import json, sys
u, s = open(sys.argv[1]).read().split()[-2:]
d = json.load(open(sys.argv[2]))
print(sys.argv[3], float(u) + float(s), d["capture"]["packets"])
PY
}
# tcpdump_cpu: the floor of a live capture, `tcpdump -w /dev/null` on the same h2load load
# (issue 24 item 4); appends "tcpdump cpu_s packets" to $WORK/cpu.txt like sniff_cpu.
tcpdump_cpu() {
    local docroot="$WORK/sniff-docroot" port srv td
    mkdir -p "$docroot"
    echo ok >"$docroot/file"
    port=$(free_port)
    nghttpd --no-tls -a 127.0.0.1 -d "$docroot" "$port" >/dev/null 2>&1 &
    srv=$!
    PIDS+=("$srv")
    sleep 0.5
    /usr/bin/time -f '%U %S' -o "$WORK/cpu-tcpdump.time" \
        tcpdump -Z root -i lo -B 131072 -w /dev/null "tcp port $port" 2>"$WORK/cpu-tcpdump.err" &
    td=$!
    PIDS+=("$td")
    for _ in $(seq 100); do grep -q "listening on" "$WORK/cpu-tcpdump.err" && break; sleep 0.1; done
    h2load -n "$SNIFF_N" -c 10 -m 10 "http://127.0.0.1:$port/file" >/dev/null 2>&1 || true
    sleep 1
    kill -INT "$(pgrep -P "$td" | head -1)" 2>/dev/null || true
    wait "$td" || true
    kill "$srv" 2>/dev/null || true
    wait "$srv" 2>/dev/null || true
    python3 - "$WORK/cpu-tcpdump.time" "$WORK/cpu-tcpdump.err" >>"$WORK/cpu.txt" <<'PY'
import re, sys
u, s = open(sys.argv[1]).read().split()[-2:]
m = re.search(r"(\d+) packets captured", open(sys.argv[2]).read())
print("tcpdump", float(u) + float(s), m.group(1) if m else 0)
PY
}
if [ "$SNIFF_N" -gt 0 ] && [ "$METRICS_RUNS" -gt 0 ]; then
    command -v curl >/dev/null || die "curl is missing (apt-get install curl)"
    echo
    echo "what --metrics costs (h2load -n $SNIFF_N -c 10 -m 10 on lo, sniff -B 131072, $METRICS_RUNS interleaved runs; CPU time per packet):"
    : >"$WORK/cpu.txt"
    for _ in $(seq "$METRICS_RUNS"); do
        sniff_cpu analyze --analyze
        sniff_cpu metrics
        sniff_cpu plain
        tcpdump_cpu
    done
    python3 - "$WORK/cpu.txt" <<'PY'
import statistics, sys
per = {}
for line in open(sys.argv[1]):
    label, cpu, packets = line.split()
    if int(packets) > 0:
        per.setdefault(label, []).append(float(cpu) / int(packets) * 1e6)
med = {k: statistics.median(v) for k, v in per.items()}
for k in ("plain", "analyze", "metrics"):
    print(f"  {k:<8} {med[k]:.3f} us CPU per packet (runs: {', '.join(f'{x:.3f}' for x in per[k])})")
def ratio(a, b):
    """The median of the per-round ratios (the runs are interleaved a round at a time, so a
    round's ratio is taken in one spell of the machine), then the ratio of the medians."""
    rs = [x / y for x, y in zip(per[a], per[b])]
    return f"{statistics.median(rs):.3f} (rounds {min(rs):.3f}-{max(rs):.3f}; medians {med[a] / med[b]:.3f})"
print(f"  --metrics scraped every 100 ms / --analyze: {ratio('metrics', 'analyze')} (target <= 1.05)")
print(f"  --metrics scraped every 100 ms / plain sniff: {ratio('metrics', 'plain')}")
if med.get("tcpdump"):
    print(f"  tcpdump -w /dev/null {med['tcpdump']:.3f} us CPU per packet (runs: {', '.join(f'{x:.3f}' for x in per['tcpdump'])})")
    print(f"  issue 24: plain sniff / tcpdump -w /dev/null, CPU per packet: {ratio('plain', 'tcpdump')} (target <= 1.5)")
PY
fi

# --- HPACK --------------------------------------------------------------------------------
if [ "$DO_HPACK" = 1 ]; then
    echo
    echo "HPACK decoders (cargo run --release -p h2ledger-bench --bin hpack-bench):"
    cargo run --release --quiet -p h2ledger-bench --bin hpack-bench
fi
