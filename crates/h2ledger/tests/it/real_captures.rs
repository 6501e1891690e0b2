//! Captures made by other projects, read in place from ../shared/real-captures (issue 8). Each
//! test checks one difference or observation of that folder's README against the bytes; it is
//! skipped, with a message, when the folder is absent (a clone without it still passes).

use std::path::PathBuf;

use serde_json::Value;

use crate::util::{records, repo, run};

fn real(name: &str) -> Option<String> {
    let p: PathBuf = repo().join("../shared/real-captures").join(name);
    if p.exists() {
        Some(p.to_string_lossy().into_owned())
    } else {
        crate::util::skipped(&format!("SKIPPED: {} is absent", p.display()));
        None
    }
}

fn json(path: &str) -> Value {
    crate::util::replay_json(path, &[])
}

fn frames(v: &Value, side: &str, kind: &str) -> u64 {
    v["sides"][side]["frames"][kind].as_u64().unwrap()
}

fn stdout(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Difference 1: the server's only segment holds a whole HEADERS frame, then the head of a
/// DATA frame the capture cuts off: a chain from a segment start whose last frame runs past
/// the end of the capture proves the boundary.
#[test]
fn df_grpc_unary_headers_before_a_cut_data_frame() {
    let Some(f) = real("df-grpc-unary.pcap") else {
        return;
    };
    let v = json(&f);
    assert_eq!(frames(&v, "server", "HEADERS"), 1, "{v:#}");
    assert_eq!(frames(&v, "server", "DATA"), 0);
    assert_eq!(
        v["anomalies"]["truncated-frame"], 1,
        "the cut DATA frame is reported"
    );
}

/// Difference 2: a chain that ends exactly at a gap, and a segment that is exactly one frame
/// after a gap, are boundaries.
#[test]
fn df_grpc_server_stream_frames_at_gaps() {
    let Some(f) = real("df-grpc-server-stream.pcap") else {
        return;
    };
    let v = json(&f);
    assert_eq!(v["calls"], 1, "{v:#}");
    assert_eq!(frames(&v, "client", "HEADERS"), 1);
    assert_eq!(frames(&v, "client", "DATA"), 1);
    assert_eq!(frames(&v, "server", "DATA"), 5);
    let w = v["warnings"].to_string();
    assert!(!w.contains("before the first frame boundary"), "{w}");
}

/// Difference 3: a frame above the peer's MAX_FRAME_SIZE on intact framing is counted and
/// reported, not a resynchronisation.
#[test]
fn sv_long_frame_is_counted_and_reported() {
    let Some(f) = real("sv-http2-long-frame.pcap") else {
        return;
    };
    let v = json(&f);
    assert_eq!(frames(&v, "server", "DATA"), 1, "{v:#}");
    assert_eq!(frames(&v, "server", "HEADERS"), 1);
    assert_eq!(v["calls"], 2);
    assert_eq!(v["anomalies"]["malformed-frame"], 1);
    assert!(v["anomalies"]["bad-frame-head"].is_null());
    let w = v["warnings"].to_string();
    assert!(
        w.contains("70000 bytes, above the allowed maximum 16384"),
        "{w}"
    );
}

/// Upgrade: the 101 is recognised (not mid-stream, no skipped bytes), and the upgraded request
/// is stream 1's call: in `upgraded_calls` (not in `calls`, which counts request HEADERS
/// frames as tshark does) and a row of `h2ledger calls`.
#[test]
fn h2c_upgrade_is_recognised_and_its_request_is_a_call() {
    let Some(f) = real("sv-http2-range.pcap") else {
        return;
    };
    let v = json(&f);
    assert_eq!(v["connections"], 3);
    assert_eq!(v["calls"], 0);
    assert_eq!(v["upgraded_calls"], 3);
    for c in v["per_connection"].as_array().unwrap() {
        assert_eq!(c["mid_stream"], false, "{c:#}");
        assert_eq!(c["prelude"], "h2c-upgrade");
        assert_eq!(c["upgraded_calls"], 1);
    }
    assert_eq!(
        v["warnings"].as_array().unwrap().len(),
        0,
        "{:#}",
        v["warnings"]
    );
    let calls = stdout(&["calls", &f, "--format", "jsonl"]);
    let rows = records(&calls, "call");
    assert_eq!(rows.len(), 3, "{calls}");
    for r in &rows {
        assert_eq!(r["stream"], 1);
        assert_eq!(r["method"], "/eicar");
        assert_eq!(r["http_status"], 206);
        // The server's RST_STREAM after its END_STREAM belongs to the call's row.
        assert_eq!(r["frames"]["server"]["other"], 1, "{r}");
    }
}

/// CONNECT: the proxy's `HTTP/1.1 200` before the tunnelled server's frames is recognised.
#[test]
fn connect_tunnel_is_recognised() {
    let Some(f) = real("sv-http2-errorcode.pcap") else {
        return;
    };
    let v = json(&f);
    assert_eq!(v["connections"], 2);
    let conns = v["per_connection"].as_array().unwrap();
    assert!(conns.iter().all(|c| c["mid_stream"] == false), "{conns:#?}");
    assert_eq!(conns[0]["prelude"], "connect-tunnel");
    assert!(conns[1].get("prelude").is_none());
    assert!(!v["warnings"].to_string().contains("skipped"));
}

/// `frames` prints in capture order on every capture, also on connections captured mid-way
/// (a direction was printed only once its boundary was proven).
#[test]
fn frames_in_capture_order_on_every_capture() {
    let Some(dir) = real("") else { return };
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
        .collect();
    files.sort();
    assert!(files.len() >= 31);
    for f in files {
        let out = stdout(&["frames", f.to_str().unwrap()]);
        let ts: Vec<f64> = out
            .lines()
            .filter_map(|l| l.strip_prefix('[')?.split(']').next()?.trim().parse().ok())
            .collect();
        assert!(!ts.is_empty(), "{}", f.display());
        assert!(
            ts.windows(2).all(|w| w[0] <= w[1]),
            "{}:\n{out}",
            f.display()
        );
    }
}

/// An upgrade captured without its handshake (starts with the GET): the 101 still proves the
/// server's first frame, the upgraded request is a call, nothing is skipped.
#[test]
fn upgrade_without_syn() {
    let Some(f) = real("sv-http2-keywords2.pcap") else {
        return;
    };
    let v = json(&f);
    assert_eq!(v["calls"], 1);
    assert_eq!(v["upgraded_calls"], 1);
    assert_eq!(
        v["warnings"].as_array().unwrap().len(),
        0,
        "{:#}",
        v["warnings"]
    );
    assert_eq!(v["per_connection"][0]["prelude"], "h2c-upgrade");
    assert_eq!(v["per_connection"][0]["mid_stream"], false);
}

/// `calls` without any call prints no table (it printed a header row, unclosed).
#[test]
fn calls_without_calls_prints_no_table() {
    // A filter that matches nothing: no call. (The TLS capture used before is decrypted now,
    // with the keys embedded in it.)
    let f = crate::util::capture("grpcgo-article.pcap");
    let out = stdout(&["calls", f.to_str().unwrap(), "-f", "tcp port 1"]);
    assert_eq!(out, "0 calls\n");
}

/// `calls` reads the method from a header block that continues in CONTINUATION frames.
#[test]
fn calls_method_from_continuation() {
    let Some(f) = real("sv-http2-continuation.pcap") else {
        return;
    };
    let calls = stdout(&["calls", &f, "--format", "jsonl"]);
    let r = &records(&calls, "call")[0];
    assert_eq!(r["method"], "/tata", "{r}");
    assert_eq!(r["frames"]["client"]["other"], 2, "two CONTINUATION frames");
    // The first CONTINUATION carries flags 0x01, which RFC 9113 does not define on that frame
    // type (§6.10) and which must be ignored (§4.1): the request never ends, so the call has
    // no server time (decision 428; the gRPC tracker used to read it as END_STREAM: 218 us).
    assert_eq!(r["server_time_us"], Value::Null, "{r}");
    assert_eq!(r["http_status"], 200, "{r}");
}

/// compare.py's every capture: h2ledger agrees with tshark (the hand-checked values where the
/// README gives them) on all of them. Runs the script itself when tshark is installed.
#[test]
fn compare_py_agrees_on_every_capture() {
    let Some(_) = real("compare.py") else { return };
    if std::process::Command::new("tshark")
        .arg("-v")
        .output()
        .is_err()
    {
        eprintln!("skipped: tshark is not installed");
        return;
    }
    let out = std::process::Command::new("python3")
        .arg(repo().join("../shared/real-captures/compare.py"))
        .env("H2LEDGER", crate::util::bin())
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("external captures: 31/31 agree"), "{text}");
}
