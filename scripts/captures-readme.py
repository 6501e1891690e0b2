#!/usr/bin/env python3
"""Write captures/README.md (called by scripts/make-captures.sh).

usage: captures-readme.py CAPDIR META.json SECONDS MIDFRAME_FIRST MIDCONN_FIRST > README.md
Stdlib only.
"""
import json
import os
import subprocess
import sys

BDP = "02041010090e0707"

EXERCISES = {
    "grpcgo-article": "the article: stock grpc-go (1.33.3, Debian) health Check, one connection; "
                      "grpc-go BDP estimator on both sides (WINDOW_UPDATE + PING 02 04 10 10 09 0e 07 07 "
                      "on DATA when no ping is outstanding, ACKed by the peer); Ethernet linktype, us timestamps",
    "grpcgo-article-any": "same traffic as grpcgo-article: pcapng, LINUX_SLL2 (linktype 276), ns timestamps",
    "grpcgo-article-sll": "same traffic as grpcgo-article: LINUX_SLL (linktype 113)",
    "tonic-adaptive": "tonic 0.14 client+server (hyper h2), adaptive window ON: hyper's BDP pings "
                      "(payload is not grpc-go's), DATA + empty END_STREAM DATA per request",
    "tonic-fixed": "tonic 0.14, adaptive window OFF: no PINGs at all",
    "nghttp-nghttpd": "non-gRPC h2c: 5 connections (3 nghttp, 2 h2load), GETs, a 200 KiB POST echoed back "
                      "(flow control, WINDOW_UPDATEs, multi-segment DATA), PRIORITY frames, GOAWAY, h2load "
                      "with 4 concurrent streams",
    "python-grpcio-ipv6": "grpc core (python3-grpcio) over IPv6 [::1]; 100 KiB request and response "
                          "messages (DATA frames spanning several segments); grpc core's own BDP pings "
                          "(not grpc-go's payload, so bdp_pings = 0)",
    "spanning-mtu1500": "lo with MTU 1500 and TSO/GSO/GRO off inside a private netns: every 16 KiB DATA "
                        "frame spans ~12 TCP segments of 1448 bytes",
    "midconn": "capture starting after handshake/preface/SETTINGS: no SYN (client side must come from "
               "the port), a PING_ACK or response whose request was sent before the cut can appear first",
    "midconn-trailers-ipv6": "mid-connection and mid-frame at once, IPv6: the first server bytes are "
                             "the tail of a 100 KiB DATA frame, then the trailers of a stream that "
                             "began before the cut",
    "curl-upgrade-trailers": "trailers on the upgraded stream 1 that cross the client's RST_STREAM on the "
                             "wire: still that stream's second HEADERS, TRAILERS (issue 20); the reference "
                             "needs `--upgrade`",
    "midframe": "capture whose first packet starts inside a DATA frame (client->server): a parser must "
                "resynchronise; tshark does NOT (see note)",
    "snaplen-cut": "tcpdump -s 120: every segment is cut to 120 bytes (54 bytes of TCP payload), "
                   "gaps inside frames; tcp.len (from the IP header) stays exact",
    "snaplen-cut.full": "the same run as snaplen-cut captured in full by a second tcpdump: the truth for snaplen-cut",
    "node-http2": "Node's http2 (nghttp2 inside) with padding on both sides: server push (PUSH_PROMISE, "
                  "pushed stream 2), trailers, a custom PING payload, SETTINGS changed mid-connection, "
                  "20 kB header blocks split into HEADERS + CONTINUATION both ways, PRIORITY, "
                  "RST_STREAM (CANCEL), GOAWAY from both sides; PADDED on HEADERS, DATA and PUSH_PROMISE",
    "go-h2c-curl": "Go's net/http h2c server (x/net h2c) with two clients: curl --http2-prior-knowledge "
                   "--parallel (3 connections) and Go's http2.Transport (sequential and concurrent GETs, "
                   "a 100 KiB POST echoed back with flow control, response trailers)",
    "curl-upgrade": "curl --http2 to Go's h2c server: HTTP/1.1 `Upgrade: h2c`, `101 Switching Protocols`, "
                    "the preface, the upgraded request answered on stream 1 (h2ledger: `upgraded_calls` "
                    "2, `prelude` h2c-upgrade, not mid_stream), a second request on stream 3; the "
                    "reference needs `--upgrade` (no `-d`: tshark's HTTP dissector follows the 101)",
    "hyper-h2": "hyper-h2 (Python h2) both sides: HEADERS with the PRIORITY flag, server push "
                "(PUSH_PROMISE), padded DATA both ways, request trailers (client TRAILERS), response "
                "trailers, a custom PING payload, SETTINGS mid-connection, RST_STREAM, GOAWAY",
    "python-grpcio-streaming": "gRPC streaming from python3-grpcio: server-streaming (many DATA frames "
                               "per call from the server), client-streaming, bidirectional; one "
                               "connection, trailers per call",
}

NOTES = {
    "midframe": "tshark loses frame sync on the client->server direction when a capture starts "
                "mid-frame (it takes payload bytes for a frame header and then waits for a "
                "reassembly that never completes), so midframe.tshark.json has NO client frames. "
                "The writes/bytes are exact. For comparison, midframe.uncut-after.tshark.json is "
                "`tshark-ledger.py spanning-mtu1500.pcap --port 8080 --after-frame {mf}`: what "
                "tshark decodes from the uncut capture in packets {mf1}.. (frames are attributed to "
                "the packet that completes them, so it includes the DATA frame that was cut in the "
                "middle). A resynchronising ledger should report client frames between the two: "
                "the uncut-after values, minus the partly captured DATA frame. Always pass --port 8080 here: "
                "port auto-detection (no SYN, no preface, the requests' HEADERS precede the cut) "
                "picks the client's port.",
    "midconn": "tshark decodes it fully (it starts on a frame boundary); midconn.tshark.json equals "
               "midconn.uncut-after.tshark.json (`tshark-ledger.py grpcgo-article.pcap --after-frame {mc}`). "
               "Without a SYN the client side is the side whose peer port is the --port.",
    "midconn-trailers-ipv6": "tshark loses the server direction entirely (it starts mid-frame). "
                             "midconn-trailers-ipv6.uncut-after.tshark.json is what tshark decodes of "
                             "the same packets in the uncut capture; its script never saw the stream's "
                             "response HEADERS (before the cut), so it counts that stream's trailers as "
                             "HEADERS. The true ledger, which the tests assert: the uncut-after values "
                             "with server HEADERS - 1, TRAILERS + 1 (that trailer block has no "
                             "pseudo-header field) and DATA - 1 (the DATA frame whose head was before "
                             "the cut is not seen).",
    "snaplen-cut": "tshark cannot fully decode it: after each cut segment the TCP reassembly has a "
                   "gap, frames are lost (fewer HEADERS/TRAILERS/DATA/PING) and "
                   "garbage is decoded as frames (UNKNOWN types). snaplen-cut.tshark.json is what tshark makes of the cut file; the "
                   "true frame counts are in snaplen-cut.full.tshark.json (same traffic, full "
                   "snaplen); writes and bytes are equal in both.",
}

LEDGER_TSHARK = ("tshark -r CAPTURE -d tcp.port==P,http2 --disable-protocol grpc "
                 "-o tcp.desegment_tcp_streams:TRUE -o tcp.analyze_sequence_numbers:TRUE -Y tcp "
                 "-T fields -E separator=/t -E occurrence=a -E aggregator=, "
                 "-e frame.number -e frame.time_epoch -e ip.src -e ipv6.src -e tcp.srcport "
                 "-e tcp.dstport -e tcp.stream -e tcp.len -e tcp.seq_raw -e tcp.flags "
                 "-e tcp.analysis.retransmission -e tcp.analysis.fast_retransmission "
                 "-e tcp.analysis.spurious_retransmission -e http2.magic -e http2.type "
                 "-e http2.flags -e http2.streamid -e http2.ping")


def capinfo(path):
    out = subprocess.run(["capinfos", path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         universal_newlines=True).stdout
    info = {}
    for line in out.splitlines():
        if ":" in line and not line.startswith(" "):
            k, v = line.split(":", 1)
            info[k.strip()] = v.strip()
    return info


def summary(led):
    parts = []
    for side in ("client", "server"):
        s = led["sides"][side]
        fr = ", ".join("%s %d" % (k, v) for k, v in s["frames"].items() if v)
        parts.append("  - %s: %s; bdp_pings %d, writes %d, bytes %d"
                     % (side, fr or "(no frames)", s["bdp_pings"], s["writes"], s["bytes"]))
    return "- connections %d, calls %d\n%s" % (led["connections"], led["calls"], "\n".join(parts))


def bdp_by_phase(cap, port, phases):
    out = subprocess.run(["tshark", "-r", cap, "-d", "tcp.port==%d,http2" % port,
                          "--disable-protocol", "grpc", "-Y", "http2.ping", "-T", "fields",
                          "-E", "occurrence=a", "-e", "frame.time_epoch", "-e", "tcp.srcport",
                          "-e", "http2.ping"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         universal_newlines=True).stdout
    res = []
    for ph in phases:
        c = {"client": 0, "server": 0}
        for line in out.splitlines():
            f = line.split("\t")
            t = float(f[0])
            if ph["start"] <= t < ph["end"] + 0.05:
                side = "server" if int(f[1]) == port else "client"
                c[side] += sum(1 for p in f[2].split(",") if p.replace(":", "") == BDP)
        res.append((ph["name"], c))
    return res


def main():
    cap, meta_path, secs, mf, mc = sys.argv[1:6]
    mf, mc = int(mf), int(mc)
    meta = json.load(open(meta_path))
    w = sys.stdout.write
    w("# captures/\n\n")
    w("Generated by `scripts/make-captures.sh %s` (as root; %s s per workload phase). "
      "Regenerate everything (captures, `*.tshark.json`, `*.workload.json`, this file) with:\n\n"
      "```\nsudo scripts/make-captures.sh 3     # optional env: WORKLOAD_BIN=..., GRPCGO_BIN=...\n```\n\n"
      % (secs, secs))
    w("Sources of the workloads: `src/grpcgo-article/main.go` (built by `scripts/build-grpcgo.sh OUTDIR`, "
      "GOPATH mode against Debian's golang-google-grpc-dev), `src/python-grpcio/workload.py` "
      "(/usr/bin/python3 + python3-grpcio; `streaming.py` beside it), `src/node-http2/workload.js` (Debian's nodejs), "
      "`src/go-h2c/main.go` (built by `scripts/build-goh2c.sh OUTDIR`), `src/hyper-h2/workload.py` "
      "(/usr/bin/python3 + python3-h2), "
      "the `h2ledger-workload` crate, nghttp2-client/-server.\n\n")
    w("All traffic is on loopback (or lo of a private network namespace). Servers bind port 0 and "
      "print it; tcpdump then captures with `tcp port P`, `--immediate-mode`, `-B 32768` (without it "
      "`-i any` dropped packets here), and the script fails if tcpdump reports drops. "
      "Ports differ on every regeneration; the port of each capture is given below.\n\n")
    w("## Golden ledgers\n\n`<name>.tshark.json` = `scripts/tshark-ledger.py captures/<file> --port P` "
      "(definitions in that script's docstring: client = SYN sender, HEADERS = first HEADERS frame "
      "a side sends on a stream, TRAILERS = any later one, PING/PING_ACK and SETTINGS/SETTINGS_ACK by "
      "the ACK flag, bdp_pings = non-ACK PINGs with payload 02 04 10 10 09 0e 07 07, writes/bytes = "
      "non-retransmitted TCP segments with payload). Add `--details` for per-connection ledgers. "
      "The script runs exactly this tshark command (Wireshark 4.0.17) and aggregates it; HTTP/2 "
      "fields repeat per frame within a packet and are zipped in order (PING payloads pair with the "
      "non-ACK PING frames: ACK payloads are `http2.pong`):\n\n```\n%s\n```\n\n" % LEDGER_TSHARK)
    w("`<name>.workload.json` is what the workload itself printed (calls made per phase). "
      "`manifest.json` lists each capture's file, port and recipe; the tests read the ports from it.\n\n")
    w("| capture | bytes | packets | linktype | ts precision | snaplen | port |\n|---|---|---|---|---|---|---|\n")
    rows = []
    for name, m in meta.items():
        path = os.path.join(cap, m["file"])
        info = capinfo(path)
        snap = info.get("Packet size limit", "")
        rows.append((name, m, info))
        w("| `%s` | %d | %s | %s | %s | %s | %d |\n" % (
            m["file"], os.path.getsize(path), info.get("Number of packets", "?"),
            info.get("File encapsulation", "?"), info.get("File timestamp precision", "?"),
            snap.replace("file hdr: ", ""), m["port"]))
    w("\n")
    for name, m, info in rows:
        led = json.load(open(os.path.join(cap, name + ".tshark.json")))
        w("## %s\n\n" % m["file"])
        w("- made by: %s\n" % m["how"])
        w("- linktype: %s; %s\n" % (info.get("File encapsulation", "?"), info.get("File type", "?")))
        w("- exercises: %s\n" % EXERCISES.get(name, ""))
        w("- golden ledger: `%s.tshark.json` = `scripts/tshark-ledger.py captures/%s --port %d%s`\n"
          % (name, m["file"], m["port"], " --upgrade" if m.get("upgrade") else ""))
        wl = os.path.join(cap, name + ".workload.json")
        if os.path.exists(wl):
            w("- workload output: `%s.workload.json`\n" % name)
        w("\n%s\n\n" % summary(led))
        if name in NOTES:
            w("Note: %s\n\n" % NOTES[name].format(mf=mf - 1, mf1=mf, mc=mc - 1))
        # sanity checks
        if os.path.exists(wl) and name not in ("midconn", "midframe", "snaplen-cut"):
            wj = json.load(open(wl))
            c, s = led["sides"]["client"], led["sides"]["server"]
            made = wj.get("calls_made")
            checks = ["client HEADERS %d, server HEADERS %d, server TRAILERS %d, calls made %s"
                      % (c["frames"]["HEADERS"], s["frames"]["HEADERS"], s["frames"]["TRAILERS"], made),
                      "client PING %d / server PING_ACK %d; server PING %d / client PING_ACK %d"
                      % (c["frames"]["PING"], s["frames"]["PING_ACK"], s["frames"]["PING"],
                         c["frames"]["PING_ACK"])]
            w("Checks: %s.\n\n" % "; ".join(checks))
            if name.startswith("grpcgo-article") and "phases" in wj:
                per = bdp_by_phase(os.path.join(cap, m["file"]), m["port"], wj["phases"])
                w("BDP pings by phase (from frame times vs. the workload's phase start/end): %s.\n\n"
                  % "; ".join("%s: server %d, client %d" % (n, c_["server"], c_["client"]) for n, c_ in per))

    # The captures of scripts/make-flow-captures.sh keep their own section.
    extra = os.path.join(cap, "flow-captures.md")
    if os.path.exists(extra):
        w(open(extra).read())
    # And those of scripts/make-findings-captures.sh (issue 21's findings).
    extra = os.path.join(cap, "findings-captures.md")
    if os.path.exists(extra):
        w(open(extra).read())
    # And those of scripts/make-server-captures.sh (nginx, Apache, h2o, HAProxy, lighttpd).
    extra = os.path.join(cap, "servers-captures.md")
    if os.path.exists(extra):
        w(open(extra).read())
    # And those of scripts/make-proto-captures.sh (gRPC messages with a schema).
    extra = os.path.join(cap, "README.proto.md")
    if os.path.exists(extra):
        w(open(extra).read())
    # And the well-known schemas' capture (scripts/make-wellknown-capture.sh).
    extra = os.path.join(cap, "README.wellknown.md")
    if os.path.exists(extra):
        w(open(extra).read())
    # And grpc-js's (scripts/make-grpcjs-capture.sh).
    extra = os.path.join(cap, "README.grpcjs.md")
    if os.path.exists(extra):
        w(open(extra).read())


def tls_section(cap):
    """The TLS captures' section (scripts/make-tls-captures.sh), kept verbatim."""
    p = os.path.join(cap, "README.tls.md")
    if os.path.exists(p):
        sys.stdout.write(open(p).read())


if __name__ == "__main__":
    main()
    tls_section(sys.argv[1])
