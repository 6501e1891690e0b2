#!/usr/bin/python3
"""grpcio streaming workload on 127.0.0.1 (no protoc needed): server-streaming, client-streaming
and bidirectional calls through generic handlers (raw bytes), one client channel.

Needs Debian's python3-grpcio: run with /usr/bin/python3.
usage: streaming.py [GO_FILE]: prints {"port": P}, waits until GO_FILE exists (without it 1 s),
then: 3 server-streaming calls of 10 messages, 2 client-streaming calls of 8 messages, 2 bidi
calls of 6 messages each way; prints a JSON result line.
"""
import json
import os
import sys
import time
from concurrent import futures

import grpc


def server_stream(request, context):
    for i in range(10):
        yield request + b"-%d" % i


def client_stream(it, context):
    return b"".join(it)


def bidi(it, context):
    for m in it:
        yield m.upper()


def main():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    handler = grpc.method_handlers_generic_handler("h2ledger.Stream", {
        "Server": grpc.unary_stream_rpc_method_handler(server_stream),
        "Client": grpc.stream_unary_rpc_method_handler(client_stream),
        "Bidi": grpc.stream_stream_rpc_method_handler(bidi),
    })
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(json.dumps({"port": port}), flush=True)
    go = sys.argv[1] if len(sys.argv) > 1 else None
    for _ in range(600):
        if go is None:
            time.sleep(1)
            break
        if os.path.exists(go):
            break
        time.sleep(0.1)
    ch = grpc.insecure_channel("127.0.0.1:%d" % port)
    srv = ch.unary_stream("/h2ledger.Stream/Server")
    cli = ch.stream_unary("/h2ledger.Stream/Client")
    bid = ch.stream_stream("/h2ledger.Stream/Bidi")
    got = {"server_messages": 0, "client_reply_bytes": 0, "bidi_messages": 0}
    for i in range(3):
        got["server_messages"] += sum(1 for _ in srv(b"s%d" % i))
    for i in range(2):
        got["client_reply_bytes"] += len(cli(iter([b"c%d" % j for j in range(8)])))
    for i in range(2):
        got["bidi_messages"] += sum(1 for _ in bid(iter([b"b%d" % j for j in range(6)])))
    ch.close()
    time.sleep(0.2)
    server.stop(0.5).wait()
    print(json.dumps({"program": "python3-grpcio " + grpc.__version__ + " streaming",
                      "port": port, "calls_made": 7, "messages": got}), flush=True)


if __name__ == "__main__":
    main()
