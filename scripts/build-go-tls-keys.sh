#!/usr/bin/env bash
# Build captures/src/go-tls-keys (net/http over TLS, HTTP/2, server and client in one process,
# no key log by default; the test peer of crates/h2ledger-keys) twice into OUTDIR:
#   OUTDIR/go-tls-keys           with its ELF symbol table
#   OUTDIR/go-tls-keys-stripped  with -ldflags "-s -w" (no symbol table, no DWARF), as production
#                                Go binaries are built
# Standard library only, GOPATH mode, no network (apt-get install golang-go).
# usage: scripts/build-go-tls-keys.sh OUTDIR
set -euo pipefail
out=${1:?usage: $0 OUTDIR}
here=$(cd "$(dirname "$0")/.." && pwd)
src=$here/captures/src/go-tls-keys/main.go
command -v go >/dev/null || { echo "build-go-tls-keys.sh: no go (apt-get install golang-go)" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
# Go's build cache makes a rebuild instant; a private cache keeps root-owned files out of $HOME
# when the caller has none.
export GO111MODULE=off GOFLAGS= GOCACHE=${GOCACHE:-$out/.gocache}
go build -o "$out/go-tls-keys" "$src"
go build -ldflags "-s -w" -o "$out/go-tls-keys-stripped" "$src"
echo "$out/go-tls-keys"
echo "$out/go-tls-keys-stripped"
