#!/usr/bin/env python3
"""Reference HTTP/2 frame ledger computed by Wireshark (tshark).

usage: tshark-ledger.py CAPTURE [--port P ...] [--tshark PATH] [--after-frame N]
                        [--from T] [--to T] [--details] [--tls] [--keylog FILE]

Runs tshark on CAPTURE, decoding every TCP port P as HTTP/2 (ports given with
--port, repeatable, or auto-detected from SYNs / the client preface / the
receiver of the first HEADERS on most streams / the lower port), and prints JSON of this shape:

  {"connections": n, "calls": n,
   "sides": {"client": {"frames": {"HEADERS": n, "TRAILERS": n, "DATA": n,
                                    "WINDOW_UPDATE": n, "PING": n, "PING_ACK": n,
                                    "SETTINGS": n, "SETTINGS_ACK": n,
                                    "RST_STREAM": n, "GOAWAY": n, "PRIORITY": n,
                                    "PUSH_PROMISE": n, "CONTINUATION": n,
                                    "UNKNOWN": n},
                         "bdp_pings": n, "writes": n, "bytes": n},
             "server": {...}}}

Definitions (see captures/README.md):
  * client side = the SYN sender; without a SYN in the capture: the side whose
    peer port is a --port / detected server port; else the side that sent the
    preface; else the side that sent HEADERS on odd stream ids; else the side
    with the higher (ephemeral) port.
  * HEADERS = the first HEADERS frame a side sends on a stream; TRAILERS = any
    later HEADERS frame from the same side on the same stream (so a 1xx
    informational response makes the final response count as TRAILERS).
  * PING / PING_ACK and SETTINGS / SETTINGS_ACK split by the ACK flag (0x1).
  * bdp_pings = PINGs (not ACKs) with payload 02 04 10 10 09 0e 07 07
    (grpc-go's BDP estimator).
  * writes = TCP segments of that side with tcp.len > 0 that are not
    retransmissions (tcp.analysis.retransmission / fast_retransmission /
    spurious_retransmission); a flagged segment that carries bytes beyond the
    highest sequence number seen so far in its direction (partial overlap)
    still counts as a write. bytes = sum of tcp.len of the writes.
  * calls = client HEADERS; connections = TCP connections carrying HTTP/2.
  Only TCP connections in which tshark dissected HTTP/2 are counted.

Only frames that tshark actually dissects are counted (e.g. nothing after a
snaplen gap in a TCP stream, nothing when a capture starts mid-frame and the
dissector loses frame sync).  --after-frame N ignores capture packets 1..N
(their frames and writes), after dissecting them normally.  --from/--to T
(epoch seconds) likewise keep only the frames and writes of packets with
from <= frame.time_epoch < to (one phase of a run); calls are then the client
HEADERS in that range.

--tls (implied by --keylog FILE): HTTP/2 over TLS. No port is decoded as
HTTP/2 (tshark finds it by ALPN once it decrypts; a --port given is decoded as TLS), tshark gets
`-o tls.keylog_file:FILE` (without FILE it uses the secrets a pcapng embeds in
Decryption Secrets Blocks), and each side gets "tls_records": the number of
tls.record occurrences in its packets. --reassemble-out-of-order adds
`-o tcp.reassemble_out_of_order:TRUE` (Wireshark 4.0 leaves it off, and then a
segment captured out of order ends TLS decryption of that direction).

Stdlib only; works with any python3 >= 3.6.
"""

import argparse
import json
import subprocess
import sys
from collections import OrderedDict

FRAME_NAMES = ["HEADERS", "TRAILERS", "DATA", "WINDOW_UPDATE", "PING", "PING_ACK",
               "SETTINGS", "SETTINGS_ACK", "RST_STREAM", "GOAWAY", "PRIORITY",
               "PUSH_PROMISE", "CONTINUATION", "UNKNOWN"]
TYPE_NAMES = {0: "DATA", 1: "HEADERS", 2: "PRIORITY", 3: "RST_STREAM", 4: "SETTINGS",
              5: "PUSH_PROMISE", 6: "PING", 7: "GOAWAY", 8: "WINDOW_UPDATE",
              9: "CONTINUATION"}
BDP_PING = "02041010090e0707"

FIELDS = ["frame.number", "frame.time_epoch", "ip.src", "ipv6.src", "tcp.srcport",
          "tcp.dstport", "tcp.stream", "tcp.len", "tcp.seq_raw", "tcp.flags",
          "tcp.analysis.retransmission", "tcp.analysis.fast_retransmission",
          "tcp.analysis.spurious_retransmission", "http2.magic", "http2.type",
          "http2.flags", "http2.streamid", "http2.ping"]


def run_tshark(tshark, args):
    cmd = [tshark] + args
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.stderr.write("tshark-ledger: %s failed (%d):\n%s\n"
                         % (" ".join(cmd), p.returncode, p.stderr.decode("utf-8", "replace")))
        sys.exit(1)
    return p.stdout.decode("utf-8", "replace")


def first(v):
    return v.split(",")[0] if v else ""


def ints(v, base=10):
    if not v:
        return []
    return [int(x, 0) if base == 0 else int(x, base) for x in v.split(",") if x != ""]


def detect_ports(tshark, capture):
    """Server ports: dst of SYN-without-ACK; else dst of the preface; else lower port."""
    out = run_tshark(tshark, ["-r", capture, "-Y", "tcp", "-T", "fields",
                              "-E", "separator=/t", "-E", "occurrence=f",
                              "-e", "tcp.stream", "-e", "tcp.srcport", "-e", "tcp.dstport",
                              "-e", "tcp.flags", "-e", "tcp.payload"])
    syn_ports, preface_ports, lower = set(), set(), {}
    preface_hex = "505249202a20485454502f322e30"  # "PRI * HTTP/2.0"
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) < 5 or not f[0] or not f[1] or not f[3]:
            continue  # a TCP header tshark could not read (malformed): no ports, no flags
        sp, dp, flags = int(f[1]), int(f[2]), int(f[3], 16)
        if flags & 0x02 and not flags & 0x10:
            syn_ports.add(dp)
        if f[4].replace(":", "").lower().startswith(preface_hex):
            preface_ports.add(dp)
        lower.setdefault(f[0], min(sp, dp))
    if syn_ports or preface_ports:
        return sorted(syn_ports | preface_ports)
    # No SYN, no preface (capture started mid-connection): decode both ends of
    # every connection as HTTP/2; the sender of the first HEADERS frame seen
    # on a stream is the client (majority vote over streams), its peer port is
    # the server port. Fallback: the lower port.
    all_ports = set()
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) >= 3 and f[0]:
            all_ports.update((int(f[1]), int(f[2])))
    args = ["-r", capture]
    for p in sorted(all_ports):
        args += ["-d", "tcp.port==%d,http2" % p]
    out2 = run_tshark(tshark, args + ["--disable-protocol", "grpc", "-Y", "http2.type == 1",
                                      "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a",
                                      "-e", "tcp.stream", "-e", "tcp.dstport", "-e", "http2.type",
                                      "-e", "http2.streamid"])
    first_seen, votes = set(), {}
    for line in out2.splitlines():
        f = line.split("\t")
        if len(f) < 4 or not f[0]:
            continue
        for t, sid in zip(ints(f[2]), ints(f[3])):
            if t == 1 and (f[0], sid) not in first_seen:
                first_seen.add((f[0], sid))
                votes.setdefault(f[0], {}).setdefault(int(f[1]), 0)
                votes[f[0]][int(f[1])] += 1
    ports = set()
    for stream, low in lower.items():
        v = votes.get(stream)
        ports.add(max(v.items(), key=lambda kv: kv[1])[0] if v else low)
    return sorted(ports)


def ledger(tshark, capture, ports, after_frame=0, details=False, t_from=None, t_to=None,
           tls=False, keylog=None, ooo=False, decode_as=True):
    args = ["-r", capture]
    for p in ports if decode_as else []:
        # Over TLS a port given is decoded as TLS (tshark finds HTTP/2 inside by ALPN): a
        # client port another dissector claims by number (44818, EtherNet/IP) otherwise
        # hides the connection's ClientHello.
        args += ["-d", "tcp.port==%d,%s" % (p, "tls" if tls else "http2")]
    if keylog:
        args += ["-o", "tls.keylog_file:%s" % keylog]
    if ooo:
        args += ["-o", "tcp.reassemble_out_of_order:TRUE"]
    fields = FIELDS + (["tls.record.content_type"] if tls else [])
    args += ["--disable-protocol", "grpc",
             "-o", "tcp.desegment_tcp_streams:TRUE",
             "-o", "tcp.analyze_sequence_numbers:TRUE",
             "-Y", "tcp", "-T", "fields", "-E", "separator=/t",
             "-E", "occurrence=a", "-E", "aggregator=,"]
    for f in fields:
        args += ["-e", f]
    out = run_tshark(tshark, args)
    idx = {f: i for i, f in enumerate(fields)}
    port_set = set(ports)

    conns = OrderedDict()  # tcp.stream -> state

    def conn(stream):
        c = conns.get(stream)
        if c is None:
            c = {"endpoints": set(), "syn_client": None, "preface_client": None,
                 "odd_headers": {}, "http2": False, "packets": []}
            conns[stream] = c
        return c

    warnings = []
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) < len(fields):
            f += [""] * (len(fields) - len(f))
        g = lambda name: f[idx[name]]
        if not g("tcp.stream"):
            continue
        stream = int(first(g("tcp.stream")))
        src = first(g("ip.src")) or first(g("ipv6.src"))
        sport, dport = int(first(g("tcp.srcport"))), int(first(g("tcp.dstport")))
        me = (src, sport)
        c = conn(stream)
        c["endpoints"].add(me)
        flags = int(first(g("tcp.flags")) or "0", 16)
        if flags & 0x02 and not flags & 0x10 and c["syn_client"] is None:
            c["syn_client"] = me
        if g("http2.magic") and c["preface_client"] is None:
            c["preface_client"] = me
        types = ints(g("http2.type"))
        hflags = ints(g("http2.flags"), 16)
        sids = ints(g("http2.streamid"))
        pings = [p.replace(":", "").lower() for p in g("http2.ping").split(",") if p]
        if types or g("http2.magic"):
            c["http2"] = True
        if not (len(types) == len(hflags) == len(sids)):
            warnings.append("frame %s: %d types, %d flags, %d stream ids; extra ignored"
                            % (g("frame.number"), len(types), len(hflags), len(sids)))
            n = min(len(types), len(hflags), len(sids))
            types, hflags, sids = types[:n], hflags[:n], sids[:n]
        for t, fl, sid in zip(types, hflags, sids):
            if t == 1 and sid % 2 == 1:
                c["odd_headers"].setdefault(me, 0)
                c["odd_headers"][me] += 1
        retrans = bool(g("tcp.analysis.retransmission") or g("tcp.analysis.fast_retransmission")
                       or g("tcp.analysis.spurious_retransmission"))
        seq = g("tcp.seq_raw")
        c["packets"].append({
            "frame": int(first(g("frame.number"))), "src": me, "dport": dport,
            "time": float(first(g("frame.time_epoch")) or "0"),
            "len": int(first(g("tcp.len")) or "0"), "seq": int(first(seq)) if seq else None,
            "retrans": retrans, "frames": list(zip(types, hflags, sids)), "pings": pings,
            "tls_records": len(ints(g("tls.record.content_type"))) if tls else 0,
        })

    result_sides = OrderedDict()
    side_keys = ["bdp_pings", "writes", "bytes"] + (["tls_records"] if tls else [])
    for side in ("client", "server"):
        result_sides[side] = OrderedDict([
            ("frames", OrderedDict((n, 0) for n in FRAME_NAMES))] + [(k, 0) for k in side_keys])
    per_conn = []
    n_conns = 0
    for stream, c in conns.items():
        if not c["http2"]:
            continue
        n_conns += 1
        eps = sorted(c["endpoints"])
        client, how = None, None
        if c["syn_client"] is not None:
            client, how = c["syn_client"], "syn"
        if client is None:
            for ep in eps:
                others = [e for e in eps if e != ep]
                if ep[1] not in port_set and others and all(o[1] in port_set for o in others):
                    client, how = ep, "server-port"
        if client is None and c["preface_client"] is not None:
            client, how = c["preface_client"], "preface"
        if client is None and c["odd_headers"]:
            client, how = max(c["odd_headers"].items(), key=lambda kv: kv[1])[0], "odd-streams"
        if client is None:
            client, how = max(eps, key=lambda e: e[1]), "ephemeral-port"
        seen_headers = set()  # (side, h2 stream id)
        max_end = {}
        cl = {"client": None, "server": None}
        for side in cl:
            cl[side] = OrderedDict([("frames", OrderedDict((n, 0) for n in FRAME_NAMES))]
                                   + [(k, 0) for k in side_keys])
        for pkt in c["packets"]:
            side = "client" if pkt["src"] == client else "server"
            # write accounting (sequence tracking uses all packets)
            is_write = False
            if pkt["len"] > 0:
                end = None
                if pkt["seq"] is not None:
                    end = (pkt["seq"] + pkt["len"]) & 0xFFFFFFFF
                prev = max_end.get(side)
                if not pkt["retrans"]:
                    is_write = True
                elif end is not None and prev is not None and ((end - prev) & 0xFFFFFFFF) < 0x80000000 and end != prev:
                    is_write = True  # partial overlap: carries new bytes
                if end is not None and (prev is None or ((end - prev) & 0xFFFFFFFF) < 0x80000000):
                    max_end[side] = end
            if pkt["frame"] <= after_frame:
                continue
            if t_from is not None and pkt["time"] < t_from:
                continue
            if t_to is not None and pkt["time"] >= t_to:
                continue
            s = cl[side]
            if tls:
                s["tls_records"] += pkt["tls_records"]
            if is_write:
                s["writes"] += 1
                s["bytes"] += pkt["len"]
            ping_i = 0
            for t, fl, sid in pkt["frames"]:
                name = TYPE_NAMES.get(t, "UNKNOWN")
                if t == 1:
                    key = (side, sid)
                    if key in seen_headers:
                        name = "TRAILERS"
                    else:
                        seen_headers.add(key)
                elif t == 6:
                    if fl & 0x1:
                        name = "PING_ACK"
                    else:
                        payload = pkt["pings"][ping_i] if ping_i < len(pkt["pings"]) else ""
                        ping_i += 1
                        if payload == BDP_PING:
                            s["bdp_pings"] += 1
                elif t == 4 and fl & 0x1:
                    name = "SETTINGS_ACK"
                s["frames"][name] += 1
        for side in ("client", "server"):
            tot = result_sides[side]
            for n in FRAME_NAMES:
                tot["frames"][n] += cl[side]["frames"][n]
            for k in side_keys:
                tot[k] += cl[side][k]
        per_conn.append(OrderedDict([("tcp_stream", stream), ("client", "%s:%d" % client),
                                     ("client_by", how), ("sides", cl)]))
    res = OrderedDict([("connections", n_conns),
                       ("calls", result_sides["client"]["frames"]["HEADERS"]),
                       ("sides", result_sides)])
    if details:
        res["details"] = OrderedDict([("ports", ports), ("per_connection", per_conn),
                                      ("warnings", warnings)])
    for w in warnings[:20]:
        sys.stderr.write("tshark-ledger: warning: %s\n" % w)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("capture")
    ap.add_argument("--port", type=int, action="append", default=[],
                    help="TCP port to decode as HTTP/2 (repeatable; default: auto-detect)")
    ap.add_argument("--tshark", default="tshark")
    ap.add_argument("--after-frame", type=int, default=0,
                    help="ignore frames/writes of capture packets 1..N")
    ap.add_argument("--details", action="store_true",
                    help="add a 'details' key (per-connection ledgers, ports, warnings)")
    ap.add_argument("--from", dest="t_from", type=float, default=None,
                    help="only packets at or after this time (epoch seconds)")
    ap.add_argument("--to", dest="t_to", type=float, default=None,
                    help="only packets before this time (epoch seconds)")
    ap.add_argument("--tls", action="store_true",
                    help="HTTP/2 over TLS: no decode-as, count tls_records per side")
    ap.add_argument("--keylog", default=None,
                    help="TLS key log (SSLKEYLOGFILE format) for tshark; implies --tls")
    ap.add_argument("--reassemble-out-of-order", action="store_true",
                    help="pass -o tcp.reassemble_out_of_order:TRUE (off by default in 4.0: "
                         "an out-of-order segment then breaks the stream for tshark)")
    ap.add_argument("--upgrade", action="store_true",
                    help="HTTP/1.1 Upgrade: h2c captures: no -d (forcing it makes tshark parse the "
                         "HTTP/1.1 request as frames; its HTTP dissector follows the 101 itself)")
    a = ap.parse_args()
    tls = a.tls or a.keylog is not None
    ports = a.port if tls else (a.port or detect_ports(a.tshark, a.capture))
    if not ports and not tls:
        sys.stderr.write("tshark-ledger: no TCP port found in %s\n" % a.capture)
        sys.exit(1)
    res = ledger(a.tshark, a.capture, ports, a.after_frame, a.details, a.t_from, a.t_to,
                 tls, a.keylog, a.reassemble_out_of_order, decode_as=not a.upgrade)
    json.dump(res, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
