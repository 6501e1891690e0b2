#!/usr/bin/env bash
# Build captures/src/grpcgo-findings (the findings captures' grpc-go workloads) into OUTDIR.
# GOPATH mode, no network: uses Debian's golang-google-grpc-dev sources under
# /usr/share/gocode/src (apt-get install golang-go golang-google-grpc-dev).
# usage: scripts/build-grpcgo-findings.sh OUTDIR   -> OUTDIR/grpcgo-findings
set -euo pipefail
out=${1:?usage: $0 OUTDIR}
here=$(cd "$(dirname "$0")/.." && pwd)
src=$here/captures/src/grpcgo-findings
mkdir -p "$out"
out=$(cd "$out" && pwd)
[ -d /usr/share/gocode/src/google.golang.org/grpc/health ] || {
  echo "build-grpcgo-findings.sh: missing /usr/share/gocode/src/google.golang.org/grpc (apt-get install golang-google-grpc-dev)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# GOPATH mode needs the package inside a GOPATH src tree.
mkdir -p "$tmp/src/h2ledger"
cp -r "$src" "$tmp/src/h2ledger/grpcgo-findings"
cd "$tmp/src/h2ledger/grpcgo-findings"
GO111MODULE=off GOPATH="/usr/share/gocode:$tmp" GOFLAGS= \
  go build -o "$out/grpcgo-findings" .
echo "$out/grpcgo-findings"
