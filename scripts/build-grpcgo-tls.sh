#!/usr/bin/env bash
# Build crates/h2ledger-keys/testdata/grpcgo-tls (grpc-go health service over TLS, server and
# client in one process, no key log by default; a test peer of crates/h2ledger-keys) into
# OUTDIR/grpcgo-tls-stripped with -ldflags "-s -w", as production Go binaries are built.
# GOPATH mode, no network: Debian's golang-google-grpc-dev sources under /usr/share/gocode/src
# (apt-get install golang-go golang-google-grpc-dev).
# usage: scripts/build-grpcgo-tls.sh OUTDIR
set -euo pipefail
out=${1:?usage: $0 OUTDIR}
here=$(cd "$(dirname "$0")/.." && pwd)
src=$here/crates/h2ledger-keys/testdata/grpcgo-tls
[ -d /usr/share/gocode/src/google.golang.org/grpc/credentials ] || {
  echo "build-grpcgo-tls.sh: missing /usr/share/gocode/src/google.golang.org/grpc (apt-get install golang-google-grpc-dev)" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# GOPATH mode needs the package inside a GOPATH src tree.
mkdir -p "$tmp/src/h2ledger"
cp -r "$src" "$tmp/src/h2ledger/grpcgo-tls"
cd "$tmp/src/h2ledger/grpcgo-tls"
export GO111MODULE=off GOPATH="/usr/share/gocode:$tmp" GOFLAGS= GOCACHE=${GOCACHE:-$out/.gocache}
go build -trimpath -ldflags "-s -w" -o "$out/grpcgo-tls-stripped" .
echo "$out/grpcgo-tls-stripped"
