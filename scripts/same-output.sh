#!/usr/bin/env bash
# The refactoring safety net: run views of two h2ledger builds on every capture in captures/ (and
# its findings/ and servers/) and ../shared/real-captures (with their key logs) and compare
# stdout, stderr and exit code byte for byte. Usage: scripts/same-output.sh OLD_BINARY NEW_BINARY [VIEWSET]
# VIEWSET: "six" (the six views of the speed work, and `frames --messages`: plain, jsonl, --proto) or "all" (six + tables, plots, compare; default).
set -uo pipefail
old=$1 new=$2 set=${3:-all}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
views=(
  "replay @F -T json"
  "replay @F --analyze -T json"
  "replay @F --every 1s -T jsonl"
  "calls @F"
  "calls @F -T jsonl"
  "frames @F -T jsonl"
  "frames @F --messages"
  "frames @F --messages -T jsonl"
  "frames @F --messages --proto captures/src/proto-everything/everything.proto -T jsonl"
)
if [ "$set" = all ]; then
  views+=(
    "replay @F"
    "replay @F --analyze"
    "replay @F --analyze --every 1s"
    "replay @F --every 1s -T json"
    "calls @F -T json"
    "calls @F --wide"
    "frames @F"
    "frames @F -T json"
    "frames @F --messages --proto captures/src/proto-everything/everything.proto --wide"
    "frames @F --messages --max-message-bytes 100 -T jsonl"
    "frames @F --messages -T csv"
    "frames @F --messages --type DATA --side server"
    "replay @F --analyze --plot @P"
    "replay @F -q"
  )
fi
caps=(captures/*.pcap captures/*.pcapng captures/findings/*.pcap captures/servers/*.pcap ../shared/real-captures/*.pcap ../shared/real-captures/*.pcapng ../shared/real-captures/tls/*.pcapng)
n=0 diff=0
for f in "${caps[@]}"; do
  [ -f "$f" ] || continue
  kl=()
  k="${f%.*}.keylog"; [ -f "$k" ] && kl=(--keylog "$k")
  for v in "${views[@]}"; do
    for b in old new; do
      bin=${!b}
      cmd=${v//@F/$f}; cmd=${cmd//@P/$tmp/plot.svg}
      # shellcheck disable=SC2086
      COLUMNS=100 "$bin" $cmd "${kl[@]}" >"$tmp/$b.out" 2>"$tmp/$b.err"; echo "rc=$?" >>"$tmp/$b.err"
      [ -f "$tmp/plot.svg" ] && { cat "$tmp/plot.svg" >>"$tmp/$b.out"; rm -f "$tmp/plot.svg"; }
    done
    n=$((n+1))
    if ! cmp -s "$tmp/old.out" "$tmp/new.out" || ! cmp -s "$tmp/old.err" "$tmp/new.err"; then
      diff=$((diff+1)); echo "DIFFERENT: $v on $f ${kl[*]}"
      if [ -n "${VERBOSE:-}" ]; then diff <(cat "$tmp/old.out" "$tmp/old.err") <(cat "$tmp/new.out" "$tmp/new.err") | head -20; fi
    fi
  done
done
# Two-capture view.
for b in old new; do "${!b}" compare captures/grpcgo-flow-bdp.pcap captures/grpcgo-flow-static.pcap >"$tmp/$b.out" 2>&1; echo "rc=$?" >>"$tmp/$b.out"; done
n=$((n+1)); cmp -s "$tmp/old.out" "$tmp/new.out" || { diff=$((diff+1)); echo "DIFFERENT: compare"; }
for b in old new; do "${!b}" compare captures/grpcgo-flow-bdp.pcap captures/grpcgo-flow-static.pcap -T json >"$tmp/$b.out" 2>&1; echo "rc=$?" >>"$tmp/$b.out"; done
n=$((n+1)); cmp -s "$tmp/old.out" "$tmp/new.out" || { diff=$((diff+1)); echo "DIFFERENT: compare -T json"; }
echo "same-output: $n comparisons, $diff different"
[ "$diff" -eq 0 ]
