#!/usr/bin/env python3
"""Writes hand-made seed inputs for the decode_reassemble fuzz target.

Usage: python3 make_seeds.py OUT_DIR   (regressions/ keeps a copy of each seed)
Record layout (see fuzz_targets/decode_reassemble.rs): selector, ts step, u16 BE length, frame.
Selector 4 is LINKTYPE_RAW (101), 1 is Ethernet, 6 is Linux SLL.
"""
import struct
import sys

C, S = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])


def ipv4_tcp(src, dst, sport, dport, seq, ack, flags, payload, cut=None):
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 0x50, flags, 65535, 0, 0)
    total = 20 + len(tcp) + len(payload)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, total, 0, 0x4000, 64, 6, 0, src, dst)
    pkt = ip + tcp + payload
    return pkt if cut is None else pkt[:cut]


def rec(selector, frame, step=1):
    return bytes([selector, step]) + struct.pack(">H", len(frame)) + frame


SYN, ACK, FIN, RST, PSH = 0x02, 0x10, 0x01, 0x04, 0x08


def scenario(isn_c, isn_s):
    c = lambda seq, fl, p=b"", **kw: rec(4, ipv4_tcp(C, S, 40000, 50051, seq, isn_s + 1, fl | ACK, p, **kw))
    s = lambda seq, ack, fl, p=b"": rec(4, ipv4_tcp(S, C, 50051, 40000, seq, ack, fl | ACK, p))
    out = rec(4, ipv4_tcp(C, S, 40000, 50051, isn_c, 0, SYN, b""))
    out += s(isn_s, isn_c + 1, SYN)
    d = isn_c + 1
    out += c(d, PSH, b"PRI * HTTP/2.0\r\n")
    out += c(d + 30, PSH, b"later bytes")  # out of order
    out += c(d + 16, PSH, b"\r\nSM\r\n\r\n")
    out += c(d + 16, PSH, b"\r\nSM\r\n\r\n")  # retransmission
    out += c(d + 24, PSH, b"xxxxxx", cut=44)  # snaplen cut
    out += s(isn_s + 1, d + 60, PSH, b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
    out += c(d + 41, FIN)
    out += s(isn_s + 10, d + 42, FIN)
    return out


seeds = {
    "seed-handshake.bin": scenario(100, 5000),
    "seed-wrap.bin": scenario(0xFFFFFFF0, 0xFFFFFFFE),
    "seed-rst.bin": scenario(7, 9) + rec(4, ipv4_tcp(S, C, 50051, 40000, 10, 0, RST, b"")),
    "seed-ethernet.bin": rec(1, bytes(12) + b"\x08\x00" + ipv4_tcp(C, S, 1, 2, 3, 4, ACK | PSH, b"hi") + b"\xaa" * 4),
    "seed-sll.bin": rec(6, b"\x00\x00\x03\x04\x00\x06" + bytes(8) + b"\x08\x00" + ipv4_tcp(C, S, 1, 2, 3, 4, ACK, b"x")),
}
for name, data in seeds.items():
    with open(f"{sys.argv[1]}/{name}", "wb") as f:
        f.write(data)
