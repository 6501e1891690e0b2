#!/usr/bin/env python3
"""`just stress`: h2ledger on inputs made to push every bound (issue 36), with exact counts and
peak RSS for every view.

usage: scripts/stress.py [--bin PATH] [--dir DIR] [--quick] [--limit-mib N]

Each case is a capture made here by scripts/gen-capture.py (not stored), or a real server's
capture from captures/. Every view runs on it under /usr/bin/time (peak RSS): `replay -T json`,
`replay` (the table), `replay --analyze -T json`, `replay -T prometheus`, `calls -T jsonl`,
`frames -T jsonl` and `frames --messages -T jsonl`. The JSON of `replay` is checked against
the counts the case must give, and each view's peak RSS against --limit-mib (64 by default)
plus the capture's size. One line per case and view; the exit status is 1 when a count or a
bound is wrong.

Cases (--quick: the first number of each; default: all):
  other 10,000                    connections of a binary protocol that is not HTTP/2, evicted
                                  and back with frame-like bytes: none is HTTP/2
  handshakes 10,000 / 100,000     connections, every handshake first, then every request, then
                                  every response, never closed (more than --max-connections)
  handshakes6 10,000 / 100,000    the same over IPv6
  concurrent 100,000              the same connections opened first, then calls, then closed
  streams 2^17 / 2^20             one connection opening N + 10 streams, never ended; the last
                                  10 answered with headers and trailers
  grpcstreams 2^17                one connection opening N gRPC calls, each with the start of a
                                  message, never ended (past the gRPC tracker's 32,768 streams)
  pings 1,000,000                 unanswered PINGs on one connection
  rsts 1,000,000                  streams opened and reset (RST_STREAM CANCEL)
  window-held                     captures/findings/window-held-nghttpd.pcap: a real nghttpd's
                                  windows held at zero for 5 s until the client closes
  window-held-grpcgo              captures/findings/window-held-grpcgo.pcap: a real grpc-go
                                  server's connection and stream windows held the same way
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

VIEWS = [
    ("replay -T json", ["replay", "{f}", "-T", "json"]),
    ("replay", ["replay", "{f}"]),
    ("replay --analyze", ["replay", "{f}", "--analyze", "-T", "json"]),
    ("replay -T prometheus", ["replay", "{f}", "-T", "prometheus"]),
    ("calls -T jsonl", ["calls", "{f}", "-T", "jsonl"]),
    ("frames -T jsonl", ["frames", "{f}", "-T", "jsonl"]),
    ("frames --messages", ["frames", "{f}", "--messages", "-T", "jsonl"]),
]


def frames(v, side, kind):
    return v["sides"][side]["frames"].get(kind, 0)


def expect_conns(n):
    def check(v):
        want = {"connections": n, "calls": n}
        got = {"connections": v["connections"], "calls": v["calls"]}
        for side in ("client", "server"):
            want[side + " HEADERS"] = n
            got[side + " HEADERS"] = frames(v, side, "HEADERS")
        if "mid-stream" in v["anomalies"]:
            got["mid-stream"] = v["anomalies"]["mid-stream"]
            want["mid-stream"] = 0
        return want, got
    return check


def expect_other(v):
    want = {"connections": 0, "findings": []}
    got = {"connections": v["connections"], "findings": [f["id"] for f in v["findings"]]}
    return want, got


def expect_streams(n):
    def check(v):
        want = {"connections": 1, "calls": n + 10, "client HEADERS": n + 10,
                "server HEADERS": 10, "server TRAILERS": 10}
        got = {"connections": v["connections"], "calls": v["calls"],
               "client HEADERS": frames(v, "client", "HEADERS"),
               "server HEADERS": frames(v, "server", "HEADERS"),
               "server TRAILERS": frames(v, "server", "TRAILERS")}
        return want, got
    return check


def expect_grpc_streams(n):
    def check(v):
        want = {"connections": 1, "calls": n, "client HEADERS": n, "client DATA": n}
        got = {"connections": v["connections"], "calls": v["calls"],
               "client HEADERS": frames(v, "client", "HEADERS"),
               "client DATA": frames(v, "client", "DATA")}
        return want, got
    return check


def expect_pings(n):
    def check(v):
        want = {"connections": 1, "client PING": n, "server PING_ACK": 0}
        got = {"connections": v["connections"], "client PING": frames(v, "client", "PING"),
               "server PING_ACK": frames(v, "server", "PING_ACK")}
        return want, got
    return check


def expect_rsts(n):
    def check(v):
        want = {"connections": 1, "calls": n, "client RST_STREAM": n}
        got = {"connections": v["connections"], "calls": v["calls"],
               "client RST_STREAM": frames(v, "client", "RST_STREAM")}
        return want, got
    return check


def expect_window_held(v):
    ids = {f["id"]: f for f in v["findings"]}
    z = ids.get("zero-window", {})
    s = ids.get("flow-stall", {})
    want = {"connections": 1, "zero-window side": "client", "held >= 4.9 s": True,
            "stall unresolved": 1}
    got = {"connections": v["connections"], "zero-window side": z.get("side"),
           "held >= 4.9 s": z.get("evidence", {}).get("held_us_max", 0) >= 4_900_000,
           "stall unresolved": s.get("evidence", {}).get("unresolved")}
    return want, got


def cases(quick):
    big = not quick
    out = [("other", 10_000, expect_other),
           ("handshakes", 10_000, expect_conns(10_000)),
           ("handshakes6", 10_000, expect_conns(10_000)),
           ("streams", 1 << 17, expect_streams(1 << 17)),
           ("grpcstreams", 1 << 17, expect_grpc_streams(1 << 17))]
    if big:
        out += [("handshakes", 100_000, expect_conns(100_000)),
                ("handshakes6", 100_000, expect_conns(100_000)),
                ("concurrent", 100_000, expect_conns(100_000)),
                ("streams", 1 << 20, expect_streams(1 << 20)),
                ("pings", 1_000_000, expect_pings(1_000_000)),
                ("rsts", 1_000_000, expect_rsts(1_000_000))]
    out.append(("window-held", None, expect_window_held))
    out.append(("window-held-grpcgo", None, expect_window_held))
    return out


def capture(d, kind, n):
    if n is None:
        server = "grpcgo" if kind.endswith("grpcgo") else "nghttpd"
        return os.path.join(ROOT, "captures/findings/window-held-%s.pcap" % server)
    f = os.path.join(d, "%s-%d.pcap" % (kind, n))
    if not os.path.exists(f):
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts/gen-capture.py"), kind,
                        str(n), f + ".tmp"], check=True)
        os.rename(f + ".tmp", f)
    return f


def run(binary, argv):
    t = time.monotonic()
    p = subprocess.run(["/usr/bin/time", "-f", "%M", binary] + argv, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    wall = time.monotonic() - t
    rss_kib = int(p.stderr.decode().strip().splitlines()[-1])
    return p.returncode, p.stdout, rss_kib, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/h2ledger"))
    ap.add_argument("--dir", default=os.environ.get("BENCH_DIR", "/tmp/h2ledger-stress"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--limit-mib", type=float, default=64)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    bad = 0
    print("%-22s %-22s %9s %8s  %s" % ("case", "view", "peak RSS", "seconds", "counts"))
    for kind, n, check in cases(a.quick):
        f = capture(a.dir, kind, n)
        name = kind if n is None else "%s %d" % (kind, n)
        size_mib = os.path.getsize(f) / 2**20
        for view, argv in VIEWS:
            rc, out, rss, wall = run(a.bin, [x.format(f=f) for x in argv])
            note = ""
            if rc not in (0, 3):
                note = "exit %d" % rc
            elif view == "replay -T json":
                want, got = check(json.loads(out))
                note = "ok " + json.dumps(got) if want == got else \
                    "WRONG want %s got %s" % (json.dumps(want), json.dumps(got))
            limit = a.limit_mib + size_mib
            over = rss / 1024 > limit
            if over:
                note += " RSS over %.0f MiB" % limit
            bad += note.startswith(("WRONG", "exit")) or over
            print("%-22s %-22s %6.1f MiB %8.2f  %s" % (name, view, rss / 1024, wall, note),
                  flush=True)
    print("stress: %d wrong" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
