//! Golden ledgers: every real capture in captures/, replayed with no port hint (HTTP/2 is
//! found on any port), must equal its reference `<name>.tshark.json`, which
//! scripts/tshark-ledger.py made from Wireshark's dissector (commands in captures/README.md).

use serde_json::Value;

use crate::util::*;

/// `golden!(test, "capture", "reference")`: the capture's ledger equals the reference exactly.
macro_rules! golden {
    ($name:ident, $capture:literal, $reference:literal) => {
        #[test]
        fn $name() {
            let actual = replay_json(capture($capture).to_str().unwrap(), &[]);
            let expected = read_json(&capture($reference));
            assert_ledger_eq($capture, &expected, &actual);
        }
    };
}

golden!(
    grpcgo_article_ethernet,
    "grpcgo-article.pcap",
    "grpcgo-article.tshark.json"
);
golden!(
    grpcgo_article_sll2_pcapng_nanoseconds,
    "grpcgo-article-any.pcapng",
    "grpcgo-article-any.tshark.json"
);
golden!(
    grpcgo_article_sll_v1,
    "grpcgo-article-sll.pcap",
    "grpcgo-article-sll.tshark.json"
);
golden!(
    tonic_adaptive_window,
    "tonic-adaptive.pcap",
    "tonic-adaptive.tshark.json"
);
golden!(
    tonic_fixed_window,
    "tonic-fixed.pcap",
    "tonic-fixed.tshark.json"
);
golden!(
    nghttp_and_h2load_five_connections,
    "nghttp-nghttpd.pcap",
    "nghttp-nghttpd.tshark.json"
);
golden!(
    python_grpcio_ipv6,
    "python-grpcio-ipv6.pcap",
    "python-grpcio-ipv6.tshark.json"
);
golden!(
    frames_spanning_segments_mtu1500,
    "spanning-mtu1500.pcap",
    "spanning-mtu1500.tshark.json"
);
golden!(
    capture_starts_mid_connection,
    "midconn.pcap",
    "midconn.tshark.json"
);
golden!(
    node_http2_push_padding_continuation_priority,
    "node-http2.pcap",
    "node-http2.tshark.json"
);
golden!(
    go_net_http_h2c_and_curl_parallel,
    "go-h2c-curl.pcap",
    "go-h2c-curl.tshark.json"
);
golden!(
    curl_http2_upgrade_to_go,
    "curl-upgrade.pcap",
    "curl-upgrade.tshark.json"
);
// Issue 20: trailers on the upgraded stream 1 that cross curl's RST_STREAM are TRAILERS.
golden!(
    curl_http2_upgrade_trailers_crossing_a_reset,
    "curl-upgrade-trailers.pcap",
    "curl-upgrade-trailers.tshark.json"
);

/// curl's h2c upgrade: recognised (not mid-stream, no skipped bytes), and each upgraded
/// request is a call of its own (`upgraded_calls`, a row of `calls` on stream 1).
#[test]
fn curl_upgrade_requests_are_calls() {
    let f = capture("curl-upgrade.pcap");
    let v = replay_json(f.to_str().unwrap(), &[]);
    assert_eq!(v["upgraded_calls"], 2);
    assert_eq!(
        v["warnings"].as_array().unwrap().len(),
        0,
        "{:#}",
        v["warnings"]
    );
    for c in v["per_connection"].as_array().unwrap() {
        assert_eq!(c["mid_stream"], false);
        assert_eq!(c["prelude"], "h2c-upgrade");
    }
    let out = run(&["calls", f.to_str().unwrap(), "--format", "jsonl"]);
    let rows = records(&out.stdout, "call");
    let methods: Vec<&str> = rows.iter().map(|r| r["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["/hello", "/trailers", "/echo"], "{rows:#?}");
    assert_eq!(rows[0]["stream"], 1);
    assert_eq!(rows[2]["stream"], 1);
}
golden!(
    hyper_h2_push_priority_padding_trailers,
    "hyper-h2.pcap",
    "hyper-h2.tshark.json"
);
golden!(
    python_grpcio_streaming,
    "python-grpcio-streaming.pcap",
    "python-grpcio-streaming.tshark.json"
);

/// Every frame type RFC 9113 defines, and padding, appears in a golden capture from a real
/// implementation (Node's http2 for PUSH_PROMISE, PRIORITY, CONTINUATION and PADDED).
#[test]
fn every_frame_type_and_padding_from_a_real_implementation() {
    let f = capture("node-http2.pcap");
    let v = replay_json(f.to_str().unwrap(), &[]);
    for kind in FRAME_KEYS.iter().filter(|k| **k != "UNKNOWN") {
        let n = n(&v["sides"]["client"]["frames"][kind]) + n(&v["sides"]["server"]["frames"][kind]);
        let wanted = !matches!(*kind, "WINDOW_UPDATE");
        assert!(!wanted || n > 0, "{kind}: {n}");
    }
    let out = run(&["frames", f.to_str().unwrap(), "--format", "jsonl"]);
    let padded: Vec<String> = records(&out.stdout, "frame")
        .into_iter()
        .filter(|f| {
            f["flags"].as_u64().unwrap() & 0x8 != 0
                && f["type"] != "PING"
                && f["type"] != "SETTINGS"
        })
        .map(|f| f["type"].as_str().unwrap().to_string())
        .collect();
    for t in ["DATA", "HEADERS", "PUSH_PROMISE"] {
        assert!(padded.iter().any(|p| p == t), "PADDED {t}: {padded:?}");
    }
    // WINDOW_UPDATE comes from the other goldens (grpc-go, nghttp2).
    let g = replay_json(capture("grpcgo-article.pcap").to_str().unwrap(), &[]);
    assert!(n(&g["sides"]["client"]["frames"]["WINDOW_UPDATE"]) > 0);
}

golden!(
    snaplen_reference_uncut,
    "snaplen-cut.full.pcap",
    "snaplen-cut.full.tshark.json"
);

/// The programs' own counts agree with the wire: one request HEADERS per call made, and for
/// gRPC one TRAILERS per call; every PING of one side is ACKed by the other.
#[test]
fn workload_counts_equal_the_wire() {
    for (cap, grpc) in [
        ("grpcgo-article.pcap", true),
        ("tonic-adaptive.pcap", true),
        ("tonic-fixed.pcap", true),
        ("python-grpcio-ipv6.pcap", true),
        ("nghttp-nghttpd.pcap", false),
        ("spanning-mtu1500.pcap", false),
        ("python-grpcio-streaming.pcap", true),
        ("node-http2.pcap", false),
        ("go-h2c-curl.pcap", false),
        ("hyper-h2.pcap", false),
    ] {
        let workload = read_json(&capture(&cap.replace(".pcap", ".workload.json")));
        let made = n(&workload["calls_made"]);
        let v = replay_json(capture(cap).to_str().unwrap(), &[]);
        let client = &v["sides"]["client"]["frames"];
        let server = &v["sides"]["server"]["frames"];
        assert_eq!(n(&v["calls"]), made, "{cap}: calls");
        assert_eq!(n(&client["HEADERS"]), made, "{cap}: client HEADERS");
        if grpc {
            assert_eq!(n(&server["TRAILERS"]), made, "{cap}: server TRAILERS");
        }
        assert_eq!(
            n(&client["PING"]),
            n(&server["PING_ACK"]),
            "{cap}: client PINGs ACKed"
        );
        assert_eq!(
            n(&server["PING"]),
            n(&client["PING_ACK"]),
            "{cap}: server PINGs ACKed"
        );
    }
}

/// The grpc-go capture shows the article's mechanism: grpc-go's BDP PING on both sides, each
/// preceded by a WINDOW_UPDATE, and every PING a BDP PING.
#[test]
fn grpcgo_pings_are_bdp_pings() {
    let v = replay_json(capture("grpcgo-article.pcap").to_str().unwrap(), &[]);
    for side in ["client", "server"] {
        let s = &v["sides"][side];
        let pings = n(&s["frames"]["PING"]);
        assert!(pings > 10, "{side}: {pings} PINGs");
        assert_eq!(
            n(&s["bdp_pings"]),
            pings,
            "{side}: every PING is grpc-go's bdpPing"
        );
        assert_eq!(
            n(&s["frames"]["WINDOW_UPDATE"]),
            pings,
            "{side}: one WINDOW_UPDATE per BDP PING"
        );
    }
    // tonic (hyper/h2) uses its own payload: never counted as grpc-go's.
    let t = replay_json(capture("tonic-adaptive.pcap").to_str().unwrap(), &[]);
    assert!(n(&t["sides"]["server"]["frames"]["PING"]) > 0);
    assert_eq!(n(&t["sides"]["server"]["bdp_pings"]), 0);
    assert!(n(&t["sides"]["server"]["ping_labels"]["h2-user"]) > 0);
}

/// A capture that starts inside a DATA frame: Wireshark loses the client direction
/// entirely; we resynchronise at the first proven frame boundary. The reference is what
/// Wireshark decodes of the same packets in the uncut capture
/// (midframe.uncut-after.tshark.json), less the one DATA frame whose head was cut off.
#[test]
fn capture_starts_mid_frame() {
    let v = replay_json(capture("midframe.pcap").to_str().unwrap(), &[]);
    let mut expected = read_json(&capture("midframe.uncut-after.tshark.json"));
    let data = &mut expected["sides"]["client"]["frames"]["DATA"];
    *data = Value::from(n(data) - 1);
    // Writes and bytes: exactly what the cut capture holds (Wireshark agrees on those).
    let cut = read_json(&capture("midframe.tshark.json"));
    for side in ["client", "server"] {
        for k in ["writes", "bytes"] {
            expected["sides"][side][k] = cut["sides"][side][k].clone();
        }
    }
    assert_ledger_eq("midframe.pcap", &expected, &v);
    let warnings = v["warnings"].to_string();
    assert!(warnings.contains("mid-frame"), "{warnings}");
}

/// Mid-connection and mid-frame at once, over IPv6: the server's first captured bytes are the
/// tail of a 100 KiB DATA frame, then the trailers of a stream whose request and response
/// HEADERS came before the cut. The reference is what Wireshark decodes of the same packets in
/// the uncut capture, corrected for what no tool can know from the cut file alone and for what
/// the reference script cannot know: that stream's trailer block (no pseudo-header field, RFC
/// 9113 §8.1) is TRAILERS, not HEADERS; and its DATA frame, whose head was before the cut, is
/// not seen.
#[test]
fn capture_starts_mid_connection_before_trailers() {
    let v = replay_json(capture("midconn-trailers-ipv6.pcap").to_str().unwrap(), &[]);
    let mut expected = read_json(&capture("midconn-trailers-ipv6.uncut-after.tshark.json"));
    let server = &mut expected["sides"]["server"]["frames"];
    for (k, delta) in [("HEADERS", -1i64), ("TRAILERS", 1), ("DATA", -1)] {
        server[k] = Value::from(n(&server[k]) as i64 + delta);
    }
    let cut = read_json(&capture("midconn-trailers-ipv6.tshark.json"));
    for side in ["client", "server"] {
        for k in ["writes", "bytes"] {
            expected["sides"][side][k] = cut["sides"][side][k].clone();
        }
    }
    assert_ledger_eq("midconn-trailers-ipv6.pcap", &expected, &v);
    assert!(v["per_connection"][0]["client"]
        .as_str()
        .unwrap()
        .starts_with("[::1]:"));
}

/// Every segment cut to 120 bytes by the snap length: gaps everywhere. Writes and bytes stay
/// exact (they come from the IP header), every frame count is at most the truth (the same
/// traffic captured uncut), gaps are reported, and frames survive between the gaps.
#[test]
fn snaplen_cut_capture_reports_gaps() {
    let v = replay_json(capture("snaplen-cut.pcap").to_str().unwrap(), &[]);
    let truth = read_json(&capture("snaplen-cut.full.tshark.json"));
    for side in ["client", "server"] {
        for k in ["writes", "bytes"] {
            assert_eq!(v["sides"][side][k], truth["sides"][side][k], "{side} {k}");
        }
        for k in FRAME_KEYS {
            let (got, max) = (
                n(&v["sides"][side]["frames"][k]),
                n(&truth["sides"][side]["frames"][k]),
            );
            assert!(got <= max, "{side} {k}: {got} > {max} in the uncut capture");
        }
    }
    assert!(n(&v["tcp"]["gaps"]) > 0);
    assert!(n(&v["tcp"]["truncated"]) > 0);
    assert!(
        n(&v["calls"]) * 10 >= n(&truth["calls"]) * 8,
        "most calls survive: {}",
        v["calls"]
    );
    assert!(v["warnings"]
        .to_string()
        .contains("missing from the capture"));
}

/// Standard input works like a file.
#[test]
fn replay_from_stdin() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let bytes = std::fs::read(capture("grpcgo-article.pcap")).unwrap();
    let mut child = Command::new(bin())
        .args(["replay", "-", "--format", "json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_ledger_eq(
        "stdin",
        &read_json(&capture("grpcgo-article.tshark.json")),
        &v,
    );
}

/// --port and a BPF expression select, like tcpdump.
#[test]
fn port_and_bpf_filters() {
    let all = replay_json(capture("nghttp-nghttpd.pcap").to_str().unwrap(), &[]);
    let port = replay_json(
        capture("nghttp-nghttpd.pcap").to_str().unwrap(),
        &["--port", "60767"],
    );
    assert_ledger_eq("--port", &all, &port);
    let none = replay_json(
        capture("nghttp-nghttpd.pcap").to_str().unwrap(),
        &["--port", "1"],
    );
    assert_eq!(n(&none["connections"]), 0);
    assert!(none["warnings"].to_string().contains("no packets matched"));
    // One connection by its client port, as a BPF expression.
    let conns = all["per_connection"].as_array().unwrap();
    let first_client_port = conns[0]["client"]
        .as_str()
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap();
    let one = replay_json(
        capture("nghttp-nghttpd.pcap").to_str().unwrap(),
        &["tcp", "port", first_client_port],
    );
    assert_eq!(n(&one["connections"]), 1);
    assert_eq!(one["calls"], conns[0]["calls"]);
}

/// Rewrites a little-endian pcap of Ethernet frames to another link type: each frame's 14-byte
/// Ethernet header is replaced by `header(ethertype)`.
fn relink(pcap: &[u8], linktype: u32, header: impl Fn(u16) -> Vec<u8>) -> Vec<u8> {
    assert_eq!(
        &pcap[..4],
        &[0xd4, 0xc3, 0xb2, 0xa1],
        "a little-endian pcap"
    );
    assert_eq!(
        u32::from_le_bytes(pcap[20..24].try_into().unwrap()),
        1,
        "Ethernet"
    );
    let mut out = pcap[..24].to_vec();
    out[20..24].copy_from_slice(&linktype.to_le_bytes());
    let mut at = 24;
    while at + 16 <= pcap.len() {
        let rec = &pcap[at..at + 16];
        let caplen = u32::from_le_bytes(rec[8..12].try_into().unwrap()) as usize;
        let len = u32::from_le_bytes(rec[12..16].try_into().unwrap()) as usize;
        let frame = &pcap[at + 16..at + 16 + caplen];
        let ethertype = u16::from_be_bytes([frame[12], frame[13]]);
        let h = header(ethertype);
        let mut r = rec.to_vec();
        r[8..12].copy_from_slice(&((caplen - 14 + h.len()) as u32).to_le_bytes());
        r[12..16].copy_from_slice(&((len - 14 + h.len()) as u32).to_le_bytes());
        out.extend_from_slice(&r);
        out.extend_from_slice(&h);
        out.extend_from_slice(&frame[14..]);
        at += 16 + caplen;
    }
    out
}

/// The same real traffic (IPv4 and IPv6) as macOS's `lo0` (BSD NULL, host byte order; LOOP,
/// network byte order) and as raw IP records: the ledger must not change.
#[test]
fn bsd_loopback_and_raw_ip_link_types() {
    let dir = scratch("relink");
    std::fs::create_dir_all(&dir).unwrap();
    // AF_INET is 2 everywhere; AF_INET6 is 30 on macOS.
    let af = |e: u16| if e == 0x86dd { 30u32 } else { 2 };
    type Header = Box<dyn Fn(u16) -> Vec<u8>>;
    for cap in ["grpcgo-article", "python-grpcio-ipv6"] {
        let pcap = std::fs::read(capture(&format!("{cap}.pcap"))).unwrap();
        let expected = read_json(&capture(&format!("{cap}.tshark.json")));
        let kinds: [(&str, u32, Header); 3] = [
            ("null", 0, Box::new(move |e| af(e).to_le_bytes().to_vec())),
            ("loop", 108, Box::new(move |e| af(e).to_be_bytes().to_vec())),
            ("raw", 101, Box::new(|_| Vec::new())),
        ];
        for (name, linktype, header) in kinds {
            let p = dir.join(format!("{cap}-{name}.pcap"));
            std::fs::write(&p, relink(&pcap, linktype, header)).unwrap();
            let v = replay_json(p.to_str().unwrap(), &[]);
            assert_ledger_eq(&format!("{cap} as linktype {name}"), &expected, &v);
            assert_eq!(n(&v["capture"]["undecodable"]), 0);
        }
    }
}
