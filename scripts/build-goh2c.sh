#!/usr/bin/env bash
# Build captures/src/go-h2c (Go net/http h2c server and client) into OUTDIR.
# GOPATH mode, no network: uses Debian's golang-golang-x-net-dev sources under
# /usr/share/gocode/src (apt-get install golang-go golang-golang-x-net-dev).
# usage: scripts/build-goh2c.sh OUTDIR   -> OUTDIR/go-h2c
set -euo pipefail
out=${1:?usage: $0 OUTDIR}
here=$(cd "$(dirname "$0")/.." && pwd)
src=$here/captures/src/go-h2c
mkdir -p "$out"
out=$(cd "$out" && pwd)
[ -d /usr/share/gocode/src/golang.org/x/net/http2/h2c ] || {
  echo "build-goh2c.sh: missing /usr/share/gocode/src/golang.org/x/net/http2/h2c (apt-get install golang-golang-x-net-dev)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# GOPATH mode needs the package inside a GOPATH src tree.
mkdir -p "$tmp/src/h2ledger"
cp -r "$src" "$tmp/src/h2ledger/go-h2c"
cd "$tmp/src/h2ledger/go-h2c"
GO111MODULE=off GOPATH="/usr/share/gocode:$tmp" GOFLAGS= \
  go build -o "$out/go-h2c" .
echo "$out/go-h2c"
