//! Issue 22, phase 2: gRPC messages in `calls --messages` and `frames --messages`, end to end.
//!
//! * The proto captures (made by python3-grpcio and grpc-go with
//!   captures/src/proto-everything/everything.proto, scripts/make-proto-captures.sh): every
//!   message's `message` equals the ground truth the sending program wrote (`.truth.jsonl`):
//!   grpc-go's protojson byte for byte, grpcio's `MessageToDict` as a JSON value (numbers by
//!   value, decision 121). The same objects in `-T json`, and in `frames` on the DATA frame that
//!   completes each message.
//! * The grpc-go health captures with health.proto (and its FileDescriptorSet), the grpcio
//!   streaming capture schema-less.
//! * A schema error is one line naming file, line and column, exit 2. The bounds
//!   (`--max-messages`, `--max-message-bytes`) cut and say so; a message that does not parse
//!   keeps `raw` and is a counted anomaly. Tables fit 100 columns.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::util::*;

fn everything() -> String {
    repo()
        .join("captures/src/proto-everything/everything.proto")
        .display()
        .to_string()
}

fn health() -> String {
    repo()
        .join("crates/h2ledger-proto/tests/data/health.proto")
        .display()
        .to_string()
}

/// Runs h2ledger; it must succeed. Stdout.
fn ok(args: &[&str]) -> String {
    let o = run(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// One message object as printed, its `message` kept as text.
#[derive(Deserialize)]
struct Msg<'a> {
    anomaly: Option<Value>,
    bytes: u64,
    compressed: bool,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
    raw: Option<&'a RawValue>,
    #[serde(rename = "type")]
    type_name: Option<String>,
}

#[derive(Deserialize)]
struct CallMsgs<'a> {
    conn: u32,
    stream: u32,
    method: String,
    #[serde(borrow)]
    request_messages: Option<Vec<Msg<'a>>>,
    #[serde(borrow)]
    response_messages: Option<Vec<Msg<'a>>>,
    messages_omitted: Option<Value>,
    messages: Option<Value>,
}

/// The call lines of JSON-lines output.
fn call_lines(out: &str) -> Vec<&str> {
    out.lines()
        .filter(|l| l.contains("\"record\":\"call\""))
        .collect()
}

/// Where `a` and `b` differ (None: equal), numbers by value; a float below f32's smallest
/// normal equal when it is the same f32 (MessageToDict prints a subnormal float with 6
/// digits, protojson with the shortest; crates/h2ledger-proto/tests/it/jsoncmp.rs).
fn diff(a: &Value, b: &Value, at: &str) -> Option<String> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let same = match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(p), Some(q), _, _) => p == q,
                (_, _, Some(p), Some(q)) => p == q,
                _ => {
                    let (p, q) = (x.as_f64().unwrap(), y.as_f64().unwrap());
                    p == q || (p.abs() < f64::from(f32::MIN_POSITIVE) && p as f32 == q as f32)
                }
            };
            (!same).then(|| format!("{at}: {x} != {y}"))
        }
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => {
                        if let Some(d) = diff(p, q, &format!("{at}/{k}")) {
                            return Some(d);
                        }
                    }
                    (p, q) => return Some(format!("{at}/{k}: {p:?} != {q:?}")),
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                return Some(format!("{at}: {} elements != {}", x.len(), y.len()));
            }
            x.iter()
                .zip(y)
                .enumerate()
                .find_map(|(i, (p, q))| diff(p, q, &format!("{at}/{i}")))
        }
        _ => (a != b).then(|| format!("{at}: {a} != {b}")),
    }
}

/// The ground truth of captures/NAME.pcap: per (call, direction) its messages' text, in order.
fn truth(name: &str) -> BTreeMap<(usize, String), Vec<(String, String)>> {
    let text = std::fs::read_to_string(capture(&format!("{name}.truth.jsonl"))).unwrap();
    let mut t: BTreeMap<(usize, String), Vec<(String, String)>> = BTreeMap::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        // The message's own text in the line (grpc-go's is json.Compact of protojson).
        #[derive(Deserialize)]
        struct Line<'a> {
            #[serde(borrow)]
            message: &'a RawValue,
        }
        let raw: Line<'_> = serde_json::from_str(line).unwrap();
        let k = (
            v["call"].as_u64().unwrap() as usize,
            v["direction"].as_str().unwrap().to_string(),
        );
        let e = t.entry(k).or_default();
        assert_eq!(v["index"].as_u64().unwrap() as usize, e.len());
        e.push((
            v["method"].as_str().unwrap().to_string(),
            raw.message.get().to_string(),
        ));
    }
    t
}

/// Checks every message of `calls NAME -T jsonl --messages --proto everything.proto` against
/// the ground truth; `exact`: as text too. Returns (messages, compressed, exact texts).
fn check_truth(name: &str, exact: bool) -> (usize, usize, usize) {
    let f = capture(&format!("{name}.pcap"));
    let out = ok(&[
        "calls",
        f.to_str().unwrap(),
        "-T",
        "jsonl",
        "--messages",
        "--proto",
        &everything(),
    ]);
    let mut calls: Vec<CallMsgs<'_>> = call_lines(&out)
        .into_iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    calls.sort_by_key(|c| (c.conn, c.stream));
    let truth = truth(name);
    assert_eq!(
        calls.len(),
        truth.keys().map(|k| k.0).max().unwrap() + 1,
        "{name}: calls"
    );
    let (mut n, mut z, mut texts) = (0, 0, 0);
    for (k, c) in calls.iter().enumerate() {
        let dirs = [
            ("request", c.request_messages.as_ref().unwrap()),
            ("response", c.response_messages.as_ref().unwrap()),
        ];
        let counts = c.messages.as_ref().unwrap();
        for (d, got) in dirs {
            let want = truth.get(&(k, d.to_string())).cloned().unwrap_or_default();
            assert_eq!(got.len(), want.len(), "{name}: call {k} {d}");
            let side = if d == "request" { "client" } else { "server" };
            assert_eq!(counts[side].as_u64(), Some(got.len() as u64));
            for (i, (m, (method, text))) in got.iter().zip(&want).enumerate() {
                let at = format!("{name}: call {k} {method} {d} {i}");
                assert_eq!(&c.method, method, "{at}");
                assert!(m.anomaly.is_none(), "{at}: {:?}", m.anomaly);
                assert!(m.raw.is_none(), "{at}: no unknown fields");
                assert_eq!(
                    m.type_name.as_deref(),
                    Some(if method.ends_with("/Empty") {
                        "h2ledger.test.v1.Nothing"
                    } else {
                        "h2ledger.test.v1.Everything"
                    })
                );
                let ours = m.message.expect("a message").get();
                let a: Value = serde_json::from_str(ours).unwrap();
                let b: Value = serde_json::from_str(text).unwrap();
                if let Some(d) = diff(&a, &b, "") {
                    panic!("{at}: differs at {d}\n ours: {ours}\n want: {text}");
                }
                if exact {
                    assert_eq!(ours, text, "{at}: text");
                    texts += 1;
                }
                assert!(m.bytes > 0 || ours == "{}");
                n += 1;
                z += usize::from(m.compressed);
            }
        }
        assert_eq!(c.messages_omitted.as_ref().unwrap()["client"], 0);
    }
    (n, z, texts)
}

#[test]
fn grpcio_messages_equal_message_to_dict() {
    assert_eq!(check_truth("proto-grpcio", false), (27, 0, 0));
}

#[test]
fn grpcio_gzip_and_deflate_messages_equal_message_to_dict() {
    let (n, z, _) = check_truth("proto-grpcio-gzip", false);
    assert_eq!(n, 29);
    assert!((6..29).contains(&z), "compressed: {z}");
}

#[test]
fn grpcgo_messages_equal_protojson_byte_for_byte() {
    assert_eq!(check_truth("proto-grpcgo", true), (29, 2, 29));
}

/// `-T json` lists the same calls with the same message objects as `-T jsonl`.
#[test]
fn the_json_document_has_the_same_messages() {
    let f = capture("proto-grpcgo.pcap");
    let f = f.to_str().unwrap();
    let p = everything();
    let lines = ok(&["calls", f, "-T", "jsonl", "--proto", &p]);
    let doc: Value = serde_json::from_str(&ok(&["calls", f, "-T", "json", "--proto", &p])).unwrap();
    let from_lines: Vec<Value> = records(&lines, "call");
    let from_doc = doc["calls"].as_array().unwrap();
    assert_eq!(from_lines.len(), from_doc.len());
    for (a, b) in from_lines.iter().zip(from_doc) {
        for k in ["request_messages", "response_messages", "messages_omitted"] {
            assert_eq!(a[k], b[k], "{k}");
        }
        assert!(a["request_messages"].is_array());
    }
}

/// `frames`: each message is on the DATA frame that completes it (JSON `grpc_messages`, in
/// wire order; the same objects as `calls`), and its table line (`+MESSAGE`) is cut to 100
/// columns unless `--wide`.
#[test]
fn frames_show_each_message_on_the_frame_that_completes_it() {
    let p = everything();
    for name in ["proto-grpcio", "proto-grpcio-gzip", "proto-grpcgo"] {
        let f = capture(&format!("{name}.pcap"));
        let f = f.to_str().unwrap();
        let calls = ok(&["calls", f, "-T", "jsonl", "--proto", &p]);
        let mut want: BTreeMap<(u64, String), Vec<Value>> = BTreeMap::new();
        for c in records(&calls, "call") {
            let s = c["stream"].as_u64().unwrap();
            for (k, side) in [
                ("request_messages", "client"),
                ("response_messages", "server"),
            ] {
                want.insert((s, side.to_string()), c[k].as_array().unwrap().clone());
            }
        }
        let frames = ok(&["frames", f, "-T", "jsonl", "--messages", "--proto", &p]);
        let mut got: BTreeMap<(u64, String), Vec<Value>> = BTreeMap::new();
        for fr in records(&frames, "frame") {
            let Some(m) = fr.get("grpc_messages") else {
                continue;
            };
            assert_eq!(fr["type"], "DATA", "{fr}");
            let k = (
                fr["stream"].as_u64().unwrap(),
                fr["side"].as_str().unwrap().to_string(),
            );
            got.entry(k)
                .or_default()
                .extend(m.as_array().unwrap().iter().cloned());
        }
        want.retain(|_, v| !v.is_empty());
        assert_eq!(got, want, "{name}");

        let table = ok(&["frames", f, "--messages", "--proto", &p]);
        let n: usize = want.values().map(Vec::len).sum();
        let lines: Vec<&str> = table.lines().filter(|l| l.contains("+MESSAGE")).collect();
        assert_eq!(lines.len(), n, "{name}");
        // Piped, a frame is one line however long (decision 100); a message's line is cut.
        for l in &lines {
            assert!(
                l.chars().count() <= 100,
                "{name}: {} columns: {l}",
                l.chars().count()
            );
        }
        let wide = ok(&["frames", f, "--messages", "--proto", &p, "--wide"]);
        assert!(
            wide.lines()
                .any(|l| l.contains("+MESSAGE") && l.chars().count() > 1000),
            "{name}: --wide shows messages whole"
        );
    }
}

/// The table adds the first message of each direction under its call, within 100 columns.
#[test]
fn the_calls_table_shows_the_first_message_each_way() {
    let p = everything();
    let out = ok(&[
        "calls",
        capture("proto-grpcgo.pcap").to_str().unwrap(),
        "--proto",
        &p,
    ]);
    for l in out.lines() {
        assert!(
            l.chars().count() <= 100,
            "{} columns: {l}",
            l.chars().count()
        );
    }
    assert!(out.contains("  > 1/1 Nothing 0 B {}"), "{out}");
    assert!(out.contains("  < 1/5 Everything "), "server stream: {out}");
    assert!(out.contains("  > 1/4 Everything "), "client stream: {out}");
    assert!(
        out.contains(" gzip {\"scalars\""),
        "the compressed call: {out}"
    );
    let requests = out.lines().filter(|l| l.starts_with("  > ")).count();
    let responses = out.lines().filter(|l| l.starts_with("  < ")).count();
    assert_eq!((requests, responses), (8, 8), "{out}");
}

/// grpc-go's health service with health.proto, or its FileDescriptorSet: the same messages.
#[test]
fn health_calls_decode_with_a_proto_or_a_descriptor_set() {
    let f = capture("grpcgo-article.pcap");
    let f = f.to_str().unwrap();
    let set = repo().join("crates/h2ledger-proto/tests/data/health.pb");
    let a = ok(&["calls", f, "-T", "jsonl", "--proto", &health()]);
    let b = ok(&[
        "calls",
        f,
        "-T",
        "jsonl",
        "--descriptor-set",
        set.to_str().unwrap(),
    ]);
    assert_eq!(a, b);
    let calls = records(&a, "call");
    assert_eq!(calls.len(), 144);
    for c in &calls {
        let req = c["request_messages"].as_array().unwrap();
        let resp = c["response_messages"].as_array().unwrap();
        assert_eq!(req.len(), 1);
        assert_eq!(req[0]["type"], "grpc.health.v1.HealthCheckRequest");
        assert_eq!(req[0]["message"], serde_json::json!({}));
        assert_eq!(resp.len(), 1);
        assert_eq!(resp[0]["type"], "grpc.health.v1.HealthCheckResponse");
        assert_eq!(resp[0]["message"], serde_json::json!({"status": "SERVING"}));
        assert_eq!(resp[0]["bytes"], 2);
    }
}

/// Without a schema every message is decoded schema-less: `type` and `message` null, `raw`
/// an array (grpcio's streaming test sends text, which is no protobuf: the error element
/// keeps it). With a schema whose types do not fit, `raw` is kept and the anomaly counted.
#[test]
fn schema_less_and_unparsable_messages() {
    let f = capture("python-grpcio-streaming.pcap");
    let f = f.to_str().unwrap();
    let out = ok(&["calls", f, "-T", "jsonl", "--messages"]);
    let mut n = 0;
    for c in records(&out, "call") {
        for (k, side) in [
            ("request_messages", "client"),
            ("response_messages", "server"),
        ] {
            let list = c[k].as_array().unwrap();
            assert_eq!(c["messages"][side].as_u64(), Some(list.len() as u64));
            for m in list {
                assert!(m["type"].is_null() && m["message"].is_null(), "{m}");
                assert!(m["raw"].is_array(), "{m}");
                assert!(m["anomaly"].is_null(), "{m}");
                n += 1;
            }
        }
    }
    assert!(n > 50, "{n} messages");

    // A schema for the same paths whose message types the text does not fit.
    let dir = scratch("msgs");
    std::fs::create_dir_all(&dir).unwrap();
    let proto = dir.join("stream.proto");
    std::fs::write(
        &proto,
        "syntax = \"proto3\";\npackage h2ledger;\nmessage M { int32 a = 1; }\n\
         service Stream { rpc Server(M) returns (stream M); rpc Client(stream M) returns (M);\n\
         rpc Bidi(stream M) returns (stream M); }\n",
    )
    .unwrap();
    let o = run(&[
        "calls",
        f,
        "-T",
        "jsonl",
        "--proto",
        proto.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let out = String::from_utf8(o.stdout).unwrap();
    let mut bad = 0;
    for c in records(&out, "call") {
        for k in ["request_messages", "response_messages"] {
            for m in c[k].as_array().unwrap() {
                assert_eq!(m["type"], "h2ledger.M");
                if m["message"].is_null() {
                    assert_eq!(m["anomaly"]["kind"], "message-parse", "{m}");
                    assert!(m["raw"].is_array(), "{m}");
                    bad += 1;
                }
            }
        }
    }
    assert!(bad > 0);
    let summary = &records(&out, "summary")[0];
    let w = summary["warnings"].to_string();
    assert!(
        w.contains(&format!("gRPC messages: {bad} did not parse as their type")),
        "{w}"
    );
    let stderr = String::from_utf8(o.stderr).unwrap();
    assert!(stderr.contains("did not parse as their type"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A schema error is one line, `h2ledger: FILE:LINE:COL: what`, and exit status 2, before the
/// capture is read; a missing file names the file.
#[test]
fn a_bad_schema_is_one_line_with_file_line_and_column() {
    let dir = scratch("badproto");
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.proto");
    std::fs::write(
        &bad,
        "syntax = \"proto3\";\n\nmessage A {\n  int32 a = 1\n}\n",
    )
    .unwrap();
    let f = capture("grpcgo-article.pcap");
    for view in ["calls", "frames"] {
        let o = run(&[view, f.to_str().unwrap(), "--proto", bad.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{view}");
        assert!(o.stdout.is_empty());
        let e = String::from_utf8(o.stderr).unwrap();
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.starts_with("h2ledger: "), "{e}");
        assert!(e.contains("bad.proto:5:1: "), "{e}");
    }
    let missing = dir.join("missing.proto");
    let o = run(&[
        "calls",
        f.to_str().unwrap(),
        "--proto",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8(o.stderr).unwrap();
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("missing.proto"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--max-messages 1`: one message listed per direction, the others counted in
/// `messages_omitted` and said; `--max-message-bytes 100`: longer messages (the ~200 KB one)
/// listed with their length, not decoded, and said.
#[test]
fn the_bounds_cut_and_say_so() {
    let f = capture("proto-grpcio.pcap");
    let f = f.to_str().unwrap();
    let p = everything();
    let o = run(&[
        "calls",
        f,
        "-T",
        "jsonl",
        "--proto",
        &p,
        "--max-messages",
        "1",
    ]);
    assert!(o.status.success());
    let out = String::from_utf8(o.stdout).unwrap();
    let mut omitted = 0;
    for c in records(&out, "call") {
        for (k, side) in [
            ("request_messages", "client"),
            ("response_messages", "server"),
        ] {
            let n = c["messages"][side].as_u64().unwrap();
            let listed = c[k].as_array().unwrap().len() as u64;
            assert_eq!(listed, n.min(1));
            assert_eq!(c["messages_omitted"][side].as_u64(), Some(n - listed));
            omitted += n - listed;
        }
    }
    // ServerStream 5 responses, ClientStream 4 requests, Bidi 4 each way.
    assert_eq!(omitted, 4 + 3 + 3 + 3);
    let w = records(&out, "summary")[0]["warnings"].to_string();
    assert!(
        w.contains("3 calls had more than --max-messages 1 messages in a direction: 13 messages counted, not listed"),
        "{w}"
    );

    let o = run(&[
        "calls",
        f,
        "-T",
        "jsonl",
        "--proto",
        &p,
        "--max-message-bytes",
        "100",
    ]);
    assert!(o.status.success());
    let out = String::from_utf8(o.stdout).unwrap();
    let mut big = 0;
    let mut cut = 0;
    for c in records(&out, "call") {
        for k in ["request_messages", "response_messages"] {
            for m in c[k].as_array().unwrap() {
                if m["bytes"].as_u64().unwrap() > 100 {
                    assert_eq!(m["anomaly"]["kind"], "message-too-large", "{m}");
                    assert!(m["message"].is_null() && m["raw"].is_null(), "{m}");
                    assert_eq!(m["type"], "h2ledger.test.v1.Everything");
                    cut += 1;
                    big += u64::from(m["bytes"].as_u64().unwrap() > 200_000);
                } else {
                    assert!(m["message"].is_object(), "{m}");
                }
            }
        }
    }
    assert_eq!(big, 2, "the ~200 KB message each way");
    let w = records(&out, "summary")[0]["warnings"].to_string();
    assert!(
        w.contains(&format!(
            "gRPC messages: {cut} larger than --max-message-bytes (100 bytes), not decoded (message-too-large)"
        )),
        "{w}"
    );
    let stderr = String::from_utf8(o.stderr).unwrap();
    assert!(stderr.contains("message-too-large"), "{stderr}");
}

/// Without `--messages` the records have no message keys (the output is byte for byte the
/// previous one: scripts/same-output.sh); with it, a call that is not gRPC has them null.
#[test]
fn message_keys_only_with_messages() {
    let f = capture("proto-grpcgo.pcap");
    let plain = ok(&["calls", f.to_str().unwrap(), "-T", "jsonl"]);
    assert!(!plain.contains("request_messages"));
    let frames = ok(&["frames", f.to_str().unwrap(), "-T", "jsonl"]);
    assert!(!frames.contains("grpc_messages"));
    let h1 = capture("node-http2.pcap");
    let out = ok(&["calls", h1.to_str().unwrap(), "-T", "jsonl", "--messages"]);
    let calls = records(&out, "call");
    assert!(!calls.is_empty());
    for c in calls {
        assert!(c["messages"].is_null());
        for k in ["request_messages", "response_messages", "messages_omitted"] {
            assert!(c.get(k).is_some_and(Value::is_null), "{k}: {c}");
        }
    }
}

/// Hostile messages end to end, in a capture made here: a decompression bomb (10 MiB of zeros,
/// gzip'd into one DATA frame), a Compressed-Flag of 2, a compressed message on a stream
/// without `grpc-encoding`, bytes that are no protobuf, a message cut by the stream's end.
/// Each is listed, counted and said; nothing panics; every view exits 0.
#[test]
fn hostile_messages_are_counted_not_fatal() {
    use std::io::Write as _;
    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let n = payload.len();
        let mut f = vec![(n >> 16) as u8, (n >> 8) as u8, n as u8, kind, flags];
        f.extend_from_slice(&stream.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }
    fn literal(name: &[u8], value: &[u8]) -> Vec<u8> {
        let mut b = vec![0, name.len() as u8];
        b.extend_from_slice(name);
        b.push(value.len() as u8);
        b.extend_from_slice(value);
        b
    }
    fn msg(flag: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![flag];
        m.extend_from_slice(&(body.len() as u32).to_be_bytes());
        m.extend_from_slice(body);
        m
    }
    let request = |stream: u32, gzip: bool| {
        let mut h = vec![0x83, 0x86]; // POST, http
        h.extend(literal(b":path", b"/grpc.health.v1.Health/Check"));
        h.extend(literal(b"content-type", b"application/grpc"));
        if gzip {
            h.extend(literal(b"grpc-encoding", b"gzip"));
        }
        frame(1, 0x04, stream, &h)
    };
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(&vec![0u8; 10 << 20]).unwrap();
    let bomb = z.finish().unwrap();
    assert!(bomb.len() < 16_000, "one DATA frame: {}", bomb.len());

    let mut c2s = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    c2s.extend(frame(4, 0, 0, b""));
    // 1: the bomb; 3: flag 2; 5: compressed without grpc-encoding; 7: no protobuf;
    // 9: a message cut by END_STREAM (incomplete, not listed), then nothing.
    c2s.extend(request(1, true));
    c2s.extend(frame(0, 1, 1, &msg(1, &bomb)));
    c2s.extend(request(3, false));
    c2s.extend(frame(0, 1, 3, &msg(2, b"\x0a\x00")));
    c2s.extend(request(5, false));
    c2s.extend(frame(0, 1, 5, &msg(1, b"\x1f\x8b")));
    c2s.extend(request(7, false));
    c2s.extend(frame(0, 1, 7, &msg(0, b"\xff\xff\xff")));
    c2s.extend(request(9, false));
    c2s.extend(frame(0, 1, 9, &msg(0, b"\x0a\x05ab")[..6]));
    let mut s2c = frame(4, 0, 0, b"");
    for s in [1u32, 3, 5, 7, 9] {
        let mut h = vec![0x88];
        h.extend(literal(b"grpc-status", b"0"));
        s2c.extend(frame(1, 0x05, s, &h));
    }
    let packets = [
        tcp(40001, 50051, 1000, 0x02, b""),
        tcp(50051, 40001, 5000, 0x12, b""),
        tcp(40001, 50051, 1001, 0x18, &c2s),
        tcp(50051, 40001, 5001, 0x18, &s2c),
    ];
    let mut f = Vec::new();
    for v in [0xa1b2c3d4u32, 0x0004_0002, 0, 0, 65535, 101] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    f[4..8].copy_from_slice(&[2, 0, 4, 0]);
    for (i, p) in packets.iter().enumerate() {
        for v in [
            1_700_000_000u32 + i as u32,
            0,
            p.len() as u32,
            p.len() as u32,
        ] {
            f.extend_from_slice(&v.to_le_bytes());
        }
        f.extend_from_slice(p);
    }
    let dir = scratch("hostile-msgs");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("hostile.pcap");
    std::fs::write(&path, &f).unwrap();
    let p = path.to_str().unwrap();
    let h = health();

    let o = run(&["calls", p, "-T", "jsonl", "--proto", &h]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    let calls = records(&out, "call");
    let kind = |stream: u64| {
        let c = calls.iter().find(|c| c["stream"] == stream).unwrap();
        let m = c["request_messages"].as_array().unwrap();
        (m.len(), m.first().map(|m| m["anomaly"]["kind"].clone()))
    };
    assert_eq!(kind(1), (1, Some("decompression-bomb".into())));
    assert_eq!(kind(3), (1, Some("bad-compressed-flag".into())));
    assert_eq!(kind(5), (1, Some("compressed-without-encoding".into())));
    assert_eq!(kind(7), (1, Some("message-parse".into())));
    assert_eq!(kind(9), (0, None), "a cut message is not listed");
    let c9 = calls.iter().find(|c| c["stream"] == 9).unwrap();
    assert_eq!(c9["incomplete_messages"]["client"], 1);
    let c7 = calls.iter().find(|c| c["stream"] == 7).unwrap();
    assert!(c7["request_messages"][0]["raw"].is_array());
    let w = records(&out, "summary")[0]["warnings"].to_string();
    for k in [
        "decompression-bomb",
        "bad-compressed-flag",
        "compressed-without-encoding",
        "message-parse",
    ] {
        assert!(w.contains("gRPC messages: 1 ") && w.contains(k), "{k}: {w}");
    }
    for args in [
        vec!["calls", p, "--proto", &h],
        vec!["calls", p, "--messages", "--wide"],
        vec!["frames", p, "--proto", &h],
        vec!["frames", p, "-T", "json", "--messages"],
    ] {
        let o = run(&args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
