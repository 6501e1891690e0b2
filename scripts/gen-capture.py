#!/usr/bin/env python3
"""Generated captures for `just soak`: shapes no real program makes on purpose, at any size.

usage: gen-capture.py KIND N OUT.pcap

  syn         N SYNs to one closed port (a scan): connections that never carry data
  sequential  N HTTP/2 connections opened and closed one after another (SYN, preface and
              SETTINGS, one HEADERS request and response, FIN both ways)
  concurrent  the same N connections, all opened first, then all requests, then all closed
  garbage-p   N KiB of b"P" in 4-byte segments on one connection (a preface-like prefix that
              never completes)
  garbage-rnd N MiB of random bytes in 1,460-byte segments on one connection
  valid-4b    a valid HTTP/2 connection of N KiB of DATA, in 4-byte segments (the baseline
              for garbage-p: same size, same segmenting)

Raw IPv4 (LINKTYPE_RAW 101), microsecond timestamps 1 ms apart.
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


def addr(i):
    """The client of connection i: a distinct (address, port) for up to 16M connections."""
    return bytes([127, 1 + (i >> 16) % 250, (i >> 8) & 0xFF, i & 0xFF]), 1024 + i % 60000


class Conn:
    def __init__(self, w, i):
        self.w, (self.caddr, self.cport) = w, addr(i)
        self.cseq, self.sseq = 1000, 5000

    def c(self, flags, payload=b""):
        self.w.packet(self.caddr, self.cport, SERVER, 80, self.cseq, self.sseq, flags, payload)
        self.cseq += len(payload) + (1 if flags & 0x03 else 0)

    def s(self, flags, payload=b""):
        self.w.packet(SERVER, 80, self.caddr, self.cport, self.sseq, self.cseq, flags, payload)
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
    else:
        sys.exit(f"gen-capture.py: unknown kind {kind!r} (see --help)")
    w.close()


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2)
    main()
