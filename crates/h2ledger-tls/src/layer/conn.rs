//! What the layer keeps per connection and per direction: whether the connection is TLS,
//! what its hellos said, its key state, and per direction the record being framed, the
//! handshake being read, the decryptor, the state, the held records and the counts. Data and
//! small accessors only; the jobs that change it are the modules above this one.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use h2ledger_tcp::{ConnMeta, Dir, Write};

use super::framing::Framer;
use super::state::{KeyEvent, Keys, State};
use crate::crypto::{Decryptor, Suite};
use crate::wire::{self, HandshakeReader};
use h2ledger_tcp::Dirs;

/// One TCP connection.
pub(crate) struct Conn {
    pub(crate) meta: ConnMeta,
    pub(crate) mode: Mode,
}

/// Whether a connection is TLS.
pub(crate) enum Mode {
    /// No direction has shown the 3 bytes that tell yet.
    Undecided {
        /// The first bytes of each direction (at most 2).
        first: Dirs<Vec<u8>>,
        /// A gap came before the first byte was seen.
        lost_start: bool,
    },
    /// Not TLS: every call passes through.
    Plain,
    /// TLS.
    Tls(Box<TlsConn>),
}

impl Conn {
    /// A connection that just opened.
    pub(crate) fn new(meta: &ConnMeta) -> Conn {
        Conn {
            meta: meta.clone(),
            mode: Mode::Undecided {
                first: Dirs::default(),
                lost_start: false,
            },
        }
    }

    /// Its TLS state, if it is TLS.
    #[inline]
    pub(crate) fn tls(&self) -> Option<&TlsConn> {
        match &self.mode {
            Mode::Tls(t) => Some(t),
            _ => None,
        }
    }

    /// Its TLS state, if it is TLS.
    #[inline]
    pub(crate) fn tls_mut(&mut self) -> Option<&mut TlsConn> {
        match &mut self.mode {
            Mode::Tls(t) => Some(t),
            _ => None,
        }
    }
}

/// "connection N client -> server" (the first packet's sender is the client until a
/// ClientHello says otherwise), for warnings.
pub(crate) fn label(meta: &ConnMeta, client: Option<Dir>) -> String {
    let (c, s) = match client {
        Some(Dir::Rev) => (meta.first_dst, meta.first_src),
        _ => (meta.first_src, meta.first_dst),
    };
    format!("connection {} {c} -> {s}", meta.id.0)
}

/// A TLS connection.
#[derive(Default)]
pub(crate) struct TlsConn {
    /// The sender of the ClientHello.
    pub(crate) client: Option<Dir>,
    pub(crate) client_random: Option<[u8; 32]>,
    pub(crate) alpn_offered: Vec<Vec<u8>>,
    pub(crate) sh: Option<wire::ServerHello>,
    pub(crate) suite: Option<&'static Suite>,
    /// ALPN chosen by the server: `Some(None)` = the server's hello said nothing.
    pub(crate) alpn: Option<Option<Vec<u8>>>,
    pub(crate) keys: Keys,
    /// The ServerHello chose a version or suite this crate does not decrypt.
    pub(crate) unsupported: bool,
    /// Found in records after the handshake: there is no client random to look a key up by.
    pub(crate) mid_stream: bool,
    pub(crate) decrypted_any: bool,
    pub(crate) auth_failures: u64,
    pub(crate) key_updates: u64,
    pub(crate) dirs: Dirs<Direction>,
}

impl TlsConn {
    /// A connection [`detect`](super::detect::detect) found.
    pub(crate) fn new(mid_stream: bool) -> TlsConn {
        TlsConn {
            mid_stream,
            ..TlsConn::default()
        }
    }

    /// Whether the ServerHello chose TLS 1.3 (`None`: no ServerHello yet).
    #[inline]
    pub(crate) fn tls13(&self) -> Option<bool> {
        self.sh.as_ref().map(|s| s.version == 0x0304)
    }

    /// Tells the key state what happened, keeping `waiting` (the count of connections that
    /// wait for keys) right.
    pub(crate) fn key_event(&mut self, ev: KeyEvent, waiting: &mut usize) {
        let was = self.keys.waiting_since().is_some();
        self.keys.on(ev);
        match (was, self.keys.waiting_since().is_some()) {
            (false, true) => *waiting += 1,
            (true, false) => *waiting -= 1,
            _ => {}
        }
    }

    /// Whether decrypted application data goes to the ledger: ALPN `h2` chosen, or not known
    /// and offered (the ledger still looks for HTTP/2 itself).
    #[inline]
    pub(crate) fn forward(&self) -> bool {
        match &self.alpn {
            Some(Some(p)) => p == b"h2",
            Some(None) => false,
            None => self.alpn_offered.iter().any(|p| p == b"h2"),
        }
    }

    /// "client" or "server": who sends on `dir`.
    pub(crate) fn who(&self, dir: Dir) -> &'static str {
        if self.client == Some(dir) {
            "client"
        } else {
            "server"
        }
    }
}

/// One direction of a TLS connection.
#[derive(Default)]
pub(crate) struct Direction {
    pub(crate) framer: Framer,
    pub(crate) hs: HandshakeReader,
    /// The key its next protected record is under, once known.
    pub(crate) dec: Option<Decryptor>,
    pub(crate) state: State,
    /// TLS 1.3: the current application traffic secret (for KeyUpdate).
    pub(crate) secret: Option<Vec<u8>>,
    pub(crate) held: Held,
    pub(crate) records: u64,
    pub(crate) plaintext: u64,
    pub(crate) encrypted: u64,
}

/// Whole records (header included) kept until their keys are known, in order, with the write
/// that completed each.
#[derive(Default)]
pub(crate) struct Held {
    records: VecDeque<(Write, Vec<u8>)>,
    bytes: usize,
}

impl Held {
    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Keeps a record at the end.
    pub(crate) fn push(&mut self, w: Write, rec: &[u8]) {
        self.bytes += rec.len();
        self.records.push_back((w, rec.to_vec()));
    }

    /// Takes every record out (to process them again) and the bytes they held.
    pub(crate) fn take(&mut self) -> (VecDeque<(Write, Vec<u8>)>, usize) {
        (
            std::mem::take(&mut self.records),
            std::mem::take(&mut self.bytes),
        )
    }

    /// Drops every record: the payload bytes dropped (headers not counted) and the bytes
    /// they held.
    pub(crate) fn drop_all(&mut self) -> (usize, usize) {
        let payload = self
            .records
            .drain(..)
            .map(|(_, r)| r.len() - wire::RECORD_HEADER_LEN)
            .sum();
        (payload, std::mem::take(&mut self.bytes))
    }
}

/// Every open connection, by id. Boxed: a map of 144-byte values reserves that much for
/// every empty bucket too (4,096 open connections took 1.25 MB, 0.85 MB boxed; decision 458).
#[derive(Default)]
pub(crate) struct Conns(HashMap<u32, Box<Conn>, BuildHasherDefault<IdHasher>>);

impl Conns {
    #[inline]
    pub(crate) fn get_mut(&mut self, id: u32) -> Option<&mut Conn> {
        self.0.get_mut(&id).map(|c| &mut **c)
    }

    /// The TLS state of connection `id`, if it is open and TLS.
    #[inline]
    pub(crate) fn tls_mut(&mut self, id: u32) -> Option<&mut TlsConn> {
        self.0.get_mut(&id).and_then(|c| c.tls_mut())
    }

    pub(crate) fn contains(&self, id: u32) -> bool {
        self.0.contains_key(&id)
    }

    pub(crate) fn insert(&mut self, id: u32, c: Conn) {
        self.0.insert(id, Box::new(c));
    }

    pub(crate) fn remove(&mut self, id: u32) -> Option<Conn> {
        self.0.remove(&id).map(|c| *c)
    }

    /// The TLS connections that wait for keys.
    pub(crate) fn waiting(&self) -> Vec<u32> {
        self.0
            .iter()
            .filter(|(_, c)| c.tls().is_some_and(|t| t.keys.waiting_since().is_some()))
            .map(|(k, _)| *k)
            .collect()
    }

    /// The [`label`] of open TLS connection `id`.
    pub(crate) fn label(&self, id: u32) -> String {
        let c = &self.0[&id];
        label(&c.meta, c.tls().and_then(|t| t.client))
    }
}

/// Connection ids are small dense integers chosen by reassembly, not by the wire: a
/// multiplicative hash is enough (every cleartext `data` call looks its connection up).
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}
