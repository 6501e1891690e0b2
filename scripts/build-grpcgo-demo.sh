#!/usr/bin/env bash
# Build the demo's grpc-go workload (crates/h2ledger-workload/grpcgo) into OUTDIR/h2ledger-grpcgo.
# GOPATH mode, no network: Debian's golang-google-grpc-dev sources under /usr/share/gocode/src
# (apt-get install golang-go golang-google-grpc-dev). Go's build cache makes a rebuild instant.
# usage: scripts/build-grpcgo-demo.sh OUTDIR
set -euo pipefail
out=${1:?usage: $0 OUTDIR}
here=$(cd "$(dirname "$0")/.." && pwd)
src=$here/crates/h2ledger-workload/grpcgo
mkdir -p "$out"
out=$(cd "$out" && pwd)
[ -d /usr/share/gocode/src/google.golang.org/grpc/health ] || {
  echo "build-grpcgo-demo.sh: missing /usr/share/gocode/src/google.golang.org/grpc (apt-get install golang-google-grpc-dev)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# GOPATH mode needs the package inside a GOPATH src tree.
mkdir -p "$tmp/src/h2ledger"
cp -r "$src" "$tmp/src/h2ledger/grpcgo"
cd "$tmp/src/h2ledger/grpcgo"
GO111MODULE=off GOPATH="/usr/share/gocode:$tmp" GOFLAGS= \
  go build -trimpath -o "$out/h2ledger-grpcgo" .
echo "$out/h2ledger-grpcgo"
