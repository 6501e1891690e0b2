#!/usr/bin/env python3
"""Write captures/flow-captures.md (the README section of scripts/make-flow-captures.sh's
captures) from captures/flow-manifest.json and the <name>.flow.json files.
usage: scripts/flow-captures-readme.py CAPDIR"""
import json
import os
import sys

HOW = {
    "grpcgo-flow-static": "`grpcgo-flow -static-window -messages 2 -size 1048576` (captures/src/grpcgo-flow, grpc-go 1.33 from Debian, GOPATH build): 64 KiB stream windows, 1 MiB connection windows, BDP off; calls Upload (2 x 1 MiB client-streamed), Download (2 x 1 MiB server-streamed), Fail (InvalidArgument \"bad size: 100%\")",
    "grpcgo-flow-bdp": "same program and calls with grpc-go's default BDP estimator and `-gzip` (uploads gzip-compressed)",
    "goh2c-post": "`goh2c -mb 3` (captures/src/goh2c: Go 1.19 net/http with golang.org/x/net/http2/h2c 0.7.0 from Debian): one 3 MiB POST over h2c, the server reads it all",
    "node-padded": "`node captures/src/node-padded/padded.js` (Node 20 http2, paddingStrategy MAX on both sides): a 64 KiB POST answered with 64 KiB; Node pads HEADERS and the END_STREAM DATA (256 bytes)",
    "nghttp-window": "`nghttpd --no-tls -a 127.0.0.1 -d DOC P` serving big.bin (256 KiB random) to `nghttp -n -w 14 -W 16` (16,383-byte stream window, 65,535 connection window)",
    "tonic-small-window": "`h2ledger-workload --listen 127.0.0.1:0 --no-adaptive-window --stream-window 4` / `--connect 127.0.0.1:P --no-adaptive-window --stream-window 4 --phase single:1:20:1` (tonic health checks; both sides' stream windows are 4 bytes, so each 5-byte request and 7-byte response message waits once)",
}


def main():
    cap = sys.argv[1]
    man = json.load(open(os.path.join(cap, "flow-manifest.json")))
    out = ["", "## Flow-control and gRPC message captures (issue 11)", "",
           "Made by `sudo scripts/make-flow-captures.sh` (tcpdump -i lo `tcp port P`, --immediate-mode, "
           "-B 32768; fails on drops). Ports are in `flow-manifest.json`. `<name>.flow.json` = "
           "`scripts/tshark-flow.py captures/<name>.pcap --port P`: the window arithmetic and stalls "
           "recomputed from tshark's decoded frames, and tshark's gRPC dissector's message counts "
           "(`grpc.message_length`, `grpc.compressed_flag`); crates/h2ledger/tests/it/flow.rs compares "
           "h2ledger with them. `<name>.workload.json` is the program's last output line.", ""]
    for n, m in man.items():
        t = json.load(open(os.path.join(cap, n + ".flow.json")))
        fc, g = t["flow_control"], t["grpc"]

        def side(s):
            a = fc[s]
            return ("%s stalls %d (stream %d, connection %d, both %d), stalled %.0f us, max windows "
                    "stream %d / connection %d" % (s, a["stalls"], a["by_limit"]["stream"],
                                                   a["by_limit"]["connection"], a["by_limit"]["both"],
                                                   a["stalled_ns"]["total"] / 1000,
                                                   a["max_window"]["stream"], a["max_window"]["connection"]))
        size = os.path.getsize(os.path.join(cap, m["file"]))
        out.append("- `%s` (%d bytes, port %d): %s. tshark: %s; %s; gRPC messages client %d (%d bytes, "
                   "%d compressed), server %d (%d bytes, %d compressed)."
                   % (m["file"], size, m["port"], HOW[n], side("client"), side("server"),
                      g["client"]["messages"], g["client"]["message_bytes"], g["client"]["compressed"],
                      g["server"]["messages"], g["server"]["message_bytes"], g["server"]["compressed"]))
    open(os.path.join(cap, "flow-captures.md"), "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
