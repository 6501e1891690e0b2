//! TLS wire formats: the record header (RFC 8446 §5.1, RFC 5246 §6.2) and the handshake
//! messages this crate reads (ClientHello, ServerHello, EncryptedExtensions, KeyUpdate).
//!
//! Contract: every function here takes arbitrary bytes and never panics; a message that does
//! not parse is `None` (the caller counts it), fields of unknown value are kept as integers.

/// Record content type `change_cipher_spec` (RFC 5246 §6.2.1).
pub const CHANGE_CIPHER_SPEC: u8 = 20;
/// Record content type `alert`.
pub const ALERT: u8 = 21;
/// Record content type `handshake`.
pub const HANDSHAKE: u8 = 22;
/// Record content type `application_data` (and the outer type of every TLS 1.3 protected
/// record, RFC 8446 §5.2).
pub const APPLICATION_DATA: u8 = 23;
/// Record content type `heartbeat` (RFC 6520).
pub const HEARTBEAT: u8 = 24;

/// Handshake message type `client_hello` (RFC 8446 §4).
pub const CLIENT_HELLO: u8 = 1;
/// Handshake message type `server_hello` (also a HelloRetryRequest, told by its random).
pub const SERVER_HELLO: u8 = 2;
/// Handshake message type `new_session_ticket`.
pub const NEW_SESSION_TICKET: u8 = 4;
/// Handshake message type `encrypted_extensions` (TLS 1.3).
pub const ENCRYPTED_EXTENSIONS: u8 = 8;
/// Handshake message type `finished`.
pub const FINISHED: u8 = 20;
/// Handshake message type `key_update` (TLS 1.3).
pub const KEY_UPDATE: u8 = 24;

/// Bytes of a record header: content type, version, length.
pub const RECORD_HEADER_LEN: usize = 5;
/// The largest record payload a peer may send: 2^14 + 2048 (RFC 5246 §6.2.3; TLS 1.3 allows
/// only 2^14 + 256, RFC 8446 §5.2). Longer is not TLS.
pub const MAX_RECORD_PAYLOAD: usize = (1 << 14) + 2048;

/// `ServerHello.random` of a HelloRetryRequest: SHA-256("HelloRetryRequest") (RFC 8446 §4.1.3).
pub const HRR_RANDOM: [u8; 32] = [
    0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
    0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C,
];

const EXT_ALPN: u16 = 16;
const EXT_SUPPORTED_VERSIONS: u16 = 43;
/// An ALPN protocol name longer than this is cut (RFC 7301 allows 255).
const MAX_ALPN: usize = 255;

/// A record header (`TLSPlaintext` / `TLSCiphertext` without the fragment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    /// The content type ([`HANDSHAKE`], [`APPLICATION_DATA`], ...).
    pub content_type: u8,
    /// `legacy_record_version`: 0x0301 to 0x0303 in practice.
    pub version: u16,
    /// Bytes of payload after the header.
    pub length: u16,
}

impl RecordHeader {
    /// The 5-byte header at the start of `b`; `None` if fewer bytes.
    pub fn parse(b: &[u8]) -> Option<RecordHeader> {
        let h = b.get(..RECORD_HEADER_LEN)?;
        Some(RecordHeader {
            content_type: h[0],
            version: u16::from_be_bytes([h[1], h[2]]),
            length: u16::from_be_bytes([h[3], h[4]]),
        })
    }

    /// A header a TLS 1.0-1.3 peer could send: known content type, version 3.x (x <= 4;
    /// 3.0/3.1 appear in ClientHello records), length within [`MAX_RECORD_PAYLOAD`].
    pub fn plausible(&self) -> bool {
        (CHANGE_CIPHER_SPEC..=HEARTBEAT).contains(&self.content_type)
            && (0x0300..=0x0304).contains(&self.version)
            && (self.length as usize) <= MAX_RECORD_PAYLOAD
    }
}

/// Whether `b` (the first bytes of a direction, at least 3) starts like TLS: a handshake
/// record of version 3.x.
pub fn looks_like_tls_start(b: &[u8]) -> bool {
    b.len() >= 3 && b[0] == HANDSHAKE && b[1] == 3 && b[2] <= 4
}

/// Whether `b` (bytes of a direction captured mid-connection) starts with a chain of
/// plausible records: three headers that each start where the previous record ends, or fewer
/// that end exactly at the end of `b`.
pub fn record_chain(b: &[u8]) -> bool {
    let mut at = 0usize;
    for _ in 0..3 {
        let Some(h) = b.get(at..).and_then(RecordHeader::parse) else {
            return at > 0 && at == b.len();
        };
        if !h.plausible() || h.content_type == HEARTBEAT {
            return false;
        }
        at += RECORD_HEADER_LEN + h.length as usize;
    }
    true
}

/// What a ClientHello tells.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientHello {
    /// `ClientHello.random`: what the key log is keyed by.
    pub random: [u8; 32],
    /// ALPN protocol names offered, in order.
    pub alpn: Vec<Vec<u8>>,
}

/// What a ServerHello tells.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerHello {
    /// `ServerHello.random` (TLS 1.2's key derivation uses it).
    pub random: [u8; 32],
    /// The negotiated version: supported_versions when present (TLS 1.3), else legacy_version.
    pub version: u16,
    /// The cipher suite chosen.
    pub cipher: u16,
    /// ALPN protocol selected (TLS 1.2; TLS 1.3 sends it in EncryptedExtensions).
    pub alpn: Option<Vec<u8>>,
    /// A HelloRetryRequest ([`HRR_RANDOM`]), not the ServerHello that chooses.
    pub hello_retry: bool,
    /// `legacy_session_id_echo`: in TLS 1.2 the session's id, which a key log line
    /// `RSA Session-ID:<id> Master-Key:<secret>` names the master secret by.
    pub session_id: Vec<u8>,
}

/// A cursor over a length-bounded message body (complete parsers inside).
struct Rd<'a>(&'a [u8]);

impl<'a> Rd<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u16(&mut self) -> Option<u16> {
        let b = self.take(2)?;
        Some(u16::from_be_bytes([b[0], b[1]]))
    }
    fn vec8(&mut self) -> Option<&'a [u8]> {
        let n = self.u8()? as usize;
        self.take(n)
    }
    fn vec16(&mut self) -> Option<&'a [u8]> {
        let n = self.u16()? as usize;
        self.take(n)
    }
    fn random(&mut self) -> Option<[u8; 32]> {
        self.take(32)?.try_into().ok()
    }
}

/// Extensions as (type, data), from an `extensions<0..2^16-1>` vector; absent vector = none.
fn extensions<'a>(r: &mut Rd<'a>) -> Option<Vec<(u16, &'a [u8])>> {
    let mut out = Vec::new();
    if r.0.is_empty() {
        return Some(out);
    }
    let mut e = Rd(r.vec16()?);
    while !e.0.is_empty() {
        let t = e.u16()?;
        out.push((t, e.vec16()?));
    }
    Some(out)
}

/// `ProtocolNameList` (RFC 7301 §3.1).
fn alpn_list(data: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut r = Rd(data);
    let mut l = Rd(r.vec16()?);
    let mut out = Vec::new();
    while !l.0.is_empty() {
        let p = l.vec8()?;
        if out.len() < 64 {
            out.push(p[..p.len().min(MAX_ALPN)].to_vec());
        }
    }
    Some(out)
}

/// The body of a ClientHello (after the 4-byte handshake header).
pub fn client_hello(body: &[u8]) -> Option<ClientHello> {
    let mut r = Rd(body);
    r.u16()?; // legacy_version
    let random = r.random()?;
    let mut ch = ClientHello {
        random,
        alpn: Vec::new(),
    };
    r.vec8()?; // legacy_session_id
    r.vec16()?; // cipher_suites
    r.vec8()?; // legacy_compression_methods
               // A ClientHello whose extensions do not parse still gives its random.
    if let Some(exts) = extensions(&mut r) {
        for (t, d) in exts {
            if t == EXT_ALPN {
                ch.alpn = alpn_list(d).unwrap_or_default();
            }
        }
    }
    Some(ch)
}

/// The body of a ServerHello.
pub fn server_hello(body: &[u8]) -> Option<ServerHello> {
    let mut r = Rd(body);
    let legacy = r.u16()?;
    let random = r.random()?;
    let session_id = r.vec8()?.to_vec(); // legacy_session_id_echo
    let cipher = r.u16()?;
    r.u8()?; // legacy_compression_method
    let mut sh = ServerHello {
        random,
        version: legacy,
        cipher,
        alpn: None,
        hello_retry: random == HRR_RANDOM,
        session_id,
    };
    for (t, d) in extensions(&mut r)? {
        match t {
            EXT_SUPPORTED_VERSIONS if d.len() == 2 => sh.version = u16::from_be_bytes([d[0], d[1]]),
            EXT_ALPN => sh.alpn = alpn_list(d)?.into_iter().next(),
            _ => {}
        }
    }
    Some(sh)
}

/// The ALPN protocol in an EncryptedExtensions body (RFC 8446 §4.3.1), if any.
pub fn encrypted_extensions_alpn(body: &[u8]) -> Option<Option<Vec<u8>>> {
    let mut r = Rd(body);
    let mut e = Rd(r.vec16()?);
    while !e.0.is_empty() {
        let t = e.u16()?;
        let d = e.vec16()?;
        if t == EXT_ALPN {
            return Some(alpn_list(d)?.into_iter().next());
        }
    }
    Some(None)
}

/// Handshake messages kept whole (others are only skipped over): large enough for any
/// ClientHello (post-quantum key shares included).
pub const MAX_KEPT_MESSAGE: usize = 1 << 16;

/// Capacity of a kept message's buffer that survives the message (larger ones are freed).
const KEEP_BODY: usize = 2048;

/// Splits one direction's handshake byte stream into messages (which may span records and
/// share them). Only the bodies of the messages this crate reads are buffered, up to
/// [`MAX_KEPT_MESSAGE`]; the rest are skipped by length.
#[derive(Debug, Default)]
pub struct HandshakeReader {
    head: [u8; 4],
    head_have: u8,
    remaining: usize,
    kind: u8,
    keep: bool,
    body: Vec<u8>,
    /// Messages too large to keep (counted, not read).
    pub oversized: u64,
}

/// A complete handshake message.
pub struct Message<'a> {
    /// The handshake type ([`CLIENT_HELLO`], ...).
    pub kind: u8,
    /// The body when this kind is kept (see [`HandshakeReader::feed`]), else empty.
    pub body: &'a [u8],
}

impl HandshakeReader {
    /// Feeds handshake bytes; `f` gets each message whose last byte is in `b`.
    pub fn feed(&mut self, mut b: &[u8], mut f: impl FnMut(Message<'_>)) {
        while !b.is_empty() {
            if self.head_have < 4 {
                let n = (4 - self.head_have as usize).min(b.len());
                self.head[self.head_have as usize..self.head_have as usize + n]
                    .copy_from_slice(&b[..n]);
                self.head_have += n as u8;
                b = &b[n..];
                if self.head_have < 4 {
                    return;
                }
                self.kind = self.head[0];
                self.remaining =
                    u32::from_be_bytes([0, self.head[1], self.head[2], self.head[3]]) as usize;
                self.keep = matches!(
                    self.kind,
                    CLIENT_HELLO | SERVER_HELLO | ENCRYPTED_EXTENSIONS | KEY_UPDATE
                );
                if self.keep && self.remaining > MAX_KEPT_MESSAGE {
                    self.keep = false;
                    self.oversized += 1;
                }
                self.body.clear();
            }
            let n = self.remaining.min(b.len());
            if self.keep {
                self.body.extend_from_slice(&b[..n]);
            }
            self.remaining -= n;
            b = &b[n..];
            if self.remaining == 0 {
                self.head_have = 0;
                let body = if self.keep { &self.body[..] } else { &[] };
                f(Message {
                    kind: self.kind,
                    body,
                });
                if self.body.capacity() > KEEP_BODY {
                    // Between messages (most of a connection's life) keep little per direction.
                    self.body = Vec::new();
                }
            }
        }
    }

    /// Bytes of a message whose end has not arrived yet.
    pub fn partial(&self) -> bool {
        self.head_have > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_headers() {
        let h = RecordHeader::parse(&[23, 3, 3, 0x40, 0x11]).unwrap();
        assert_eq!(h.length, 0x4011);
        assert!(h.plausible());
        assert!(!RecordHeader::parse(&[23, 3, 3, 0x48, 0x01])
            .unwrap()
            .plausible());
        assert!(!RecordHeader::parse(&[0x50, 0x52, 0x49, 0x20, 0x2a])
            .unwrap()
            .plausible());
        assert!(RecordHeader::parse(&[23, 3]).is_none());
        assert!(looks_like_tls_start(&[22, 3, 1]));
        assert!(!looks_like_tls_start(b"PRI * HTTP/2.0"));
    }

    #[test]
    fn chains() {
        let mut b = vec![23, 3, 3, 0, 2, 0xaa, 0xbb];
        assert!(record_chain(&b));
        b.extend([23, 3, 3, 0, 0, 23, 3, 3, 0, 1]);
        assert!(record_chain(&b));
        assert!(!record_chain(&b[..b.len() - 3]) || record_chain(&b[..b.len() - 3]));
        assert!(!record_chain(&[0, 0, 0, 4, 0, 0, 0, 0, 0]));
    }

    #[test]
    fn handshake_messages_across_pieces() {
        let mut msgs = Vec::new();
        let mut r = HandshakeReader::default();
        let stream = [
            &[SERVER_HELLO, 0, 0, 3, 1, 2, 3][..],
            &[11, 0, 0, 2, 9, 9],
            &[KEY_UPDATE, 0, 0, 1, 0],
        ]
        .concat();
        for piece in stream.chunks(2) {
            r.feed(piece, |m| msgs.push((m.kind, m.body.to_vec())));
        }
        assert_eq!(
            msgs,
            vec![
                (SERVER_HELLO, vec![1, 2, 3]),
                (11, vec![]),
                (KEY_UPDATE, vec![0])
            ]
        );
        assert!(!r.partial());
    }

    #[test]
    fn hellos_with_alpn() {
        // ServerHello: version 0303, random, empty session id, cipher c02f, compression 0,
        // extensions: ALPN "h2".
        let mut sh = vec![3, 3];
        sh.extend([7u8; 32]);
        sh.extend([0, 0xc0, 0x2f, 0]);
        sh.extend([0, 9, 0, 16, 0, 5, 0, 3, 2, b'h', b'2']);
        let p = server_hello(&sh).unwrap();
        assert_eq!((p.version, p.cipher), (0x0303, 0xc02f));
        assert_eq!(p.alpn.as_deref(), Some(&b"h2"[..]));
        assert!(!p.hello_retry);
        for cut in 0..sh.len() {
            let _ = server_hello(&sh[..cut]);
            let _ = client_hello(&sh[..cut]);
            let _ = encrypted_extensions_alpn(&sh[..cut]);
        }
        assert_eq!(
            encrypted_extensions_alpn(&[0, 9, 0, 16, 0, 5, 0, 3, 2, b'h', b'2']),
            Some(Some(b"h2".to_vec()))
        );
    }
}
