use std::collections::BTreeMap;

use h2ledger_proto::{Direction, Envelope, Limits, Schemas};
use serde_json::Value;

use crate::capture::{calls, repo};
use crate::jsoncmp::diff;

pub fn everything() -> Schemas {
    Schemas::builder()
        .proto(repo().join("captures/src/proto-everything/everything.proto"))
        .build()
        .expect("everything.proto compiles")
}

/// One ground-truth line: index, method, the message's JSON text.
type Line = (u64, String, String);

struct Checked {
    messages: usize,
    compressed: usize,
    texts_equal: usize,
}

/// Decodes every message of captures/NAME.pcap and compares it with NAME.truth.jsonl: the same
/// calls in stream order, the same messages in wire order, `message` equal to the program's
/// own JSON of each (as values; `exact_text`: also as text, for protojson's compact output).
fn check(name: &str, exact_text: bool) -> Checked {
    let schemas = everything();
    let limits = Limits::default();
    let dir = repo().join("captures");
    let calls = calls(&dir.join(format!("{name}.pcap")), limits.max_message_bytes);
    let text = std::fs::read_to_string(dir.join(format!("{name}.truth.jsonl"))).unwrap();
    let mut truth: BTreeMap<(u64, String), Vec<Line>> = BTreeMap::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let msg_text = if exact_text {
            // The message's own bytes in the line, as protojson wrote them (json.Compact).
            let start = line.find("\"message\":").unwrap() + "\"message\":".len();
            let end = line.rfind(",\"method\":").unwrap();
            line[start..end].to_owned()
        } else {
            v["message"].to_string()
        };
        truth
            .entry((
                v["call"].as_u64().unwrap(),
                v["direction"].as_str().unwrap().to_owned(),
            ))
            .or_default()
            .push((
                v["index"].as_u64().unwrap(),
                v["method"].as_str().unwrap().to_owned(),
                msg_text,
            ));
    }
    let n_calls = truth.keys().map(|k| k.0).max().unwrap() + 1;
    assert_eq!(calls.len() as u64, n_calls, "{name}: calls in the capture");
    let mut c = Checked {
        messages: 0,
        compressed: 0,
        texts_equal: 0,
    };
    for (k, call) in calls.iter().enumerate() {
        for (dir, msgs, dname) in [
            (Direction::Request, &call.requests, "request"),
            (Direction::Response, &call.responses, "response"),
        ] {
            let want = truth
                .get(&(k as u64, dname.to_owned()))
                .cloned()
                .unwrap_or_default();
            assert_eq!(msgs.len(), want.len(), "{name}: call {k} {dname}: messages");
            let enc = call.encoding[usize::from(dir == Direction::Response)].as_deref();
            for (i, (m, (idx, method, want_text))) in msgs.iter().zip(&want).enumerate() {
                assert_eq!(*idx as usize, i);
                assert_eq!(&call.path, method, "{name}: call {k}");
                let env = Envelope {
                    flag: m.flag,
                    bytes: &m.bytes,
                    wire_len: m.wire_len,
                    cut: m.cut,
                };
                let got = schemas.decode(&call.path, dir, &env, enc, &limits);
                let ctx = format!("{name}: call {k} {} {dname} {i}", call.path);
                assert_eq!(got.anomaly, None, "{ctx}");
                assert_eq!(got.raw, None, "{ctx}: no unknown fields");
                assert_eq!(got.bytes, u64::from(m.wire_len));
                assert_eq!(got.compressed, m.flag == 1);
                let ty = schemas.method(&call.path).unwrap();
                let want_ty = if dir == Direction::Request {
                    ty.input
                } else {
                    ty.output
                };
                assert_eq!(got.type_name.as_deref(), Some(want_ty));
                let ours = got.message.expect("a message");
                let a: Value = serde_json::from_str(&ours)
                    .unwrap_or_else(|e| panic!("{ctx}: not JSON ({e}): {ours}"));
                let b: Value = serde_json::from_str(want_text).unwrap();
                if let Some(d) = diff(&a, &b, "") {
                    panic!("{ctx}: differs at {d}\n ours: {ours}\n want: {want_text}");
                }
                if exact_text {
                    assert_eq!(&ours, want_text, "{ctx}: text");
                    c.texts_equal += 1;
                }
                c.messages += 1;
                c.compressed += usize::from(got.compressed);
            }
        }
    }
    c
}

#[test]
fn grpcio_messages_equal_message_to_dict() {
    let c = check("proto-grpcio", false);
    assert_eq!(c.messages, 27);
    assert_eq!(c.compressed, 0);
}

#[test]
fn grpcio_gzip_and_deflate_messages_equal_message_to_dict() {
    let c = check("proto-grpcio-gzip", false);
    assert_eq!(c.messages, 29);
    // grpc core compresses what gzip shrinks (the full and ~200 KB messages), not the rest.
    assert!(c.compressed >= 6, "compressed: {}", c.compressed);
    assert!(c.compressed < c.messages);
}

#[test]
fn grpcgo_messages_equal_protojson_text() {
    let c = check("proto-grpcgo", true);
    assert_eq!(c.messages, 29);
    assert_eq!(c.texts_equal, 29);
    assert_eq!(c.compressed, 2, "the gzip call, both ways");
}

#[test]
fn big_messages_span_several_data_frames() {
    let limits = Limits::default();
    for name in ["proto-grpcio", "proto-grpcgo"] {
        let calls = calls(
            &repo().join(format!("captures/{name}.pcap")),
            limits.max_message_bytes,
        );
        let big: Vec<u32> = calls
            .iter()
            .flat_map(|c| c.requests.iter().chain(&c.responses))
            .map(|m| m.wire_len)
            .filter(|&l| l > 200_000)
            .collect();
        assert_eq!(big.len(), 2, "{name}: {big:?}");
    }
}

#[test]
fn a_smaller_limit_cuts_big_messages_and_says_so() {
    let limits = Limits {
        max_message_bytes: 100_000,
        ..Limits::default()
    };
    let schemas = everything();
    let calls = calls(
        &repo().join("captures/proto-grpcio.pcap"),
        limits.max_message_bytes,
    );
    let mut cut = 0;
    for c in &calls {
        for m in c.requests.iter().chain(&c.responses) {
            assert_eq!(m.cut, m.wire_len > 100_000);
            if m.cut {
                assert_eq!(m.bytes.len(), 100_000);
                let env = Envelope {
                    flag: m.flag,
                    bytes: &m.bytes,
                    wire_len: m.wire_len,
                    cut: m.cut,
                };
                let d = schemas.decode(&c.path, m.dir, &env, None, &limits);
                assert_eq!(
                    d.anomaly.as_ref().map(|a| a.kind()),
                    Some("message-too-large")
                );
                assert_eq!((d.message, d.raw), (None, None));
                cut += 1;
            }
        }
    }
    assert_eq!(cut, 2);
}
