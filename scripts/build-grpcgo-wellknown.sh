#!/usr/bin/env bash
# Build captures/src/grpcgo-wellknown (the grpcgo-wellknown capture's program) into OUTDIR.
# GOPATH mode, no network: uses Debian's golang-google-grpc-dev sources under
# /usr/share/gocode/src (apt-get install golang-go golang-google-grpc-dev).
# usage: scripts/build-grpcgo-wellknown.sh OUTDIR   -> OUTDIR/grpcgo-wellknown
set -euo pipefail
out=${1:?usage: $0 OUTDIR}
here=$(cd "$(dirname "$0")/.." && pwd)
src=$here/captures/src/grpcgo-wellknown
mkdir -p "$out"
out=$(cd "$out" && pwd)
[ -d /usr/share/gocode/src/google.golang.org/grpc/health ] || {
  echo "build-grpcgo-wellknown.sh: missing /usr/share/gocode/src/google.golang.org/grpc (apt-get install golang-google-grpc-dev)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# GOPATH mode needs the package inside a GOPATH src tree.
mkdir -p "$tmp/src/h2ledger"
cp -r "$src" "$tmp/src/h2ledger/grpcgo-wellknown"
cd "$tmp/src/h2ledger/grpcgo-wellknown"
GO111MODULE=off GOPATH="/usr/share/gocode:$tmp" GOFLAGS= \
  go build -o "$out/grpcgo-wellknown" .
echo "$out/grpcgo-wellknown"
