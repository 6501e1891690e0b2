#!/usr/bin/env python3
"""Generated captures for `just soak`: shapes no real program makes on purpose, at any size.

usage: gen-capture.py KIND N OUT.pcap

  syn         N SYNs to one closed port (a scan): connections that never carry data
  sequential  N HTTP/2 connections opened and closed one after another (SYN, preface and
              SETTINGS, one HEADERS request and response, FIN both ways)
  concurrent  the same N connections, all opened first, then all requests, then all closed
  handshakes  N connections: every TCP handshake first, then every request (preface, SETTINGS,
              HEADERS), then every response (SETTINGS, ACK, HEADERS); never closed
  handshakes6 the same over IPv6
  other       N connections of a binary protocol that is not HTTP/2 (a PostgreSQL-like
              SSLRequest, then a message holding three chained, plausible HTTP/2 frame heads),
              every handshake first, then every first message, then every second: more than
              --max-connections open at once, never closed
  streams     one connection opening N + 10 streams (HEADERS with END_HEADERS, never ended);
              the server answers the last 10 with headers and trailers; never closed
  grpcstreams one connection opening N gRPC calls (POST, content-type application/grpc), each
              with one DATA frame holding the first 10 bytes of a 100-byte message; never
              ended, never closed
  pings       one connection, N PINGs from the client that are never ACKed; then closed
  rsts        one connection, N streams each opened and reset (RST_STREAM CANCEL); then closed
  garbage-p   N KiB of b"P" in 4-byte segments on one connection (a preface-like prefix that
              never completes)
  garbage-rnd N MiB of random bytes in 1,460-byte segments on one connection
  valid-4b    a valid HTTP/2 connection of N KiB of DATA, in 4-byte segments (the baseline
              for garbage-p: same size, same segmenting)

Raw IP (LINKTYPE_RAW 101: IPv4, IPv6 for handshakes6), microsecond timestamps 1 ms apart.
"""

import os
import random
import struct
import sys

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(kind, flags, stream, payload=b""):
    n = len(payload)
    return struct.pack(">BHBBI", n >> 16, n & 0xFFFF, kind, flags, stream) + payload


SETTINGS = frame(4, 0, 0)
SETTINGS_ACK = frame(4, 1, 0)
# HEADERS with END_HEADERS: indexed :method GET (2), :path / (4), :scheme http (6)
REQUEST = frame(1, 0x5, 1, bytes([0x82, 0x84, 0x86]))
# :status 200 (8), END_STREAM | END_HEADERS
RESPONSE = frame(1, 0x5, 1, bytes([0x88]))


class Writer:
    def __init__(self, path):
        self.f = open(path, "wb", buffering=1 << 20)
        self.f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 101))
        self.t = 1_700_000_000_000_000  # microseconds

    def packet(self, src, sport, dst, dport, seq, ack, flags, payload=b""):
        if len(src) == 16:
            ip = struct.pack(">IHBB16s16s", 6 << 28, 20 + len(payload), 6, 64, src, dst)
        else:
            total = 40 + len(payload)
            ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, total, 0, 0x4000, 64, 6, 0, src, dst)
        tcp = struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                          0x50, flags, 0xFFFF, 0, 0)
        data = ip + tcp + payload
        self.t += 1000
        self.f.write(struct.pack("<IIII", self.t // 1_000_000, self.t % 1_000_000,
                                 len(data), len(data)))
        self.f.write(data)

    def close(self):
        self.f.close()


SYN, SYNACK, ACK, PSH, FIN = 0x02, 0x12, 0x10, 0x18, 0x11
CLIENT = bytes([127, 0, 0, 1])
SERVER = bytes([127, 0, 0, 2])


SERVER6 = bytes(15) + b"\x02"


def addr(i, v6=False):
    """The client of connection i: a distinct (address, port) for up to 16M connections."""
    if v6:
        return b"\xfd" + bytes(11) + i.to_bytes(4, "big"), 1024 + i % 60000
    return bytes([127, 1 + (i >> 16) % 250, (i >> 8) & 0xFF, i & 0xFF]), 1024 + i % 60000


class Conn:
    def __init__(self, w, i, v6=False):
        self.w, (self.caddr, self.cport) = w, addr(i, v6)
        self.server = SERVER6 if v6 else SERVER
        self.cseq, self.sseq = 1000, 5000

    def c(self, flags, payload=b""):
        self.w.packet(self.caddr, self.cport, self.server, 80, self.cseq, self.sseq, flags,
                      payload)
        self.cseq += len(payload) + (1 if flags & 0x03 else 0)

    def s(self, flags, payload=b""):
        self.w.packet(self.server, 80, self.caddr, self.cport, self.sseq, self.cseq, flags,
                      payload)
        self.sseq += len(payload) + (1 if flags & 0x03 else 0)

    def open(self):
        self.c(SYN)
        self.s(SYNACK)
        self.c(PSH, PREFACE + SETTINGS)
        self.s(PSH, SETTINGS + SETTINGS_ACK)

    def call(self):
        self.c(PSH, SETTINGS_ACK + REQUEST)
        self.s(PSH, RESPONSE)

    def close(self):
        self.c(FIN)
        self.s(FIN)


def main():
    kind, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    w = Writer(out)
    if kind == "syn":
        for i in range(n):
            caddr, cport = addr(i)
            w.packet(caddr, cport, SERVER, 81, 1000, 0, SYN)
    elif kind == "sequential":
        for i in range(n):
            c = Conn(w, i)
            c.open()
            c.call()
            c.close()
    elif kind == "concurrent":
        conns = [Conn(w, i) for i in range(n)]
        for c in conns:
            c.open()
        for c in conns:
            c.call()
        for c in conns:
            c.close()
    elif kind in ("garbage-p", "valid-4b"):
        c = Conn(w, 0)
        c.c(SYN)
        c.s(SYNACK)
        if kind == "garbage-p":
            body = b"P" * (n * 1024)
        else:
            body = PREFACE + SETTINGS
            chunk = frame(0, 0, 1, b"x" * 1000)
            while len(body) < n * 1024:
                body += chunk
        for at in range(0, len(body), 4):
            c.c(PSH, body[at:at + 4])
        c.close()
    elif kind == "garbage-rnd":
        rnd = random.Random(7)
        c = Conn(w, 0)
        c.c(SYN)
        c.s(SYNACK)
        for _ in range(n * 1024 * 1024 // 1460):
            c.c(PSH, rnd.randbytes(1460))
        c.close()
    elif kind in ("handshakes", "handshakes6"):
        conns = [Conn(w, i, kind == "handshakes6") for i in range(n)]
        for c in conns:
            c.c(SYN)
            c.s(SYNACK)
            c.c(ACK)
        for c in conns:
            c.c(PSH, PREFACE + SETTINGS + REQUEST)
        for c in conns:
            c.s(PSH, SETTINGS + SETTINGS_ACK + RESPONSE)
    elif kind == "other":
        conns = [Conn(w, i) for i in range(n)]
        chain = frame(0, 0, 1, b"x" * 20) + frame(8, 0, 0, (1).to_bytes(4, "big")) \
            + frame(6, 0, 0, b"12345678")
        for c in conns:
            c.c(SYN)
            c.s(SYNACK)
            c.c(ACK)
        for c in conns:
            c.c(PSH, b"\x00\x00\x00\x08\x04\xd2\x16\x2f")
        for c in conns:
            c.c(PSH, chain)
    elif kind == "streams":
        c = Conn(w, 0)
        c.open()
        c.c(PSH, SETTINGS_ACK)
        batch = []
        for i in range(n + 10):
            # HEADERS, END_HEADERS only: :method GET, :path /, :scheme http
            batch.append(frame(1, 0x4, 2 * i + 1, bytes([0x82, 0x84, 0x86])))
            if len(batch) == 100:
                c.c(PSH, b"".join(batch))
                batch = []
        if batch:
            c.c(PSH, b"".join(batch))
        for i in range(n, n + 10):
            # :status 200, then trailers (grpc-status: 0 as a literal) ending the stream
            trailer = b"\x00\x0bgrpc-status\x010"
            c.s(PSH, frame(1, 0x4, 2 * i + 1, b"\x88") + frame(1, 0x5, 2 * i + 1, trailer))
    elif kind == "grpcstreams":
        c = Conn(w, 0)
        c.open()
        c.c(PSH, SETTINGS_ACK)
        # :method POST, :path /, :scheme http, content-type application/grpc (literal, name 31)
        block = bytes([0x83, 0x84, 0x86, 0x0F, 0x10, 0x10]) + b"application/grpc"
        part = b"\x00\x00\x00\x00\x64" + b"x" * 10
        batch = []
        for i in range(n):
            batch.append(frame(1, 0x4, 2 * i + 1, block) + frame(0, 0, 2 * i + 1, part))
            if len(batch) == 50:
                c.c(PSH, b"".join(batch))
                batch = []
        if batch:
            c.c(PSH, b"".join(batch))
    elif kind == "pings":
        c = Conn(w, 0)
        c.open()
        c.c(PSH, SETTINGS_ACK)
        for i in range(0, n, 100):
            c.c(PSH, b"".join(frame(6, 0, 0, (i + k).to_bytes(8, "big"))
                              for k in range(min(100, n - i))))
        c.close()
    elif kind == "rsts":
        c = Conn(w, 0)
        c.open()
        c.c(PSH, SETTINGS_ACK)
        for i in range(0, n, 50):
            c.c(PSH, b"".join(frame(1, 0x4, 2 * (i + k) + 1, bytes([0x82, 0x84, 0x86]))
                              + frame(3, 0, 2 * (i + k) + 1, (8).to_bytes(4, "big"))
                              for k in range(min(50, n - i))))
        c.close()
    else:
        sys.exit(f"gen-capture.py: unknown kind {kind!r} (see --help)")
    w.close()


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2)
    main()
