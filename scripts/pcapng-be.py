#!/usr/bin/env python3
"""pcapng-be.py IN.pcap OUT.pcapng: the packets of a classic pcap as a big-endian pcapng with
two interfaces of the pcap's link type, the packets alternating between them (even ones on
interface 0, odd ones on 1), microsecond timestamps. No common tool writes big-endian pcapng
(editcap and dumpcap write the machine's order), and `scripts/bench.sh` times this form of the
same packets against tcpdump reading it (issue 24: every input format at the same speed).
"""
import struct
import sys


def block(out, kind, body):
    pad = (-len(body)) % 4
    total = 12 + len(body) + pad
    out.write(struct.pack(">II", kind, total) + body + b"\0" * pad + struct.pack(">I", total))


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src, "rb") as f:
        data = f.read()
    magic = data[:4]
    orders = {
        b"\xd4\xc3\xb2\xa1": ("<", 1_000),
        b"\xa1\xb2\xc3\xd4": (">", 1_000),
        b"\x4d\x3c\xb2\xa1": ("<", 1),
        b"\xa1\xb2\x3c\x4d": (">", 1),
    }
    if magic not in orders:
        sys.exit(f"pcapng-be.py: {src} is not a classic pcap (magic {magic.hex()})")
    e, ns_per_unit = orders[magic]
    snaplen, linktype = struct.unpack(e + "II", data[16:24])
    with open(dst, "wb") as out:
        # Section header: byte-order magic, version 1.0, section length unknown.
        block(out, 0x0A0D0D0A, struct.pack(">IHHq", 0x1A2B3C4D, 1, 0, -1))
        for _ in range(2):
            block(out, 1, struct.pack(">HHI", linktype & 0xFFFF, 0, snaplen))
        off, i = 24, 0
        while off + 16 <= len(data):
            sec, frac, incl, orig = struct.unpack(e + "IIII", data[off : off + 16])
            pkt = data[off + 16 : off + 16 + incl]
            off += 16 + incl
            us = sec * 1_000_000 + frac * ns_per_unit // 1_000
            head = struct.pack(">IIIII", i % 2, us >> 32, us & 0xFFFFFFFF, len(pkt), orig)
            block(out, 6, head + pkt)
            i += 1


if __name__ == "__main__":
    main()
