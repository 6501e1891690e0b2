#!/usr/bin/env bash
# Make the venv with PyPI's grpcio wheel (BoringSSL static and stripped inside
# grpc/_cython/cygrpc.cpython-*.so), the BoringSSL peer of crates/h2ledger-keys'
# tests/it/openssl.rs (issue 37). Debian's python3-grpcio links the system OpenSSL instead.
# usage: scripts/grpcio-wheel.sh [VENV]   (default /opt/h2l-grpcio-venv; a second run is a no-op)
set -euo pipefail
venv=${1:-/opt/h2l-grpcio-venv}
if "$venv/bin/python" -c 'import grpc._cython.cygrpc' 2>/dev/null; then
    exit 0
fi
python3 -m venv "$venv" 2>/dev/null || {
    apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$venv"
}
"$venv/bin/pip" install --quiet grpcio
"$venv/bin/python" -c 'import grpc._cython.cygrpc as c; print("grpcio wheel:", c.__file__)'
