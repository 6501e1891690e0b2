//! Decode speed with a schema: 100,000 small messages (like the proto captures' streaming
//! messages: a nested message, a oneof, a packed enum list, a map entry, a Timestamp, a float
//! and a double; 50 to 60 bytes each), decoded to canonical JSON on one thread.
//!
//! `cargo run --release -p h2ledger-proto --example bench [ROUNDS]` prints messages/s for the
//! schema decode, the schema-less decode, and `Message::write_json` of the result.
use std::time::Instant;

use h2ledger_proto::{Direction, Envelope, Limits, Schemas};

fn varint(mut v: u64, o: &mut Vec<u8>) {
    while v >= 0x80 {
        o.push(v as u8 | 0x80);
        v >>= 7;
    }
    o.push(v as u8);
}
fn len_field(n: u32, b: &[u8], o: &mut Vec<u8>) {
    varint(u64::from(n) << 3 | 2, o);
    varint(b.len() as u64, o);
    o.extend_from_slice(b);
}
fn varint_field(n: u32, v: u64, o: &mut Vec<u8>) {
    varint(u64::from(n) << 3, o);
    varint(v, o);
}

/// `small(k)` of captures/src/proto-everything, encoded by hand.
fn small(k: u64) -> Vec<u8> {
    let mut m = Vec::new();
    let mut scalars = Vec::new();
    scalars.push(1 << 3 | 1);
    scalars.extend_from_slice(&(-(k as f64) / 3.0).to_bits().to_le_bytes());
    scalars.push(2 << 3 | 5);
    scalars.extend_from_slice(&((k as f32) / 10.0).to_bits().to_le_bytes());
    len_field(1, &scalars, &mut m);
    let mut inner = Vec::new();
    len_field(1, format!("s{k}").as_bytes(), &mut inner);
    varint_field(2, k, &mut inner);
    len_field(3, &inner, &mut m);
    let mut entry = Vec::new();
    len_field(1, b"k", &mut entry);
    varint_field(2, k, &mut entry);
    len_field(5, &entry, &mut m);
    varint_field(10, k, &mut m);
    len_field(14, &[(k % 4) as u8, ((k + 1) % 4) as u8], &mut m);
    let mut ts = Vec::new();
    varint_field(1, 1_700_000_000 + k, &mut ts);
    varint_field(2, (k % 1000) * 1_000_000, &mut ts);
    len_field(15, &ts, &mut m);
    m
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5);
    let proto = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../captures/src/proto-everything/everything.proto"
    );
    let schemas = Schemas::builder().proto(proto).build().expect("schema");
    let msgs: Vec<Vec<u8>> = (0..100_000).map(small).collect();
    let bytes: usize = msgs.iter().map(Vec::len).sum();
    let limits = Limits::default();
    let path = "/h2ledger.test.v1.TestService/Bidi";
    let first = schemas.decode(
        path,
        Direction::Request,
        &Envelope::whole(0, &msgs[7]),
        None,
        &limits,
    );
    println!("example: {}", first.message.as_deref().unwrap_or("?"));
    println!(
        "{} messages, {:.1} bytes each",
        msgs.len(),
        bytes as f64 / msgs.len() as f64
    );
    let run = |name: &str, f: &dyn Fn(&[u8]) -> usize| {
        let mut best = f64::MAX;
        let mut out = 0;
        for _ in 0..rounds {
            let t = Instant::now();
            for m in &msgs {
                out += f(m);
            }
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!(
            "{name}: {:.0} messages/s (best of {rounds}: {:.1} ms for {}; {out} JSON bytes in all)",
            msgs.len() as f64 / best,
            best * 1e3,
            msgs.len()
        );
    };
    run("schema decode", &|m| {
        let d = schemas.decode(
            path,
            Direction::Request,
            &Envelope::whole(0, m),
            None,
            &limits,
        );
        d.message.map_or(0, |s| s.len())
    });
    run("schema decode + write_json", &|m| {
        let d = schemas.decode(
            path,
            Direction::Request,
            &Envelope::whole(0, m),
            None,
            &limits,
        );
        d.to_json().len()
    });
    run("schema-less decode", &|m| {
        h2ledger_proto::decode_raw(m, &limits).map_or(0, |s| s.len())
    });
}
