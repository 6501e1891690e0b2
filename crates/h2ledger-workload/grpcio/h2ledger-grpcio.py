#!/usr/bin/python3
"""h2ledger-grpcio: the demo's workload on python3-grpcio (gRPC C-core).

The health service's Check through grpcio's generic handler API with raw (bytes in, bytes out)
serializers, no generated code: the request is an empty HealthCheckRequest, the response
HealthCheckResponse{status: SERVING} (protobuf bytes 08 01). One server and one client channel
(one HTTP/2 connection) in one process. C-core has a BDP estimator of its own; --static-window
turns it off (channel argument grpc.http2.bdp_probe = 0 on both ends) and fixes the windows.

The demo protocol (shared with h2ledger-workload and h2ledger-grpcgo, see
crates/h2ledger-workload/README.md):

    h2ledger-grpcio.py --phase NAME:CALLERS:RATE:SECONDS ... [--static-window] [--tls]

listens on 127.0.0.1:0, prints {"impl","version","port"}, waits for a line on stdin (EOF: exit
1), runs the phases over one channel, prints {"phases": [...]} and exits (0 when every call
succeeded). Debian's python3-grpcio imports only under /usr/bin/python3.

--tls serves and calls over TLS with a self-signed certificate made at start (`openssl req`)
and no key log: `h2ledger demo --tls` takes the secrets with --keys-from (OpenSSL or, under
PyPI's wheel, BoringSSL; issue 37).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures

import grpc

METHOD = "/grpc.health.v1.Health/Check"
SERVING = b"\x08\x01"
STATIC_WINDOW = 1 << 20


def phase_arg(s):
    f = s.split(":")
    if len(f) != 4:
        raise argparse.ArgumentTypeError(f"phase {s!r}: expected name:callers:rate:seconds")
    name, callers, rate, seconds = f[0], int(f[1]), float(f[2]), float(f[3])
    if callers < 1 or not rate > 0 or seconds < 0:
        raise argparse.ArgumentTypeError(f"phase {s!r}: callers >= 1, rate > 0, seconds >= 0")
    return name, callers, rate, seconds


def check(request, context):
    return SERVING


def run_phase(call, name, callers, rate, seconds):
    """Every 1/rate s the callers are released together (a wave); a caller whose previous
    call is still in flight skips the wave (paced, no burst catch-up)."""
    made = [0] * callers
    ok = [0] * callers
    release = [threading.Semaphore(0) for _ in range(callers)]
    busy = [False] * callers
    stop = [False]

    def caller(i):
        while True:
            release[i].acquire()
            if stop[0]:
                return
            made[i] += 1
            try:
                call(b"", timeout=5)
                ok[i] += 1
            except grpc.RpcError as e:
                print(f"h2ledger-grpcio: Check: {e}", file=sys.stderr)
            busy[i] = False

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(callers)]
    for t in threads:
        t.start()
    period = 1.0 / rate
    start = time.time_ns()
    t0 = time.monotonic()
    deadline = t0 + seconds
    tick = t0
    while tick < deadline:
        for i in range(callers):
            if not busy[i]:
                busy[i] = True
                release[i].release()
        tick += period
        now = time.monotonic()
        if tick < now:
            tick += ((now - tick) // period + 1) * period
        if tick >= deadline:
            break
        time.sleep(tick - time.monotonic())
    stop[0] = True
    for r in release:
        r.release()
    for t in threads:
        t.join()
    return {
        "name": name,
        "callers": callers,
        "rate_per_caller": rate,
        "calls_made": sum(made),
        "calls_ok": sum(ok),
        "start_ns": start,
        "end_ns": time.time_ns(),
    }


def main():
    ap = argparse.ArgumentParser(description="the demo's grpcio workload")
    ap.add_argument("--phase", type=phase_arg, action="append", default=[])
    ap.add_argument("--static-window", action="store_true")
    ap.add_argument("--tls", action="store_true")
    a = ap.parse_args()
    phases = a.phase or [("1 caller x 24/s", 1, 24.0, 10.0), ("8 callers x 3/s", 8, 3.0, 10.0)]
    options = []
    if a.static_window:
        options = [
            ("grpc.http2.bdp_probe", 0),
            ("grpc.http2.lookahead_bytes", STATIC_WINDOW),
        ]
    handler = grpc.method_handlers_generic_handler(
        "grpc.health.v1.Health",
        {"Check": grpc.unary_unary_rpc_method_handler(check)},
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16), options=options)
    server.add_generic_rpc_handlers((handler,))
    cert = None
    if a.tls:
        with tempfile.TemporaryDirectory() as d:
            key_f, cert_f = os.path.join(d, "key.pem"), os.path.join(d, "cert.pem")
            subprocess.run(
                ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                 "-nodes", "-days", "2", "-subj", "/CN=localhost",
                 "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                 "-keyout", key_f, "-out", cert_f],
                check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            key, cert = open(key_f, "rb").read(), open(cert_f, "rb").read()
        port = server.add_secure_port("127.0.0.1:0", grpc.ssl_server_credentials([(key, cert)]))
    else:
        port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(json.dumps({"impl": "grpcio", "version": grpc.__version__, "port": port, "tls": a.tls}),
          flush=True)
    if not sys.stdin.readline():
        server.stop(None)
        sys.exit(1)
    results = []
    if cert is not None:
        channel = grpc.secure_channel(f"127.0.0.1:{port}", grpc.ssl_channel_credentials(cert),
                                      options=options)
    else:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=options)
    with channel:
        grpc.channel_ready_future(channel).result(timeout=10)
        call = channel.unary_unary(METHOD)
        for name, callers, rate, seconds in phases:
            results.append(run_phase(call, name, callers, rate, seconds))
    server.stop(1).wait()
    print(json.dumps({"phases": results}), flush=True)
    sys.exit(0 if all(r["calls_ok"] == r["calls_made"] for r in results) else 1)


if __name__ == "__main__":
    main()
