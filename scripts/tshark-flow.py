#!/usr/bin/env python3
"""Flow-control windows, stalls and gRPC messages of a capture, from tshark's dissection only.

An independent reimplementation of docs/ledger.md "Flow control" (issue 11) over the frames
tshark decodes, for cross-checking h2ledger (`replay --analyze`, keys `flow_control` and
`grpc`). Windows are kept as plain numbers per stream (no relative trick), SETTINGS changes
walk every open stream.

usage: scripts/tshark-flow.py CAPTURE --port P   -> JSON on stdout

Frames, per packet, in order (Wireshark 4.0), from:
  tshark -r CAPTURE -d tcp.port==P,http2 -o tcp.desegment_tcp_streams:TRUE
         -Y "tcp.port==P && (tcp.len>0 or tcp.flags.syn==1)" -T fields -E separator=/t -E occurrence=a
         -E aggregator=, -e frame.time_epoch -e tcp.stream -e tcp.srcport -e tcp.flags.syn
         -e tcp.flags.ack -e http2.type -e http2.flags -e http2.streamid -e http2.length
         -e http2.window_update.window_size_increment -e http2.settings.id
         -e http2.settings.initial_window_size -e http2.magic
WINDOW_UPDATE increments pair with the WINDOW_UPDATE frames of the packet in order; each
non-ACK SETTINGS frame owns length/6 of the settings ids, and each id 4 one
initial_window_size. Client = SYN sender; a connection without its SYN, or whose client
bytes do not start with the preface (HTTP/1.1 Upgrade), is unknown (counted once it shows
HTTP/2 frames; its frames are not followed). gRPC sides: the server port is P.
gRPC: tshark -r CAPTURE -d tcp.port==P,http2 -Y "tcp.port==P && grpc" -T fields -e tcp.stream -e tcp.srcport
      -e grpc.message_length -e grpc.compressed_flag (messages tshark reassembled in full).
Stall times: packet times in nanoseconds (frame.time_epoch is decimal text: parsed exactly).
"""
import argparse
import json
import subprocess
import sys
from decimal import Decimal

DEFAULT = 65535


def ns(t):
    return int(Decimal(t) * 1_000_000_000)


def split(v):
    return v.split(",") if v else []


class Side:
    def __init__(self):
        self.conn = DEFAULT
        self.initial = DEFAULT
        self.pending = []


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def flow(cap, port):
    out = run([
        "tshark", "-r", cap, "-d", f"tcp.port=={port},http2", "-o", "tcp.desegment_tcp_streams:TRUE",
        "-Y", f"tcp.port=={port} && (tcp.len>0 or tcp.flags.syn==1)", "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a",
        "-E", "aggregator=,", "-e", "frame.time_epoch", "-e", "tcp.stream", "-e", "tcp.srcport",
        "-e", "tcp.flags.syn", "-e", "tcp.flags.ack", "-e", "http2.type", "-e", "http2.flags",
        "-e", "http2.streamid", "-e", "http2.length", "-e", "http2.window_update.window_size_increment",
        "-e", "http2.settings.id", "-e", "http2.settings.initial_window_size", "-e", "http2.magic",
    ])
    acc = {s: {"stalls": 0, "unresolved": 0, "by_limit": {"stream": 0, "connection": 0, "both": 0},
               "stalled_ns": [], "max_window": {"stream": 0, "connection": 0}}
           for s in ("client", "server")}
    conns = {}
    unknown = set()

    def end_stall(c, s_side, sid, t):
        st = c["streams"].get(sid)
        if st and st["stall"][s_side] is not None:
            start = st["stall"][s_side]
            w = c["sides"][s_side]
            if min(w.initial + st["adj"][s_side], w.conn) > 0:
                st["stall"][s_side] = None
                acc[c["name"][s_side]]["stalled_ns"].append(t - start)

    def free(c, sid):
        st = c["streams"].pop(sid, None)
        if st:
            for d in (0, 1):
                if st["stall"][d] is not None:
                    acc[c["name"][d]]["unresolved"] += 1

    def open_stream(c, sid):
        if sid in c["streams"]:
            return True
        par = sid & 1
        if sid <= c["max_id"][par]:
            return False
        c["max_id"][par] = sid
        c["streams"][sid] = {"adj": [0, 0], "stall": [None, None], "ended": [False, False]}
        for d in (0, 1):
            a = acc[c["name"][d]]["max_window"]
            a["stream"] = max(a["stream"], c["sides"][d].initial)
        return True

    for line in out.splitlines():
        f = line.split("\t")
        f += [""] * (13 - len(f))
        t, stream, sport, syn, ack = ns(f[0]), f[1], int(f[2]), f[3], f[4]
        if syn in ("1", "True") and ack in ("0", "False"):
            conns[stream] = {"client_port": sport, "sides": [Side(), Side()], "streams": {},
                             "max_id": [0, 0], "name": ["client", "server"], "seen": False,
                             "first": [None, None]}
            continue
        c = conns.get(stream)
        if c is not None:
            d = 0 if sport == c["client_port"] else 1
            if c["first"][d] is None:
                # The client's bytes must start with the preface (not an HTTP/1.1 Upgrade).
                c["first"][d] = bool(f[12]) if d == 0 else True
                if not c["first"][d]:
                    c["unknown"] = True
        types = [int(x) for x in split(f[5])]
        if not types:
            continue
        if c is None or c.get("unknown"):
            unknown.add(stream)
            continue
        d = 0 if sport == c["client_port"] else 1
        if not c["seen"]:
            c["seen"] = True
            for s in ("client", "server"):
                acc[s]["max_window"]["connection"] = max(acc[s]["max_window"]["connection"], DEFAULT)
        flags = [int(x, 16) for x in split(f[6])]
        sids = [int(x) for x in split(f[7])]
        lens = [int(x) for x in split(f[8])]
        incs = [int(x) for x in split(f[9])]
        ids = [int(x) for x in split(f[10])]
        iws = [int(x) for x in split(f[11])]
        for ty, fl, sid, ln in zip(types, flags, sids, lens):
            es = fl & 1
            if ty == 0:  # DATA
                w = c["sides"][d]
                w.conn -= ln
                if not open_stream(c, sid):
                    continue
                st = c["streams"][sid]
                st["adj"][d] -= ln
                sw = w.initial + st["adj"][d]
                if not es and st["stall"][d] is None and min(sw, w.conn) <= 0:
                    st["stall"][d] = t
                    a = acc[c["name"][d]]
                    a["stalls"] += 1
                    lim = "both" if sw <= 0 and w.conn <= 0 else ("stream" if sw <= 0 else "connection")
                    a["by_limit"][lim] += 1
                if es:
                    st["ended"][d] = True
                    if all(st["ended"]):
                        free(c, sid)
            elif ty == 1:  # HEADERS
                if sid not in c["streams"]:
                    open_stream(c, sid)
                st = c["streams"].get(sid)
                if st and es:
                    st["ended"][d] = True
                    if all(st["ended"]):
                        free(c, sid)
            elif ty == 3:  # RST_STREAM
                free(c, sid)
            elif ty == 8:  # WINDOW_UPDATE from d: the other side's window
                inc = incs.pop(0)
                s = 1 - d
                w = c["sides"][s]
                if inc == 0:
                    continue
                if sid == 0:
                    w.conn += inc
                    a = acc[c["name"][s]]["max_window"]
                    a["connection"] = max(a["connection"], w.conn)
                    for k in list(c["streams"]):
                        end_stall(c, s, k, t)
                elif sid in c["streams"]:
                    st = c["streams"][sid]
                    st["adj"][s] += inc
                    a = acc[c["name"][s]]["max_window"]
                    a["stream"] = max(a["stream"], w.initial + st["adj"][s])
                    end_stall(c, s, sid, t)
            elif ty == 4:  # SETTINGS
                if fl & 1:  # ACK from d applies the other side's oldest pending SETTINGS
                    w = c["sides"][d]
                    if w.pending:
                        v = w.pending.pop(0)
                        if v is not None:
                            old = w.initial
                            w.initial = v
                            if v > old:
                                for k, st in c["streams"].items():
                                    a = acc[c["name"][d]]["max_window"]
                                    a["stream"] = max(a["stream"], v + st["adj"][d])
                                for k in list(c["streams"]):
                                    end_stall(c, d, k, t)
                else:
                    v = None
                    for _ in range(ln // 6):
                        if ids.pop(0) == 4:
                            v = iws.pop(0)
                    c["sides"][1 - d].pending.append(v)
    for c in conns.values():
        if c.get("unknown"):
            continue
        for sid in list(c["streams"]):
            free(c, sid)
    res = {}
    for s in ("client", "server"):
        a = acc[s]
        v = sorted(a.pop("stalled_ns"))
        a["stalled_ns"] = {"total": sum(v), "count": len(v), "max": v[-1] if v else None}
        res[s] = a
    res["unknown_connections"] = len(unknown)
    return res, conns


def grpc(cap, port, conns):
    out = run([
        "tshark", "-r", cap, "-d", f"tcp.port=={port},http2", "-o", "tcp.desegment_tcp_streams:TRUE",
        "-Y", f"tcp.port=={port} && grpc", "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=,",
        "-e", "tcp.stream", "-e", "tcp.srcport", "-e", "grpc.message_length", "-e", "grpc.compressed_flag",
    ])
    res = {s: {"messages": 0, "message_bytes": 0, "compressed": 0} for s in ("client", "server")}
    for line in out.splitlines():
        f = line.split("\t") + ["", "", "", ""]
        s = "server" if int(f[1]) == port else "client"
        for ln, z in zip(split(f[2]), split(f[3])):
            res[s]["messages"] += 1
            res[s]["message_bytes"] += int(ln)
            res[s]["compressed"] += int(z not in ("0", "False", "0x00"))
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("capture")
    ap.add_argument("--port", type=int, required=True)
    a = ap.parse_args()
    fc, conns = flow(a.capture, a.port)
    out = {"flow_control": fc, "grpc": grpc(a.capture, a.port, conns)}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
