#!/usr/bin/env python3
"""Write captures/findings/manifest.json and captures/findings-captures.md (the README section
of scripts/make-findings-captures.sh's captures), and put that section into captures/README.md
(replacing the previous copy; scripts/captures-readme.py appends it too).

usage: scripts/findings-captures-readme.py CAPDIR < LINES   (NAME<TAB>PORT<TAB>HOW per capture)
Reads captures/findings/NAME.out.json (what the program printed) and NAME.tshark.json.
Stdlib only.
"""
import json
import os
import sys

MARK = "## Findings captures (issue 21)"

# What each capture is, and the finding ids it must raise (crates/h2ledger/tests/it/findings.rs
# checks them, and that no other abuse id fires on it).
WHAT = {
    "rapid-reset": ("HEADERS then RST_STREAM(CANCEL) on 2000 streams, 100 per write (CVE-2023-44487)",
                    ["rapid-reset"]),
    "made-you-reset": ("1500 POSTs declaring content-length 1, each followed in the same write by "
                       "2 bytes of DATA: the server resets every stream (PROTOCOL_ERROR) after "
                       "taking the request (CVE-2025-8671)", ["made-you-reset"]),
    "reset-flood": ("1500 requests with an upper-case header name (malformed, RFC 9113 §8.2.1), "
                    "each refused with RST_STREAM(PROTOCOL_ERROR) (CVE-2019-9514)", ["reset-flood"]),
    "continuation-flood": ("one request's header block cut into a HEADERS and 1000 CONTINUATIONs, "
                           "never ended (CVE-2024-27316, CVE-2023-45288)", ["continuation-flood"]),
    "ping-flood": ("5000 PINGs written 500 per write without waiting for ACKs (CVE-2019-9512)",
                   ["ping-flood"]),
    "settings-flood": ("3000 SETTINGS frames, 500 per write (CVE-2019-9515)", ["settings-flood"]),
    "empty-frames-flood": ("a POST whose body is 2000 empty DATA frames without END_STREAM "
                           "(CVE-2019-9518)", ["empty-frames-flood"]),
    "priority-flood": ("3000 PRIORITY frames reshuffling 100 idle streams (CVE-2019-9513)",
                       ["priority-flood"]),
    "window-update-flood": ("3000 connection WINDOW_UPDATEs of 1 with no DATA received",
                            ["window-update-flood"]),
    "zero-window": ("SETTINGS_INITIAL_WINDOW_SIZE 0 with the preface, 2 requests for 1 MiB, no "
                    "WINDOW_UPDATE for 3 s (CVE-2019-9517)", ["zero-window"]),
    "window-held": ("default windows (65,535 bytes), one request for 1 MiB, and no WINDOW_UPDATE: "
                    "the server sends 65,535 bytes and waits with both of its windows at 0 until "
                    "the client closes 5 s later", ["zero-window"]),
    "hpack-bomb": ("a request carrying a 4000-byte header (indexed), then one that references it "
                   "300 times, one byte each", ["hpack-bomb"]),
    "refused-stream": ("nghttpd -m 4 (SETTINGS_MAX_CONCURRENT_STREAMS 4); 16 GETs sent with the "
                       "preface, before its SETTINGS is read or ACKed: 12 refused (REFUSED_STREAM)",
                       ["refused-stream", "stream-slots-full"]),
    "grpcgo-keepalive": ("grpc-go 1.33 client with keepalive.ClientParameters{Time: 10s, "
                         "PermitWithoutStream: true}, one Check then idle, against a grpc-go server "
                         "with default enforcement (MinTime 5 min, no PermitWithoutStream): "
                         "GOAWAY ENHANCE_YOUR_CALM \"too_many_pings\" after the third strike",
                         ["keepalive-strikes", "too-many-pings"]),
    "grpcgo-slots": ("grpc-go 1.33 server with grpc.MaxConcurrentStreams(2), Check taking 20 ms; "
                     "16 callers x 4 Checks on one connection after a first Check",
                     ["stream-slots-full"]),
    "grpcgo-bigstatus": ("grpc-go 1.33 server and client; after a first Check, 10 Checks answered "
                         "UNAVAILABLE with a 20,000-byte grpc-message, a header block above one "
                         "16,384-byte frame: grpc-go sends it as HEADERS and a CONTINUATION, 5 as "
                         "a Trailers-Only response (END_STREAM on the HEADERS), 5 as trailers "
                         "after response headers (decision 454)",
                         ["call-errors", "method-errors"]),
    "big503": ("nghttp 1.52.0 `-ns` GET /hello and 4 GETs of /big503 on one connection: a 503 "
               "with a 20,000-byte header and no body, which Go's server sends as a HEADERS with "
               "END_STREAM and a CONTINUATION in the next segment (decision 454)",
               ["call-errors"]),
}

SERVERS = {
    "nghttpd": "nghttpd (nghttp2 1.52.0-1+deb12u3: CVE-2023-44487 and CVE-2024-28182 fixes) "
               "`--no-tls -a 127.0.0.1 -d DOC P`",
    "goh2c": "Go 1.19 net/http behind golang.org/x/net/http2/h2c 0.7.0 (Debian), "
             "captures/src/go-h2c `-serve`",
    "grpcgo": "grpc-go 1.33 (Debian) captures/src/grpcgo-flow `-serve 9s -size 1048576` (default "
              "windows, BDP estimator on; the call is a Download of 4 messages of 1 MiB)",
}


def kind(name):
    for k in WHAT:
        if name == k or name.startswith(k + "-"):
            return k
    raise SystemExit("unknown capture %s" % name)


def reaction(out):
    r = out.get("received")
    if not r:
        return ", ".join("%s %s" % (k, v) for k, v in sorted(out.items()) if k != "port")
    parts = []
    if r.get("rst_stream"):
        parts.append("RST_STREAM " + ", ".join("code %s x%d" % (c, n) for c, n in r["rst_stream"].items()))
    if r.get("goaway"):
        parts.append("GOAWAY code %d debug %r" % (r["goaway"][0], r["goaway"][1]))
    if r.get("closed_by_server"):
        parts.append("closed the connection")
    return "; ".join(parts) or "no reaction"


def frames(t):
    out = []
    for side in ("client", "server"):
        f = t["sides"][side]["frames"]
        out.append("%s %s" % (side, ", ".join("%s %d" % (k, v) for k, v in f.items() if v) or "-"))
    return "; ".join(out)


def main():
    cap = sys.argv[1]
    fdir = os.path.join(cap, "findings")
    rows = []
    for line in sys.stdin:
        if line.strip():
            name, port, how = line.rstrip("\n").split("\t")
            rows.append((name, int(port), how))
    rows.sort()
    manifest = {}
    lines = ["", MARK, "",
             "Made by `sudo scripts/make-findings-captures.sh` into `captures/findings/` (tcpdump -i lo "
             "`tcp port P`, --immediate-mode, -B 32768; fails on drops or a file above 1 MB). The "
             "attack patterns are `captures/src/h2-attacks/attack.py` (/usr/bin/python3 with Debian's "
             "python3-h2: h2's own HPACK and frames, hyperframe for the frames h2 refuses) against two "
             "real servers, so their reactions are in the capture: " + SERVERS["nghttpd"] + ", and " +
             SERVERS["goh2c"] + ". The gRPC ones are `captures/src/grpcgo-findings` "
             "(scripts/build-grpcgo-findings.sh, GOPATH build against Debian's grpc-go 1.33). "
             "`manifest.json` has each capture's port, how it was made, the program's output and the "
             "finding ids it must raise (crates/h2ledger/tests/it/findings.rs); `NAME.tshark.json` "
             "= `scripts/tshark-ledger.py captures/findings/NAME.pcap --port P`; `NAME.out.json` is "
             "the program's last line. docs/findings.md explains each id.", ""]
    for name, port, how in rows:
        k = kind(name)
        what, fires = WHAT[k]
        out = json.load(open(os.path.join(fdir, name + ".out.json")))
        tshark = json.load(open(os.path.join(fdir, name + ".tshark.json")))
        server = next((s for s in SERVERS if name.endswith("-" + s)), None)
        manifest[name] = {"file": name + ".pcap", "port": port, "how": how, "fires": fires,
                          "output": out}
        size = os.path.getsize(os.path.join(fdir, name + ".pcap"))
        lines.append("- `findings/%s.pcap` (%d bytes, port %d): %s%s. Made by `%s`. The server: %s. "
                     "tshark: %s. Must raise: %s."
                     % (name, size, port, what, " against " + server if server else "", how,
                        reaction(out), frames(tshark), ", ".join("`%s`" % f for f in fires)))
    json.dump(manifest, open(os.path.join(fdir, "manifest.json"), "w"), indent=1, sort_keys=True)
    text = "\n".join(lines) + "\n"
    open(os.path.join(cap, "findings-captures.md"), "w").write(text)
    readme = os.path.join(cap, "README.md")
    r = open(readme).read()
    if MARK in r:
        start = r.index("\n" + MARK)
        nxt = r.find("\n## ", start + len(MARK) + 1)
        r = r[:start] + (r[nxt:] if nxt >= 0 else "")
    open(readme, "w").write(r.rstrip("\n") + "\n" + text)


if __name__ == "__main__":
    main()
