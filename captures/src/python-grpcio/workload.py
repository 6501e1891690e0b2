#!/usr/bin/python3
"""grpcio unary workload over IPv6 loopback (no protoc needed).

Runs a server with a generic unary handler /h2ledger.Echo/Echo (raw bytes in,
raw bytes out) on [::1]:0 and one client channel (one HTTP/2 connection) that
makes --calls small calls and --big calls carrying --big-size bytes each way.
Prints {"port":P} when the server listens, then one JSON result line.

Needs Debian's python3-grpcio: run with /usr/bin/python3.
usage: workload.py [--host ::1] [--calls 30] [--big 6] [--big-size 102400]
                   [--serve | --connect PORT]
  --serve          server only: print {"port":P}, serve until SIGINT/SIGTERM
  --connect PORT   client only, to [HOST]:PORT
"""
import signal
import threading
import argparse
import json
import sys
import time
from concurrent import futures

import grpc


def echo(request, context):
    # respond with as many bytes as requested in the first 4 bytes (or echo)
    if len(request) >= 4 and request[:2] == b"SZ":
        n = int.from_bytes(request[2:6], "big")
        return b"\x5a" * n
    return request


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="::1")
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--big", type=int, default=6)
    ap.add_argument("--big-size", type=int, default=100 * 1024)
    ap.add_argument("--interval", type=float, default=0.02)
    ap.add_argument("--serve", action="store_true")
    ap.add_argument("--connect", type=int, default=0)
    a = ap.parse_args()
    if a.connect:
        sys.exit(run_client(a, a.connect))

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    handler = grpc.method_handlers_generic_handler(
        "h2ledger.Echo", {"Echo": grpc.unary_unary_rpc_method_handler(echo)})
    server.add_generic_rpc_handlers((handler,))
    hostport = "[%s]:0" % a.host if ":" in a.host else "%s:0" % a.host
    port = server.add_insecure_port(hostport)
    if not port:
        sys.exit("bind %s failed" % hostport)
    server.start()
    print(json.dumps({"port": port}), flush=True)
    if a.serve:
        stop = threading.Event()
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        while not stop.wait(0.2):
            pass
        server.stop(grace=1).wait()
        return 0
    rc = run_client(a, port)
    server.stop(grace=1).wait()
    return rc


def run_client(a, port):
    target = "[%s]:%d" % (a.host, port) if ":" in a.host else "%s:%d" % (a.host, port)
    made = ok = 0
    big_made = 0
    start = time.time()
    with grpc.insecure_channel(target) as ch:
        call = ch.unary_unary("/h2ledger.Echo/Echo")
        for i in range(a.calls + a.big):
            if i % max(1, (a.calls + a.big) // max(1, a.big)) == 0 and big_made < a.big:
                # upload big_size bytes, ask for big_size bytes back
                req = b"SZ" + a.big_size.to_bytes(4, "big") + b"\xa5" * (a.big_size - 6)
                big_made += 1
                want = a.big_size
            else:
                req = b"ping %d" % i
                want = len(req)
            made += 1
            try:
                resp = call(req, timeout=10)
                if len(resp) == want:
                    ok += 1
            except grpc.RpcError as e:
                print("call %d failed: %s" % (i, e), file=sys.stderr)
            time.sleep(a.interval)
    end = time.time()
    print(json.dumps({"program": "python-grpcio", "port": port, "calls_made": made,
                      "calls_ok": ok, "big_calls": big_made, "big_size": a.big_size,
                      "phases": [{"name": "mixed", "calls_made": made, "calls_ok": ok,
                                  "start": start, "end": end}]}), flush=True)
    return 0 if ok == made else 1


if __name__ == "__main__":
    sys.exit(main())
