#!/usr/bin/env python3
"""Seeds for the h2ledger-keys fuzz targets (scripts/fuzz.sh runs this with the corpus dir).

record: ring buffer records as the BPF program writes them (src/record.rs layout): a TLS 1.3
handshake's four secrets, each twice (client and server), a TLS 1.2 master secret, and a
record whose label copy failed (the fallback path).
probe: mode 2 inputs (harness.rs `wrap`): a .text address, a Go 1.18-layout pcln table that
lists crypto/tls.(*Config).writeKeyLog, a Go >= 1.18 build info blob (go1.19.8), an empty
symbol table; and the same table alone (mode 1).

usage: make_seeds.py DIR
"""
import os
import struct
import sys

MAGIC = b"h2k1"
RECORD_LEN = 232


def record(label, random, secret, label_rc=0, ptr=0x6A1234):
    b = bytearray(RECORD_LEN)
    b[0:4] = MAGIC
    struct.pack_into("<QQQQQQ", b, 8, 123456789, (4242 << 32) | 4243, ptr,
                     len(label), len(random), len(secret))
    struct.pack_into("<iii", b, 56, label_rc, 0, 0)
    if label_rc == 0:
        b[72:72 + min(len(label), 64)] = label[:64]
    b[136:136 + min(len(random), 32)] = random[:32]
    b[168:168 + min(len(secret), 64)] = secret[:64]
    return bytes(b)


def pcln118(funcs):
    names = bytearray()
    offs = []
    for _, n in funcs:
        offs.append(len(names))
        names += n + b"\0"
    header = 8 + 8 * 8
    nametab = header
    functab = nametab + len(names)
    nf = len(funcs)
    funcs_at = (nf * 2 + 1) * 4
    out = bytearray(struct.pack("<IBBBB", 0xFFFFFFF0, 0, 0, 1, 8))
    for w in (nf, 0, 0x401000, nametab, 0, 0, 0, functab):
        out += struct.pack("<Q", w)
    out += names
    ft = bytearray()
    for i, (entry, _) in enumerate(funcs):
        ft += struct.pack("<II", entry, funcs_at + i * 16)
    ft += struct.pack("<I", 0x1000)
    for i, (entry, _) in enumerate(funcs):
        ft += struct.pack("<II", entry, offs[i]) + bytes(8)
    return bytes(out + ft)


def buildinfo(version):
    b = bytearray(b"\xff Go buildinf:" + bytes([8, 2]) + bytes(16))
    b += bytes([len(version)]) + version + bytes([0])
    return bytes(b)


def parts(*ps):
    out = bytearray()
    for p in ps[:-1]:
        out += struct.pack("<H", len(p)) + p
    return bytes(out + ps[-1])


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    r = bytes(range(1, 33))
    s13 = [record(l, r, bytes([i]) * 32) for i, l in enumerate(
        [b"CLIENT_HANDSHAKE_TRAFFIC_SECRET", b"SERVER_HANDSHAKE_TRAFFIC_SECRET",
         b"CLIENT_TRAFFIC_SECRET_0", b"SERVER_TRAFFIC_SECRET_0"])]
    seeds = {
        "record-tls13-twice.bin": b"".join(s13 + s13),
        "record-tls12.bin": record(b"CLIENT_RANDOM", r, bytes(range(48))),
        "record-label-fallback.bin": record(b"CLIENT_TRAFFIC_SECRET_0", r, bytes(48), label_rc=-14),
    }
    table = pcln118([(0x10, b"main.main"), (0x40, b"crypto/tls.(*Config).writeKeyLog"),
                     (0x80, b"runtime.main")])
    seeds["probe-wrapped-go119.bin"] = bytes([2]) + parts(
        struct.pack(">Q", 0x400000), table, buildinfo(b"go1.19.8"), b"", b"")
    seeds["probe-pcln118.bin"] = bytes([1]) + table
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
