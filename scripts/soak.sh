#!/usr/bin/env bash
# Memory and time bounds of a run (docs/ledger.md "Memory bounds", docs/performance.md): peak
# RSS of every view on inputs that grow, each at a base size and at three times that size, plus
# the cost per byte of garbage against valid traffic, and optionally a long live sniff.
#
# usage: scripts/soak.sh [--live SECONDS] [--live-only SECONDS] [--quick] [--regen]
#
#   --live SECONDS  also sniff lo for SECONDS while h2load opens 1,000 new connections a second
#                   against nghttpd (default 0: skipped; `just soak` passes 600): three sniffs
#                   of the same traffic at once, plain, --analyze, and --metrics scraped every
#                   second, each one's peak RSS
#   --live-only SECONDS  only that live sniff (its RSS at a third of the time against the end
#                   is the "input triples" ratio)
#   --quick         base sizes divided by 10 (a smoke test of the script itself)
#   --regen         remake the captures even if BENCH_DIR holds them
#
# Inputs (base / triple): 1M / 3M SYNs, 100k / 300k sequential and concurrent HTTP/2
# connections (scripts/gen-capture.py), and 1M / 3M h2load requests against nghttpd (tcpdump).
# Views: replay --format json, replay --analyze, replay --every 1s, calls, calls --format jsonl,
# frames --format jsonl. Targets: peak RSS <= 64 MiB, and triple / base <= 1.2.
# Environment: BENCH_DIR (default /tmp/h2ledger-bench) holds the captures.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=${BENCH_DIR:-/tmp/h2ledger-bench}
LIVE=0
LIVE_ONLY=0
SCALE=1
REGEN=0
while [ $# -gt 0 ]; do
    case "$1" in
        --live) LIVE=$2; shift ;;
        --live-only) LIVE=$2; LIVE_ONLY=1; shift ;;
        --quick) SCALE=10 ;;
        --regen) REGEN=1 ;;
        -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "soak.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done

say() { printf '%s\n' "$*" >&2; }
die() { say "soak.sh: $*"; exit 1; }

for t in tcpdump h2load nghttpd python3 cargo; do
    command -v "$t" >/dev/null || die "$t not found (just soak installs: libpcap-dev tcpdump nghttp2-client nghttp2-server time)"
done
[ -x /usr/bin/time ] || die "/usr/bin/time not found (apt-get install time)"
[ "$(id -u)" -eq 0 ] || die "tcpdump on lo needs root (run as root or with sudo)"

mkdir -p "$BENCH_DIR"
WORK="$BENCH_DIR/soak"
rm -rf "$WORK"
mkdir -p "$WORK"
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
. "$ROOT/scripts/h2load-captures.sh"

cd "$ROOT"
say "building h2ledger (release)"
cargo build --release -p h2ledger --quiet
H2L="$ROOT/target/release/h2ledger"

gen() { # gen KIND N: BENCH_DIR/KIND-N.pcap from gen-capture.py
    local f="$BENCH_DIR/$1-$2.pcap"
    if [ "$REGEN" = 1 ] || [ ! -s "$f" ]; then
        say "generating $f"
        python3 "$ROOT/scripts/gen-capture.py" "$1" "$2" "$f"
    fi
    echo "$f"
}

# measure LABEL FILE ARGS...: one line "LABEL<TAB>view<TAB>peak KiB<TAB>seconds"
RESULTS="$WORK/results.tsv"
: >"$RESULTS"
measure() {
    local label=$1 f=$2 view
    local views=("replay --format json" "replay --analyze" "replay --every 1s" "calls" \
        "calls --format jsonl" "frames --format jsonl")
    for view in "${views[@]}"; do
        # shellcheck disable=SC2086
        set -- $view
        local cmd=$1
        shift
        /usr/bin/time -f '%M %e' -o "$WORK/time.out" "$H2L" "$cmd" "$f" "$@" >/dev/null 2>"$WORK/err.out" \
            || { [ $? -eq 1 ] || { cat "$WORK/err.out" >&2; die "$label: $view failed"; }; }
        read -r kib secs <"$WORK/time.out"
        printf '%s\t%s\t%s\t%s\n' "$label" "$view" "$kib" "$secs" >>"$RESULTS"
        say "  $label: $view: $((kib / 1024)) MiB, ${secs}s"
    done
}

B=$((1000000 / SCALE))
C=$((100000 / SCALE))
T_GP=0 T_GV=0 T_GR=0
if [ "$LIVE_ONLY" = 0 ]; then
for k in 1 3; do
    measure "syn x$k" "$(gen syn $((B * k)))"
    measure "sequential x$k" "$(gen sequential $((C * k)))"
    measure "concurrent x$k" "$(gen concurrent $((C * k)))"
done
ensure_capture "h2load-$((B / 1000))k" "$B"
measure "h2load x1" "$BENCH_DIR/h2load-$((B / 1000))k.pcap"
ensure_capture "h2load-$((3 * B / 1000))k" "$((3 * B))"
measure "h2load x3" "$BENCH_DIR/h2load-$((3 * B / 1000))k.pcap"

# Garbage against valid traffic of the same size and segmenting: time per byte.
GP=$(gen garbage-p $((1024 / SCALE)))
GV=$(gen valid-4b $((1024 / SCALE)))
GR=$(gen garbage-rnd $((40 / SCALE)))
per_byte() {
    /usr/bin/time -f '%e' -o "$WORK/t" "$H2L" replay "$1" --format json >/dev/null 2>&1 || true
    python3 -c "import os; print(float(open('$WORK/t').read().split()[-1]) / os.path.getsize('$1'))"
}
T_GP=$(per_byte "$GP")
T_GV=$(per_byte "$GV")
T_GR=$(per_byte "$GR")
fi

LIVE_LINE=""
LIVE_KIB=0
if [ "$LIVE" -gt 0 ]; then
    docroot="$WORK/docroot"
    mkdir -p "$docroot"
    echo ok >"$docroot/file"
    port=$(free_port)
    nghttpd --no-tls -a 127.0.0.1 -d "$docroot" "$port" >/dev/null 2>&1 &
    PIDS+=("$!")
    sleep 0.5
    say "live: sniffing lo for ${LIVE}s while h2load opens 1,000 connections a second, three sniffs side by side on the same traffic: plain, --analyze, and --metrics scraped every second"
    mport=$(free_port)
    declare -A SNIFF
    for v in plain analyze metrics; do
        case $v in
            plain) extra=() ;;
            analyze) extra=(--analyze) ;;
            metrics) extra=(--metrics "127.0.0.1:$mport") ;;
        esac
        /usr/bin/time -f '%M %e' -o "$WORK/live-$v.time" "$H2L" sniff --port "$port" "${extra[@]}" \
            --duration "${LIVE}s" --format json >"$WORK/live-$v.json" 2>"$WORK/live-$v.err" &
        SNIFF[$v]=$!
    done
    sleep 1
    total=$((LIVE * 1000))
    h2load -n "$total" -c "$total" -r 100 --rate-period 100ms -m 1 \
        "http://127.0.0.1:$port/file" >"$WORK/live-h2load.log" 2>&1 &
    load=$!
    PIDS+=("$load")
    # Prometheus' part: a scrape every second while the sniff runs.
    ( while kill -0 "${SNIFF[metrics]}" 2>/dev/null; do
          curl -s -o /dev/null --max-time 5 "http://127.0.0.1:$mport/metrics" || true
          sleep 1
      done ) &
    scraper=$!
    # RSS over time, every 10 s, of each h2ledger itself (not of /usr/bin/time): total and
    # anonymous (the heap; the rest is mostly libpcap's capture ring, -B, mapped into the process).
    declare -A H2
    for v in plain analyze metrics; do
        : >"$WORK/live-$v-rss.txt"
        H2[$v]=$(pgrep -P "${SNIFF[$v]}" | head -1)
    done
    while kill -0 "${SNIFF[plain]}" 2>/dev/null; do
        for v in plain analyze metrics; do
            awk '/VmRSS/ {r=$2} /RssAnon/ {a=$2} END {if (r) print r "/" a}' "/proc/${H2[$v]}/status" 2>/dev/null >>"$WORK/live-$v-rss.txt" || true
        done
        sleep 10
    done
    for v in plain analyze metrics; do wait "${SNIFF[$v]}" || true; done
    kill "$load" "$scraper" 2>/dev/null || true
    LIVE_LINE=""
    for v in plain analyze metrics; do
        read -r kib secs <"$WORK/live-$v.time"
        conns=$(python3 -c "import json; print(json.load(open('$WORK/live-$v.json'))['connections'])" 2>/dev/null || echo "?")
        LIVE_LINE+="live sniff ${LIVE}s, $v: $conns connections, peak RSS $((kib / 1024)) MiB; RSS/anonymous every 10 s (KiB): $(tr '\n' ' ' <"$WORK/live-$v-rss.txt")"$'\n'
        [ "$kib" -gt "$LIVE_KIB" ] && LIVE_KIB=$kib
        cp "$WORK/live-$v-rss.txt" "$WORK/live-rss-$v.txt"
    done
    # The bound is checked on every one; the ratio on the plain one, as before.
    cp "$WORK/live-plain-rss.txt" "$WORK/live-rss.txt"
    plain_kib=$(cut -d' ' -f1 "$WORK/live-plain.time")
    metrics_kib=$(cut -d' ' -f1 "$WORK/live-metrics.time")
    analyze_kib=$(cut -d' ' -f1 "$WORK/live-analyze.time")
    LIVE_LINE+="live: peak RSS with --metrics / plain: $(python3 -c "print(f'{$metrics_kib/$plain_kib:.2f}')"), / --analyze: $(python3 -c "print(f'{$metrics_kib/$analyze_kib:.2f}')") (--metrics implies --analyze)"
fi

python3 - "$RESULTS" "$T_GP" "$T_GV" "$T_GR" "$LIVE_LINE" "$LIVE_KIB" "$WORK/live-rss.txt" <<'EOF'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
by = {(r[0], r[1]): (int(r[2]), float(r[3])) for r in rows}
inputs = []
for r in rows:
    base = r[0].rsplit(" ", 1)[0]
    if base not in inputs:
        inputs.append(base)
views = []
for r in rows:
    if r[1] not in views:
        views.append(r[1])
ok = True
print(f"\n{'input':<12} {'view':<22} {'x1 MiB':>7} {'x3 MiB':>7} {'x3/x1':>6} {'x1 s':>7} {'x3 s':>7}")
for i in inputs:
    for v in views:
        a, b = by.get((i + " x1", v)), by.get((i + " x3", v))
        if not a or not b:
            continue
        ratio = b[0] / a[0]
        good = b[0] <= 64 * 1024 and ratio <= 1.2
        ok &= good
        print(f"{i:<12} {v:<22} {a[0]/1024:>7.1f} {b[0]/1024:>7.1f} {ratio:>6.2f} {a[1]:>7.2f} {b[1]:>7.2f}"
              + ("" if good else "  <- over target"))
gp, gv, gr = (float(x) for x in sys.argv[2:5])
if gv > 0:
    print(f"\ngarbage: 1 MiB of 'P' in 4-byte segments: {gp/gv:.2f}x the time per byte of valid HTTP/2 in 4-byte segments (target <= 3)")
    print(f"         40 MiB of random payload: {gr*1e9:.1f} ns per byte")
if sys.argv[5]:
    print(sys.argv[5])
    live_kib = int(sys.argv[6])
    samples = [int(l.split("/")[0]) for l in open(sys.argv[7]) if l.strip()]
    # The connections triple between a third of the run and its end.
    third = samples[len(samples) // 3] if samples else 0
    ratio = samples[-1] / third if third else float("nan")
    good = live_kib <= 64 * 1024 and ratio <= 1.2
    ok &= good
    print(f"live: peak RSS {live_kib/1024:.1f} MiB; RSS at the end / at a third of the run: {ratio:.2f}"
          + ("" if good else "  <- over target"))
print("\ntargets (peak RSS <= 64 MiB, x3/x1 <= 1.2):", "met" if ok else "NOT met")
EOF
