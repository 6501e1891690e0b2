#!/usr/bin/env bash
# Runs an h2ledger binary that needs capture permission, or explains how to grant it.
set -euo pipefail
bin=$1
shift
if [ "$(id -u)" -eq 0 ]; then
    exec "$bin" "$@"
fi
if command -v getcap >/dev/null && getcap "$bin" 2>/dev/null | grep -q cap_net_raw; then
    exec "$bin" "$@"
fi
cat >&2 <<MSG
h2ledger needs permission to capture packets on the loopback device.
Either run this as root, or grant the binary the capabilities once (again after each rebuild):

    sudo setcap cap_net_raw,cap_net_admin=eip $(realpath "$bin")

then run: just ${JUST_RECIPE:-demo} (or $bin $*)
MSG
exit 1
