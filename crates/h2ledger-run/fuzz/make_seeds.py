#!/usr/bin/env python3
"""Writes seed inputs for the `run` fuzz target from the repository's small captures.

Usage: python3 make_seeds.py OUT_DIR [MAX_BYTES]   (scripts/fuzz.sh writes them to corpus/run)

Each classic .pcap of captures/ under 100 kB becomes three inputs in the harness's format
(fuzz/harness.rs), one per header byte (--every 1ns, --every 1s, no analysis): the header byte,
then per packet a raw-packet operation (0x80 | link type index), a time step, a u16 BE length
and the packet, cut after MAX_BYTES (default 4096, libFuzzer's default -max_len, so seeds do not
raise it). Real HTTP/2 (grpc-go, tonic, grpcio, curl, nghttp2, Node, hyper-h2, TLS without keys)
reaches the ledger, the analysis and the phases from the first execution.
"""
import os
import struct
import sys

LINKTYPES = [101, 1, 0, 113]  # the harness's LINKTYPES, by index


def packets(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        end, nano = "<", magic == b"\x4d\x3c\xb2\xa1"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        end, nano = ">", magic == b"\xa1\xb2\x3c\x4d"
    else:
        return None, []  # pcapng: left out
    linktype = struct.unpack(end + "I", data[20:24])[0] & 0xFFFF
    out, off = [], 24
    while off + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack(end + "IIII", data[off : off + 16])
        off += 16
        out.append((sec * 10**9 + (frac if nano else frac * 1000), data[off : off + incl]))
        off += incl
    return linktype, out


def time_step(delta_ns):
    """The harness's time byte closest below `delta_ns`: small steps in us, else 2^k ns."""
    us = delta_ns // 1000
    if us <= 63:
        return max(us, 0)
    return 0x80 | min(delta_ns.bit_length() - 1, 40)


def seed(linktype, pkts, max_bytes, head):
    out = bytearray([head])
    prev = pkts[0][0] if pkts else 0
    for ts, pkt in pkts:
        rec = bytes([0x80 | LINKTYPES.index(linktype), time_step(ts - prev)])
        rec += struct.pack(">H", len(pkt)) + pkt
        if len(out) + len(rec) > max_bytes:
            break
        out += rec
        prev = ts
    return bytes(out)


def main():
    out_dir = sys.argv[1]
    max_bytes = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
    captures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../captures")
    os.makedirs(out_dir, exist_ok=True)
    n = 0
    for name in sorted(os.listdir(captures)):
        path = os.path.join(captures, name)
        if not name.endswith(".pcap") or os.path.getsize(path) > 100_000:
            continue
        linktype, pkts = packets(path)
        if linktype not in LINKTYPES or not pkts:
            continue
        # Header byte 1: --every 1ns with the analysis; 2: --every 1s; 4: no analysis.
        for head in (1, 2, 4):
            with open(os.path.join(out_dir, f"seed-{name[:-5]}-{head}"), "wb") as f:
                f.write(seed(linktype, pkts, max_bytes, head))
            n += 1
    print(f"{n} seeds in {out_dir}")


if __name__ == "__main__":
    main()
