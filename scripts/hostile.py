#!/usr/bin/env python3
"""Hostile, differential corpus: small captures that real stacks and broken middleboxes make,
each replayed by h2ledger (with and without --port) and compared with tshark (issue 36).

usage: scripts/hostile.py [--bin PATH] [--dir DIR] [--only SUBSTR[,SUBSTR...]] [--list]
                          [--limit-mib N] [--quick] [--no-tshark] [--write-only]

Every case is built here from bytes (stdlib only), written to DIR (default
/tmp/h2ledger-hostile), and then:
  * `h2ledger replay F -T json` and `h2ledger replay F -T json --port P` run (peak RSS from
    wait4); exit status must be 0 or 1 (1: a warning such as a truncated file), stderr must
    hold no panic, peak RSS at most --limit-mib (64) plus the file's size;
  * `frames F -T jsonl`, `calls F -T jsonl` and `replay F --analyze` must not fail or panic
    either (exit 0, 1 or 3);
  * scripts/tshark-ledger.py builds the ledger from tshark 4.0 (auto-detected ports, then
    --port P), and the contract keys (connections, calls, per side every frame type, writes,
    bytes, bdp_pings) must be equal, unless the case states the true value itself ("truth":
    cases where tshark is wrong, proved from the bytes in the case's note; the values come
    from the bytes the case wrote, not from h2ledger);
  * cases marked `error` are not captures: a one-line error (exit 2) naming the file.
One line per case and mode; the last line counts the cases that differ. Exit status 1 when
one does. --quick: the cases of tests/it/hostile.rs (`just test`), each compared with one
tshark run (the case's port given); --no-tshark: only the process checks. Cases (--list prints them with their notes) by kind: link, file, ip, tcp, h2.
"""

import argparse
import json
import os
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

# ---------------------------------------------------------------------------------------------
# HTTP/2 frames


def frame(kind, flags, stream, payload=b"", length=None):
    n = len(payload) if length is None else length
    return struct.pack(">BHBBI", n >> 16, n & 0xFFFF, kind, flags, stream) + payload


DATA, HEADERS, PRIORITY, RST, SETTINGS, PUSH, PING, GOAWAY, WU, CONT = range(10)
SETTINGS0 = frame(SETTINGS, 0, 0)
SETTINGS_ACK = frame(SETTINGS, 1, 0)
REQ = bytes([0x82, 0x84, 0x86, 0x41, 0x01, 0x68])  # GET / http, :authority h
RESP = bytes([0x88])  # :status 200


def req(sid=1, flags=0x5):
    return frame(HEADERS, flags, sid, REQ)


def resp(sid=1, flags=0x4):
    return frame(HEADERS, flags, sid, RESP)


def data(sid=1, body=b"hello", flags=0x1):
    return frame(DATA, flags, sid, body)


def settings(*pairs, flags=0):
    return frame(SETTINGS, flags, 0, b"".join(struct.pack(">HI", k, v) for k, v in pairs))


# ---------------------------------------------------------------------------------------------
# IP, TCP, links


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(">%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def v4(a):
    return bytes(a)


V4C, V4S = v4([10, 0, 0, 1]), v4([10, 0, 0, 2])
V6C, V6S = b"\xfd" + bytes(14) + b"\x01", b"\xfd" + bytes(14) + b"\x02"

FIN, SYN, RSTF, PSH, ACK, URG = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20


def tcp_header(sport, dport, seq, ack, flags, options=b"", win=0xFFFF, urg=0):
    options += b"\0" * (-len(options) % 4)
    off = (20 + len(options)) // 4
    return struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                       off << 4, flags, win, 0, urg) + options


def with_tcp_csum(src, dst, tcp, payload, good=True):
    seg = tcp + payload
    if len(src) == 4:
        pseudo = src + dst + struct.pack(">BBH", 0, 6, len(seg) & 0xFFFF)
    else:
        pseudo = src + dst + struct.pack(">IxxxB", len(seg), 6)
    c = csum(pseudo + seg) if good else 0xBEEF
    return seg[:16] + struct.pack(">H", c) + seg[18:]


def ipv4(src, dst, proto, payload, ident=0, flags_frag=0x4000, options=b"", total=None,
         good=True):
    options += b"\0" * (-len(options) % 4)
    ihl = 5 + len(options) // 4
    tl = (4 * ihl + len(payload) if total is None else total) & 0xFFFF
    h = struct.pack(">BBHHHBBH4s4s", 0x40 | ihl, 0, tl, ident, flags_frag, 64, proto, 0, src,
                    dst) + options
    c = csum(h) if good else 0xBEEF
    return h[:10] + struct.pack(">H", c) + h[12:] + payload


def ipv6(src, dst, proto, payload, ext=()):
    """ext: (next-header number, body bytes without the first two) in order."""
    chain = b""
    nhs = [e[0] for e in ext] + [proto]
    for i, (_, body) in enumerate(ext):
        if nhs[i] == 44:  # fragment header: fixed 8 bytes
            chain += bytes([nhs[i + 1], 0]) + body
        else:
            body += b"\0" * (-(len(body) + 2) % 8)
            chain += bytes([nhs[i + 1], (len(body) + 2) // 8 - 1]) + body
    first = nhs[0]
    return struct.pack(">IHBB16s16s", 6 << 28, len(chain) + len(payload), first, 64, src,
                       dst) + chain + payload


def ether(ip, tags=(), etype=None, src=b"\x02\0\0\0\0\x01", dst=b"\x02\0\0\0\0\x02"):
    if etype is None:
        etype = 0x0800 if ip[0] >> 4 == 4 else 0x86DD
    h = dst + src
    for tpid, tci in tags:
        h += struct.pack(">HH", tpid, tci)
    return h + struct.pack(">H", etype) + ip


def sll(ip, proto=None):
    proto = proto or (0x0800 if ip[0] >> 4 == 4 else 0x86DD)
    return struct.pack(">HHH8sH", 0, 772, 6, bytes(8), proto) + ip


def sll2(ip, proto=None):
    proto = proto or (0x0800 if ip[0] >> 4 == 4 else 0x86DD)
    return struct.pack(">HHIHBB8s", proto, 0, 1, 772, 0, 6, bytes(8)) + ip


def null(ip, order="<"):
    fam = 2 if ip[0] >> 4 == 4 else 30
    return struct.pack(order + "I", fam) + ip


# ---------------------------------------------------------------------------------------------
# A connection: both sides' sequence numbers, packets as raw IP


class Conn:
    """A TCP connection; every method appends packets (raw IP bytes) to `self.pkts`."""

    def __init__(self, v6=False, cport=40000, sport=8080, cisn=1000, sisn=5000, caddr=None,
                 saddr=None):
        self.v6 = v6
        self.ca = caddr or (V6C if v6 else V4C)
        self.sa = saddr or (V6S if v6 else V4S)
        self.cp, self.sp = cport, sport
        self.cseq, self.sseq = cisn, sisn
        self.pkts = []

    def ip(self, src, dst, tcp, payload, **kw):
        seg = with_tcp_csum(src, dst, tcp, payload, kw.pop("good_tcp", True))
        if self.v6:
            return ipv6(src, dst, 6, seg, kw.pop("ext", ()))
        return ipv4(src, dst, 6, seg, **kw)

    def raw(self, client, seq, ack, flags, payload=b"", options=b"", win=0xFFFF, **kw):
        src, dst, sp, dp = ((self.ca, self.sa, self.cp, self.sp) if client
                            else (self.sa, self.ca, self.sp, self.cp))
        p = self.ip(src, dst, tcp_header(sp, dp, seq, ack, flags, options, win), payload, **kw)
        self.pkts.append(p)
        return p

    def c(self, flags=PSH | ACK, payload=b"", advance=True, **kw):
        if len(payload) > 60000 and advance:
            self.c(flags & ~FIN, payload[:60000], **dict(kw))
            return self.c(flags, payload[60000:], **kw)
        p = self.raw(True, self.cseq, self.sseq, flags, payload, **kw)
        if advance:
            self.cseq += len(payload) + (1 if flags & (SYN | FIN) else 0)
        return p

    def s(self, flags=PSH | ACK, payload=b"", advance=True, **kw):
        if len(payload) > 60000 and advance:
            self.s(flags & ~FIN, payload[:60000], **dict(kw))
            return self.s(flags, payload[60000:], **kw)
        p = self.raw(False, self.sseq, self.cseq, flags, payload, **kw)
        if advance:
            self.sseq += len(payload) + (1 if flags & (SYN | FIN) else 0)
        return p

    def handshake(self):
        self.c(SYN)
        self.s(SYN | ACK)
        self.c(ACK)

    def exchange(self):
        """A whole call: preface, SETTINGS both ways, GET, 200 with a body."""
        self.c(payload=PREFACE + SETTINGS0 + req())
        self.s(payload=SETTINGS0 + SETTINGS_ACK + resp() + data())
        self.c(payload=SETTINGS_ACK)

    def close(self):
        self.c(FIN | ACK)
        self.s(FIN | ACK)
        self.c(ACK)


def simple(v6=False, **kw):
    c = Conn(v6=v6, **kw)
    c.handshake()
    c.exchange()
    c.close()
    return c.pkts


# ---------------------------------------------------------------------------------------------
# Files


T0 = 1_700_000_000


def pcap(packets, linktype=101, link=lambda p: p, endian="<", nano=False, snaplen=262144,
         cut=None):
    """cut: {packet index: captured length} (snaplen-cut packets)."""
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    out = [struct.pack(endian + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)]
    for i, p in enumerate(packets):
        b = link(p)
        incl = len(b) if not cut or i not in cut else min(len(b), cut[i])
        frac = i * 1000 * (1000 if nano else 1)
        out.append(struct.pack(endian + "IIII", T0 + frac // (10**9 if nano else 10**6),
                               frac % (10**9 if nano else 10**6), incl, len(b)))
        out.append(b[:incl])
    return b"".join(out)


def pad4(b):
    return b + b"\0" * (-len(b) % 4)


def block(kind, body, endian="<"):
    n = 12 + len(pad4(body))
    return struct.pack(endian + "II", kind, n) + pad4(body) + struct.pack(endian + "I", n)


def opt(code, val, endian="<"):
    return struct.pack(endian + "HH", code, len(val)) + pad4(val)


def shb(endian="<"):
    return block(0x0A0D0D0A, struct.pack(endian + "IHHq", 0x1A2B3C4D, 1, 0, -1), endian)


def idb(linktype, endian="<", tsresol=None):
    opts = b""
    if tsresol is not None:
        opts = opt(9, bytes([tsresol]), endian) + struct.pack(endian + "HH", 0, 0)
    return block(1, struct.pack(endian + "HHI", linktype, 0, 262144) + opts, endian)


def epb(iface, t_units, b, endian="<", orig=None):
    return block(6, struct.pack(endian + "IIIII", iface, t_units >> 32, t_units & 0xFFFFFFFF,
                                len(b), len(b) if orig is None else orig) + b, endian)


def pcapng(packets, ifaces, which, endian="<", extra=b"", resol=6):
    """ifaces: [(linktype, link fn)]; which(i) -> interface of packet i."""
    out = [shb(endian)] + [idb(lt, endian, None if resol == 6 else resol) for lt, _ in ifaces]
    out.append(extra)
    unit = 10**resol
    for i, p in enumerate(packets):
        k = which(i)
        t = T0 * unit + i * unit // 1000
        out.append(epb(k, t, ifaces[k][1](p), endian))
    return b"".join(out)


# ---------------------------------------------------------------------------------------------
# Cases: name -> (kind, builder returning file bytes, server port, note, truth or None)

CASES = []


def case(kind, note, port=8080, truth=None, quick=False, error=None, tshark=True):
    def wrap(fn):
        CASES.append({"name": fn.__name__.replace("_", "-"), "kind": kind, "build": fn,
                      "port": port, "note": note, "truth": truth, "quick": quick,
                      "error": error, "tshark": tshark})
        return fn
    return wrap


# --- link and file formats ---

@case("link", "Ethernet II, IPv4", quick=True)
def eth():
    return pcap(simple(), 1, ether)


@case("link", "802.1Q VLAN tag", quick=True)
def eth_vlan():
    return pcap(simple(), 1, lambda p: ether(p, [(0x8100, 100)]))


@case("link", "QinQ: 802.1ad outer tag, 802.1Q inner", quick=True)
def eth_qinq():
    return pcap(simple(), 1, lambda p: ether(p, [(0x88A8, 10), (0x8100, 20)]))


@case("link", "Ethernet, IPv6")
def eth_v6():
    return pcap(simple(v6=True), 1, ether)


@case("link", "Ethernet frames padded to 60 bytes plus a 4-byte trailer (FCS-like)")
def eth_trailer():
    def link(p):
        f = ether(p)
        return f + b"\0" * max(0, 60 - len(f)) + b"\xde\xad\xbe\xef"
    return pcap(simple(), 1, link)


@case("link", "MPLS label stack (two labels) over Ethernet", quick=True)
def eth_mpls():
    def link(p):
        return ether(struct.pack(">II", (16 << 12) | 64, (17 << 12) | 0x100 | 64) + p,
                     etype=0x8847)
    return pcap(simple(), 1, link)


@case("link", "PPPoE session over Ethernet")
def eth_pppoe():
    def link(p):
        ppp = struct.pack(">H", 0x0021) + p
        return ether(struct.pack(">BBHH", 0x11, 0, 1, len(ppp)) + ppp, etype=0x8864)
    return pcap(simple(), 1, link)


@case("link", "Linux cooked v1 (SLL)")
def sll1():
    return pcap(simple(), 113, sll)


@case("link", "Linux cooked v2 (SLL2), IPv6", quick=True)
def sll2_v6():
    return pcap(simple(v6=True), 276, sll2)


@case("link", "BSD NULL, family little-endian")
def null_le():
    return pcap(simple(), 0, null)


@case("link", "BSD NULL, family big-endian, IPv6 (macOS AF_INET6 30)")
def null_be_v6():
    return pcap(simple(v6=True), 0, lambda p: null(p, ">"))


@case("link", "OpenBSD LOOP (108)")
def loop108():
    return pcap(simple(), 108, lambda p: null(p, ">"))


@case("link", "raw IP link type 12, 14, 228 and 229 in four files: here 14")
def raw14():
    return pcap(simple(), 14)


@case("link", "LINKTYPE_IPV6 (229)")
def raw229():
    return pcap(simple(v6=True), 229)


@case("link", "802.11 QoS data frames after a radiotap header (LLC/SNAP), a beacon among them")
def radiotap():
    def link(p):
        rt = struct.pack("<BBHI", 0, 0, 8, 0)
        fc = bytes([0x88, 0x01])  # QoS data, to DS
        mac = fc + bytes(2) + bytes(18) + bytes(2) + bytes(2)  # addresses, sequence, QoS
        return rt + mac + bytes([0xAA, 0xAA, 0x03, 0, 0, 0]) + struct.pack(">H", 0x0800) + p
    beacon = struct.pack("<BBHI", 0, 0, 8, 0) + bytes([0x80, 0]) + bytes(30)
    frames = [link(p) for p in simple()]
    return pcap([beacon] + frames, 127, lambda p: p)


@case("link", "NFLOG (239): the packets in NFULA_PAYLOAD TLVs after a prefix TLV")
def nflog_link():
    def link(p):
        prefix = struct.pack("<HH", 4 + 6, 10) + b"hello\0" + bytes(2)
        payload = struct.pack("<HH", 4 + len(p), 9) + p + bytes(-len(p) % 4)
        return struct.pack(">BBH", 2, 0, 0) + prefix + payload
    return pcap(simple(), 239, link)


@case("file", "nanosecond pcap (magic a1b23c4d)")
def pcap_nano():
    return pcap(simple(), 101, nano=True)


@case("file", "big-endian pcap", quick=True)
def pcap_be():
    return pcap(simple(), 101, endian=">")


@case("file", "big-endian nanosecond pcap")
def pcap_be_nano():
    return pcap(simple(), 101, endian=">", nano=True)


@case("file", "pcap snaplen 40 in the header, packets within it", quick=True)
def pcap_small_snaplen_header():
    return pcap(simple(), 101, snaplen=40)


@case("file", "pcapng, client packets on an Ethernet interface, server's on a SLL one",
      quick=True)
def pcapng_two_links():
    return pcapng(simple(), [(1, ether), (113, sll)],
                  lambda i: 0 if i in (0, 2, 3, 5, 7) else 1)


@case("file", "pcapng big-endian section, nanosecond tsresol, three interfaces (raw, eth, "
      "SLL2) used in turn")
def pcapng_be_three():
    return pcapng(simple(), [(101, lambda p: p), (1, ether), (276, sll2)], lambda i: i % 3,
                  endian=">", resol=9)


@case("file", "pcapng with a second section (new SHB and IDBs) halfway, link types swapped")
def pcapng_two_sections():
    pk = simple()
    half = len(pk) // 2
    a = pcapng(pk[:half], [(1, ether)], lambda i: 0)
    b = pcapng(pk[half:], [(113, sll), (101, lambda p: p)], lambda i: 1)
    return a + b


@case("file", "pcapng with a Name Resolution, an Interface Statistics, a custom and an "
      "unknown block, and a Simple Packet Block")
def pcapng_odd_blocks():
    pk = simple()
    nrb = block(4, struct.pack("<HH", 1, 8) + V4S + b"srv\0" + struct.pack("<HH", 0, 0))
    isb = block(5, struct.pack("<III", 0, 0, 0) + struct.pack("<HH", 0, 0))
    custom = block(0x00000BAD, struct.pack("<I", 32473) + b"hello")
    unknown = block(0x0000_0F0F, b"\1\2\3\4")
    body = [shb(), idb(101), nrb, custom]
    for i, p in enumerate(pk):
        if i == 4:
            body.append(unknown)
            body.append(isb)
        body.append(epb(0, (T0 * 10**6) + i * 1000, p))
    return b"".join(body)


@case("file", "pcapng Simple Packet Blocks only (no timestamps)")
def pcapng_spb():
    pk = simple()
    body = [shb(), idb(101)]
    for p in pk:
        body.append(block(3, struct.pack("<I", len(p)) + p))
    return b"".join(body)


@case("file", "timestamps going backwards by an hour in the middle of the connection")
def time_backwards():
    out = pcap(simple())
    b = bytearray(out)
    at = 24
    for i in range(20):
        if at >= len(b):
            break
        incl = struct.unpack("<I", b[at + 8:at + 12])[0]
        if i >= 5:
            sec = struct.unpack("<I", b[at:at + 4])[0]
            b[at:at + 4] = struct.pack("<I", sec - 3600)
        at += 16 + incl
    return bytes(b)


@case("file", "Ethernet frames shorter than an Ethernet header, and an 802.1Q tag with VLAN 0 "
      "(priority only)")
def eth_short_and_prio():
    pk = [ether(p, [(0x8100, 0x6000)]) for p in simple()]
    return pcap([b"\x01\x02\x03"] + pk[:3] + [b"\x00" * 13] + pk[3:], 1, lambda p: p)


@case("file", "snaplen-cut packets: the server's response cut to 60 bytes, then the rest of "
      "the connection whole (capture writes orig_len > incl_len)")
def pcap_snaplen_cut():
    return pcap(simple(), 101, cut={4: 60})


@case("file", "not a capture: an HTML page", error=(2, "not a pcap or pcapng capture"),
      quick=True)
def err_html():
    return b"<!doctype html><html><body>404</body></html>\n"


@case("file", "pcap header only, no packets")
def header_only():
    return pcap([], 101)


@case("file", "pcap whose first record claims 3 GB: the ledger of what came before (none) and "
      "a warning naming the file, exit 1", error=(1, "bigger than snaplen"))
def err_huge_record():
    return pcap(simple(), 101)[:24] + struct.pack("<IIII", T0, 0, 3 << 30, 3 << 30) + b"x" * 40


@case("file", "pcapng whose first block length is not a multiple of 4",
      error=(2, "damaged pcapng at byte 0"))
def err_pcapng_badlen():
    return shb()[:4] + struct.pack("<I", 29) + shb()[8:]


@case("file", "pcapng packet block for interface 3 of 1: a warning naming the file, exit 1",
      error=(1, "which no interface description block described"))
def err_pcapng_iface():
    return shb() + idb(101) + epb(3, T0 * 10**6, simple()[0])


# --- IP ---

@case("ip", "IPv4 options (NOP, Record Route) on every packet")
def ipv4_options():
    c = Conn()
    rr = bytes([1, 7, 11, 4]) + bytes(8)
    orig = c.ip

    def ip(src, dst, tcp, payload, **kw):
        kw["options"] = rr
        return orig(src, dst, tcp, payload, **kw)
    c.ip = ip
    c.handshake()
    c.exchange()
    c.close()
    return pcap(c.pkts)


@case("ip", "bad IPv4 header checksums and bad TCP checksums everywhere", quick=True)
def bad_checksums():
    c = Conn()
    orig = c.ip

    def ip(src, dst, tcp, payload, **kw):
        kw["good"] = False
        kw["good_tcp"] = False
        return orig(src, dst, tcp, payload, **kw)
    c.ip = ip
    c.handshake()
    c.exchange()
    c.close()
    return pcap(c.pkts)


@case("ip", "IPv6 hop-by-hop, destination options and routing extension headers")
def ipv6_ext():
    c = Conn(v6=True)
    orig = c.ip

    def ip(src, dst, tcp, payload, **kw):
        kw["ext"] = ((0, b"\1\4\0\0\0\0"), (60, b"\1\4\0\0\0\0"), (43, b"\0\0\0\0\0\0"))
        return orig(src, dst, tcp, payload, **kw)
    c.ip = ip
    c.handshake()
    c.exchange()
    c.close()
    return pcap(c.pkts)


@case("ip", "IPv6 atomic fragments (fragment header, offset 0, M=0: RFC 6946) on every "
      "packet", quick=True)
def ipv6_atomic_fragment():
    c = Conn(v6=True)
    orig = c.ip

    def ip(src, dst, tcp, payload, **kw):
        kw["ext"] = ((44, struct.pack(">HI", 0, 77)),)
        return orig(src, dst, tcp, payload, **kw)
    c.ip = ip
    c.handshake()
    c.exchange()
    c.close()
    return pcap(c.pkts)


def fragment_v4(p, at):
    """Splits an IPv4 packet (20-byte header) into two fragments, the first holding `at`
    bytes of its payload (a multiple of 8)."""
    h, body = p[:20], p[20:]
    ident = 4242
    src, dst = h[12:16], h[16:20]
    a = ipv4(src, dst, 6, body[:at], ident=ident, flags_frag=0x2000)
    b = ipv4(src, dst, 6, body[at:], ident=ident, flags_frag=at // 8)
    return a, b


@case("ip", "IPv4 fragments: the client's request segment split in two IP fragments (in "
      "order), then one sent last fragment first", quick=True)
def ipv4_fragments():
    c = Conn()
    c.handshake()
    c.exchange()
    pkts = c.pkts
    # packet 3 = preface+SETTINGS+HEADERS: split after 24 bytes of TCP payload
    a, b = fragment_v4(pkts[3], 40)
    c.c(payload=frame(PING, 0, 0, b"12345678") + data(1, b"x" * 100, 0))
    x, y = fragment_v4(c.pkts[-1], 48)
    out = pkts[:3] + [a, b] + pkts[4:] + [y, x]
    c.pkts = out
    c.close()
    return pcap(c.pkts)


@case("ip", "IPv4 fragments overlapping with different bytes (a Teardrop-like rewrite of "
      "the TCP payload's first frame head); the first copy wins, as in tshark")
def ipv4_fragments_overlap():
    c = Conn()
    c.handshake()
    c.c(payload=PREFACE + SETTINGS0 + req())
    p = c.pkts.pop()
    h, body = p[:20], p[20:]
    a = ipv4(V4C, V4S, 6, body[:48], ident=7, flags_frag=0x2000)
    bad = bytearray(body[40:56])
    bad[0:8] = b"\xff" * 8
    b = ipv4(V4C, V4S, 6, bytes(bad), ident=7, flags_frag=0x2000 | 5)
    rest = ipv4(V4C, V4S, 6, body[56:], ident=7, flags_frag=7)
    c.pkts += [a, b, rest]
    c.s(payload=S0 + resp() + data())
    c.c(payload=SETTINGS_ACK)
    c.close()
    return c.pkts


@case("ip", "a fragment flood: 3,000 first fragments never completed (ids 0..2999) and "
      "1,000 last fragments alone, around a whole connection; bounded, the connection counted")
def fragment_flood():
    flood = [ipv4(V4C, V4S, 6, b"f" * 64, ident=i, flags_frag=0x2000) for i in range(3000)]
    flood += [ipv4(V4C, V4S, 6, b"g" * 64, ident=i + 5000, flags_frag=100)
              for i in range(1000)]
    return flood[:2000] + simple() + flood[2000:]


@case("ip", "a fragment cut by the snapshot length: the datagram is given up; a whole "
      "retransmission follows")
def fragment_cut():
    c = Conn()
    c.handshake()
    c.c(payload=PREFACE + SETTINGS0 + req())
    p = c.pkts.pop()
    a, b = fragment_v4(p, 40)
    c.pkts += [a, b, p]
    c.s(payload=S0 + resp() + data())
    c.c(payload=SETTINGS_ACK)
    c.close()
    return pcap(c.pkts, cut={4: 40})


@case("ip", "IPv6 fragments: the server's response split in two fragments", quick=True)
def ipv6_fragments():
    c = Conn(v6=True)
    c.handshake()
    c.c(payload=PREFACE + SETTINGS0 + req())
    whole = c.s(payload=SETTINGS0 + SETTINGS_ACK + resp() + data(1, b"y" * 200))
    seg = whole[40:]
    c.pkts.pop()
    at = 64
    c.pkts.append(ipv6(V6S, V6C, 6, seg[:at], ext=((44, struct.pack(">HI", 1, 99)),)))
    c.pkts.append(ipv6(V6S, V6C, 6, seg[at:], ext=((44, struct.pack(">HI", at, 99)),)))
    c.c(payload=SETTINGS_ACK)
    c.close()
    return pcap(c.pkts)


@case("ip", "IPv4 in IPv6 (protocol 4): a 4in6 tunnel's inner connection", quick=True)
def ip4in6():
    return pcap([ipv6(V6C, V6S, 4, p) for p in simple()], 101)


@case("ip", "IPv6 in IPv4 (protocol 41, 6in4)")
def ip6in4():
    return pcap([ipv4(V4C, V4S, 41, p) for p in simple(v6=True)], 101)


@case("ip", "IPv4 in IPv4 (protocol 4, IPIP)")
def ip4in4():
    return pcap([ipv4(v4([192, 168, 0, 1]), v4([192, 168, 0, 2]), 4, p) for p in simple()],
                101)


@case("ip", "GRE (protocol 47) carrying IPv4")
def gre():
    return pcap([ipv4(v4([192, 168, 0, 1]), v4([192, 168, 0, 2]), 47,
                      struct.pack(">HH", 0, 0x0800) + p) for p in simple()], 101)


def udp(sport, dport, body):
    return struct.pack(">HHHH", sport, dport, 8 + len(body), 0) + body


@case("ip", "GTP-U (UDP 2152) G-PDUs with 5G's PDU Session Container extension, carrying "
      "the connection (an N3 capture of a 5G core)", quick=True)
def gtp_u():
    def wrap(p):
        ext = bytes([1, 0x00, 0x01, 0x00])  # PDU Session Container, 4 bytes, next type 0
        g = struct.pack(">BBHI", 0x34, 0xFF, len(p) + 8, 0x1234) + struct.pack(">HBB", 0, 0,
                                                                               0x85) + ext + p
        return ipv4(v4([172, 16, 0, 1]), v4([172, 16, 0, 2]), 17, udp(2152, 2152, g))
    return pcap([wrap(p) for p in simple()], 1, ether)


@case("ip", "VXLAN (UDP 4789) carrying Ethernet frames of the connection")
def vxlan():
    def wrap(p):
        return ipv4(v4([172, 16, 0, 1]), v4([172, 16, 0, 2]), 17,
                    udp(51000, 4789, struct.pack(">II", 0x08000000, 42 << 8) + ether(p)))
    return pcap([wrap(p) for p in simple()], 1, ether)


@case("ip", "GRE with key and sequence fields carrying Ethernet (transparent bridging)")
def gre_teb():
    return pcap([ipv4(v4([192, 168, 0, 1]), v4([192, 168, 0, 2]), 47,
                      struct.pack(">HHII", 0x3000, 0x6558, 7, 1) + ether(p)) for p in simple()],
                101)


@case("ip", "ERSPAN type II and type III (with its platform subheader) in GRE, mirrored "
      "Ethernet frames of the connection, alternately")
def erspan():
    def wrap(i, p):
        if i % 2:
            gre_h = struct.pack(">HHI", 0x1000, 0x88BE, i) + struct.pack(">II", 0x10000001, 0)
        else:
            gre_h = struct.pack(">HH", 0, 0x22EB) + b"\x20" + bytes(10) + b"\x01" + bytes(8)
        return ipv4(v4([192, 168, 0, 1]), v4([192, 168, 0, 2]), 47, gre_h + ether(p))
    return pcap([wrap(i, p) for i, p in enumerate(simple())], 1, ether)


@case("ip", "Geneve (UDP 6081) with an 8-byte option, carrying Ethernet frames")
def geneve():
    def wrap(p):
        g = struct.pack(">BBHI", 2, 0, 0x6558, 7 << 8) + struct.pack(">HBB", 0x0102, 3, 1) + bytes(4)
        return ipv4(v4([172, 16, 0, 1]), v4([172, 16, 0, 2]), 17, udp(50000, 6081, g + ether(p)))
    return pcap([wrap(p) for p in simple()], 1, ether)


@case("ip", "IPv4 total length 0 (TSO super-packets) on the data packets")
def ipv4_total_zero():
    c = Conn()
    orig = c.ip

    def ip(src, dst, tcp, payload, **kw):
        if payload:
            kw["total"] = 0
        return orig(src, dst, tcp, payload, **kw)
    c.ip = ip
    c.handshake()
    c.exchange()
    c.close()
    return pcap(c.pkts)


@case("ip", "IPv4 packets shorter than their header says (IHL 15, 40-byte frame), and a "
      "version-7 packet, among a valid connection")
def ip_garbage():
    pk = simple()
    bad1 = b"\x4f" + pk[3][1:40]
    bad2 = b"\x70" + pk[3][1:]
    return pcap(pk[:3] + [bad1, bad2] + pk[3:])


# --- TCP ---

@case("tcp", "a retransmission whose bytes differ from the first copy (a PING payload "
      "changed): the first copy wins", quick=True)
def retrans_differs():
    c = Conn()
    c.handshake()
    c.exchange()
    p1 = frame(PING, 0, 0, b"AAAAAAAA")
    seq = c.cseq
    c.c(payload=p1)
    c.raw(True, seq, c.sseq, PSH | ACK, frame(RST, 0, 1, b"\0\0\0\x08")[:13] + b"\0" * 4)
    c.s(payload=frame(PING, 1, 0, b"AAAAAAAA"))
    c.close()
    return c.pkts


@case("tcp", "overlapping segments: a segment re-sent with 8 old bytes (different) and a "
      "new PING after them. tshark is wrong: it flags the segment a retransmission and "
      "dissects none of it, but its 9 new bytes complete the second PING (the first copy of the "
      "8 old bytes wins, as in the receiver), which the server ACKs; bytes are the new "
      "bytes (docs/ledger.md, Write)", truth={"client PING": 2, "client bytes": 91})
def overlap_partial():
    c = Conn()
    c.handshake()
    c.exchange()
    a = frame(PING, 0, 0, b"11111111")
    b = frame(PING, 0, 0, b"22222222")
    seq = c.cseq
    c.c(payload=a)
    c.raw(True, seq + len(a) - 8, c.sseq, PSH | ACK, b"XXXXXXXX" + b)
    c.cseq = seq + len(a) + len(b)
    c.s(payload=frame(PING, 1, 0, b"11111111") + frame(PING, 1, 0, b"22222222"))
    c.close()
    return c.pkts


@case("tcp", "two client segments swapped (out of order, within the window). tshark 4.0 "
      "(tcp.reassemble_out_of_order off) loses the PING: the stream's bytes in sequence order "
      "hold it whole, and the server answers it", truth={"client PING": 1}, quick=True)
def out_of_order():
    c = Conn()
    c.handshake()
    c.exchange()
    seq = c.cseq
    a = frame(PING, 0, 0, b"11111111")
    b = req(3)
    c.raw(True, seq + len(a), c.sseq, PSH | ACK, b)
    c.raw(True, seq, c.sseq, PSH | ACK, a)
    c.cseq = seq + len(a) + len(b)
    c.s(payload=frame(PING, 1, 0, b"11111111") + resp(3, 5))
    c.close()
    return c.pkts


@case("tcp", "a segment 3 MB ahead of the stream (beyond any window), never filled; the "
      "connection goes on", quick=True)
def out_of_window():
    c = Conn()
    c.handshake()
    c.exchange()
    c.raw(True, c.cseq + 3_000_000, c.sseq, PSH | ACK, frame(PING, 0, 0, b"far-away"))
    c.c(payload=frame(PING, 0, 0, b"nearby!!"))
    c.s(payload=frame(PING, 1, 0, b"nearby!!"))
    c.close()
    return c.pkts


@case("tcp", "sequence numbers wrap at 2^32 in the middle of a DATA frame", quick=True)
def seq_wrap():
    c = Conn(cisn=0xFFFFFFFF - 60, sisn=0xFFFFFFFF - 30)
    c.handshake()
    c.c(payload=PREFACE + SETTINGS0 + req(1, 0x4))
    c.c(payload=data(1, b"d" * 50))
    c.s(payload=SETTINGS0 + SETTINGS_ACK + resp(1, 4) + data(1, b"e" * 40))
    c.c(payload=SETTINGS_ACK)
    c.close()
    return c.pkts


@case("tcp", "a 4-tuple reused after FIN with a new ISN: two connections")
def reuse_after_fin():
    a = simple()
    b = simple(cisn=900_000, sisn=7_000_000)
    return a + b


@case("tcp", "a 4-tuple reused after FIN with the same ISN: two connections. tshark 4.0 "
      "starts a new conversation only for a SYN with another ISN, so it calls the second "
      "connection retransmissions; after both FINs and the last ACK, a new SYN, SYN-ACK and "
      "ACKed data are a new connection: every count twice one connection's",
      truth=lambda w: {k: 2 * v for k, v in w.items()}, quick=True)
def reuse_same_isn():
    return simple() + simple()


@case("tcp", "a 4-tuple reused after RST (client resets), new ISN")
def reuse_after_rst():
    c = Conn()
    c.handshake()
    c.exchange()
    c.c(RSTF | ACK)
    d = Conn(cisn=55555, sisn=66666)
    d.handshake()
    d.exchange()
    d.close()
    return c.pkts + d.pkts


@case("tcp", "a 4-tuple reused after RST with the same ISN: as above (tshark 4.0 sees one "
      "connection), twice one connection's counts", truth=lambda w: {k: 2 * v for k, v in w.items()})
def reuse_after_rst_same_isn():
    c = Conn()
    c.handshake()
    c.exchange()
    c.c(RSTF | ACK)
    return c.pkts + simple()


@case("tcp", "SYN retransmitted with a new ISN before the SYN-ACK (the first SYN lost)")
def syn_new_isn():
    c = Conn()
    c.c(SYN)
    c.cseq = 77777
    c.handshake()
    c.exchange()
    c.close()
    return c.pkts


@case("tcp", "SYN retransmitted with the same ISN, SYN-ACK retransmitted too")
def syn_retransmitted():
    c = Conn()
    c.raw(True, c.cseq, 0, SYN)
    c.c(SYN)
    c.raw(False, c.sseq, c.cseq, SYN | ACK)
    c.s(SYN | ACK)
    c.c(ACK)
    c.exchange()
    c.close()
    return c.pkts


@case("tcp", "simultaneous open: SYN both ways, then SYN-ACK both ways")
def simultaneous_open():
    c = Conn()
    c.raw(True, c.cseq, 0, SYN)
    c.raw(False, c.sseq, 0, SYN)
    c.cseq += 1
    c.sseq += 1
    c.raw(True, c.cseq - 1, c.sseq, SYN | ACK)
    c.raw(False, c.sseq - 1, c.cseq, SYN | ACK)
    c.exchange()
    c.close()
    return c.pkts


@case("tcp", "TCP Fast Open: the preface, SETTINGS and request on the SYN", quick=True)
def tfo():
    c = Conn()
    c.c(SYN, PREFACE + SETTINGS0 + req(), options=bytes([34, 10]) + b"cookie12")
    c.s(SYN | ACK)
    c.c(ACK)
    c.s(payload=SETTINGS0 + SETTINGS_ACK + resp() + data())
    c.c(payload=SETTINGS_ACK)
    c.close()
    return c.pkts


@case("tcp", "TFO server side: the SYN-ACK carries the server's SETTINGS")
def tfo_synack_data():
    c = Conn()
    c.c(SYN)
    c.s(SYN | ACK, SETTINGS0)
    c.c(ACK)
    c.c(payload=PREFACE + SETTINGS0 + req())
    c.s(payload=SETTINGS_ACK + resp() + data())
    c.c(payload=SETTINGS_ACK)
    c.close()
    return c.pkts


@case("tcp", "a RST carrying data (a GOAWAY) from the server, after the exchange", quick=True)
def rst_with_data():
    c = Conn()
    c.handshake()
    c.exchange()
    c.s(RSTF | ACK, frame(GOAWAY, 0, 0, struct.pack(">II", 1, 0)))
    return c.pkts


@case("tcp", "zero-window probes: the server advertises window 0, the client probes with "
      "one new byte (twice), then sends the rest. Writes as tshark's (the second probe is a "
      "keep-alive to it, a write of 1 byte: decision 467); bytes are new bytes, so the last "
      "segment counts its 16 new bytes where tshark's tcp.len is 17",
      truth={"client bytes": 75}, quick=True)
def zero_window_probe():
    c = Conn()
    c.handshake()
    c.exchange()
    c.s(ACK, win=0)
    f = frame(PING, 0, 0, b"probing!")
    seq = c.cseq
    c.raw(True, seq, c.sseq, ACK, f[:1])
    c.raw(True, seq, c.sseq, ACK, f[:1])
    c.s(ACK, win=0)
    c.s(ACK, win=1000)
    c.raw(True, seq, c.sseq, PSH | ACK, f)
    c.cseq = seq + len(f)
    c.s(payload=frame(PING, 1, 0, b"probing!"))
    c.close()
    return c.pkts


@case("tcp", "keepalives: segments of 0 and 1 byte one below the next sequence number, "
      "answered by ACKs", quick=True)
def keepalive():
    c = Conn()
    c.handshake()
    c.exchange()
    c.raw(True, c.cseq - 1, c.sseq, ACK)
    c.s(ACK)
    c.raw(True, c.cseq - 1, c.sseq, ACK, b"\0")
    c.s(ACK)
    c.raw(False, c.sseq - 1, c.cseq, ACK, b"\0")
    c.c(ACK)
    c.c(payload=frame(PING, 0, 0, b"stillon!"))
    c.s(payload=frame(PING, 1, 0, b"stillon!"))
    c.close()
    return c.pkts


@case("tcp", "data after FIN: the client FINs, then sends a PING at the sequence numbers "
      "after its FIN. Not stream data: a FIN ends the sender's stream (RFC 9293 §3.10.7.4: "
      "text after it is ignored), tshark dissects it anyway",
      truth={"client PING": 0, "client writes": 2, "client bytes": 57})
def data_after_fin():
    c = Conn()
    c.handshake()
    c.exchange()
    c.c(FIN | ACK)
    c.c(payload=frame(PING, 0, 0, b"afterfin"))
    c.s(payload=frame(PING, 1, 0, b"afterfin"))
    c.s(FIN | ACK)
    c.c(ACK)
    return c.pkts


@case("tcp", "FIN carrying the last frames (GOAWAY) on both sides")
def fin_with_data():
    c = Conn()
    c.handshake()
    c.exchange()
    c.c(FIN | PSH | ACK, frame(GOAWAY, 0, 0, struct.pack(">II", 0, 0)))
    c.s(FIN | PSH | ACK, frame(GOAWAY, 0, 0, struct.pack(">II", 1, 0)))
    c.c(ACK)
    return c.pkts


@case("tcp", "only the SYN-ACK of the handshake captured (the SYN missed)")
def only_synack():
    c = Conn()
    c.cseq += 1
    c.s(SYN | ACK)
    c.c(ACK)
    c.exchange()
    c.close()
    return c.pkts


@case("tcp", "only the SYN of the handshake captured (SYN-ACK missed)")
def only_syn():
    c = Conn()
    c.c(SYN)
    c.sseq += 1
    c.c(ACK)
    c.exchange()
    c.close()
    return c.pkts


@case("tcp", "no handshake, the capture starts with the server's first bytes, the client's "
      "preface never seen; server port 50051 above the client's 40000")
def mid_server_first():
    c = Conn(cport=40000, sport=50051)
    c.cseq += 1
    c.sseq += 1
    c.s(payload=SETTINGS0 + SETTINGS_ACK)
    c.c(payload=req(1))
    c.s(payload=resp(1) + data(1))
    c.close()
    return c.pkts


@case("tcp", "every packet captured twice (a SPAN port seeing both directions)", quick=True)
def duplicated():
    out = []
    for p in simple():
        out += [p, p]
    return out


@case("tcp", "TCP options everywhere: MSS, SACK-permitted, timestamps, window scale, SACK "
      "blocks, and a bad option length")
def tcp_options():
    c = Conn()
    ts = bytes([8, 10]) + struct.pack(">II", 1, 2)
    c.c(SYN, options=bytes([2, 4, 5, 0xB4, 4, 2]) + ts + bytes([1, 3, 3, 7]))
    c.s(SYN | ACK, options=bytes([2, 4, 5, 0xB4, 4, 2]) + ts + bytes([1, 3, 3, 7]))
    c.c(ACK, options=bytes([1, 1]) + ts)
    c.c(payload=PREFACE + SETTINGS0 + req(), options=bytes([1, 1]) + ts)
    c.s(payload=SETTINGS0 + SETTINGS_ACK + resp() + data(),
        options=bytes([1, 1, 5, 10]) + struct.pack(">II", 1, 2))
    c.c(payload=SETTINGS_ACK, options=bytes([99, 40]))
    c.close()
    return c.pkts


@case("tcp", "URG segments with an urgent pointer into HTTP/2 bytes")
def urgent():
    c = Conn()
    c.handshake()
    c.exchange()
    p = frame(PING, 0, 0, b"urgent!!")
    src = tcp_header(c.cp, c.sp, c.cseq, c.sseq, PSH | ACK | URG, urg=5)
    c.pkts.append(c.ip(c.ca, c.sa, src, p))
    c.cseq += len(p)
    c.s(payload=frame(PING, 1, 0, b"urgent!!"))
    c.close()
    return c.pkts


@case("tcp", "a lost segment (never captured, ACKed by the server), the connection goes on "
      "with whole frames after it")
def lost_segment():
    c = Conn()
    c.handshake()
    c.exchange()
    c.cseq += len(frame(PING, 0, 0, b"lostlost"))
    c.s(ACK)
    c.c(payload=frame(PING, 0, 0, b"afterlos"))
    c.s(payload=frame(PING, 1, 0, b"lostlost") + frame(PING, 1, 0, b"afterlos"))
    c.close()
    return c.pkts


@case("tcp", "a lost segment (ACKed by the server, never captured) that held the middle of "
      "a 1,000-byte DATA frame; frames follow in later segments. tshark counts only frames it "
      "holds whole; the DATA frame's head is in the capture and the server's ACK proves all "
      "its bytes were received: it was sent, and counts", truth={"client DATA": 2})
def lost_mid_frame():
    c = Conn()
    c.handshake()
    c.c(payload=PREFACE + SETTINGS0 + req(1, 0x4))
    big = data(1, b"q" * 1000, 0)
    c.c(payload=big[:300])
    c.cseq += 400
    c.c(payload=big[700:])
    c.c(payload=data(1, b"end") + frame(PING, 0, 0, b"12345678"))
    c.s(payload=S0 + resp() + data() + frame(PING, 1, 0, b"12345678"))
    c.close()
    return c.pkts


@case("tcp", "a lost segment (ACKed) that held the tail of PING A and the head of PING B of "
      "four. tshark counts none of the four (it never resynchronises that direction); the "
      "capture holds A's head (its bytes proven sent by the ACK), C and D whole: 3, B's head "
      "is not in it", truth={"client PING": 3})
def lost_frame_heads():
    c = Conn()
    c.handshake()
    c.exchange()
    b = frame(PING, 0, 0, b"AAAAAAAA") + frame(PING, 0, 0, b"BBBBBBBB") \
        + frame(PING, 0, 0, b"CCCCCCCC") + frame(PING, 0, 0, b"DDDDDDDD")
    c.c(payload=b[:12])
    c.cseq += 20
    c.c(payload=b[32:])
    c.s(payload=b"".join(frame(PING, 1, 0, x * 8) for x in (b"A", b"B", b"C", b"D")))
    c.close()
    return c.pkts


@case("tcp", "the FIN captured before the last data segment it follows (reordered on the "
      "wire): the data's sequence numbers are before the FIN's. tshark 4.0 (no out-of-order "
      "reassembly) drops the PING; its bytes end exactly at the FIN and the server answers it",
      truth={"client PING": 1})
def fin_before_last_data():
    c = Conn()
    c.handshake()
    c.exchange()
    seq = c.cseq
    p = frame(PING, 0, 0, b"lastlast")
    c.raw(True, seq + len(p), c.sseq, FIN | ACK)
    c.raw(True, seq, c.sseq, PSH | ACK, p)
    c.cseq = seq + len(p) + 1
    c.s(payload=frame(PING, 1, 0, b"lastlast"))
    c.s(FIN | ACK)
    c.c(ACK)
    return c.pkts


@case("tcp", "bad TCP headers among a valid connection: data offset 15 beyond the packet (a "
      "pure ACK's), data offset 2 on a copy of the request's segment, a 10-byte TCP header. "
      "tshark takes the data offset 2 copy as 8 header bytes and 60 of data, then calls the "
      "real segment a retransmission; a data offset under 5 is no TCP header (RFC 9293 §3.1), "
      "no receiver takes it: the real segment is the write",
      truth={"calls": 1, "client HEADERS": 1, "client SETTINGS": 1, "client SETTINGS_ACK": 1,
             "client writes": 2, "client bytes": 57})
def tcp_garbage():
    pk = simple()
    good = pk[3]
    a = bytearray(pk[2])
    a[20 + 12] = 0xF0
    b = bytearray(good)
    b[20 + 12] = 0x20
    cut = ipv4(V4C, V4S, 6, good[20:30])
    return pk[:3] + [bytes(a), bytes(b), cut] + pk[3:]


@case("tcp", "ports 0 on both sides. tshark decodes nothing on port 0 (a decode-as of port 0 "
      "does not take); the bytes are the whole exchange of `eth`", port=0,
      truth={"connections": 1, "calls": 1, "client HEADERS": 1, "client SETTINGS": 1,
             "client SETTINGS_ACK": 1, "client writes": 2, "client bytes": 57,
             "server HEADERS": 1, "server DATA": 1, "server SETTINGS": 1,
             "server SETTINGS_ACK": 1, "server writes": 1, "server bytes": 42})
def port_zero():
    return simple(cport=0, sport=0)


@case("tcp", "client and server on the same port number (8080 <-> 8080), different hosts")
def same_ports():
    return simple(cport=8080, sport=8080)


@case("tcp", "two connections interleaved packet by packet, IPv4 and IPv6")
def interleaved():
    a = simple()
    b = simple(v6=True, cport=40001)
    out = []
    for x, y in zip(a, b):
        out += [x, y]
    return out


@case("tcp", "a segment larger than 64 KiB (GRO): IPv4 total length 0, 100 KB of DATA")
def gro_super_segment():
    c = Conn()
    orig = c.ip

    def ip(src, dst, tcp, payload, **kw):
        if len(payload) > 60000:
            kw["total"] = 0
        return orig(src, dst, tcp, payload, **kw)
    c.ip = ip
    c.handshake()
    c.c(payload=PREFACE + settings((4, 1 << 20)) + req())
    c.s(payload=settings((5, 1 << 20)) + SETTINGS_ACK + resp() + data(1, b"z" * 100_000))
    c.c(payload=SETTINGS_ACK)
    c.close()
    return c.pkts


# --- HTTP/2 ---

def h2case(note, client_bytes, server_bytes, quick=False, truth=None, segs=None):
    """A case whose connection is a handshake, then these bytes each way, then FINs."""
    def build():
        c = Conn()
        c.handshake()
        for who, b in (segs or [("c", client_bytes), ("s", server_bytes)]):
            if b:
                (c.c if who == "c" else c.s)(payload=b)
        c.close()
        return c.pkts
    return build


def add_h2(name, note, segs, quick=False, truth=None):
    fn = h2case(note, None, None, segs=segs)
    fn.__name__ = name
    case("h2", note, quick=quick, truth=truth)(fn)


C0 = PREFACE + SETTINGS0
S0 = SETTINGS0 + SETTINGS_ACK

add_h2("padded-ok", "PADDED DATA and HEADERS, pad length = payload length - 1 (all padding)",
       [("c", C0 + frame(HEADERS, 0x0D, 1, b"\x02" + REQ + b"\0\0")),
        ("s", S0 + frame(HEADERS, 0x0C, 1, b"\x00" + RESP)
         + frame(DATA, 0x09, 1, b"\x04" + b"\0" * 4)
         + frame(DATA, 0x09, 1, b"\x00"))])
add_h2("padded-bad", "PADDED DATA whose pad length exceeds the payload, and PADDED with "
       "length 0", [("c", C0 + req()),
                    ("s", S0 + resp() + frame(DATA, 0x08, 1, b"\x09abc")
                     + frame(DATA, 0x08, 1, b"") + data())], quick=True)
add_h2("priority", "PRIORITY frames (valid, on idle streams), HEADERS with the PRIORITY flag, "
       "a PRIORITY of 4 bytes",
       [("c", C0 + frame(PRIORITY, 0, 3, b"\0\0\0\0\x10") + frame(PRIORITY, 0, 5, b"\0\0\0\3\xff")
         + frame(HEADERS, 0x25, 1, b"\x80\0\0\3\x20" + REQ) + frame(PRIORITY, 0, 7, b"\0\0\0\0")),
        ("s", S0 + resp() + data())])
add_h2("unknown-types", "unknown frame types (ALTSVC 10, ORIGIN 12, 0xfa, 0xff) with flags, "
       "on stream 0 and 1",
       [("c", C0 + frame(0xFA, 0xFF, 0, b"x" * 7) + req() + frame(0xFF, 0, 1, b"")),
        ("s", S0 + frame(10, 0, 0, b"\0\0h2=\":443\"") + frame(12, 0, 0, b"\0\5a.com")
         + resp() + data())], quick=True)
add_h2("unknown-flags", "defined frame types with undefined flags set (0xf2 on DATA, 0xfe on "
       "PING, 0xfe on SETTINGS)",
       [("c", C0 + frame(PING, 0xFE, 0, b"abcdefgh") + req()),
        ("s", frame(SETTINGS, 0xFE, 0) + SETTINGS_ACK + frame(PING, 0xFF, 0, b"abcdefgh")
         + resp() + frame(DATA, 0xF3, 1, b"x"))], quick=True)
add_h2("settings-odd", "SETTINGS with unknown ids (0x7, 0xabcd, 0x10), a SETTINGS whose length "
       "is not a multiple of 6, a SETTINGS ACK with a payload, SETTINGS on stream 1",
       [("c", PREFACE + settings((0x7, 1), (0xABCD, 99), (0x10, 0)) + req()
         + frame(SETTINGS, 0, 0, b"\0\3\0\0\0\1\0") + frame(SETTINGS, 1, 0, b"\0\3\0\0\0\1")
         + frame(SETTINGS, 0, 1, b"")),
        ("s", S0 + resp() + data())])
add_h2("oversized-frame", "DATA frames of 20,000 and 70,000 bytes while MAX_FRAME_SIZE is "
       "the default 16,384", [("c", C0 + req()),
                               ("s", S0 + resp() + data(1, b"a" * 20_000, 0)
                                + data(1, b"b" * 70_000))])
add_h2("max-frame-raised", "MAX_FRAME_SIZE raised to 100,000 then a 90,000-byte DATA",
       [("c", PREFACE + settings((5, 100_000)) + req()),
        ("s", S0 + resp() + data(1, b"a" * 90_000))])
add_h2("hpack-size-update", "HPACK dynamic table size updates: to 0 then 4096 at the start "
       "of a block, then incremental indexing and a reference to the new entry",
       [("c", C0 + frame(HEADERS, 5, 1, b"\x20\x3f\xe1\x1f" + REQ + b"\x40\x01x\x01y")
         + frame(HEADERS, 5, 3, REQ + b"\xbe")),
        ("s", S0 + resp(1, 5) + resp(3, 5))])
add_h2("continuation-interleaved", "HEADERS without END_HEADERS on stream 1, then a DATA on "
       "stream 3 and a PING, then the CONTINUATION (a protocol error)",
       [("c", C0 + frame(HEADERS, 0x1, 1, REQ[:3]) + data(3, b"zz", 0)
         + frame(PING, 0, 0, b"12345678") + frame(CONT, 0x4, 1, REQ[3:])),
        ("s", S0 + frame(PING, 1, 0, b"12345678") + resp() + data())])
add_h2("continuation-many", "a request block in HEADERS + 40 one-byte CONTINUATIONs",
       [("c", C0 + frame(HEADERS, 0x1, 1, REQ[:1])
         + b"".join(frame(CONT, 0, 1, b"\x84") for _ in range(40))
         + frame(CONT, 0x4, 1, REQ[1:])),
        ("s", S0 + resp() + data())])
add_h2("window-update-edge", "WINDOW_UPDATE of 0 (stream and connection), overflowing "
       "2^31-1 twice, with the reserved bit, and of bad length 3",
       [("c", C0 + req() + frame(WU, 0, 0, b"\0\0\0\0") + frame(WU, 0, 1, b"\0\0\0\0")
         + frame(WU, 0, 0, b"\x7f\xff\xff\xff") + frame(WU, 0, 0, b"\x7f\xff\xff\xff")
         + frame(WU, 0, 0, b"\x80\0\0\1") + frame(WU, 0, 0, b"\0\0\1")),
        ("s", S0 + resp() + data())])
add_h2("goaway-debug", "GOAWAY with 2,000 bytes of debug data, and a GOAWAY of 5 bytes",
       [("c", C0 + req()),
        ("s", S0 + resp() + data() + frame(GOAWAY, 0, 0, struct.pack(">II", 1, 2) + b"d" * 2000)
         + frame(GOAWAY, 0, 0, b"\0\0\0\1\0"))], quick=True)
add_h2("preface-1byte", "the client preface, SETTINGS and request in 1-byte segments. "
       "tshark 4.0 loses the client's frames (its preface check needs the magic in one "
       "segment); the bytes in order are exactly the preface, a SETTINGS and a HEADERS",
       [("c", bytes([b])) for b in C0 + req()] + [("s", S0 + resp() + data())], quick=True,
       truth={"calls": 1, "client HEADERS": 1, "client SETTINGS": 1})
add_h2("frame-head-split", "every frame head split across two segments (5 + 4 bytes)",
       [("c", C0)] + [("c", b) for f in (req(), frame(PING, 0, 0, b"12345678"))
                      for b in (f[:5], f[5:])]
       + [("s", b) for f in (S0[:9], S0[9:], resp(), data()) for b in (f[:5], f[5:])])
add_h2("ping-odd", "PINGs of 7 and 9 bytes, a PING on stream 1, a PING ACK never asked",
       [("c", C0 + req() + frame(PING, 0, 0, b"1234567") + frame(PING, 0, 0, b"123456789")
         + frame(PING, 0, 1, b"12345678")),
        ("s", S0 + frame(PING, 1, 0, b"nevernev") + resp() + data())])
add_h2("rst-odd", "RST_STREAM on stream 0, of 3 bytes, and on an idle stream 99",
       [("c", C0 + req() + frame(RST, 0, 0, b"\0\0\0\x08") + frame(RST, 0, 1, b"\0\0\x08")
         + frame(RST, 0, 99, b"\0\0\0\x08")),
        ("s", S0 + resp() + data())])
add_h2("push-promise", "a server push: PUSH_PROMISE, then the pushed response on stream 2",
       [("c", C0 + req()),
        ("s", S0 + frame(PUSH, 0x4, 1, b"\0\0\0\2" + REQ) + resp() + data()
         + resp(2) + data(2))])
add_h2("headers-stream0", "HEADERS and DATA on stream 0; reserved bit set in a stream id",
       [("c", C0 + frame(HEADERS, 5, 0, REQ) + data(0, b"x") + frame(HEADERS, 5, 0x80000001, REQ)),
        ("s", S0 + resp() + data())])
add_h2("informational", "100 Continue, then 200, then trailers, for a POST with a body",
       [("c", C0 + frame(HEADERS, 4, 1, bytes([0x83, 0x84, 0x86])) + data(1, b"body")),
        ("s", S0 + frame(HEADERS, 4, 1, b"\x08\x03100") + resp() + data(1, b"ok", 0)
         + frame(HEADERS, 5, 1, b"\x00\x0bgrpc-status\x010"))])
add_h2("huge-length", "a frame head declaring 16 MiB, then the connection ends",
       [("c", C0 + req()), ("s", S0 + resp() + b"\xff\xff\xff\0\0\0\0\0\1" + b"x" * 100)])
add_h2("many-frames", "5,000 PINGs in one 45 KB segment, answered in one",
       [("c", C0 + req() + b"".join(frame(PING, 0, 0, struct.pack(">Q", i)) for i in range(5000))),
        ("s", S0 + resp() + data()
         + b"".join(frame(PING, 1, 0, struct.pack(">Q", i)) for i in range(5000)))])
add_h2("zero-length-frames", "zero-length DATA, HEADERS, CONTINUATION, PRIORITY, RST, PING, "
       "GOAWAY, WINDOW_UPDATE frames",
       [("c", C0 + req(1, 4) + frame(DATA, 0, 1) + frame(HEADERS, 0, 3) + frame(CONT, 4, 3)
         + frame(PRIORITY, 0, 5) + frame(RST, 0, 7) + frame(PING, 0, 0) + frame(WU, 0, 0)
         + frame(GOAWAY, 0, 0) + data(1, b"")),
        ("s", S0 + resp() + data())])
add_h2("no-preface", "no client preface: SETTINGS and a request straight away",
       [("c", SETTINGS0 + req()), ("s", S0 + resp() + data())])
add_h2("bad-preface", "a preface with one wrong byte (PRI * HTTP/2.1)",
       [("c", PREFACE.replace(b"2.0", b"2.1") + SETTINGS0 + req()),
        ("s", S0 + resp() + data())])
add_h2("grpc-bdp", "a gRPC call with grpc-go's BDP PING and its ACK",
       [("c", C0 + frame(HEADERS, 4, 1, bytes([0x83, 0x84, 0x86]) + b"\x0f\x10\x10"
                         + b"application/grpc") + data(1, b"\0\0\0\0\1x")
         + frame(PING, 0, 0, bytes.fromhex("02041010090e0707"))),
        ("s", S0 + frame(PING, 1, 0, bytes.fromhex("02041010090e0707")) + resp()
         + data(1, b"\0\0\0\0\1y", 0) + frame(HEADERS, 5, 1, b"\x00\x0bgrpc-status\x010"))])


add_h2("continuation-orphan", "a CONTINUATION with no HEADERS before it, then a normal call",
       [("c", C0 + frame(CONT, 0x4, 1, REQ) + req(3)), ("s", S0 + resp(3) + data(3))])
add_h2("end-stream-twice", "DATA after END_STREAM on the same stream, HEADERS on a closed "
       "stream, a second END_STREAM",
       [("c", C0 + req() + data(1, b"late") + req(1)),
        ("s", S0 + resp() + data() + data(1, b"again"))])
add_h2("goaway-then-streams", "the server's GOAWAY (last stream 1), then the client opens "
       "streams 3 and 5, answered by RST_STREAM REFUSED_STREAM",
       [("c", C0 + req()), ("s", S0 + resp() + data() + frame(GOAWAY, 0, 0, b"\0\0\0\1\0\0\0\0")),
        ("c", req(3) + req(5)),
        ("s", frame(RST, 0, 3, b"\0\0\0\x07") + frame(RST, 0, 5, b"\0\0\0\x07"))])
add_h2("hpack-bad-huffman", "HPACK: a Huffman string with bad padding (EOS bits wrong), an "
       "index past both tables, an integer of 10 continuation bytes",
       [("c", C0 + frame(HEADERS, 5, 1, b"\x82\x84\x86\x41\x82\x00\x00")
         + frame(HEADERS, 5, 3, b"\xff\xff\x7f")
         + frame(HEADERS, 5, 5, b"\x3f" + b"\xff" * 10 + b"\x01") + req(7)),
        ("s", S0 + resp(1) + resp(3) + resp(5) + resp(7) + data(7))])
add_h2("client-push-promise", "a PUSH_PROMISE from the client (a protocol error)",
       [("c", C0 + req() + frame(PUSH, 0x4, 1, b"\0\0\0\2" + REQ)),
        ("s", S0 + resp() + data())])
add_h2("settings-table-size", "SETTINGS_HEADER_TABLE_SIZE 0 from the server, then the client's "
       "size update to 0 and literal fields without indexing",
       [("s", settings((1, 0))), ("c", C0 + SETTINGS_ACK + frame(HEADERS, 5, 1, b"\x20" + REQ)),
        ("s", SETTINGS_ACK + resp() + data())])


def upgrade_case(body):
    def build():
        c = Conn(sport=80)
        c.handshake()
        r = (b"POST /up HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\n"
             b"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n"
             b"Content-Length: %d\r\n\r\n" % len(body))
        c.c(payload=r + body)
        c.s(payload=b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
            b"Upgrade: h2c\r\n\r\n" + S0 + resp(1) + data(1))
        c.c(payload=C0 + SETTINGS_ACK + req(3))
        c.s(payload=resp(3) + data(3))
        c.close()
        return c.pkts
    return build


fn = upgrade_case(b"x" * 300)
fn.__name__ = "upgrade_with_body"
case("h2", "h2c Upgrade of a POST with a 300-byte body", port=80)(fn)
fn = upgrade_case(b"")
fn.__name__ = "upgrade_no_body"
case("h2", "h2c Upgrade of a POST without a body", port=80)(fn)


# ---------------------------------------------------------------------------------------------
# Running

FRAME_KEYS = ["HEADERS", "TRAILERS", "DATA", "WINDOW_UPDATE", "PING", "PING_ACK", "SETTINGS",
              "SETTINGS_ACK", "RST_STREAM", "GOAWAY", "PRIORITY", "PUSH_PROMISE",
              "CONTINUATION", "UNKNOWN"]


def contract(v):
    out = {"connections": v.get("connections"), "calls": v.get("calls")}
    for side in ("client", "server"):
        s = v.get("sides", {}).get(side, {})
        for k in FRAME_KEYS:
            out["%s %s" % (side, k)] = s.get("frames", {}).get(k, 0)
        for k in ("writes", "bytes", "bdp_pings"):
            out["%s %s" % (side, k)] = s.get(k, 0)
    return out


def build_file(c, d):
    b = c["build"]()
    if isinstance(b, list):
        b = pcap(b)
    f = os.path.join(d, c["name"] + ".pcap")
    with open(f, "wb") as fh:
        fh.write(b)
    return f


def run(binary, argv, timeout=60):
    """(exit status or None on a timeout, stdout, stderr, peak RSS in KiB) of one run, its
    peak RSS from wait4 (no /usr/bin/time needed)."""
    import tempfile
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen([binary] + argv, stdout=out, stderr=err)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                p.kill()
                os.wait4(p.pid, 0)
                return None, b"", "timeout after %d s" % timeout, 0
            time.sleep(0.005)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (p.returncode, out.read(), err.read().decode("utf-8", "replace").rstrip("\n"),
                usage.ru_maxrss)


def tshark(f, port, upgrade):
    argv = [sys.executable, os.path.join(ROOT, "scripts/tshark-ledger.py"), f]
    if port:
        argv += ["--port", str(port)]
    if upgrade:
        argv.append("--upgrade")
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        return None
    return json.loads(p.stdout)


PEAK = [0]  # the largest peak RSS of a replay, KiB


def check(a, c, f):
    """Problems of case c on file f, one string each."""
    bad = []
    size_mib = os.path.getsize(f) / 2**20
    if c["error"] is not None:
        # Exit 2: one line `h2ledger: FILE: ...`; exit 1: a ledger and a warning naming FILE.
        code, text = c["error"]
        rc, out, err, rss = run(a.bin, ["replay", f])
        one = code == 1 or len(err.splitlines()) == 1
        if rc != code or not one or f not in err or text not in err.replace("\n  ", " ") \
                or "panick" in err:
            bad.append("want exit %d and a message naming the file with %r: exit %s, %r"
                       % (code, text, rc, err))
        return bad, {}
    ledgers = {}
    for mode, extra in (("auto", []), ("port", ["--port", str(c["port"])])):
        rc, out, err, rss = run(a.bin, ["replay", f, "-T", "json"] + extra)
        if rc not in (0, 1) or "panick" in err:
            bad.append("replay %s: exit %s: %s" % (" ".join(extra), rc, err[-300:]))
            continue
        PEAK[0] = max(PEAK[0], rss)
        if rss / 1024 > a.limit_mib + size_mib:
            bad.append("replay %s: peak RSS %.1f MiB" % (" ".join(extra), rss / 1024))
        ledgers[mode] = json.loads(out)
    for view in (["frames", f, "-T", "jsonl"], ["calls", f, "-T", "jsonl"],
                 ["replay", f, "--analyze"]):
        rc, out, err, rss = run(a.bin, view)
        if rc not in (0, 1, 3) or "panick" in err:
            bad.append("%s: exit %s: %s" % (" ".join(view[:1] + view[2:]), rc, err[-300:]))
    if a.no_tshark or not c["tshark"]:
        return bad, ledgers
    upgrade = c["name"].startswith("upgrade")
    refs = {}
    for mode, port in (("auto", None), ("port", c["port"])):
        if mode not in ledgers:
            continue
        # --quick: one tshark run (its ports given) is the reference of both modes.
        key = c["port"] if a.quick else port
        if key not in refs:
            refs[key] = tshark(f, key, upgrade)
        ref = refs[key]
        want = contract(ref) if ref else contract({"connections": 0, "calls": 0})
        truth = c["truth"]
        if callable(truth):
            want = truth(want)
        for k, v in (truth if isinstance(truth, dict) else {}).items():
            want[k] = v
        got = contract(ledgers[mode])
        diffs = ["%s: tshark %s, h2ledger %s" % (k, want[k], got[k]) for k in want
                 if want[k] != got[k]]
        if diffs:
            bad.append("%s: %s" % ("without --port" if mode == "auto" else "--port %d"
                                   % c["port"], "; ".join(diffs)))
    return bad, ledgers


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/h2ledger"))
    ap.add_argument("--dir", default="/tmp/h2ledger-hostile")
    ap.add_argument("--only", default="")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-tshark", action="store_true")
    ap.add_argument("--limit-mib", type=float, default=64)
    ap.add_argument("--write-only", action="store_true",
                    help="write the captures to --dir and print their paths, run nothing")
    a = ap.parse_args()
    cases = [c for c in CASES if (not a.quick or c["quick"])
             and (not a.only or any(s in c["name"] for s in a.only.split(",")))]
    if a.list:
        for c in cases:
            print("%-5s %-28s %s" % (c["kind"], c["name"], c["note"]))
        return 0
    os.makedirs(a.dir, exist_ok=True)
    nbad = 0
    for c in cases:
        f = build_file(c, a.dir)
        if a.write_only:
            print(f)
            continue
        bad, _ = check(a, c, f)
        nbad += bool(bad)
        print("%-5s %-28s %s" % (c["kind"], c["name"], "ok" if not bad else "DIFFERS"),
              flush=True)
        for b in bad:
            print("      " + b, flush=True)
    if not a.write_only:
        print("hostile: %d of %d cases differ (largest peak RSS of a replay: %.1f MiB)"
              % (nbad, len(cases), PEAK[0] / 1024))
    return 1 if nbad else 0


if __name__ == "__main__":
    sys.exit(main())
