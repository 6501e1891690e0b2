#!/usr/bin/python3
"""The proto-grpcio captures' program: a python3-grpcio server and client of
h2ledger.test.v1.TestService (everything.proto) on 127.0.0.1, one channel, calls one after
another. Each side writes the MessageToDict form (default options) of every message it sends,
in order, to the ground-truth file: one JSON object per line,
{"call": K, "method": "/h2ledger.test.v1.TestService/Unary", "direction": "request"|"response",
 "index": I, "message": {...}}.

Needs Debian's python3-grpcio and python3-protobuf (run with /usr/bin/python3) and
everything_pb2.py from `protoc --python_out` (Debian's protobuf-compiler) in PB_DIR.
usage: grpcio.py PB_DIR TRUTH_FILE [--gzip] [GO_FILE]
prints {"port": P}, waits until GO_FILE exists (without it 1 s), makes the calls, prints a
JSON result line. --gzip: channel and server compress with gzip, one call with deflate.
"""
import json
import math
import os
import sys
import threading
import time
from concurrent import futures

sys.path.insert(0, sys.argv[1])

import grpc  # noqa: E402
from google.protobuf import json_format  # noqa: E402
from google.protobuf import any_pb2, duration_pb2, struct_pb2, timestamp_pb2  # noqa: E402,F401

import everything_pb2 as pb  # noqa: E402

SERVICE = "/h2ledger.test.v1.TestService/"
TRUTH = []
LOCK = threading.Lock()


def record(call, method, direction, index, msg):
    d = json_format.MessageToDict(msg)
    # The default is preserving_proto_field_name=False: the keys are the json_name.
    assert d == json_format.MessageToDict(msg, preserving_proto_field_name=False)
    with LOCK:
        TRUTH.append({"call": call, "method": SERVICE + method, "direction": direction,
                      "index": index, "message": d})


def call_of(context):
    return int(dict(context.invocation_metadata())["x-call"])


def ts(seconds, nanos=0):
    return timestamp_pb2.Timestamp(seconds=seconds, nanos=nanos)


def du(seconds, nanos=0):
    return duration_pb2.Duration(seconds=seconds, nanos=nanos)


def full(k):
    """A message with every field set, varied by k."""
    m = pb.Everything()
    s = m.scalars
    s.f_double = [1e21, 1e-7, 123456.789, -2.5][k % 4]
    s.f_float = [0.1, 3.4028235e38, 1e-7, -1.5][k % 4]
    s.f_int32 = [-2147483648, 2147483647, -1, 7][k % 4]
    s.f_int64 = [-9223372036854775808, 9223372036854775807, -1, 1 << 53][k % 4]
    s.f_uint32 = 4294967295
    s.f_uint64 = 18446744073709551615
    s.f_sint32 = -123456
    s.f_sint64 = -1234567890123
    s.f_fixed32 = 3000000000
    s.f_fixed64 = 12345678901234567890
    s.f_sfixed32 = -42
    s.f_sfixed64 = -4242424242424242
    s.f_bool = True
    s.f_string = "h\u00e9llo \"quoted\" \\ \n\t\u0001 \u2603 \U0001f389 %d" % k
    s.f_bytes = bytes(range(256))
    p = m.packed
    p.r_double.extend([0.0, -0.5, 1e300, float("inf"), float("-inf"), float("nan")])
    p.r_float.extend([0.1, 0.2, 16777217.0, 1e-45])
    p.r_int32.extend([0, -1, 300, -2147483648])
    p.r_int64.extend([0, -1, 1 << 40])
    p.r_uint32.extend([0, 1, 4294967295])
    p.r_uint64.extend([0, 18446744073709551615])
    p.r_sint32.extend([0, -1, 1, -2147483648, 2147483647])
    p.r_sint64.extend([-9223372036854775808, 9223372036854775807])
    p.r_fixed32.extend([1, 4294967295])
    p.r_fixed64.extend([1, 18446744073709551615])
    p.r_sfixed32.extend([-1, 1])
    p.r_sfixed64.extend([-1, 1])
    p.r_bool.extend([True, False, True])
    p.r_color.extend([pb.RED, pb.COLOR_UNSPECIFIED, pb.BLUE, 99])
    p.r_string.extend(["", "a", "\u00fc"])
    p.r_bytes.extend([b"", b"\x00\xff", b"abc"])
    p.r_unpacked.extend([1, 2, 3, -4])
    m.inner.name = "inner-%d" % k
    m.inner.id = k
    c = m.inner.children.add(name="child", id=1)
    c.children.add(name="grandchild", id=2).children.add(name="great", id=3)
    m.inners.add(name="a", id=1)
    m.inners.add()  # an empty message in a repeated field
    m.inners.add(name="c")
    m.counts["one"] = 1
    m.counts["zero"] = 0
    m.counts["minus"] = -1
    m.counts[""] = 5
    m.by_id[-5].name = "minus five"
    m.by_id[1 << 40].id = 7
    m.by_id[0].CopyFrom(pb.Inner())
    m.flags[True] = "yes"
    m.flags[False] = "no"
    m.colors[1] = pb.GREEN
    m.colors[4294967295] = pb.COLOR_UNSPECIFIED
    m.by_sint[-1] = "minus one"
    m.by_sint[2] = "two"
    m.by_fixed[7] = 0.25
    which = k % 4
    if which == 0:
        m.choice_text = "text %d" % k
    elif which == 1:
        m.choice_number = -(1 << 62)
    elif which == 2:
        m.choice_inner.name = "chosen"
    else:
        m.choice_color = pb.COLOR_UNSPECIFIED  # a oneof member at its default is still set
    m.color = pb.BLUE
    m.palette.extend([pb.RED, pb.GREEN])
    m.at.CopyFrom(ts(1700000000 + k, [0, 5000000, 123456000, 123456789][k % 4]))
    m.took.CopyFrom(du([1, -1, 0, 3600][k % 4], [500000000, -1000, -1, 0][k % 4]))
    inner = pb.Inner(name="in any", id=9)
    m.any.Pack(inner)
    m.meta.update({"s": "str", "n": 1.5, "i": 2, "b": True, "z": None,
                   "l": [1, "two", False, None, {"x": []}], "o": {"p": {"q": "r"}}})
    m.meta.fields["unset"].CopyFrom(struct_pb2.Value())  # no kind: MessageToDict prints null
    m.value.list_value.extend([1, "x", None])
    m.list.extend([{"a": 1}, [], "s", 0])
    m.w_double.value = 0.0  # a wrapper at its default is still present
    m.w_float.value = 0.1
    m.w_int64.value = -1
    m.w_uint64.value = 18446744073709551615
    m.w_int32.value = -7
    m.w_uint32.value = 7
    m.w_bool.value = False
    m.w_string.value = "wrapped"
    m.w_bytes.value = b"\x01\x02\x03"
    m.mask.paths.extend(["foo_bar", "baz.qux_quux", "x"])
    m.nothing.SetInParent()
    m.maybe = 0  # explicit presence: printed although 0
    m.times.extend([ts(0), ts(-1, 999999999), ts(253402300799, 999999999), ts(-62135596800),
                    ts(951782400, 1000)])
    m.durations.extend([du(0), du(0, -500000000), du(-3, -100000000), du(315576000000),
                        du(1, 10000), du(0, 1)])
    m.snake_case_name_2 = "snake"
    m.custom = 37
    a = m.anys.add()
    a.Pack(ts(1, 500000000))
    m.anys.add().Pack(du(-2, -250000000))
    m.anys.add().Pack(struct_pb2.Value(string_value="v"))
    m.anys.add()  # an empty Any: {}
    m.maybe_text = ""
    return m


def small(k):
    """A small message, different for each k: a few fields."""
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
    m.at.CopyFrom(ts(k * 1000, k * 1000000))
    if k % 2:
        m.scalars.f_float = k / 10.0
        m.scalars.f_double = -k / 3.0
    return m


def big(k, compressible):
    """About 200 KB: a blob that takes several DATA frames."""
    m = pb.Everything()
    n = 200 * 1024
    if compressible:
        unit = ("row %d of a compressible blob; " % k).encode()
        m.blob = (unit * (n // len(unit) + 1))[:n]
    else:
        # A fixed pseudo-random sequence (xorshift), so the capture is the same every time.
        x = 0x9E3779B9 + k
        out = bytearray(n)
        for i in range(n):
            x ^= (x << 13) & 0xFFFFFFFF
            x ^= x >> 17
            x ^= (x << 5) & 0xFFFFFFFF
            out[i] = x & 0xFF
        m.blob = bytes(out)
    m.inner.name = "big-%d" % k
    m.snake_case_name_2 = "big"
    return m


class Servicer:
    def unary(self, req, context):
        k = call_of(context)
        if len(req.blob) > 100000:
            resp = big(k + 1000, COMPRESSIBLE)
        else:
            resp = full(k + 1)
        record(k, "Unary", "response", 0, resp)
        return resp

    def empty(self, req, context):
        k = call_of(context)
        resp = pb.Nothing()
        record(k, "Empty", "response", 0, resp)
        return resp

    def server_stream(self, req, context):
        k = call_of(context)
        for i in range(5):
            resp = small(100 * k + i) if i != 2 else pb.Everything()  # one empty message
            record(k, "ServerStream", "response", i, resp)
            yield resp

    def client_stream(self, it, context):
        k = call_of(context)
        n = sum(1 for _ in it)
        resp = small(1000 + n)
        record(k, "ClientStream", "response", 0, resp)
        return resp

    def bidi(self, it, context):
        k = call_of(context)
        for i, req in enumerate(it):
            resp = small(2000 + 10 * k + i)
            resp.inner.name = "echo " + req.inner.name
            record(k, "Bidi", "response", i, resp)
            yield resp


COMPRESSIBLE = False


def main():
    global COMPRESSIBLE
    args = sys.argv[3:]
    gzip = "--gzip" in args
    args = [a for a in args if a != "--gzip"]
    COMPRESSIBLE = gzip
    comp = grpc.Compression.Gzip if gzip else grpc.Compression.NoCompression
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), compression=comp)
    s = Servicer()
    ser = lambda m: m.SerializeToString()  # noqa: E731
    ev = pb.Everything.FromString
    handler = grpc.method_handlers_generic_handler("h2ledger.test.v1.TestService", {
        "Unary": grpc.unary_unary_rpc_method_handler(s.unary, ev, ser),
        "Empty": grpc.unary_unary_rpc_method_handler(s.empty, pb.Nothing.FromString, ser),
        "ServerStream": grpc.unary_stream_rpc_method_handler(s.server_stream, ev, ser),
        "ClientStream": grpc.stream_unary_rpc_method_handler(s.client_stream, ev, ser),
        "Bidi": grpc.stream_stream_rpc_method_handler(s.bidi, ev, ser),
    })
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(json.dumps({"port": port}), flush=True)
    go = args[0] if args else None
    for _ in range(600):
        if go is None:
            time.sleep(1)
            break
        if os.path.exists(go):
            break
        time.sleep(0.1)
    ch = grpc.insecure_channel("127.0.0.1:%d" % port, compression=comp)
    stub = {
        "Unary": ch.unary_unary(SERVICE + "Unary", ser, ev),
        "Empty": ch.unary_unary(SERVICE + "Empty", ser, pb.Nothing.FromString),
        "ServerStream": ch.unary_stream(SERVICE + "ServerStream", ser, ev),
        "ClientStream": ch.stream_unary(SERVICE + "ClientStream", ser, ev),
        "Bidi": ch.stream_stream(SERVICE + "Bidi", ser, ev),
    }
    calls = 0

    def md(k):
        return (("x-call", str(k)),)

    def send(k, method, i, m):
        record(k, method, "request", i, m)
        return m

    k = 0
    stub["Empty"](send(k, "Empty", 0, pb.Nothing()), metadata=md(k))
    k += 1
    stub["Unary"](send(k, "Unary", 0, full(0)), metadata=md(k))
    k += 1
    stub["Unary"](send(k, "Unary", 0, full(2)), metadata=md(k))
    k += 1
    stub["Unary"](send(k, "Unary", 0, big(k, gzip)), metadata=md(k))
    k += 1
    list(stub["ServerStream"](send(k, "ServerStream", 0, small(7)), metadata=md(k)))
    k += 1
    stub["ClientStream"]((send(k, "ClientStream", i, small(10 + i)) for i in range(4)), metadata=md(k))
    k += 1
    list(stub["Bidi"]((send(k, "Bidi", i, small(20 + i)) for i in range(4)), metadata=md(k)))
    k += 1
    if gzip:
        # One call compressed with deflate instead.
        stub["Unary"](send(k, "Unary", 0, full(3)), metadata=md(k),
                      compression=grpc.Compression.Deflate)
        k += 1
    calls = k
    ch.close()
    time.sleep(0.2)
    server.stop(0.5).wait()
    TRUTH.sort(key=lambda t: (t["call"], t["direction"] != "request", t["index"]))
    with open(sys.argv[2], "w") as f:
        for t in TRUTH:
            f.write(json.dumps(t, sort_keys=True) + "\n")
    print(json.dumps({"program": "python3-grpcio " + grpc.__version__ + " everything",
                      "port": port, "calls_made": calls, "messages": len(TRUTH),
                      "gzip": gzip}), flush=True)


if __name__ == "__main__":
    main()
