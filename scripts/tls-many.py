#!/usr/bin/env python3
"""Many TLS connections from a real capture: copies of every TCP connection of TEMPLATE,
each copy with its own client address, written as one pcap.

usage: tls-many.py TEMPLATE.pcap COPIES OUT.pcap [--concurrent K] [--gap-ms MS]

TEMPLATE: a little-endian pcap (Ethernet, IPv4), e.g. captures/python-h2-nghttpd-tls.pcap
(hyper-h2 over Python's ssl: one TLS 1.2 and one TLS 1.3 connection). Copy i gets client
address 10.a.b.c (i in base 256; the server's address and every port stay), so the template's
key log decrypts every copy (the client randoms repeat). Copies are written in batches of K
(default 1): within a batch the copies' packets interleave round robin, so K connections are
open at once; each batch starts MS ms (default 10) after the previous one ends (timestamps
never go back: within a batch each packet is at least 1 ns after the one before). The IPv4
header checksum is recomputed; TCP checksums are left as captured (loopback captures carry
offloaded ones anyway; neither h2ledger nor tshark checks them by default).

Stdlib only. Used by scripts/soak-tls.sh.
"""

import argparse
import struct
import sys


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack_from("<I", data, 0)
    if magic not in (0xA1B2C3D4, 0xA1B23C4D):
        sys.exit("tls-many.py: %s: not a little-endian pcap" % path)
    nano = magic == 0xA1B23C4D
    linktype, = struct.unpack_from("<I", data, 20)
    if linktype != 1:
        sys.exit("tls-many.py: %s: linktype %d, want Ethernet (1)" % (path, linktype))
    pkts, at = [], 24
    while at + 16 <= len(data):
        s, frac, cap, orig = struct.unpack_from("<IIII", data, at)
        ts = s * 10**9 + (frac if nano else frac * 1000)
        pkts.append((ts, data[at + 16:at + 16 + cap], orig))
        at += 16 + cap
    return data[:24], nano, pkts


def ip_checksum(h):
    s = sum(struct.unpack("!%dH" % (len(h) // 2), h))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("template")
    ap.add_argument("copies", type=int)
    ap.add_argument("out")
    ap.add_argument("--concurrent", type=int, default=1)
    ap.add_argument("--gap-ms", type=float, default=10.0)
    a = ap.parse_args()
    header, nano, pkts = read_pcap(a.template)
    t0 = pkts[0][0]
    # The client of each template connection: the sender of its SYN (no ACK flag).
    clients = set()
    parsed = []
    for ts, b, orig in pkts:
        if len(b) < 34 or b[12:14] != b"\x08\x00" or b[23] != 6:
            sys.exit("tls-many.py: the template must be IPv4/TCP over Ethernet only")
        ihl = (b[14] & 15) * 4
        src, dst = b[26:30], b[30:34]
        sport, dport = struct.unpack_from("!HH", b, 14 + ihl)
        flags = b[14 + ihl + 13]
        if flags & 0x12 == 0x02:
            clients.add((src, sport))
        parsed.append((ts - t0, bytearray(b), orig, ihl, (src, sport) , (dst, dport)))
    if not clients:
        sys.exit("tls-many.py: no SYN in the template")
    out = open(a.out, "wb")
    out.write(header)
    gap = int(a.gap_ms * 1e6)
    div = 1 if nano else 1000
    k = max(1, a.concurrent)
    span = parsed[-1][0]
    last = 0
    for batch in range(0, a.copies, k):
        base = t0 + (batch // k) * (span + gap)
        copies = range(batch, min(batch + k, a.copies))
        for idx, (off, b, orig, ihl, s, d) in enumerate(parsed):
            for c in copies:
                addr = bytes([10, (c >> 16) & 255, (c >> 8) & 255, c & 255])
                p = bytearray(b)
                if s in clients:
                    p[26:30] = addr
                elif d in clients:
                    p[30:34] = addr
                p[24:26] = b"\0\0"
                p[24:26] = struct.pack("!H", ip_checksum(bytes(p[14:14 + ihl])))
                ts = last = max(base + off, last + 1)  # capture order = time order
                out.write(struct.pack("<IIII", ts // 10**9, (ts % 10**9) // div, len(p), orig))
                out.write(p)
    out.close()


if __name__ == "__main__":
    main()
