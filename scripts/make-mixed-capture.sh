#!/usr/bin/env bash
# captures/not-http2/mixed.pcap: real programs' TCP that is not HTTP/2, beside one HTTP/2
# connection, on loopback, each server on a port of its own chosen at random (issue 36: replayed
# without --port, none of it may be taken for HTTP/2; decision 282). As root:
#
#   PostgreSQL 15  initdb into a scratch directory, postgres -k DIR -p P; psql runs 3 queries
#                  over TCP (an SSLRequest refused, then the startup and the queries)
#   Redis 7        redis-server --port P --save ''; redis-cli SET, GET, a 20 KB value, INFO
#   DNS over TCP   dnsmasq -p P (an address and a TXT record of its own); dig +tcp, 3 queries
#   SSH            sshd -p P with a host key and an authorized key made for the run; ssh runs
#                  `echo` 2 times (a connection each)
#   TLS            openssl s_server -www -p P; openssl s_client -ign_eof, GET / (TLS 1.3, then 1.2)
#   SMB2           smbd with a share of its own (-p P); smbclient -L and a `ls` of the share
#   HTTP/2         nghttpd --no-tls; nghttp -n of / and /big (the one connection to count)
#
# usage: sudo scripts/make-mixed-capture.sh [OUT.pcap]   (default captures/not-http2/mixed.pcap)
# Needs: postgresql redis-server redis-tools dnsmasq bind9-dnsutils openssh-server
# openssh-client openssl samba smbclient nghttp2-server nghttp2-client tcpdump (Debian 12).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/captures/not-http2/mixed.pcap}
[ "$(id -u)" = 0 ] || { echo "make-mixed-capture.sh: run as root" >&2; exit 1; }
PG=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | tail -1)
for t in tcpdump redis-server redis-cli dnsmasq dig /usr/sbin/sshd ssh ssh-keygen openssl smbd smbclient nghttpd nghttp "$PG/initdb" psql; do
  command -v "$t" >/dev/null || { echo "make-mixed-capture.sh: missing $t" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/h2ledger-mixed.XXXXXX)
chmod 755 "$WORK"
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; sleep 0.3; rm -rf "$WORK"; }
trap cleanup EXIT
say() { echo "== $*" >&2; }
free_port() { /usr/bin/python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()'; }
wait_port() { # wait_port PORT NAME
  for _ in $(seq 100); do
    (echo >/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1
  done
  echo "make-mixed-capture.sh: $2 did not listen on $1" >&2; exit 1
}
declare -A P
for s in pg redis dns ssh tls smb h2; do P[$s]=$(free_port); done

say "PostgreSQL on ${P[pg]}"
install -d -o postgres "$WORK/pg" "$WORK/pgsock"
su postgres -s /bin/sh -c "$PG/initdb -D $WORK/pg/data -A trust -U postgres" >"$WORK/initdb.log"
su postgres -s /bin/sh -c "$PG/postgres -D $WORK/pg/data -k $WORK/pgsock -p ${P[pg]} -c listen_addresses=127.0.0.1" >"$WORK/pg.log" 2>&1 &
PIDS+=($!)
say "Redis on ${P[redis]}"
redis-server --port "${P[redis]}" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" >"$WORK/redis.log" 2>&1 &
PIDS+=($!)
say "dnsmasq on ${P[dns]}"
dnsmasq -k -p "${P[dns]}" --listen-address=127.0.0.1 --bind-interfaces --no-resolv --no-hosts \
  --address=/h2ledger.test/127.0.0.7 --txt-record=txt.h2ledger.test,"not http/2" \
  --pid-file="$WORK/dnsmasq.pid" >"$WORK/dnsmasq.log" 2>&1 &
PIDS+=($!)
say "sshd on ${P[ssh]}"
ssh-keygen -q -t ed25519 -N '' -f "$WORK/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$WORK/user_key"
cp "$WORK/user_key.pub" "$WORK/authorized_keys"
mkdir -p /run/sshd
/usr/sbin/sshd -D -e -p "${P[ssh]}" -o ListenAddress=127.0.0.1 -h "$WORK/host_key" \
  -o AuthorizedKeysFile="$WORK/authorized_keys" -o StrictModes=no -o PidFile="$WORK/sshd.pid" \
  >"$WORK/sshd.log" 2>&1 &
PIDS+=($!)
say "openssl s_server on ${P[tls]}"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$WORK/key.pem" -out "$WORK/cert.pem" \
  -subj /CN=localhost -days 1 2>/dev/null
openssl s_server -quiet -www -accept "${P[tls]}" -cert "$WORK/cert.pem" -key "$WORK/key.pem" \
  >"$WORK/s_server.log" 2>&1 &
PIDS+=($!)
say "smbd on ${P[smb]}"
mkdir -p "$WORK/smb/share" "$WORK/smb/state" "$WORK/smb/cache" "$WORK/smb/lock" "$WORK/smb/pid" "$WORK/smb/priv"
echo "not http/2" >"$WORK/smb/share/readme.txt"
chmod -R 755 "$WORK/smb"
cat >"$WORK/smb.conf" <<EOF
[global]
  server role = standalone server
  interfaces = lo
  bind interfaces only = yes
  smb ports = ${P[smb]}
  state directory = $WORK/smb/state
  cache directory = $WORK/smb/cache
  lock directory = $WORK/smb/lock
  pid directory = $WORK/smb/pid
  private dir = $WORK/smb/priv
  map to guest = Bad User
  log file = $WORK/smbd.log
  disable netbios = yes
  load printers = no
[share]
  path = $WORK/smb/share
  guest ok = yes
  read only = yes
EOF
smbd -F --no-process-group -s "$WORK/smb.conf" >"$WORK/smbd.out" 2>&1 &
PIDS+=($!)
say "nghttpd on ${P[h2]}"
mkdir -p "$WORK/doc"; echo hello >"$WORK/doc/index.html"; head -c 100000 /dev/urandom >"$WORK/doc/big"
nghttpd --no-tls -a 127.0.0.1 -d "$WORK/doc" "${P[h2]}" >"$WORK/nghttpd.log" 2>&1 &
PIDS+=($!)
for s in pg redis dns ssh tls smb h2; do wait_port "${P[$s]}" "$s"; done

filter="tcp and ("
for s in pg redis dns ssh tls smb h2; do filter+="port ${P[$s]} or "; done
filter="${filter% or })"
mkdir -p "$(dirname "$OUT")"
tcpdump -Z root -B 32768 --immediate-mode -s 0 -i lo -w "$OUT" "$filter" 2>"$WORK/tcpdump.err" &
DUMP=$!; PIDS+=($DUMP)
for _ in $(seq 100); do grep -q "listening on" "$WORK/tcpdump.err" && break; sleep 0.1; done

say "clients"
PGSSLMODE=prefer psql -h 127.0.0.1 -p "${P[pg]}" -U postgres -d postgres -c 'select 1' \
  -c 'create table t(a int, b text)' -c "insert into t select g, repeat('x', 100) from generate_series(1, 200) g" \
  -c 'select count(*), sum(a) from t' >"$WORK/psql.out"
redis-cli -p "${P[redis]}" SET k v >/dev/null
redis-cli -p "${P[redis]}" GET k >/dev/null
redis-cli -p "${P[redis]}" SET big "$(head -c 15000 /dev/urandom | base64 -w0)" >/dev/null
redis-cli -p "${P[redis]}" INFO >/dev/null
dig +tcp +short -p "${P[dns]}" @127.0.0.1 h2ledger.test A >"$WORK/dig.out"
dig +tcp +short -p "${P[dns]}" @127.0.0.1 txt.h2ledger.test TXT >>"$WORK/dig.out"
dig +tcp +short -p "${P[dns]}" @127.0.0.1 h2ledger.test AAAA >>"$WORK/dig.out"
for i in 1 2; do
  ssh -q -i "$WORK/user_key" -p "${P[ssh]}" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
    -o BatchMode=yes root@127.0.0.1 echo "ssh $i" >>"$WORK/ssh.out"
done
for v in -tls1_3 -tls1_2; do
  printf 'GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' |
    timeout 10 openssl s_client -quiet -ign_eof "$v" -connect 127.0.0.1:"${P[tls]}" >"$WORK/s_client$v.out" 2>/dev/null || true
done
smbclient -N -p "${P[smb]}" -L //127.0.0.1 >"$WORK/smb.out" 2>&1 || true
smbclient -N -p "${P[smb]}" //127.0.0.1/share -c ls >>"$WORK/smb.out" 2>&1 || true
nghttp -n "http://127.0.0.1:${P[h2]}/" "http://127.0.0.1:${P[h2]}/big"
sleep 0.5
kill -INT "$DUMP"; wait "$DUMP" 2>/dev/null || true
grep -q "^0 packets dropped by kernel" "$WORK/tcpdump.err" || { cat "$WORK/tcpdump.err" >&2; exit 1; }
grep -q "200" "$WORK/psql.out" || { echo "psql failed" >&2; cat "$WORK/psql.out" >&2; exit 1; }
grep -q 127.0.0.7 "$WORK/dig.out" || { echo "dig failed" >&2; exit 1; }
grep -q "ssh 2" "$WORK/ssh.out" || { echo "ssh failed" >&2; cat "$WORK/sshd.log" >&2; exit 1; }
grep -q "readme.txt" "$WORK/smb.out" || { echo "smbclient failed" >&2; cat "$WORK/smb.out" >&2; exit 1; }
ports=""
for s in pg redis dns ssh tls smb h2; do ports+="$s=${P[$s]} "; done
echo "${ports% }" >"${OUT%.pcap}.ports"
say "wrote $OUT ($(stat -c %s "$OUT") bytes): ${ports% }"
