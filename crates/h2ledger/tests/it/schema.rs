//! The JSON Schemas in docs/schema/ against real output: every record of every view, on
//! several captures. The checker below implements the parts of JSON Schema 2020-12 the schemas
//! use (`$ref` to `$defs`, `type`, `required`, `properties`, `items`, `enum`, `const`, `oneOf`,
//! `allOf`, `minimum`); `scripts/check-schema.py` runs the same files through Python's
//! `jsonschema` when it is installed.

use serde_json::Value;

use crate::util::*;

fn schema(name: &str) -> Value {
    read_json(&repo().join("docs/schema").join(name))
}

fn type_ok(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        other => panic!("schema type {other}"),
    }
}

/// The errors of `v` against `s` (in `root`), with their JSON paths.
fn check(root: &Value, s: &Value, v: &Value, path: &str, errors: &mut Vec<String>) {
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/$defs/").expect("local $ref");
        check(root, &root["$defs"][name], v, path, errors);
    }
    if let Some(t) = s.get("type") {
        let ok = match t {
            Value::String(t) => type_ok(t, v),
            Value::Array(ts) => ts.iter().any(|t| type_ok(t.as_str().unwrap(), v)),
            _ => panic!("type"),
        };
        if !ok {
            errors.push(format!("{path}: {v} is not {t}"));
            return;
        }
    }
    if let Some(c) = s.get("const") {
        if c != v {
            errors.push(format!("{path}: {v} is not {c}"));
        }
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            errors.push(format!("{path}: {v} not in {e:?}"));
        }
    }
    if let (Some(m), Some(x)) = (s.get("minimum").and_then(Value::as_f64), v.as_f64()) {
        if x < m {
            errors.push(format!("{path}: {x} < {m}"));
        }
    }
    if let Some(obj) = v.as_object() {
        for k in s
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !obj.contains_key(k.as_str().unwrap()) {
                errors.push(format!("{path}: missing {k}"));
            }
        }
        if let Some(props) = s.get("properties").and_then(Value::as_object) {
            for (k, ps) in props {
                if let Some(x) = obj.get(k) {
                    check(root, ps, x, &format!("{path}.{k}"), errors);
                }
            }
        }
    }
    if let (Some(items), Some(arr)) = (s.get("items"), v.as_array()) {
        for (i, x) in arr.iter().enumerate() {
            check(root, items, x, &format!("{path}[{i}]"), errors);
        }
    }
    for all in s
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        check(root, all, v, path, errors);
    }
    if let Some(one) = s.get("oneOf").and_then(Value::as_array) {
        let passing = one
            .iter()
            .filter(|o| {
                let mut e = Vec::new();
                check(root, o, v, path, &mut e);
                e.is_empty()
            })
            .count();
        if passing != 1 {
            errors.push(format!("{path}: matches {passing} of oneOf, not 1: {v}"));
        }
    }
}

fn valid(schema: &Value, v: &Value) -> Vec<String> {
    let mut e = Vec::new();
    check(schema, schema, v, "$", &mut e);
    e
}

fn stdout(args: &[&str]) -> Vec<u8> {
    let o = run(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

const FILES: [&str; 5] = [
    "grpcgo-article.pcap",
    "node-http2.pcap",
    "snaplen-cut.pcap",
    "curl-nghttpd-tls13-dsb.pcapng",
    "python-grpcio-streaming.pcap",
];

#[test]
fn the_report_schema_holds_on_replay_output() {
    let s = schema("report.schema.json");
    for f in FILES {
        let f = capture(f);
        let f = f.to_str().unwrap();
        for extra in [
            &[][..],
            &["--analyze"],
            &["--split-at", "1s"],
            &["--every", "2s"],
        ] {
            let mut args = vec!["replay", f, "-T", "json"];
            args.extend_from_slice(extra);
            let v: Value = serde_json::from_slice(&stdout(&args)).unwrap();
            let e = valid(&s, &v);
            assert!(e.is_empty(), "{args:?}: {e:#?}");
        }
    }
}

#[test]
fn the_record_schema_holds_on_every_line() {
    let rec = schema("record.schema.json");
    let doc = schema("listing.schema.json");
    for f in FILES {
        let f = capture(f);
        let f = f.to_str().unwrap();
        for view in ["calls", "frames"] {
            let out = stdout(&[view, f, "-T", "jsonl", "--every", "1s"]);
            for l in String::from_utf8(out).unwrap().lines() {
                let v: Value = serde_json::from_str(l).unwrap();
                let e = valid(&rec, &v);
                assert!(e.is_empty(), "{view} {f}: {e:#?}");
            }
            let v: Value = serde_json::from_slice(&stdout(&[view, f, "-T", "json"])).unwrap();
            let e = valid(&doc, &v);
            assert!(e.is_empty(), "{view} {f} json: {e:#?}");
        }
    }
}

/// `--messages` adds `request_messages`, `response_messages`, `messages_omitted` to calls and
/// `grpc_messages` to DATA frames: checked with a schema (the proto captures), with anomalies
/// (`--max-message-bytes 100`) and schema-less (every capture of the other tests).
#[test]
fn the_schemas_hold_with_messages() {
    let rec = schema("record.schema.json");
    let doc = schema("listing.schema.json");
    let proto = repo().join("captures/src/proto-everything/everything.proto");
    let proto = proto.to_str().unwrap();
    let mut messages = 0;
    let files = FILES
        .iter()
        .chain(&["proto-grpcio-gzip.pcap", "proto-grpcgo.pcap"]);
    for f in files {
        let f = capture(f);
        let f = f.to_str().unwrap();
        for view in ["calls", "frames"] {
            for extra in [
                &["--messages"][..],
                &["--proto", proto],
                &[
                    "--proto",
                    proto,
                    "--max-message-bytes",
                    "100",
                    "--max-messages",
                    "2",
                ],
            ] {
                let mut args = vec![view, f, "-T", "jsonl"];
                args.extend_from_slice(extra);
                let out = stdout(&args);
                for l in String::from_utf8(out).unwrap().lines() {
                    let v: Value = serde_json::from_str(l).unwrap();
                    let e = valid(&rec, &v);
                    assert!(e.is_empty(), "{args:?}: {e:#?}");
                    messages += v["grpc_messages"].as_array().map_or(0, Vec::len);
                    messages += v["request_messages"].as_array().map_or(0, Vec::len);
                }
                args[3] = "json";
                let v: Value = serde_json::from_slice(&stdout(&args)).unwrap();
                let e = valid(&doc, &v);
                assert!(e.is_empty(), "{args:?}: {e:#?}");
            }
        }
    }
    assert!(messages > 500, "{messages} messages checked");
    // A message without its keys, or with an anomaly kind not in the list, is refused.
    let out = stdout(&[
        "calls",
        capture("proto-grpcgo.pcap").to_str().unwrap(),
        "-T",
        "jsonl",
        "--proto",
        proto,
    ]);
    let mut line: Value =
        serde_json::from_str(String::from_utf8(out).unwrap().lines().next().unwrap()).unwrap();
    assert!(valid(&rec, &line).is_empty());
    line["request_messages"][0]["anomaly"] = serde_json::json!({"detail": "x", "kind": "nope"});
    assert!(!valid(&rec, &line).is_empty());
    line["request_messages"][0]
        .as_object_mut()
        .unwrap()
        .remove("anomaly");
    assert!(!valid(&rec, &line).is_empty());
}

/// The checker can fail: a record without its keys, a wrong type, a frame that is a call.
#[test]
fn the_checker_rejects_what_the_schemas_forbid() {
    let rec = schema("record.schema.json");
    let out = stdout(&[
        "calls",
        capture("grpcgo-article.pcap").to_str().unwrap(),
        "-T",
        "jsonl",
    ]);
    let line: Value =
        serde_json::from_str(String::from_utf8(out).unwrap().lines().next().unwrap()).unwrap();
    assert!(valid(&rec, &line).is_empty());
    let mut no_method = line.clone();
    no_method.as_object_mut().unwrap().remove("method");
    assert!(!valid(&rec, &no_method).is_empty());
    let mut wrong = line.clone();
    wrong["stream"] = Value::from("one");
    assert!(!valid(&rec, &wrong).is_empty());
    let mut other = line;
    other["record"] = Value::from("frame");
    assert!(!valid(&rec, &other).is_empty());
    let report = schema("report.schema.json");
    let mut v = replay_json(capture("grpcgo-article.pcap").to_str().unwrap(), &[]);
    assert!(valid(&report, &v).is_empty());
    v["sides"]["client"]["frames"]
        .as_object_mut()
        .unwrap()
        .remove("PING_ACK");
    assert!(!valid(&report, &v).is_empty());
}

/// The findings (issue 21): the report's `findings` and each `finding` JSON line, on captures
/// where findings of every kind of evidence fire.
#[test]
fn the_finding_schemas_hold() {
    let report = schema("report.schema.json");
    let rec = schema("record.schema.json");
    let mut lines = 0;
    for f in [
        "findings/grpcgo-keepalive.pcap",
        "findings/grpcgo-slots.pcap",
        "findings/rapid-reset-nghttpd.pcap",
        "findings/zero-window-goh2c.pcap",
        "findings/hpack-bomb-nghttpd.pcap",
        "snaplen-cut.pcap",
        "midconn.pcap",
    ] {
        let f = capture(f);
        let f = f.to_str().unwrap();
        let v: Value = serde_json::from_slice(&stdout(&["replay", f, "-T", "json"])).unwrap();
        assert!(!v["findings"].as_array().unwrap().is_empty(), "{f}");
        let e = valid(&report, &v);
        assert!(e.is_empty(), "{f}: {e:#?}");
        let out = stdout(&["replay", f, "-T", "jsonl"]);
        for l in String::from_utf8(out).unwrap().lines() {
            let v: Value = serde_json::from_str(l).unwrap();
            if v["type"] == "finding" {
                lines += 1;
                let e = valid(&rec, &v);
                assert!(e.is_empty(), "{f}: {e:#?}");
            }
        }
    }
    assert!(lines >= 7);
}
