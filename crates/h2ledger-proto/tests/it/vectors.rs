use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};

use h2ledger_proto::{Anomaly, Envelope, Limits, Schemas};

const PROTO: &str = r#"
syntax = "proto3";
package v;
import "google/protobuf/any.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/timestamp.proto";
message Inner { int32 a = 1; int32 b = 2; repeated int32 r = 3; }
message M {
  int32 i = 1;
  Inner inner = 2;
  oneof o { string s = 3; Inner oi = 4; int32 on = 5; }
  map<string, Inner> m = 6;
  repeated sint32 rs = 7;
  string text = 8;
  google.protobuf.Any any = 9;
  google.protobuf.Timestamp t = 10;
  google.protobuf.Value v = 11;
  M self = 12;
  float f = 13;
}
"#;

/// `PROTO` compiled from a directory of this call's own, removed once compiled. The tests of
/// this binary run on parallel threads: with one path for all of them, a test could read
/// v.proto while another's `fs::write` had just truncated it, compile an empty file and find
/// no `v.M` (every message then went schema-less, and the test failed only when the threads
/// met).
fn schemas() -> Schemas {
    static CALLS: AtomicU32 = AtomicU32::new(0);
    let n = CALLS.fetch_add(1, Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("h2ledger-proto-vectors-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("v.proto"), PROTO).unwrap();
    let s = Schemas::builder().proto(d.join("v.proto")).build().unwrap();
    let _ = std::fs::remove_dir_all(&d);
    assert!(s.pool().get_message_by_name("v.M").is_some());
    s
}

/// A tiny encoder: (field, wire type, payload) triples.
fn tag(n: u32, w: u8) -> Vec<u8> {
    varint(u64::from(n) << 3 | u64::from(w))
}
fn varint(mut v: u64) -> Vec<u8> {
    let mut o = Vec::new();
    while v >= 0x80 {
        o.push(v as u8 | 0x80);
        v >>= 7;
    }
    o.push(v as u8);
    o
}
fn vf(n: u32, v: u64) -> Vec<u8> {
    [tag(n, 0), varint(v)].concat()
}
fn lf(n: u32, b: &[u8]) -> Vec<u8> {
    [tag(n, 2), varint(b.len() as u64), b.to_vec()].concat()
}

fn decode(s: &Schemas, b: &[u8]) -> h2ledger_proto::Message {
    s.decode_as(
        Some("v.M"),
        &Envelope::whole(0, b),
        None,
        &Limits::default(),
    )
}
fn json(s: &Schemas, b: &[u8]) -> String {
    let m = decode(s, b);
    assert_eq!(m.anomaly, None, "{m:?}");
    m.message.unwrap()
}

#[test]
fn last_scalar_wins_and_messages_merge() {
    let s = schemas();
    let b = [
        vf(1, 1),
        lf(2, &[vf(1, 5), vf(3, 1)].concat()),
        vf(1, 2),
        lf(2, &[vf(2, 6), vf(3, 2)].concat()),
    ]
    .concat();
    assert_eq!(json(&s, &b), r#"{"i":2,"inner":{"a":5,"b":6,"r":[1,2]}}"#);
}

#[test]
fn oneof_keeps_the_last_member_merged_with_its_run() {
    let s = schemas();
    let b = [
        lf(4, &vf(1, 1)),
        lf(3, b"x"),
        lf(4, &vf(2, 2)),
        lf(4, &vf(1, 3)),
    ]
    .concat();
    assert_eq!(json(&s, &b), r#"{"oi":{"a":3,"b":2}}"#);
    let b = [lf(4, &vf(1, 1)), vf(5, 0)].concat();
    assert_eq!(
        json(&s, &b),
        r#"{"on":0}"#,
        "a oneof member at zero is shown"
    );
}

#[test]
fn maps_sort_keys_and_keep_the_last_entry() {
    let s = schemas();
    let e = |k: &str, a: u64| lf(6, &[lf(1, k.as_bytes()), lf(2, &vf(1, a))].concat());
    let b = [e("b", 1), e("a", 2), e("b", 3), lf(6, &[])].concat();
    assert_eq!(json(&s, &b), r#"{"m":{"":{},"a":{"a":2},"b":{"a":3}}}"#);
}

#[test]
fn packed_and_unpacked_mix() {
    let s = schemas();
    let b = [
        vf(7, 1),
        lf(7, &[varint(2), varint(3)].concat()),
        vf(7, 4),
        lf(7, &[]),
    ]
    .concat();
    assert_eq!(json(&s, &b), r#"{"rs":[-1,1,-2,2]}"#);
}

#[test]
fn unknown_fields_and_wrong_wire_types_go_to_raw() {
    let s = schemas();
    let b = [vf(1, 7), vf(99, 1), lf(1, b"zz")].concat();
    let m = decode(&s, &b);
    assert_eq!(m.message.as_deref(), Some(r#"{"i":7}"#));
    assert_eq!(m.unknown_fields, 2);
    assert_eq!(
        m.raw.as_deref(),
        Some(
            r#"[{"field":1,"value":"7","wire":"varint"},{"field":99,"value":"1","wire":"varint"},{"field":1,"string":"zz","wire":"len"}]"#
        )
    );
}

#[test]
fn bad_bytes_are_reported_with_raw_kept() {
    let s = schemas();
    let m = decode(&s, &[0x08]);
    assert_eq!(m.anomaly, Some(Anomaly::NotParsed("bad varint".into())));
    assert_eq!(m.message, None);
    assert_eq!(
        m.raw.as_deref(),
        Some(r#"[{"error":"bad varint","offset":0,"string":"\b"}]"#)
    );
    let m = decode(&s, &lf(8, &[0xff, 0xfe]));
    assert_eq!(m.anomaly.unwrap().kind(), "message-parse");
    assert_eq!(
        m.raw.as_deref(),
        Some(r#"[{"bytes":"//4=","field":8,"wire":"len"}]"#)
    );
}

#[test]
fn well_known_types_without_json_are_reported() {
    let s = schemas();
    let any = lf(
        9,
        &[lf(1, b"type.googleapis.com/no.Such"), lf(2, &vf(1, 1))].concat(),
    );
    let m = decode(&s, &any);
    assert_eq!(m.anomaly.as_ref().map(|a| a.kind()), Some("message-json"));
    assert!(m.raw.is_some());
    let any = lf(
        9,
        &[lf(1, b"type.googleapis.com/v.Inner"), lf(2, &vf(1, 1))].concat(),
    );
    assert_eq!(
        json(&s, &any),
        r#"{"any":{"@type":"type.googleapis.com/v.Inner","a":1}}"#
    );
    let t = lf(10, &vf(1, 253_402_300_800));
    assert_eq!(decode(&s, &t).anomaly.unwrap().kind(), "message-json");
    // A Value with no kind is null, as MessageToDict prints it.
    assert_eq!(json(&s, &lf(11, &[])), r#"{"v":null}"#);
}

#[test]
fn depth_is_capped_without_overflowing_the_stack() {
    let s = schemas();
    let mut b = vf(1, 1);
    for _ in 0..150 {
        b = lf(12, &b);
    }
    let m = decode(&s, &b);
    assert_eq!(
        m.anomaly,
        Some(Anomaly::NotParsed("nesting too deep".into()))
    );
    let mut b = vf(1, 1);
    for _ in 0..99 {
        b = lf(12, &b);
    }
    assert!(json(&s, &b).ends_with(&"}".repeat(100)));
}

#[test]
fn compression_anomalies() {
    let s = schemas();
    let l = Limits::default();
    let d = |flag: u8, b: &[u8], enc: Option<&str>| {
        s.decode_as(Some("v.M"), &Envelope::whole(flag, b), enc, &l)
    };
    assert_eq!(d(1, &[], None).anomaly, Some(Anomaly::NoEncoding));
    assert_eq!(
        d(1, &[], Some("identity")).anomaly,
        Some(Anomaly::NoEncoding)
    );
    assert_eq!(
        d(1, &[], Some("snappy")).anomaly.unwrap().kind(),
        "unknown-encoding"
    );
    assert_eq!(
        d(1, b"xx", Some("gzip")).anomaly.unwrap().kind(),
        "decompress-error"
    );
    assert_eq!(d(2, &[], None).anomaly, Some(Anomaly::BadFlag(2)));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&vf(1, 3)).unwrap();
    let gz = gz.finish().unwrap();
    let m = d(1, &gz, Some("gzip"));
    assert_eq!(
        (m.message.as_deref(), m.compressed, m.bytes),
        (Some(r#"{"i":3}"#), true, gz.len() as u64)
    );
    // gzip but the flag unset: the message is not compressed
    assert_eq!(
        d(0, &vf(1, 3), Some("gzip")).message.as_deref(),
        Some(r#"{"i":3}"#)
    );
    // A bomb: 64 MiB of zeros in a few KiB.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    for _ in 0..64 {
        gz.write_all(&[0u8; 1 << 20]).unwrap();
    }
    let bomb = gz.finish().unwrap();
    assert!(bomb.len() < 100_000);
    assert_eq!(
        d(1, &bomb, Some("gzip")).anomaly,
        Some(Anomaly::DecompressCap { limit: 4 << 20 })
    );
}

#[test]
fn floats_print_shortest_as_f32() {
    let s = schemas();
    let b = [tag(13, 5), 0.1f32.to_bits().to_le_bytes().to_vec()].concat();
    assert_eq!(json(&s, &b), r#"{"f":0.1}"#);
}

#[test]
fn json_cap_drops_the_text() {
    let s = schemas();
    let l = Limits {
        max_json_bytes: 1000,
        ..Limits::default()
    };
    let b: Vec<u8> = (0..2000).flat_map(|_| vf(7, 1)).collect();
    let m = s.decode_as(Some("v.M"), &Envelope::whole(0, &b), None, &l);
    assert_eq!(m.anomaly, Some(Anomaly::JsonCap { limit: 1000 }));
    assert_eq!((m.message, m.raw), (None, None));
}

#[test]
fn proto2_groups_extensions_and_closed_enums() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let s = Schemas::builder()
        .proto(data.join("legacy.proto"))
        .build()
        .unwrap();
    let b = [
        0x08, 0x05, 0x13, 0x1a, 0x01, b'x', 0x22, 0x02, 0x01, 0x02, 0x14, 0x3a, 0x01, b'm', 0xa2,
        0x06, 0x01, b'e', 0xa8, 0x06, 0x03, 0x30, 0x01, 0x30, 0x07,
    ];
    let m = s.decode_as(
        Some("h2ledger.test.legacy.Legacy"),
        &Envelope::whole(0, &b),
        None,
        &Limits::default(),
    );
    assert_eq!(m.anomaly, None);
    // kind = 7 is not a Kind: an unknown field, and kind keeps ONE (protobuf-go, C++).
    assert_eq!(
        m.message.as_deref(),
        Some(
            r#"{"a":5,"item":[{"name":"x","v":["1","2"]}],"kind":"ONE","must":"m","[h2ledger.test.legacy.ext_nums]":[-2],"[h2ledger.test.legacy.ext_text]":"e"}"#
        )
    );
    assert_eq!(m.unknown_fields, 1);
    assert!(m.raw.is_some());
}

/// The helper on many threads at once, as the test harness runs this file's tests: each call
/// compiles v.proto whole. With the shared path it had before, about one call in four here
/// compiled an empty file (no `v.M`).
#[test]
fn the_schema_helper_holds_on_parallel_threads() {
    let threads: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(|| {
                for _ in 0..10 {
                    assert_eq!(json(&schemas(), &vf(1, 3)), r#"{"i":3}"#);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}
