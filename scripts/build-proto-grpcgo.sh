#!/usr/bin/env bash
# Build captures/src/proto-everything/grpcgo (the proto-grpcgo capture's program) into OUTDIR.
# GOPATH mode, no network: Debian's golang-google-grpc-dev (1.33.3) and
# golang-google-protobuf-dev (1.28.1) under /usr/share/gocode/src; the message and service code
# is generated here by Debian's protoc (protobuf-compiler), protoc-gen-go and protoc-gen-go-grpc.
# usage: scripts/build-proto-grpcgo.sh OUTDIR   -> OUTDIR/proto-grpcgo
set -euo pipefail
out=${1:?usage: $0 OUTDIR}
here=$(cd "$(dirname "$0")/.." && pwd)
src=$here/captures/src/proto-everything
mkdir -p "$out"
out=$(cd "$out" && pwd)
for t in protoc protoc-gen-go protoc-gen-go-grpc go; do
  command -v $t >/dev/null || { echo "build-proto-grpcgo.sh: missing $t (apt-get install protobuf-compiler protoc-gen-go protoc-gen-go-grpc golang-go)" >&2; exit 1; }
done
[ -d /usr/share/gocode/src/google.golang.org/protobuf/encoding/protojson ] || {
  echo "build-proto-grpcgo.sh: missing /usr/share/gocode/src/google.golang.org/protobuf (apt-get install golang-google-protobuf-dev)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pkg=$tmp/src/h2ledger/proto-everything
mkdir -p "$pkg/testpb" "$pkg/grpcgo"
protoc -I "$src" -I /usr/include --go_out="$pkg/testpb" --go_opt=paths=source_relative \
  --go-grpc_out="$pkg/testpb" --go-grpc_opt=paths=source_relative "$src/everything.proto"
cp "$src/grpcgo/main.go" "$pkg/grpcgo/"
cd "$pkg/grpcgo"
GO111MODULE=off GOPATH="/usr/share/gocode:$tmp" GOFLAGS= go build -o "$out/proto-grpcgo" .
echo "$out/proto-grpcgo"
