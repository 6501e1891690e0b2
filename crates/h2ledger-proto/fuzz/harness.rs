//! Fuzz harnesses of h2ledger-proto (also run on every input in regressions/ by
//! tests/fuzz_regressions.rs). Each must never panic, and every JSON text it makes must parse
//! as JSON.
//!
//! * `raw`: the schema-less decode of arbitrary bytes.
//! * `schema`: the decode with a schema: the first byte picks one of the message types of
//!   captures/src/proto-everything/everything.proto and tests/data/legacy.proto (proto2:
//!   groups, extensions), the rest is the message.
//! * `assemble`: the gRPC message assembler: the same bytes fed whole and in pieces (cut where
//!   the input's first bytes say) give the same messages, and each message keeps at most the
//!   cap.
//! * `decompress`: gzip and deflate (capped) of arbitrary bytes, then the decode.

use std::sync::OnceLock;

use h2ledger_proto::{Assembler, Envelope, Limits, Schemas};

const EVERYTHING: &str = include_str!("../../../captures/src/proto-everything/everything.proto");
const LEGACY: &str = include_str!("../tests/data/legacy.proto");

const TYPES: &[&str] = &[
    "h2ledger.test.v1.Everything",
    "h2ledger.test.v1.Scalars",
    "h2ledger.test.v1.Packed",
    "h2ledger.test.v1.Inner",
    "h2ledger.test.legacy.Legacy",
    "google.protobuf.Any",
    "google.protobuf.Struct",
    "google.protobuf.Value",
    "google.protobuf.ListValue",
    "google.protobuf.Timestamp",
    "google.protobuf.Duration",
    "google.protobuf.FieldMask",
    "google.protobuf.FloatValue",
];

fn schemas() -> &'static Schemas {
    static S: OnceLock<Schemas> = OnceLock::new();
    S.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("h2ledger-proto-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        std::fs::write(dir.join("everything.proto"), EVERYTHING).expect("write");
        std::fs::write(dir.join("legacy.proto"), LEGACY).expect("write");
        let s = Schemas::builder()
            .proto(dir.join("everything.proto"))
            .proto(dir.join("legacy.proto"))
            .build()
            .expect("the fuzz schemas compile");
        let _ = std::fs::remove_dir_all(&dir);
        s
    })
}

/// JSON syntax (RFC 8259), checked with an explicit stack: nesting may be deeper than
/// serde_json's default limit of 128 (a message nested 100 deep is 200 JSON levels in `raw`).
fn is_json(s: &str) {
    if let Err(at) = json_syntax(s.as_bytes()) {
        panic!("not JSON at byte {at}: {s}");
    }
}

fn json_syntax(b: &[u8]) -> Result<(), usize> {
    let mut i = 0;
    let mut stack: Vec<u8> = Vec::new();
    let ws = |i: &mut usize| {
        while *i < b.len() && matches!(b[*i], b' ' | b'\t' | b'\n' | b'\r') {
            *i += 1;
        }
    };
    'value: loop {
        ws(&mut i);
        match b.get(i).copied().ok_or(i)? {
            b'[' | b'{' => {
                let open = b[i];
                i += 1;
                ws(&mut i);
                let close = if open == b'[' { b']' } else { b'}' };
                if b.get(i) == Some(&close) {
                    i += 1;
                } else {
                    stack.push(open);
                    if open == b'{' {
                        i = key(b, i)?;
                    }
                    continue 'value;
                }
            }
            b'"' => i = string(b, i)?,
            b't' if b[i..].starts_with(b"true") => i += 4,
            b'f' if b[i..].starts_with(b"false") => i += 5,
            b'n' if b[i..].starts_with(b"null") => i += 4,
            b'-' | b'0'..=b'9' => i = number(b, i)?,
            _ => return Err(i),
        }
        // After a value: close containers or go on to the next element.
        loop {
            ws(&mut i);
            let Some(&top) = stack.last() else {
                return if i == b.len() { Ok(()) } else { Err(i) };
            };
            let close = if top == b'[' { b']' } else { b'}' };
            match b.get(i).copied() {
                Some(b',') => {
                    i += 1;
                    if top == b'{' {
                        i = key(b, i)?;
                    }
                    continue 'value;
                }
                Some(c) if c == close => {
                    i += 1;
                    stack.pop();
                }
                _ => return Err(i),
            }
        }
    }
}

/// `"key":` with whitespace; returns the index after the colon.
fn key(b: &[u8], mut i: usize) -> Result<usize, usize> {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    if b.get(i) != Some(&b'"') {
        return Err(i);
    }
    i = string(b, i)?;
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    if b.get(i) != Some(&b':') {
        return Err(i);
    }
    Ok(i + 1)
}

fn string(b: &[u8], mut i: usize) -> Result<usize, usize> {
    i += 1;
    loop {
        match b.get(i).copied().ok_or(i)? {
            b'"' => return Ok(i + 1),
            b'\\' => match b.get(i + 1).copied().ok_or(i)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                b'u' if b
                    .get(i + 2..i + 6)
                    .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) =>
                {
                    i += 6
                }
                _ => return Err(i),
            },
            0..=0x1f => return Err(i),
            _ => i += 1,
        }
    }
}

fn number(b: &[u8], mut i: usize) -> Result<usize, usize> {
    let digits = |i: &mut usize| {
        let s = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i > s
    };
    if b[i] == b'-' {
        i += 1;
    }
    if b.get(i) == Some(&b'0') {
        i += 1;
    } else if !digits(&mut i) {
        return Err(i);
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if !digits(&mut i) {
            return Err(i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(&mut i) {
            return Err(i);
        }
    }
    Ok(i)
}

#[test]
fn the_checker_checks() {
    for ok in [
        "[]",
        "{}",
        r#"{"a":[1,-0.5e+3,"x\u00e9",true,null,{}]}"#,
        "0",
        " [ 1 , 2 ] ",
    ] {
        assert_eq!(json_syntax(ok.as_bytes()), Ok(()), "{ok}");
    }
    for bad in [
        "",
        "[",
        "[1,]",
        "{\"a\"}",
        "01",
        "1.",
        "\"\\u12\"",
        "[1]x",
        "{\"a\":1,}",
        "\"\n\"",
    ] {
        assert!(json_syntax(bad.as_bytes()).is_err(), "{bad}");
    }
}

fn check(m: &h2ledger_proto::Message) {
    if let Some(s) = &m.message {
        is_json(s);
    }
    if let Some(s) = &m.raw {
        is_json(s);
    }
    is_json(&m.to_json());
}

pub fn raw(data: &[u8]) {
    let limits = Limits {
        max_json_bytes: 1 << 20,
        ..Limits::default()
    };
    if let Some(s) = h2ledger_proto::decode_raw(data, &limits) {
        is_json(&s);
        assert!(
            s.len() <= limits.max_json_bytes + 64 * 1024,
            "raw JSON past the cap"
        );
    }
}

pub fn schema(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let ty = TYPES[usize::from(pick) % TYPES.len()];
    let limits = Limits {
        max_json_bytes: 1 << 20,
        ..Limits::default()
    };
    let m = schemas().decode_as(Some(ty), &Envelope::whole(0, rest), None, &limits);
    check(&m);
    assert_eq!(
        m.message.is_some() || m.raw.is_some(),
        m.anomaly
            .as_ref()
            .is_none_or(|a| a.kind() != "message-json-cap")
    );
}

pub fn assemble(data: &[u8]) {
    let Some((&[cap, a, b], rest)) = data.split_first_chunk::<3>() else {
        return;
    };
    let cap = usize::from(cap);
    let collect = |pieces: &[&[u8]]| {
        let mut asm = Assembler::new(cap);
        let mut out = Vec::new();
        for p in pieces {
            asm.feed(p, |e| {
                assert!(e.bytes.len() <= cap);
                assert_eq!(e.cut, e.wire_len as usize > cap);
                assert_eq!(e.bytes.len(), (e.wire_len as usize).min(cap));
                out.push((e.flag, e.bytes.to_vec(), e.wire_len, e.cut));
            });
        }
        (out, asm.end())
    };
    let whole = collect(&[rest]);
    let i = usize::from(a).min(rest.len());
    let j = (i + usize::from(b)).min(rest.len());
    let split = collect(&[&rest[..i], &rest[i..j], &rest[j..]]);
    assert_eq!(whole, split);
}

pub fn decompress(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let enc = ["gzip", "deflate", "identity", "x"][usize::from(pick & 3)];
    let ty = TYPES[usize::from(pick >> 2) % TYPES.len()];
    let limits = Limits {
        max_decompressed_bytes: 64 << 10,
        max_json_bytes: 1 << 20,
        ..Limits::default()
    };
    let m = schemas().decode_as(Some(ty), &Envelope::whole(1, rest), Some(enc), &limits);
    check(&m);
}
