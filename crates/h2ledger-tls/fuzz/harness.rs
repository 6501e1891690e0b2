//! Fuzz harnesses of h2ledger-tls (also run on every input in regressions/ by
//! tests/fuzz_regressions.rs).
//!
//! * `records`: the TLS layer as a `Sink`, driven by a sequence of operations on one
//!   connection (data / gap / close per direction, with lengths), optionally after a real
//!   TLS 1.3 or 1.2 hello pair whose client random the key log knows, so that protected
//!   records reach the decryption, hold and KeyUpdate paths. The layer must never panic, and
//!   what it forwards must stay within what it was given.
//! * `handshake`: the wire parsers (ClientHello, ServerHello, EncryptedExtensions, record
//!   chains, the handshake message splitter) and the key log parser on arbitrary bytes (a
//!   pcapng's Decryption Secrets Blocks are h2ledger-run's `blocks` target).

use h2ledger_tcp::{CloseKind, ConnId, ConnMeta, Dir, Nanos, Sink, Write};
use h2ledger_tls::wire::{self, HandshakeReader};
use h2ledger_tls::{Config, KeyLog, Tls, TlsLayer};

/// Counts what reaches the ledger.
#[derive(Default)]
struct Count {
    data: u64,
    records: u64,
}

impl Sink for Count {
    fn open(&mut self, _meta: &ConnMeta) {}
    fn write(&mut self, _conn: ConnId, _dir: Dir, _w: &Write) {}
    fn data(&mut self, _conn: ConnId, _dir: Dir, _w: &Write, bytes: &[u8]) {
        self.data += bytes.len() as u64;
    }
    fn gap(&mut self, _conn: ConnId, _dir: Dir, _ts: Nanos, _len: u64) {}
    fn close(&mut self, _conn: ConnId, _ts: Nanos, _kind: CloseKind) {}
    fn tls_record(&mut self, _conn: ConnId, _dir: Dir, _w: &Write) {
        self.records += 1;
    }
}

const RANDOM: [u8; 32] = [0x42; 32];

fn hs_record(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![kind, 0, (body.len() >> 8) as u8, body.len() as u8];
    m.extend_from_slice(body);
    let mut r = vec![22, 3, 3, (m.len() >> 8) as u8, m.len() as u8];
    r.extend(m);
    r
}

fn client_hello() -> Vec<u8> {
    let mut b = vec![3, 3];
    b.extend(RANDOM);
    b.extend([0, 0, 2, 0x13, 0x01, 1, 0]);
    b.extend([0, 9, 0, 16, 0, 5, 0, 3, 2, b'h', b'2']);
    hs_record(1, &b)
}

fn server_hello(tls13: bool) -> Vec<u8> {
    let mut b = vec![3, 3];
    b.extend([0x11; 32]);
    if tls13 {
        b.extend([0, 0x13, 0x01, 0, 0, 6, 0, 43, 0, 2, 3, 4]);
    } else {
        b.extend([0, 0xc0, 0x2f, 0, 0, 9, 0, 16, 0, 5, 0, 3, 2, b'h', b'2']);
    }
    hs_record(2, &b)
}

fn keys() -> KeyLog {
    let r: String = RANDOM.iter().map(|b| format!("{b:02x}")).collect();
    let s32 = "07".repeat(32);
    KeyLog::parse(&format!(
        "CLIENT_RANDOM {r} {}\nCLIENT_HANDSHAKE_TRAFFIC_SECRET {r} {s32}\n\
         SERVER_HANDSHAKE_TRAFFIC_SECRET {r} {s32}\nCLIENT_TRAFFIC_SECRET_0 {r} {s32}\n\
         SERVER_TRAFFIC_SECRET_0 {r} {s32}\n",
        "05".repeat(48)
    ))
}

pub fn records(data: &[u8]) {
    let Some((&first, mut rest)) = data.split_first() else {
        return;
    };
    let cfg = Config {
        wait_for_keys: first & 8 != 0,
        max_held_bytes_per_dir: 4096,
        ..Config::default()
    };
    let mut l = TlsLayer::new(Tls::new(cfg, keys()), Count::default());
    l.open(&ConnMeta {
        id: ConnId(0),
        first_src: "127.0.0.1:40000".parse().unwrap(),
        first_dst: "127.0.0.1:443".parse().unwrap(),
        syn_sender: (first & 1 == 1).then_some(Dir::Fwd),
        start: 0,
        resumes: None,
    });
    let mut index = [0u64, 0];
    let mut ts = 1;
    let mut given = 0u64;
    let mut feed = |l: &mut TlsLayer<Count>, dir: Dir, bytes: &[u8], ts: Nanos| {
        let d = (dir == Dir::Rev) as usize;
        let w = Write {
            index: index[d],
            ts,
            len: bytes.len() as u32,
        };
        index[d] += 1;
        given += bytes.len() as u64;
        l.write(ConnId(0), dir, &w);
        l.data(ConnId(0), dir, &w, bytes);
    };
    if first & 2 != 0 {
        feed(&mut l, Dir::Fwd, &client_hello(), 0);
        feed(&mut l, Dir::Rev, &server_hello(first & 4 != 0), 0);
    }
    while rest.len() >= 3 {
        let (op, len) = (rest[0], u16::from_be_bytes([rest[1], rest[2]]) as usize);
        rest = &rest[3..];
        let dir = if op & 1 == 0 { Dir::Fwd } else { Dir::Rev };
        ts += 1_000_000_000;
        match op >> 1 & 3 {
            0 | 1 => {
                let n = len.min(rest.len());
                feed(&mut l, dir, &rest[..n], ts);
                rest = &rest[n..];
            }
            2 => l.gap(ConnId(0), dir, ts, len as u64),
            _ => {
                if op & 0x80 != 0 {
                    l.tls.layer(&mut l.inner).add_keys("CLIENT_RANDOM 00 11\n");
                }
            }
        }
        let _ = l.tls.take_warnings().count();
    }
    l.close(ConnId(0), ts + 1, CloseKind::EndOfCapture);
    let report = l.tls.report();
    let _ = l.tls.take_warnings().count();
    // Plaintext is never more than the ciphertext it came from.
    assert!(l.inner.data <= given);
    assert_eq!(report.records, l.inner.records);
    assert!(!l.tls.waiting_for_keys());
}

pub fn handshake(data: &[u8]) {
    let _ = wire::client_hello(data);
    let _ = wire::server_hello(data);
    let _ = wire::encrypted_extensions_alpn(data);
    let _ = wire::record_chain(data);
    let _ = wire::RecordHeader::parse(data).map(|h| h.plausible());
    let mut r = HandshakeReader::default();
    for piece in data.chunks(7) {
        r.feed(piece, |m| {
            let _ = (m.kind, m.body.len());
        });
    }
    let text = String::from_utf8_lossy(data);
    let mut k = KeyLog::new();
    k.add_text(&text);
    k.finish_text();
}
