use h2ledger_proto::{Direction, Envelope, Limits, Schemas};

use crate::capture::{calls, repo};

fn decode_all(
    schemas: &Schemas,
    capture: &str,
) -> Vec<(String, Direction, h2ledger_proto::Message)> {
    let limits = Limits::default();
    let mut out = Vec::new();
    for c in calls(
        &repo().join("captures").join(capture),
        limits.max_message_bytes,
    ) {
        for m in c.requests.iter().chain(&c.responses) {
            let env = Envelope {
                flag: m.flag,
                bytes: &m.bytes,
                wire_len: m.wire_len,
                cut: m.cut,
            };
            let enc = c.encoding[usize::from(m.dir == Direction::Response)].as_deref();
            out.push((
                c.path.clone(),
                m.dir,
                schemas.decode(&c.path, m.dir, &env, enc, &limits),
            ));
        }
    }
    out
}

fn health(from_set: bool) -> Schemas {
    let data = repo().join("crates/h2ledger-proto/tests/data");
    let mut b = Schemas::builder();
    if from_set {
        b.descriptor_set(data.join("health.pb"));
    } else {
        b.proto(data.join("health.proto"));
    }
    b.build().unwrap()
}

#[test]
fn grpcgo_health_check_is_serving() {
    for from_set in [false, true] {
        let s = health(from_set);
        let all = decode_all(&s, "grpcgo-article.pcap");
        assert_eq!(all.len(), 288, "144 calls, one message each way");
        for (path, dir, m) in &all {
            assert_eq!(path, "/grpc.health.v1.Health/Check");
            assert_eq!(m.anomaly, None);
            match dir {
                Direction::Request => {
                    assert_eq!(
                        m.type_name.as_deref(),
                        Some("grpc.health.v1.HealthCheckRequest")
                    );
                    assert_eq!(m.message.as_deref(), Some("{}"));
                    assert_eq!(m.bytes, 0);
                }
                Direction::Response => {
                    assert_eq!(
                        m.type_name.as_deref(),
                        Some("grpc.health.v1.HealthCheckResponse")
                    );
                    assert_eq!(m.message.as_deref(), Some(r#"{"status":"SERVING"}"#));
                    assert_eq!(
                        m.to_json(),
                        r#"{"bytes":2,"compressed":false,"message":{"status":"SERVING"},"raw":null,"type":"grpc.health.v1.HealthCheckResponse"}"#
                    );
                }
            }
        }
    }
}

#[test]
fn grpcgo_health_without_schema_is_raw() {
    // An empty pool: no schema at all, not even the built-in ones.
    let none = Schemas::from_pool(h2ledger_proto::DescriptorPool::new());
    let all = decode_all(&none, "grpcgo-article-sll.pcap");
    assert_eq!(all.len(), 288);
    for (_, dir, m) in &all {
        assert_eq!(m.type_name, None);
        assert_eq!(m.message, None);
        let want = match dir {
            Direction::Request => "[]",
            Direction::Response => r#"[{"field":1,"value":"1","wire":"varint"}]"#,
        };
        assert_eq!(m.raw.as_deref(), Some(want));
    }
    // The default schemas have grpc.health.v1 built in (crate::builtin).
    let all = decode_all(&Schemas::default(), "grpcgo-article-sll.pcap");
    assert_eq!(all.len(), 288);
    for (_, dir, m) in &all {
        assert_eq!(m.raw, None);
        let want = match dir {
            Direction::Request => r#"{}"#,
            Direction::Response => r#"{"status":"SERVING"}"#,
        };
        assert_eq!(m.message.as_deref(), Some(want));
    }
}

#[test]
fn grpcio_streaming_raw_bytes_show_as_text() {
    // captures/src/python-grpcio/streaming.py sends bytes that are no protobuf (b"s0", ...):
    // the schema-less form keeps them whole as a string, from offset 0.
    let all = decode_all(&health(false), "python-grpcio-streaming.pcap");
    assert_eq!(all.len(), 3 * 11 + 2 * 9 + 2 * 12);
    for (path, _, m) in &all {
        assert!(path.starts_with("/h2ledger.Stream/"), "{path}");
        assert_eq!(m.type_name, None);
        let raw = m.raw.as_deref().unwrap();
        let v: serde_json::Value = serde_json::from_str(raw).unwrap();
        let s = v[0]["string"].as_str().unwrap_or_else(|| panic!("{raw}"));
        assert!(s.starts_with(['s', 'c', 'b', 'S', 'B']), "{raw}");
        assert_eq!(v[0]["offset"], 0, "{raw}");
    }
}
