#!/usr/bin/env bash
# Remake the captures of other HTTP/2 servers (run as root; outputs replaced): Debian 12's
# nginx, Apache httpd (mod_http2), h2o, HAProxy and lighttpd, each serving h2c on 127.0.0.1 with
# a configuration written here, and for each server NAME:
#   captures/servers/NAME.pcap          prior-knowledge h2c: h2load -n 100 -c 2 -m 4 GET /file
#                                       (2,000 bytes), nghttp -n of /big (100,000 bytes), /file
#                                       and /index.html on one connection, curl
#                                       --http2-prior-knowledge POST of 50,000 bytes, GET /missing
#                                       and GET /file (a connection each)
#   captures/servers/NAME-upgrade.pcap  curl --http2 GET /big: HTTP/1.1 with Upgrade: h2c
#   captures/servers/NAME-tls.pcap      the same server over TLS (a certificate made here, ALPN h2),
#                                       curl --http2 -k with SSLKEYLOGFILE (NAME-tls.keylog): GET
#                                       /file, /big and /index.html on one TLS 1.3 connection, /file
#                                       and /big over TLS 1.2 ECDHE-RSA-CHACHA20-POLY1305, a POST
#                                       over TLS 1.3 TLS_CHACHA20_POLY1305_SHA256
#   captures/servers/NAME*.tshark.json  scripts/tshark-ledger.py CAPTURE --port P (--upgrade for
#                                       the upgrade captures of servers that answer 101;
#                                       --keylog NAME-tls.keylog for the TLS ones)
#   captures/servers/PROXY-grpc.pcap    grpc-go's health service behind nginx grpc_pass and HAProxy
#                                       proto h2, both legs (tshark-ledger --port P --port UPSTREAM)
# plus captures/servers/manifest.json (ports, versions, what each client printed) and
# captures/servers-captures.md (the section scripts/captures-readme.py appends to
# captures/README.md; replaced there too). crates/h2ledger/tests/it/servers.rs compares.
#
# usage: sudo scripts/make-server-captures.sh
# env: GRPCGO_BIN (default: scripts/build-grpcgo.sh into a temporary directory)
# needs: tcpdump, tshark, nghttp2-client, curl, golang-go, golang-google-grpc-dev, and the servers: nginx-light apache2 h2o
#        haproxy lighttpd (installed with apt-get when missing).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CAP=$ROOT/captures/servers
PY=/usr/bin/python3
[ "$(id -u)" = 0 ] || { echo "make-server-captures.sh: run as root" >&2; exit 1; }
for t in nginx apache2 h2o haproxy lighttpd; do
  command -v $t >/dev/null || command -v /usr/sbin/$t >/dev/null || {
    apt-get install -y nginx-light apache2 h2o haproxy lighttpd >&2 || {
      apt-get update >&2 && apt-get install -y nginx-light apache2 h2o haproxy lighttpd >&2; }
    break; }
done
for t in tcpdump tshark h2load nghttp curl; do
  command -v $t >/dev/null || { echo "make-server-captures.sh: missing $t" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/h2ledger-servers.XXXXXX)
chmod 755 "$WORK"
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
log() { echo "== $*" >&2; }
mkdir -p "$CAP" "$WORK/www"
head -c 2000 /dev/urandom >"$WORK/www/file"
head -c 100000 /dev/urandom >"$WORK/www/big"
echo hello >"$WORK/www/index.html"
head -c 50000 /dev/urandom >"$WORK/post.bin"
chmod -R a+rX "$WORK/www"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$WORK/key.pem" -out "$WORK/cert.pem" -days 2 \
  -subj "/CN=localhost" 2>/dev/null
cat "$WORK/cert.pem" "$WORK/key.pem" >"$WORK/both.pem"
chmod 644 "$WORK"/*.pem

TD=(tcpdump -Z root -B 32768 --immediate-mode -s 0 -i lo)
start_dump() { # start_dump NAME FILE FILTER
  "${TD[@]}" -w "$2" "$3" 2>"$WORK/$1.tcpdump.err" & DUMP_PID=$!; PIDS+=("$DUMP_PID")
  for _ in $(seq 100); do grep -q "listening on" "$WORK/$1.tcpdump.err" && return 0; sleep 0.1; done
  echo "make-server-captures.sh: tcpdump for $1 did not start" >&2; return 1
}
stop_dump() { # stop_dump NAME PID
  sleep 0.3
  kill -INT "$2" 2>/dev/null || true; wait "$2" 2>/dev/null || true
  grep -q "^0 packets dropped by kernel" "$WORK/$1.tcpdump.err" || {
    echo "make-server-captures.sh: tcpdump for $1 dropped packets" >&2; cat "$WORK/$1.tcpdump.err" >&2; exit 1; }
}
free_port() { "$PY" -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()'; }
wait_listen() { # wait_listen PORT PID NAME
  for _ in $(seq 100); do
    "$PY" -c "import socket,sys;socket.create_connection(('127.0.0.1',$1),0.2).close()" 2>/dev/null && return 0
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  echo "make-server-captures.sh: $3 did not listen on $1:" >&2; cat "$WORK/$3".* >&2 || true; exit 1
}

# start_server NAME PORT: writes NAME's configuration and starts it in the foreground (SRV_PID)
start_server() {
  local n=$1 p=$2 conf="$WORK/$1.conf"
  case $n in
  nginx-tls)
    printf '%s\n' "daemon off; master_process off; worker_processes 1;" \
      "error_log $WORK/nginx.err; pid $WORK/nginx.pid;" "events {}" \
      "http { access_log off; client_body_temp_path $WORK/nginx-body;" \
      "  server { listen 127.0.0.1:$p ssl http2; ssl_certificate $WORK/cert.pem;" \
      "    ssl_certificate_key $WORK/key.pem; ssl_protocols TLSv1.2 TLSv1.3; root $WORK/www; } }" >"$conf"
    nginx -c "$conf" >"$WORK/$n.out" 2>&1 & ;;
  apache-tls)
    printf '%s\n' "LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so" \
      "LoadModule http2_module /usr/lib/apache2/modules/mod_http2.so" \
      "LoadModule ssl_module /usr/lib/apache2/modules/mod_ssl.so" \
      "LoadModule socache_shmcb_module /usr/lib/apache2/modules/mod_socache_shmcb.so" \
      "LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so" \
      "User www-data" "Group www-data" "Listen 127.0.0.1:$p" "ServerName localhost" \
      "PidFile $WORK/apache.pid" "ErrorLog $WORK/apache.err" "DocumentRoot $WORK/www" \
      "SSLEngine on" "SSLCertificateFile $WORK/cert.pem" "SSLCertificateKeyFile $WORK/key.pem" \
      "Protocols h2 http/1.1" "<Directory $WORK/www>" "Require all granted" "</Directory>" >"$conf"
    apache2 -f "$conf" -DFOREGROUND >"$WORK/$n.out" 2>&1 & ;;
  h2o-tls)
    printf '%s\n' "listen:" "  host: 127.0.0.1" "  port: $p" "  ssl:" \
      "    certificate-file: $WORK/cert.pem" "    key-file: $WORK/key.pem" "hosts:" "  default:" \
      "    paths:" "      /:" "        file.dir: $WORK/www" "error-log: $WORK/h2o.err" >"$conf"
    h2o -c "$conf" >"$WORK/$n.out" 2>&1 & ;;
  haproxy-tls)
    printf '%s\n' "defaults" "  mode http" "  timeout client 10s" "  timeout server 10s" \
      "  timeout connect 5s" "frontend f" "  bind 127.0.0.1:$p ssl crt $WORK/both.pem alpn h2,http/1.1" \
      '  http-request return status 200 content-type text/plain string "hello from haproxy"' >"$conf"
    haproxy -f "$conf" -db >"$WORK/$n.out" 2>&1 & ;;
  lighttpd-tls)
    printf '%s\n' 'server.modules += ("mod_openssl")' "server.document-root = \"$WORK/www\"" \
      "server.port = $p" "server.bind = \"127.0.0.1\"" 'ssl.engine = "enable"' \
      "ssl.pemfile = \"$WORK/both.pem\"" "server.errorlog = \"$WORK/lighttpd.err\"" >"$conf"
    lighttpd -D -f "$conf" >"$WORK/$n.out" 2>&1 & ;;
  nginx)
    printf '%s\n' "daemon off; master_process off; worker_processes 1;" \
      "error_log $WORK/nginx.err; pid $WORK/nginx.pid;" "events {}" \
      "http { access_log off; client_body_temp_path $WORK/nginx-body;" \
      "  server { listen 127.0.0.1:$p http2; root $WORK/www; } }" >"$conf"
    nginx -c "$conf" >"$WORK/$n.out" 2>&1 & ;;
  apache)
    printf '%s\n' "LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so" \
      "LoadModule http2_module /usr/lib/apache2/modules/mod_http2.so" \
      "LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so" \
      "User www-data" "Group www-data" "Listen 127.0.0.1:$p" "ServerName localhost" \
      "PidFile $WORK/apache.pid" "ErrorLog $WORK/apache.err" "DocumentRoot $WORK/www" \
      "Protocols h2c http/1.1" "H2Direct on" \
      "<Directory $WORK/www>" "Require all granted" "</Directory>" >"$conf"
    apache2 -f "$conf" -DFOREGROUND >"$WORK/$n.out" 2>&1 & ;;
  h2o)
    printf '%s\n' "listen:" "  host: 127.0.0.1" "  port: $p" "hosts:" "  default:" "    paths:" \
      "      /:" "        file.dir: $WORK/www" "error-log: $WORK/h2o.err" >"$conf"
    h2o -c "$conf" >"$WORK/$n.out" 2>&1 & ;;
  haproxy)
    printf '%s\n' "defaults" "  mode http" "  timeout client 10s" "  timeout server 10s" \
      "  timeout connect 5s" "frontend f" "  bind 127.0.0.1:$p proto h2" \
      '  http-request return status 200 content-type text/plain string "hello from haproxy"' >"$conf"
    haproxy -f "$conf" -db >"$WORK/$n.out" 2>&1 & ;;
  lighttpd)
    printf '%s\n' "server.document-root = \"$WORK/www\"" "server.port = $p" \
      "server.bind = \"127.0.0.1\"" "server.errorlog = \"$WORK/lighttpd.err\"" >"$conf"
    lighttpd -D -f "$conf" >"$WORK/$n.out" 2>&1 & ;;
  esac
  SRV_PID=$!; PIDS+=("$SRV_PID")
  wait_listen "$p" "$SRV_PID" "$n"
}
stop_server() { kill "$SRV_PID" 2>/dev/null || true; wait "$SRV_PID" 2>/dev/null || true; sleep 0.3; }
code() { curl -s -o /dev/null -w '%{http_code} %{http_version}\n' --max-time 10 "$@" || true; }

declare -A PORT UPGRADED
for n in nginx apache h2o haproxy lighttpd; do
  log "$n"
  rm -f "$CAP/$n".* "$CAP/$n"-upgrade.*
  P=$(free_port); U=http://127.0.0.1:$P
  start_server $n "$P"
  start_dump $n "$CAP/$n.pcap" "tcp port $P"; D=$DUMP_PID
  h2load -n 100 -c 2 -m 4 "$U/file" >"$WORK/$n.h2load" 2>&1 || true
  nghttp -n "$U/big" "$U/file" "$U/index.html" >/dev/null 2>&1 || true
  { code --http2-prior-knowledge -d @"$WORK/post.bin" "$U/index.html"
    code --http2-prior-knowledge "$U/missing"
    code --http2-prior-knowledge "$U/file"; } >"$WORK/$n.curl"
  stop_dump $n $D
  start_dump $n-upgrade "$CAP/$n-upgrade.pcap" "tcp port $P"; D=$DUMP_PID
  code --http2 "$U/big" >"$WORK/$n-upgrade.curl"
  stop_dump $n-upgrade $D
  stop_server
  PORT[$n]=$P
  # tshark follows an HTTP/1.1 upgrade only when not told the port is HTTP/2 (--upgrade).
  if tshark -r "$CAP/$n-upgrade.pcap" -Y 'http.response.code == 101' 2>/dev/null | grep -q .; then
    UPGRADED[$n]=true; up=(--upgrade)
  else
    UPGRADED[$n]=false; up=()
  fi
  "$PY" "$ROOT/scripts/tshark-ledger.py" "$CAP/$n.pcap" --port "$P" >"$CAP/$n.tshark.json"
  "$PY" "$ROOT/scripts/tshark-ledger.py" "$CAP/$n-upgrade.pcap" --port "$P" "${up[@]}" \
    >"$CAP/$n-upgrade.tshark.json"
  # TLS: tshark finds HTTP/2 by ALPN once it has the keys (no -d).
  rm -f "$CAP/$n"-tls.*
  P=$(free_port); U=https://127.0.0.1:$P; K="$CAP/$n-tls.keylog"
  start_server $n-tls "$P"
  start_dump $n-tls "$CAP/$n-tls.pcap" "tcp port $P"; D=$DUMP_PID
  { SSLKEYLOGFILE=$K code -k --http2 -o /dev/null -o /dev/null "$U/file" "$U/big" "$U/index.html"
    SSLKEYLOGFILE=$K code -k --http2 --tlsv1.2 --tls-max 1.2 --ciphers ECDHE-RSA-CHACHA20-POLY1305 \
      -o /dev/null "$U/file" "$U/big"
    SSLKEYLOGFILE=$K code -k --http2 --tlsv1.3 --tls13-ciphers TLS_CHACHA20_POLY1305_SHA256 \
      -d @"$WORK/post.bin" "$U/index.html"; } >"$WORK/$n-tls.curl"
  stop_dump $n-tls $D
  stop_server
  PORT[$n-tls]=$P
  "$PY" "$ROOT/scripts/tshark-ledger.py" "$CAP/$n-tls.pcap" --keylog "$K" >"$CAP/$n-tls.tshark.json"
done

# gRPC through the two proxies that speak h2 to their backends: grpc-go's health service
# (captures/src/grpcgo-article, the article's client: 1 caller x 24 calls/s, then 8 x 3/s, one
# second each) behind nginx `grpc_pass` and HAProxy `proto h2`; both legs are captured.
if [ -z "${GRPCGO_BIN:-}" ]; then
  "$ROOT/scripts/build-grpcgo.sh" "$WORK/bin" >&2
  GRPCGO_BIN=$WORK/bin/grpcgo-article
fi
"$GRPCGO_BIN" -serve 127.0.0.1:0 >"$WORK/grpc-server.out" 2>&1 & GS=$!; PIDS+=("$GS")
for _ in $(seq 100); do
  GP=$(sed -n 's/.*"port": *\([0-9][0-9]*\).*/\1/p' "$WORK/grpc-server.out" | head -1)
  [ -n "$GP" ] && break; sleep 0.1
done
[ -n "$GP" ] || { echo "make-server-captures.sh: the grpc-go server did not start" >&2; exit 1; }
for n in nginx haproxy; do
  log "$n-grpc"
  rm -f "$CAP/$n"-grpc.*
  P=$(free_port); conf="$WORK/$n-grpc.conf"
  if [ $n = nginx ]; then
    printf '%s\n' "daemon off; master_process off; worker_processes 1;" \
      "error_log $WORK/nginx.err; pid $WORK/nginx.pid;" "events {}" \
      "http { access_log off; server { listen 127.0.0.1:$P http2;" \
      "  location / { grpc_pass grpc://127.0.0.1:$GP; } } }" >"$conf"
    nginx -c "$conf" >"$WORK/$n-grpc.out" 2>&1 &
  else
    printf '%s\n' "defaults" "  mode http" "  timeout client 10s" "  timeout server 10s" \
      "  timeout connect 5s" "frontend f" "  bind 127.0.0.1:$P proto h2" "  default_backend b" \
      "backend b" "  server s 127.0.0.1:$GP proto h2" >"$conf"
    haproxy -f "$conf" -db >"$WORK/$n-grpc.out" 2>&1 &
  fi
  SRV_PID=$!; PIDS+=("$SRV_PID")
  wait_listen "$P" "$SRV_PID" "$n-grpc"
  start_dump $n-grpc "$CAP/$n-grpc.pcap" "tcp port $P or tcp port $GP"; D=$DUMP_PID
  "$GRPCGO_BIN" -connect "127.0.0.1:$P" -seconds 1 | tail -1 >"$WORK/$n-grpc.client"
  stop_dump $n-grpc $D
  stop_server
  PORT[$n-grpc]=$P
  echo "$GP" >"$WORK/$n-grpc.upstream"
  "$PY" "$ROOT/scripts/tshark-ledger.py" "$CAP/$n-grpc.pcap" --port "$P" --port "$GP" \
    >"$CAP/$n-grpc.tshark.json"
done
kill "$GS" 2>/dev/null || true
for n in nginx apache h2o haproxy lighttpd; do echo "${PORT[$n-tls]}" >"$WORK/$n-tls.port"; done
for n in nginx haproxy; do echo "${PORT[$n-grpc]}" >"$WORK/$n-grpc.port"; done
"$PY" - "$CAP" "$WORK" "${PORT[nginx]}" "${PORT[apache]}" "${PORT[h2o]}" "${PORT[haproxy]}" \
  "${PORT[lighttpd]}" "${UPGRADED[nginx]}" "${UPGRADED[apache]}" "${UPGRADED[h2o]}" \
  "${UPGRADED[haproxy]}" "${UPGRADED[lighttpd]}" <<'PYEOF'
import json, re, subprocess, sys
cap, work = sys.argv[1], sys.argv[2]
names = ["nginx", "apache", "h2o", "haproxy", "lighttpd"]
ports = dict(zip(names, map(int, sys.argv[3:8])))
upgraded = dict(zip(names, [x == "true" for x in sys.argv[8:13]]))
pkg = {"nginx": "nginx-light", "apache": "apache2", "h2o": "h2o", "haproxy": "haproxy",
       "lighttpd": "lighttpd"}
def version(p):
    return subprocess.run(["dpkg-query", "-W", "-f", "${Version}", p], capture_output=True,
                          text=True).stdout.strip()
tools = {t: version(t) for t in ["nghttp2-client", "curl"]}
m = {}
for n in names:
    h2load = open(f"{work}/{n}.h2load").read()
    req = re.search(r"requests: (.*)", h2load)
    m[n] = {"file": f"{n}.pcap", "port": ports[n], "server": f"{pkg[n]} {version(pkg[n])}",
            "h2load": req.group(1) if req else None,
            "curl": open(f"{work}/{n}.curl").read().split("\n")[:-1]}
    m[n + "-upgrade"] = {"file": f"{n}-upgrade.pcap", "port": ports[n],
                         "server": f"{pkg[n]} {version(pkg[n])}", "answered_101": upgraded[n],
                         "curl": open(f"{work}/{n}-upgrade.curl").read().split("\n")[:-1]}
    m[n + "-tls"] = {"file": f"{n}-tls.pcap", "keylog": f"{n}-tls.keylog",
                     "port": int(open(f"{work}/{n}-tls.port").read()),
                     "server": f"{pkg[n]} {version(pkg[n])}",
                     "curl": open(f"{work}/{n}-tls.curl").read().split("\n")[:-1]}
for n in ["nginx", "haproxy"]:
    client = json.loads(open(f"{work}/{n}-grpc.client").read())
    m[n + "-grpc"] = {"file": f"{n}-grpc.pcap", "port": int(open(f"{work}/{n}-grpc.port").read()),
                      "upstream_port": int(open(f"{work}/{n}-grpc.upstream").read()),
                      "server": f"{pkg[n]} {version(pkg[n])} before grpc-go (grpcgo-article)",
                      "client": {k: client[k] for k in ("calls_made", "calls_ok")}}
json.dump(m, open(f"{cap}/manifest.json", "w"), indent=1, sort_keys=True)
open(f"{cap}/manifest.json", "a").write("\n")
w = []
w.append("\n## Other servers (captures/servers)\n\n")
w.append("Made by `sudo scripts/make-server-captures.sh`: Debian 12's HTTP/2 servers, each serving "
         "h2c on 127.0.0.1 from a configuration the script writes, captured with tcpdump -i lo "
         "`tcp port P` (--immediate-mode, -B 32768; fails on drops). `NAME.pcap`: h2load "
         f"({tools['nghttp2-client']}) `-n 100 -c 2 -m 4` GET /file (2,000 bytes), `nghttp -n` "
         "of /big (100,000 bytes), /file and /index.html on one connection, curl "
         f"({tools['curl']}) `--http2-prior-knowledge` POST of 50,000 bytes to /index.html, then "
         "GET /missing and GET /file (a connection each); `NAME-upgrade.pcap`: `curl --http2` GET /big (HTTP/1.1 with "
         "`Upgrade: h2c`); `NAME-tls.pcap` and its `NAME-tls.keylog` (curl's SSLKEYLOGFILE): the "
         "same server over TLS with a certificate made for the run, `curl --http2 -k` GET /file, "
         "/big and /index.html on one TLS 1.3 connection, /file and /big over TLS 1.2 "
         "ECDHE-RSA-CHACHA20-POLY1305, and the POST over TLS 1.3 TLS_CHACHA20_POLY1305_SHA256. "
         "`NAME.tshark.json` = `scripts/tshark-ledger.py captures/servers/"
         "NAME.pcap --port P` (`--upgrade` for the upgrade captures the server answered with "
         "101; `--keylog NAME-tls.keylog` and no `--port` for the TLS ones, which tshark finds by "
         "ALPN); `NAME-grpc.pcap`: grpc-go's health service (captures/src/grpcgo-article: 1 caller x "
         "24 calls/s, then 8 callers x 3/s, one second each) behind nginx `grpc_pass` or HAProxy "
         "`proto h2`, both legs captured (`--port P --port UPSTREAM` for tshark; nginx opens an "
         "upstream connection per call); crates/h2ledger/tests/it/servers.rs compares h2ledger with them. "
         "`manifest.json` has each port, the server's package and version, and what the clients "
         "printed (curl: status and HTTP version; `000 0` is a transfer curl gave up).\n\n")
w.append("| capture | server | port | clients printed |\n|---|---|---|---|\n")
for k in sorted(m):
    e = m[k]
    if "client" in e:
        said = "grpcgo-article %d of %d calls ok; upstream port %d" % (
            e["client"]["calls_ok"], e["client"]["calls_made"], e["upstream_port"])
    else:
        said = "; ".join(filter(None, [e.get("h2load") and "h2load " + e["h2load"].split(",")[3].strip(),
                                       "curl " + ", ".join(e["curl"])]))
    w.append(f"| `{e['file']}` | {e['server']} | {e['port']} | {said} |\n")
# What the upgrade captures show, from what curl printed (curl 7.88's upgrade races with the
# server's 101: it goes on in HTTP/2 or gives up after the 101, from one run to the next).
said = []
for n in names:
    e = m[n + "-upgrade"]
    if not e["answered_101"]:
        said.append(f"{n} did not answer 101 (curl printed `{e['curl'][0]}`)")
    elif e["curl"][0] == "101 1.1":
        said.append(f"{n} answered 101 and its HTTP/2 frames, and curl never sent the preface "
                    "(it printed `101 1.1`): h2ledger says so in a `no-http2-boundary` warning "
                    "(decision 278)")
    else:
        said.append(f"{n} answered 101 and curl went on in HTTP/2 (`{e['curl'][0]}`)")
w.append("\nThe upgrade captures: " + "; ".join(said) + ". nginx (`listen ... http2` on cleartext) "
         "takes only prior knowledge and answers the HTTP/1.1 request with SETTINGS, "
         "WINDOW_UPDATE and GOAWAY PROTOCOL_ERROR (h2ledger names the request in its warning); "
         "HAProxy (`proto h2`) closes without a byte.\n")
open(f"{cap}/../servers-captures.md", "w").write("".join(w))
# Replace this section of README.md in place (the sections after it stay), or append it.
r = open(f"{cap}/../README.md").read()
mark = "\n## Other servers (captures/servers)"
if mark in r:
    start = r.index(mark)
    end = r.find("\n## ", start + 1)
    r = r[:start] + "\n" + "".join(w).strip("\n") + "\n" + (r[end:] if end != -1 else "")
else:
    r = r.rstrip("\n") + "\n" + "".join(w)
open(f"{cap}/../README.md", "w").write(r)
PYEOF
ls -la "$CAP" >&2
