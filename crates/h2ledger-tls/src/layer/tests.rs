//! The layer driven as a `Sink` with hand-made records: pass-through, no key, one data call
//! per segment, held records bounded over all connections, mid-stream captures, bad headers.

use h2ledger_tcp::{CloseKind, ConnId, ConnMeta, Dir, Nanos, Sink, Write};

use super::{Config, Tls, TlsLayer};
use crate::{crypto, wire, KeyLog};

#[derive(Default)]
struct Rec {
    data: Vec<(Dir, u64, Vec<u8>)>,
    records: u64,
}

impl Sink for Rec {
    fn open(&mut self, _meta: &ConnMeta) {}
    fn write(&mut self, _conn: ConnId, _dir: Dir, _w: &Write) {}
    fn data(&mut self, _conn: ConnId, dir: Dir, w: &Write, bytes: &[u8]) {
        self.data.push((dir, w.index, bytes.to_vec()));
    }
    fn gap(&mut self, _conn: ConnId, _dir: Dir, _ts: Nanos, _len: u64) {}
    fn close(&mut self, _conn: ConnId, _ts: Nanos, _kind: CloseKind) {}
    fn tls_record(&mut self, _conn: ConnId, _dir: Dir, _w: &Write) {
        self.records += 1;
    }
}

fn meta(syn: bool) -> ConnMeta {
    ConnMeta {
        id: ConnId(0),
        first_src: "127.0.0.1:40000".parse().unwrap(),
        first_dst: "127.0.0.1:443".parse().unwrap(),
        syn_sender: syn.then_some(Dir::Fwd),
        start: 0,
        resumes: None,
    }
}

fn w(i: u64) -> Write {
    Write {
        index: i,
        ts: i as i64,
        len: 0,
    }
}

#[test]
fn cleartext_passes_through_unchanged() {
    let mut l = TlsLayer::new(Tls::new(Config::default(), KeyLog::new()), Rec::default());
    l.open(&meta(true));
    l.data(ConnId(0), Dir::Fwd, &w(0), b"P");
    l.data(ConnId(0), Dir::Fwd, &w(1), b"RI * HTTP/2.0");
    l.data(ConnId(0), Dir::Rev, &w(0), &[0, 0, 0, 4, 0, 0, 0, 0, 0]);
    l.close(ConnId(0), 5, CloseKind::EndOfCapture);
    let got: Vec<u8> = l
        .inner
        .data
        .iter()
        .filter(|d| d.0 == Dir::Fwd)
        .flat_map(|d| d.2.clone())
        .collect();
    assert_eq!(got, b"PRI * HTTP/2.0");
    assert_eq!(l.tls.report().connections, 0);
}

#[test]
fn no_key_is_one_warning_with_the_client_random() {
    // A ClientHello with ALPN h2, then a TLS 1.3 ServerHello, then application data.
    let (ch, sh, _, _) = tls13_hellos();
    let mut l = TlsLayer::new(Tls::new(Config::default(), KeyLog::new()), Rec::default());
    l.open(&meta(true));
    l.data(ConnId(0), Dir::Fwd, &w(0), &ch);
    l.data(ConnId(0), Dir::Rev, &w(0), &sh);
    l.data(ConnId(0), Dir::Rev, &w(1), &[23, 3, 3, 0, 20]);
    l.data(ConnId(0), Dir::Rev, &w(2), &[0; 20]);
    l.close(ConnId(0), 5, CloseKind::EndOfCapture);
    let r = l.tls.report();
    assert_eq!((r.connections, r.without_key, r.records), (1, 1, 3));
    assert_eq!(l.inner.records, 3);
    let c = &r.per_connection[0];
    assert_eq!(c.version, Some("TLS 1.3"));
    assert_eq!(c.cipher.as_deref(), Some("TLS_AES_128_GCM_SHA256"));
    assert_eq!(c.records, [1, 2]);
    assert_eq!(c.encrypted_bytes, [0, 20]);
    let warns: Vec<_> = l.tls.take_warnings().collect();
    assert_eq!(warns.len(), 1, "{warns:?}");
    assert_eq!(warns[0].0, "tls-no-key");
    assert!(warns[0].1.contains(&"5a".repeat(32)) || warns[0].1.contains("no key log"));
    assert!(warns[0].1.contains("SSLKEYLOGFILE"), "{}", warns[0].1);
    assert!(l.inner.data.is_empty());
}

/// A TLS 1.3 hello pair (ALPN h2, TLS_AES_128_GCM_SHA256) and a key log with the
/// application secrets only (so they are tried on the first protected records), and the
/// server's secret.
fn tls13_hellos() -> (Vec<u8>, Vec<u8>, KeyLog, Vec<u8>) {
    let mut ch_body = vec![3, 3];
    ch_body.extend([0x5a; 32]);
    ch_body.extend([0, 0, 2, 0x13, 0x01, 1, 0]);
    ch_body.extend([0, 9, 0, 16, 0, 5, 0, 3, 2, b'h', b'2']);
    let mut sh_body = vec![3, 3];
    sh_body.extend([0x11; 32]);
    sh_body.extend([0, 0x13, 0x01, 0]);
    sh_body.extend([0, 6, 0, 43, 0, 2, 3, 4]);
    let rec = |hs: u8, body: &[u8]| {
        let mut m = vec![hs, 0, 0, body.len() as u8];
        m.extend(body);
        let mut r = vec![22, 3, 3, 0, m.len() as u8];
        r.extend(m);
        r
    };
    let secret = vec![0x77u8; 32];
    let keys = KeyLog::parse(&format!(
        "CLIENT_TRAFFIC_SECRET_0 {r} {}\nSERVER_TRAFFIC_SECRET_0 {r} {}\n",
        "66".repeat(32),
        "77".repeat(32),
        r = "5a".repeat(32),
    ));
    (rec(1, &ch_body), rec(2, &sh_body), keys, secret)
}

/// Application data records sealed with `secret` (TLS 1.3, AES-128-GCM), from sequence 0.
fn sealed(secret: &[u8], payloads: &[&[u8]]) -> Vec<Vec<u8>> {
    use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM};
    let h = crypto::Hash::Sha256;
    let key = crypto::expand_label(h, secret, b"key", 16).unwrap();
    let iv = crypto::expand_label(h, secret, b"iv", 12).unwrap();
    let key = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &key).unwrap());
    payloads
        .iter()
        .enumerate()
        .map(|(seq, p)| {
            let mut inner = p.to_vec();
            inner.push(wire::APPLICATION_DATA);
            let len = inner.len() + crypto::TAG_LEN;
            let header = [23, 3, 3, (len >> 8) as u8, len as u8];
            let mut nonce: [u8; 12] = iv.clone().try_into().unwrap();
            for (n, s) in nonce[4..].iter_mut().zip((seq as u64).to_be_bytes()) {
                *n ^= s;
            }
            key.seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(header),
                &mut inner,
            )
            .unwrap();
            let mut r = header.to_vec();
            r.extend(inner);
            r
        })
        .collect()
}

/// The records one segment completes reach the ledger in one `data` call, tagged with that
/// segment, as its bytes would on cleartext; a record split over two segments goes with
/// the second.
#[test]
fn one_data_call_per_segment_with_the_plaintext_of_its_records() {
    let (ch, sh, keys, secret) = tls13_hellos();
    let mut l = TlsLayer::new(Tls::new(Config::default(), keys), Rec::default());
    l.open(&meta(true));
    l.data(ConnId(0), Dir::Fwd, &w(0), &ch);
    l.data(ConnId(0), Dir::Rev, &w(1), &sh);
    let r = sealed(&secret, &[b"abc", b"", b"defg", b"hi", b"jklmn"]);
    let mut seg = r[0].clone();
    seg.extend(&r[1]);
    seg.extend(&r[2]);
    seg.extend(&r[3][..4]);
    l.data(ConnId(0), Dir::Rev, &w(2), &seg);
    let mut seg = r[3][4..].to_vec();
    seg.extend(&r[4]);
    l.data(ConnId(0), Dir::Rev, &w(3), &seg);
    l.close(ConnId(0), 5, CloseKind::EndOfCapture);
    let got: Vec<(u64, &[u8])> = l
        .inner
        .data
        .iter()
        .map(|(_, i, b)| (*i, b.as_slice()))
        .collect();
    assert_eq!(got, [(2, &b"abcdefg"[..]), (3, &b"hijklmn"[..])]);
    assert_eq!(l.inner.records, 2 + 5);
    let rep = l.tls.report();
    assert_eq!(rep.decrypted, 1, "{rep:?}");
    assert_eq!(rep.per_connection[0].plaintext_bytes, [0, 14]);
}

/// Records held before the ServerHello are bounded over all connections together, not
/// only per direction: the connection that would pass the total gives up.
#[test]
fn held_records_are_bounded_over_all_connections() {
    let (ch, _, keys, _) = tls13_hellos();
    let cfg = Config {
        max_held_bytes_total: 100,
        ..Config::default()
    };
    let mut l = TlsLayer::new(Tls::new(cfg, keys), Rec::default());
    let mut record = vec![23, 3, 3, 0, 40];
    record.extend([9; 40]);
    for id in 0..2 {
        let mut m = meta(true);
        m.id = ConnId(id);
        m.first_src.set_port(40000 + id as u16);
        l.open(&m);
        l.data(ConnId(id), Dir::Fwd, &w(0), &ch);
        l.data(ConnId(id), Dir::Fwd, &w(1), &record);
    }
    assert_eq!(l.tls.held_total, 90);
    assert_eq!(l.tls.report().held_limit_hits, 0);
    l.data(ConnId(1), Dir::Fwd, &w(2), &record);
    assert_eq!(l.tls.report().held_limit_hits, 1);
    assert_eq!(
        l.tls.held_total, 45,
        "connection 1's held records are dropped"
    );
    let warns: Vec<_> = l.tls.take_warnings().collect();
    assert_eq!(warns[0].0, "tls-held-limit");
    assert!(
        warns[0].1.contains("all connections together"),
        "{}",
        warns[0].1
    );
    l.close(ConnId(0), 5, CloseKind::EndOfCapture);
    l.close(ConnId(1), 5, CloseKind::EndOfCapture);
    assert_eq!(l.tls.held_total, 0);
    assert!(l.inner.data.is_empty());
}

#[test]
fn capture_after_the_handshake_says_so() {
    let mut l = TlsLayer::new(Tls::new(Config::default(), KeyLog::new()), Rec::default());
    l.open(&meta(false));
    let mut b = vec![23, 3, 3, 0, 3, 1, 2, 3];
    b.extend([23, 3, 3, 0, 1, 9]);
    l.data(ConnId(0), Dir::Fwd, &w(0), &b);
    l.close(ConnId(0), 5, CloseKind::EndOfCapture);
    let r = l.tls.report();
    assert_eq!((r.connections, r.no_handshake, r.records), (1, 1, 2));
    let warns: Vec<_> = l.tls.take_warnings().collect();
    assert_eq!(warns[0].0, "tls-no-handshake");
}

#[test]
fn a_bad_record_header_stops_the_direction() {
    let mut l = TlsLayer::new(Tls::new(Config::default(), KeyLog::new()), Rec::default());
    l.open(&meta(true));
    l.data(ConnId(0), Dir::Fwd, &w(0), &[22, 3, 1, 0, 0]);
    l.data(ConnId(0), Dir::Fwd, &w(1), &[99, 99, 99, 99, 99, 1, 2, 3]);
    l.data(ConnId(0), Dir::Fwd, &w(2), &[1; 100]);
    l.close(ConnId(0), 5, CloseKind::EndOfCapture);
    let kinds: Vec<_> = l.tls.take_warnings().map(|w| w.0).collect();
    assert!(kinds.contains(&"tls-bad-record"), "{kinds:?}");
    assert!(kinds.contains(&"tls-truncated-handshake"), "{kinds:?}");
}

/// `Status::name` is the name the JSON gives each status.
#[test]
fn status_names_are_the_json_ones() {
    use super::Status;
    for s in [
        Status::Decrypted,
        Status::NoKey,
        Status::NotH2,
        Status::NoHandshake,
        Status::TruncatedHandshake,
        Status::Unsupported,
        Status::AuthFailed,
    ] {
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(json, format!("\"{}\"", s.name()));
    }
}
