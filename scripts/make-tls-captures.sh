#!/usr/bin/env bash
# Remake the TLS captures in captures/ (run as root): curl (Debian's, OpenSSL 3) with
# SSLKEYLOGFILE against nghttpd with a self-signed certificate, openssl s_client, Go's
# crypto/tls, Python's ssl + hyper-h2 and tonic (rustls), over loopback.
#
# usage: sudo scripts/make-tls-captures.sh [NAME...]     (default: every capture below)
#
# Writes, for NAME in curl-nghttpd-tls13 curl-nghttpd-tls12:
#   captures/NAME.pcap            tcpdump -i lo of three curl connections (one cipher each)
#   captures/NAME.keylog          the key log curl wrote (SSLKEYLOGFILE)
#   captures/NAME.tshark.json     scripts/tshark-ledger.py captures/NAME.pcap --keylog captures/NAME.keylog
# the same three files for openssl-nghttpd-tls13-keyupdate, go-nethttp-tls,
# python-h2-nghttpd-tls and tonic-tls (plus tonic-tls.workload.json, the workload's result),
# and captures/curl-nghttpd-tls13-dsb.pcapng: the TLS 1.3 capture with its key log embedded
# as a pcapng Decryption Secrets Block (editcap --inject-secrets).
#
# needs: tcpdump, tshark + editcap (wireshark-common), nghttp2-server, curl, openssl,
#        golang-go (captures/src/go-tls, standard library only), python3-h2, cargo (the
#        tonic workload; or WORKLOAD_BIN=path of a built h2ledger-workload).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CAP=$ROOT/captures
PY=/usr/bin/python3
[ "$(id -u)" = 0 ] || { echo "make-tls-captures.sh: run as root" >&2; exit 1; }
for t in tcpdump tshark editcap nghttpd curl openssl; do
  command -v $t >/dev/null || { echo "make-tls-captures.sh: missing $t" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/h2ledger-tls.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
log() { echo "== $*" >&2; }
WANT=("$@")
want() { [ ${#WANT[@]} = 0 ] || [[ " ${WANT[*]} " == *" $1 "* ]]; }
free_port() { "$PY" -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()'; }
wait_tcp() {
  for _ in $(seq 50); do
    "$PY" -c 'import socket,sys;socket.create_connection(("127.0.0.1",int(sys.argv[1])),1).close()' "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

openssl req -x509 -newkey rsa:2048 -nodes -keyout "$WORK/key.pem" -out "$WORK/cert.pem" \
  -days 3650 -subj /CN=localhost 2>/dev/null
DOC=$WORK/doc; mkdir -p "$DOC"
"$PY" - "$DOC" "$WORK/upload.bin" <<'PYEOF'
import sys
def blob(n, seed):
    out = bytearray(); x = seed
    while len(out) < n:
        x = (x * 6364136223846793005 + 1442695040888963407) & (2**64 - 1)
        out += x.to_bytes(8, "little")
    return bytes(out[:n])
d = sys.argv[1]
open(d + "/index.html", "w").write("<html><body>h2ledger</body></html>\n")
open(d + "/small.bin", "wb").write(blob(20000, 1))
open(d + "/medium.bin", "wb").write(blob(100000, 2))
open(sys.argv[2], "wb").write(blob(50 * 1024, 3))
PYEOF

for try in 1 2 3 4 5; do
  P=$(free_port)
  nghttpd -a 127.0.0.1 --echo-upload -d "$DOC" "$P" "$WORK/key.pem" "$WORK/cert.pem" \
    >"$WORK/nghttpd.log" 2>&1 & NG=$!; PIDS+=("$NG")
  wait_tcp "$P" && kill -0 $NG 2>/dev/null && break
  kill $NG 2>/dev/null || true; NG=""
done
[ -n "$NG" ] || { echo "make-tls-captures.sh: nghttpd did not start" >&2; exit 1; }
U=https://127.0.0.1:$P

# capture NAME CURL-ARGS-PER-CONNECTION... (each argument is one curl run's cipher options)
capture() {
  local n=$1; shift
  log "$n (port $P)"
  rm -f "$CAP/$n".*
  tcpdump -Z root -B 32768 --immediate-mode -s 0 -i lo -w "$CAP/$n.pcap" "tcp port $P" 2>"$WORK/$n.err" & local D=$!; PIDS+=("$D")
  for _ in $(seq 100); do grep -q "listening on" "$WORK/$n.err" && break; sleep 0.1; done
  for opts in "$@"; do
    # shellcheck disable=SC2086
    SSLKEYLOGFILE=$CAP/$n.keylog curl -sS -k --http2 $opts \
      "$U/index.html" "$U/small.bin" "$U/medium.bin" -o /dev/null -o /dev/null -o /dev/null \
      --next -sS -k --http2 $opts --data-binary @"$WORK/upload.bin" "$U/index.html" -o /dev/null
  done
  sleep 0.5
  kill -INT $D; wait $D || true
  grep -q "^0 packets dropped by kernel" "$WORK/$n.err" || { cat "$WORK/$n.err" >&2; exit 1; }
  "$PY" "$ROOT/scripts/tshark-ledger.py" "$CAP/$n.pcap" --keylog "$CAP/$n.keylog" >"$CAP/$n.tshark.json"
}
want curl-nghttpd-tls13 && capture curl-nghttpd-tls13 \
  "--tlsv1.3 --tls13-ciphers TLS_AES_128_GCM_SHA256" \
  "--tlsv1.3 --tls13-ciphers TLS_AES_256_GCM_SHA384" \
  "--tlsv1.3 --tls13-ciphers TLS_CHACHA20_POLY1305_SHA256"
want curl-nghttpd-tls12 && capture curl-nghttpd-tls12 \
  "--tls-max 1.2 --ciphers ECDHE-RSA-AES128-GCM-SHA256" \
  "--tls-max 1.2 --ciphers ECDHE-RSA-AES256-GCM-SHA384" \
  "--tls-max 1.2 --ciphers ECDHE-RSA-CHACHA20-POLY1305"
# KeyUpdate and HelloRetryRequest: curl never sends KeyUpdate, openssl s_client does on its
# connected commands "K" (update, and request the peer's) and "k". Its HTTP/2 bytes (preface,
# empty SETTINGS, PINGs) are typed in; nghttpd answers with SETTINGS, PING ACKs and its own
# KeyUpdate. Connection 1 offers only P-256 (one round); connection 2 sends its key share for
# X25519, which nghttpd 1.52 does not accept (its groups are P-256, P-384, P-521), then P-256:
# nghttpd answers with a HelloRetryRequest.
n=openssl-nghttpd-tls13-keyupdate
if want $n; then
log "$n (port $P)"
rm -f "$CAP/$n".*
tcpdump -Z root -B 32768 --immediate-mode -s 0 -i lo -w "$CAP/$n.pcap" "tcp port $P" 2>"$WORK/$n.err" & D=$!; PIDS+=("$D")
for _ in $(seq 100); do grep -q "listening on" "$WORK/$n.err" && break; sleep 0.1; done
for groups in P-256 X25519:P-256; do
  {
    printf 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00'; sleep 0.5
    printf 'K\n'; sleep 0.5
    printf '\x00\x00\x08\x06\x00\x00\x00\x00\x00h2ledger'; sleep 0.5
    printf 'k\n'; sleep 0.5
    printf '\x00\x00\x08\x06\x00\x00\x00\x00\x00h2ledge2'; sleep 0.5
  } | openssl s_client -connect 127.0.0.1:$P -alpn h2 -tls1_3 -groups $groups \
        -keylogfile "$CAP/$n.keylog" >/dev/null 2>&1 || true   # exits 1 at the end of its input
done
sleep 0.5
kill -INT $D; wait $D || true
grep -q "^0 packets dropped by kernel" "$WORK/$n.err" || { cat "$WORK/$n.err" >&2; exit 1; }
"$PY" "$ROOT/scripts/tshark-ledger.py" "$CAP/$n.pcap" --keylog "$CAP/$n.keylog" >"$CAP/$n.tshark.json"
fi

# Go net/http (server and client, HTTP/2 by ALPN), the client logging keys through
# tls.Config.KeyLogWriter: one connection TLS 1.2 ECDHE-RSA-CHACHA20-POLY1305, one TLS 1.3.
n=go-nethttp-tls
if want $n; then
  command -v go >/dev/null || { echo "make-tls-captures.sh: missing go (golang-go)" >&2; exit 1; }
  log "$n"
  rm -f "$CAP/$n".*
  mkdir -p "$WORK/go"
  (cd "$WORK/go" && cp "$CAP/src/go-tls/main.go" . && GO111MODULE=off go build -o go-tls main.go)
  "$WORK/go/go-tls" -serve 127.0.0.1:0 >"$WORK/go.out" 2>&1 & GS=$!; PIDS+=("$GS")
  for _ in $(seq 100); do grep -q port "$WORK/go.out" && break; sleep 0.1; done
  GP=$(sed -n 's/.*"port": *\([0-9]*\).*/\1/p' "$WORK/go.out")
  tcpdump -Z root -B 32768 --immediate-mode -s 0 -i lo -w "$CAP/$n.pcap" "tcp port $GP" 2>"$WORK/$n.err" & D=$!; PIDS+=("$D")
  for _ in $(seq 100); do grep -q "listening on" "$WORK/$n.err" && break; sleep 0.1; done
  "$WORK/go/go-tls" -connect 127.0.0.1:$GP -keylog "$CAP/$n.keylog" -tls12 -n 5 >"$WORK/go1.json"
  "$WORK/go/go-tls" -connect 127.0.0.1:$GP -keylog "$CAP/$n.keylog" -n 5 >"$WORK/go2.json"
  sleep 0.5
  kill -INT $D; wait $D || true
  kill $GS 2>/dev/null || true
  grep -q "^0 packets dropped by kernel" "$WORK/$n.err" || { cat "$WORK/$n.err" >&2; exit 1; }
  "$PY" "$ROOT/scripts/tshark-ledger.py" "$CAP/$n.pcap" --keylog "$CAP/$n.keylog" >"$CAP/$n.tshark.json"
fi

# hyper-h2 (python3-h2) over Python's ssl, keys from SSLContext.keylog_filename, against
# nghttpd: 5 multiplexed GETs over TLS 1.2 (ECDHE-RSA-AES256-GCM-SHA384), then over TLS 1.3.
n=python-h2-nghttpd-tls
if want $n; then
  log "$n (port $P)"
  rm -f "$CAP/$n".*
  tcpdump -Z root -B 32768 --immediate-mode -s 0 -i lo -w "$CAP/$n.pcap" "tcp port $P" 2>"$WORK/$n.err" & D=$!; PIDS+=("$D")
  for _ in $(seq 100); do grep -q "listening on" "$WORK/$n.err" && break; sleep 0.1; done
  "$PY" "$CAP/src/python-h2-tls/client.py" 127.0.0.1 "$P" "$CAP/$n.keylog" 5 --tls12 >"$WORK/py1.json"
  "$PY" "$CAP/src/python-h2-tls/client.py" 127.0.0.1 "$P" "$CAP/$n.keylog" 5 >"$WORK/py2.json"
  sleep 0.5
  kill -INT $D; wait $D || true
  grep -q "^0 packets dropped by kernel" "$WORK/$n.err" || { cat "$WORK/$n.err" >&2; exit 1; }
  "$PY" "$ROOT/scripts/tshark-ledger.py" "$CAP/$n.pcap" --keylog "$CAP/$n.keylog" >"$CAP/$n.tshark.json"
fi

# tonic (crates/h2ledger-workload --tls: rustls 0.23 on ring, server and client in one
# process, one connection), the client's keys written by rustls' KeyLogFile (SSLKEYLOGFILE):
# Health/Check, 1 caller x 20/s for 1 s, then 4 callers x 5/s for 1 s. hyper's adaptive
# window (BDP PINGs) stays on.
n=tonic-tls
if want $n; then
  if [ -z "${WORKLOAD_BIN:-}" ]; then
    (cd "$ROOT" && cargo build --release -p h2ledger-workload >&2)
    WORKLOAD_BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/h2ledger-workload
  fi
  log "$n"
  rm -f "$CAP/$n".*
  mkfifo "$WORK/$n.in"
  SSLKEYLOGFILE=$CAP/$n.keylog "$WORKLOAD_BIN" --tls --wait --phase single:1:20:1 --phase fanout:4:5:1 \
    <"$WORK/$n.in" >"$WORK/$n.out" & TW=$!; PIDS+=("$TW")
  exec 3>"$WORK/$n.in"
  for _ in $(seq 100); do [ -s "$WORK/$n.out" ] && break; sleep 0.1; done
  TP=$(sed -n '1s/.*"port":\([0-9]*\).*/\1/p' "$WORK/$n.out")
  tcpdump -Z root -B 32768 --immediate-mode -s 0 -i lo -w "$CAP/$n.pcap" "tcp port $TP" 2>"$WORK/$n.err" & D=$!; PIDS+=("$D")
  for _ in $(seq 100); do grep -q "listening on" "$WORK/$n.err" && break; sleep 0.1; done
  echo go >&3; exec 3>&-
  wait $TW || { cat "$WORK/$n.out" >&2; exit 1; }
  tail -1 "$WORK/$n.out" >"$CAP/$n.workload.json"
  sleep 0.5
  kill -INT $D; wait $D || true
  grep -q "^0 packets dropped by kernel" "$WORK/$n.err" || { cat "$WORK/$n.err" >&2; exit 1; }
  "$PY" "$ROOT/scripts/tshark-ledger.py" "$CAP/$n.pcap" --keylog "$CAP/$n.keylog" >"$CAP/$n.tshark.json"
fi

n=curl-nghttpd-tls13-dsb
want $n && rm -f "$CAP/$n".* && editcap -F pcapng --inject-secrets tls,"$CAP/curl-nghttpd-tls13.keylog" "$CAP/curl-nghttpd-tls13.pcap" "$CAP/$n.pcapng"
log "done"
