#!/usr/bin/python3
"""The proto speed captures' program (scripts/bench.sh): a python3-grpcio server and client of
h2ledger.test.v1.TestService (captures/src/proto-everything/everything.proto) on 127.0.0.1,
one channel, CALLS Unary calls with a small message each way (the proto captures' `small(k)`:
a nested message, a oneof, a packed enum list, a map entry, a Timestamp, a float and a
double; 20 to 60 bytes), IN_FLIGHT calls at a time: 2 x CALLS messages. With `--bidi N`,
CALLS Bidi calls instead, one after another, each N small messages each way (the server
answers each): 2 x N x CALLS messages.

Needs Debian's python3-grpcio and python3-protobuf (run with /usr/bin/python3) and
everything_pb2.py from `protoc --python_out` in PB_DIR.
usage: proto-bench.py PB_DIR CALLS GO_FILE [IN_FLIGHT] [--bidi N]
prints {"port": P}, waits until GO_FILE exists, makes the calls, prints a JSON result line.
"""
import json
import os
import sys
import time
from concurrent import futures

sys.path.insert(0, sys.argv[1])

import grpc  # noqa: E402
from google.protobuf import timestamp_pb2  # noqa: E402

import everything_pb2 as pb  # noqa: E402

SERVICE = "/h2ledger.test.v1.TestService/"


def small(k):
    """captures/src/proto-everything/grpcio.py's small(k)."""
    m = pb.Everything()
    m.inner.name = "s%d" % k
    m.inner.id = k
    if k % 3 == 0:
        m.choice_number = k
    elif k % 3 == 1:
        m.choice_inner.id = k
    else:
        m.choice_text = ""
    m.palette.extend([k % 4, (k + 1) % 4])
    m.counts["k"] = k
    m.at.CopyFrom(timestamp_pb2.Timestamp(seconds=k * 1000, nanos=(k % 1000) * 1000000))
    if k % 2:
        m.scalars.f_float = k / 10.0
        m.scalars.f_double = -k / 3.0
    return m


def main():
    args = sys.argv[1:]
    bidi = 0
    if "--bidi" in args:
        i = args.index("--bidi")
        bidi = int(args[i + 1])
        del args[i:i + 2]
    calls = int(args[1])
    go = args[2]
    in_flight = int(args[3]) if len(args) > 3 else 8
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    ser = lambda m: m.SerializeToString()  # noqa: E731
    ev = pb.Everything.FromString

    def unary(req, context):
        return small(req.inner.id + 1)

    def echo(reqs, context):
        for r in reqs:
            yield small(r.inner.id + 1)

    handler = grpc.method_handlers_generic_handler("h2ledger.test.v1.TestService", {
        "Unary": grpc.unary_unary_rpc_method_handler(unary, ev, ser),
        "Bidi": grpc.stream_stream_rpc_method_handler(echo, ev, ser),
    })
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(json.dumps({"port": port}), flush=True)
    for _ in range(600):
        if os.path.exists(go):
            break
        time.sleep(0.1)
    ch = grpc.insecure_channel("127.0.0.1:%d" % port)
    start = time.time()
    if bidi:
        stream = ch.stream_stream(SERVICE + "Bidi", ser, ev)
        for c in range(calls):
            n = sum(1 for _ in stream(small(c * bidi + i) for i in range(bidi)))
            assert n == bidi, n
        messages = 2 * bidi * calls
    else:
        stub = ch.unary_unary(SERVICE + "Unary", ser, ev)
        pending = []
        for k in range(calls):
            pending.append(stub.future(small(k)))
            if len(pending) >= in_flight:
                for f in pending:
                    f.result()
                pending = []
        for f in pending:
            f.result()
        messages = 2 * calls
    took = time.time() - start
    ch.close()
    time.sleep(0.2)
    server.stop(0.5).wait()
    print(json.dumps({"program": "python3-grpcio " + grpc.__version__ + " proto-bench",
                      "port": port, "calls_made": calls, "messages": messages,
                      "seconds": round(took, 3)}), flush=True)


if __name__ == "__main__":
    main()
