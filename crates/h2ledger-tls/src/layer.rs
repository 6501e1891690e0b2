//! The layer between TCP reassembly and the ledger: finds TLS connections, splits each
//! direction into records, reads the handshake, derives keys from the key log and forwards the
//! decrypted application data of `h2` connections to the inner [`Sink`].

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use h2ledger_tcp::{CloseKind, ConnId, ConnMeta, Dir, Nanos, Sink, Write};
use serde::Serialize;

use crate::crypto::{self, Decryptor, Suite};
use crate::keylog::{to_hex, KeyLog, KeyLogStats, Secrets};
use crate::wire::{self, HandshakeReader, RecordHeader, RECORD_HEADER_LEN};

/// How to make an application write a key log; part of every no-key warning.
pub const KEYLOG_HOWTO: &str = "pass --keylog FILE, written by the application: \
SSLKEYLOGFILE=FILE for curl, OpenSSL, NSS (Firefox, Chrome) and rustls' KeyLogFile, \
tls.Config.KeyLogWriter in Go, SSLContext.keylog_filename in Python";

/// Capacity of a direction's record buffer kept after a record that spanned segments.
const KEEP_RECORD_BUF: usize = 2048;

/// Capacity of the pending-plaintext buffer kept between calls; a larger one (a big
/// segment's records) is freed after use.
const OUT_KEEP: usize = 1 << 17;

/// Memory bounds and live behaviour (docs/ledger.md, "Memory bounds").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Whole records held per direction while their keys are unknown (the ServerHello not
    /// seen yet, or, when `wait_for_keys`, a key log that has not caught up). Beyond this the
    /// held records are dropped as undecrypted and the direction is given up (counted).
    pub max_held_bytes_per_dir: usize,
    /// The same, over all connections together: a direction that would hold more gives up
    /// the same way. Without it, `max_connections` open connections could each hold the
    /// per-direction bound.
    pub max_held_bytes_total: usize,
    /// Live capture: the key log grows while we watch. A connection whose client random has
    /// no key yet holds its records until the key arrives ([`Layer::add_keys`]) or
    /// `key_wait` of capture time passes. Replay: `false`, a missing key is final at once.
    pub wait_for_keys: bool,
    pub key_wait: Nanos,
    /// Per-connection summaries kept for the report; later connections only count in totals.
    /// The default is the ledger's own list (`h2ledger_core::tally::MAX_CONN_DETAIL`).
    pub max_conn_reports: usize,
    /// Warnings waiting for [`Tls::take_warnings`]; later ones are only counted.
    pub max_pending_warnings: usize,
    /// Live secrets come from these processes (h2ledger's `--keys-from`, e.g. `pid 1234
    /// (server)`), attached before the capture began: the no-key and no-handshake warnings
    /// say so instead of asking for a key log.
    pub keys_from: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_held_bytes_per_dir: 1 << 20,
            max_held_bytes_total: 16 << 20,
            wait_for_keys: false,
            key_wait: 10_000_000_000,
            max_conn_reports: 1_000,
            max_pending_warnings: 10_000,
            keys_from: None,
        }
    }
}

/// What became of one TLS connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Application data decrypted and handed to the ledger.
    Decrypted,
    /// The key log has no (usable) secret for this connection's client random.
    NoKey,
    /// ALPN chose something other than `h2` (or nothing): counted as TLS, not given to the ledger.
    NotH2,
    /// The capture began after the handshake: there is no client random to look a key up by.
    NoHandshake,
    /// The handshake was cut short (ClientHello or ServerHello never complete).
    TruncatedHandshake,
    /// A version or cipher suite this crate does not decrypt.
    Unsupported,
    /// Every decryption attempt failed authentication.
    AuthFailed,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Decrypted => "decrypted",
            Status::NoKey => "no-key",
            Status::NotH2 => "not-h2",
            Status::NoHandshake => "no-handshake",
            Status::TruncatedHandshake => "truncated-handshake",
            Status::Unsupported => "unsupported",
            Status::AuthFailed => "auth-failed",
        }
    }
}

/// One TLS connection, for the report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ConnReport {
    /// The ALPN protocol the server chose; `None` when not seen.
    pub alpn: Option<String>,
    /// The ALPN protocols the client offered.
    pub alpn_offered: Vec<String>,
    pub auth_failures: u64,
    pub cipher: Option<String>,
    /// The ClientHello's sender and receiver ("ip:port"); the first packet's when no
    /// ClientHello was seen.
    pub client: String,
    pub client_random: Option<String>,
    /// Record bytes per side that could not be decrypted (no key, after a failure or a gap).
    pub encrypted_bytes: [u64; 2],
    pub id: u32,
    pub key_updates: u64,
    /// Application data bytes decrypted per side (client, server).
    pub plaintext_bytes: [u64; 2],
    /// Records per side (client, server).
    pub records: [u64; 2],
    pub server: String,
    pub status: Status,
    pub version: Option<&'static str>,
}

/// Totals over every TLS connection, and the per-connection summaries.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TlsReport {
    pub auth_failed: u64,
    /// Records that failed authentication.
    pub auth_failures: u64,
    /// TCP connections that carried TLS.
    pub connections: u64,
    pub decrypted: u64,
    /// Times a direction's held records hit [`Config::max_held_bytes_per_dir`] or
    /// [`Config::max_held_bytes_total`].
    pub held_limit_hits: u64,
    pub key_updates: u64,
    /// Key log lines read (key lines, skipped lines) and client randoms known.
    pub keylog: KeyLogStats,
    pub keylog_randoms: u64,
    pub no_handshake: u64,
    pub not_h2: u64,
    pub per_connection: Vec<ConnReport>,
    /// Connections beyond [`Config::max_conn_reports`], in the totals only.
    pub per_connection_dropped: u64,
    /// TLS records seen (both sides).
    pub records: u64,
    pub truncated_handshake: u64,
    pub unsupported: u64,
    pub without_key: u64,
}

/// The TLS state of every connection. Use it as a [`Sink`] in front of the ledger with
/// [`Tls::layer`] (borrowing) or [`TlsLayer`] (owning).
pub struct Tls {
    cfg: Config,
    keylog: KeyLog,
    conns: HashMap<u32, Conn, BuildHasherDefault<IdHasher>>,
    report: TlsReport,
    warnings: VecDeque<(&'static str, String)>,
    warnings_dropped: u64,
    /// Connections holding records for a key not in the key log yet.
    waiting: usize,
    /// Bytes held in all connections' directions (see [`Config::max_held_bytes_total`]).
    held_total: usize,
    /// Plaintext of the records one write (TCP segment) completed, decrypted in place here and
    /// handed to the inner sink in one `data` call: the ledger sees a write's bytes at once,
    /// as on cleartext, instead of one call per record. Never holds bytes between two calls
    /// of the layer; at most one data call's records.
    out: Vec<u8>,
    /// Whose bytes `out` holds: connection, direction, write.
    out_to: Option<(u32, Dir, Write)>,
}

/// A [`Sink`] that decrypts in front of `inner`.
pub struct Layer<'a, S: Sink> {
    pub tls: &'a mut Tls,
    pub inner: &'a mut S,
}

/// An owning [`Layer`]: `TlsLayer { tls, inner: ledger }` is itself a [`Sink`].
pub struct TlsLayer<S: Sink> {
    pub tls: Tls,
    pub inner: S,
}

impl<S: Sink> TlsLayer<S> {
    pub fn new(tls: Tls, inner: S) -> Self {
        TlsLayer { tls, inner }
    }
}

impl<S: Sink> Sink for TlsLayer<S> {
    fn open(&mut self, meta: &ConnMeta) {
        self.tls.layer(&mut self.inner).open(meta)
    }
    fn write(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        self.tls.layer(&mut self.inner).write(conn, dir, w)
    }
    fn data(&mut self, conn: ConnId, dir: Dir, w: &Write, bytes: &[u8]) {
        self.tls.layer(&mut self.inner).data(conn, dir, w, bytes)
    }
    fn gap(&mut self, conn: ConnId, dir: Dir, ts: Nanos, len: u64) {
        self.tls.layer(&mut self.inner).gap(conn, dir, ts, len)
    }
    fn close(&mut self, conn: ConnId, ts: Nanos, kind: CloseKind) {
        self.tls.layer(&mut self.inner).close(conn, ts, kind)
    }
}

/// Connection ids are small dense integers chosen by reassembly, not by the wire: a
/// multiplicative hash is enough (every cleartext `data` call looks its connection up).
#[derive(Default)]
struct IdHasher(u64);

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

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// No byte seen yet (or fewer than the 3 that tell).
    Undecided,
    /// Not TLS: every call passes through.
    Plain,
    Tls,
}

struct Conn {
    meta: ConnMeta,
    mode: Mode,
    /// Up to 2 first bytes of a direction, until 3 tell whether it is TLS.
    first: [Vec<u8>; 2],
    /// A gap came before the first byte was seen.
    lost_start: bool,
    t: Option<Box<TlsConn>>,
}

#[derive(Default)]
struct TlsConn {
    /// The sender of the ClientHello.
    client: Option<Dir>,
    client_random: Option<[u8; 32]>,
    alpn_offered: Vec<Vec<u8>>,
    sh: Option<wire::ServerHello>,
    suite: Option<&'static Suite>,
    /// ALPN chosen by the server: `Some(None)` = the server's hello said nothing.
    alpn: Option<Option<Vec<u8>>>,
    secrets: Option<Secrets>,
    /// Looked up and not in the key log (yet).
    key_missing: bool,
    wait_since: Option<Nanos>,
    unsupported: bool,
    mid_stream: bool,
    decrypted_any: bool,
    auth_failures: u64,
    key_updates: u64,
    dirs: [DirT; 2],
}

#[derive(Default)]
struct DirT {
    /// A record being assembled: header and as much of the payload as has arrived.
    buf: Vec<u8>,
    hs: HandshakeReader,
    dec: Option<Decryptor>,
    /// TLS 1.2: a ChangeCipherSpec was seen, later records are protected.
    ccs: bool,
    /// TLS 1.3: on application traffic keys (after this side's Finished).
    app: bool,
    /// TLS 1.3: the current traffic secret (for KeyUpdate).
    secret: Option<Vec<u8>>,
    /// TLS 1.3 without the handshake secret: the application key is tried on each record
    /// until one authenticates.
    trial: bool,
    held: VecDeque<(Write, Vec<u8>)>,
    held_bytes: usize,
    /// Decryption of this direction stopped (why, once warned).
    dead: bool,
    /// Records can no longer be framed (after a gap or a bad header).
    lost: bool,
    records: u64,
    plaintext: u64,
    encrypted: u64,
}

fn di(d: Dir) -> usize {
    match d {
        Dir::Fwd => 0,
        Dir::Rev => 1,
    }
}

fn other(d: Dir) -> Dir {
    match d {
        Dir::Fwd => Dir::Rev,
        Dir::Rev => Dir::Fwd,
    }
}

fn name_of(p: &[u8]) -> String {
    String::from_utf8_lossy(p).into_owned()
}

impl Tls {
    pub fn new(cfg: Config, keylog: KeyLog) -> Self {
        let mut report = TlsReport {
            keylog: keylog.stats,
            keylog_randoms: keylog.len() as u64,
            ..TlsReport::default()
        };
        report.keylog = keylog.stats;
        Tls {
            cfg,
            keylog,
            conns: HashMap::default(),
            report,
            warnings: VecDeque::new(),
            warnings_dropped: 0,
            waiting: 0,
            held_total: 0,
            out: Vec::new(),
            out_to: None,
        }
    }

    /// The layer as a [`Sink`] in front of `inner`.
    pub fn layer<'a, S: Sink>(&'a mut self, inner: &'a mut S) -> Layer<'a, S> {
        Layer { tls: self, inner }
    }

    /// Whether a connection holds records for a client random the key log does not have yet
    /// (live: re-read the key log file and call [`Layer::add_keys`]).
    pub fn waiting_for_keys(&self) -> bool {
        self.waiting > 0
    }

    /// Warnings since the last call, as (kind, message). Kinds: `tls-no-key`,
    /// `tls-no-handshake`, `tls-truncated-handshake`, `tls-auth-failure`, `tls-gap`,
    /// `tls-bad-record`, `tls-unsupported`, `tls-held-limit`.
    pub fn take_warnings(&mut self) -> impl Iterator<Item = (&'static str, String)> + '_ {
        self.warnings.drain(..)
    }

    /// Whether [`Tls::take_warnings`] has something.
    pub fn has_warnings(&self) -> bool {
        !self.warnings.is_empty()
    }

    /// Totals and per-connection summaries so far (connections still open are not in it).
    pub fn report(&self) -> TlsReport {
        let mut r = self.report.clone();
        r.keylog = self.keylog.stats;
        r.keylog_randoms = self.keylog.len() as u64;
        r
    }

    pub fn keylog(&self) -> &KeyLog {
        &self.keylog
    }

    fn warn(&mut self, kind: &'static str, msg: String) {
        if self.warnings.len() < self.cfg.max_pending_warnings {
            self.warnings.push_back((kind, msg));
        } else {
            self.warnings_dropped += 1;
        }
    }
}

fn label(meta: &ConnMeta, t: &TlsConn) -> String {
    let (c, s) = match t.client {
        Some(Dir::Rev) => (meta.first_dst, meta.first_src),
        _ => (meta.first_src, meta.first_dst),
    };
    format!("connection {} {c} -> {s}", meta.id.0)
}

/// The TLS state of connection `id`, borrowing only `self.tls.conns`.
macro_rules! t {
    ($s:ident, $id:expr) => {
        $s.tls.conns.get_mut(&$id).and_then(|c| c.t.as_deref_mut())
    };
}

impl<S: Sink> Layer<'_, S> {
    /// Adds key log text (live: what was appended to the file). Connections waiting for
    /// these keys are decrypted now, their held records handed to the ledger in order.
    pub fn add_keys(&mut self, text: &str) -> u64 {
        let n = self.tls.keylog.add_text(text);
        if n > 0 && self.tls.waiting > 0 {
            let ids: Vec<u32> = self
                .tls
                .conns
                .iter()
                .filter(|(_, c)| c.t.as_ref().is_some_and(|t| t.wait_since.is_some()))
                .map(|(k, _)| *k)
                .collect();
            for id in ids {
                self.retry_keys(id);
            }
            self.flush();
        }
        n
    }

    fn retry_keys(&mut self, id: u32) {
        let Some(t) = t!(self, id) else { return };
        t.secrets = None;
        t.key_missing = false;
        self.setup_keys(id);
        let Some(t) = t!(self, id) else { return };
        if !t.key_missing {
            if t.wait_since.take().is_some() {
                self.tls.waiting -= 1;
            }
            self.release(id, Dir::Fwd);
            self.release(id, Dir::Rev);
        }
    }

    fn start_tls(&mut self, id: u32, mid_stream: bool) {
        let Some(c) = self.tls.conns.get_mut(&id) else {
            return;
        };
        c.mode = Mode::Tls;
        c.t = Some(Box::new(TlsConn {
            mid_stream,
            ..TlsConn::default()
        }));
        self.tls.report.connections += 1;
    }

    /// Bytes of a TLS direction, in order.
    fn tls_bytes(&mut self, id: u32, dir: Dir, w: &Write, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let Some(t) = t!(self, id) else { return };
            let d = &mut t.dirs[di(dir)];
            if d.lost {
                d.encrypted += bytes.len() as u64;
                return;
            }
            // Whole records straight from `bytes` when nothing is buffered.
            if d.buf.is_empty() {
                if let Some(h) = RecordHeader::parse(bytes) {
                    let n = RECORD_HEADER_LEN + h.length as usize;
                    if h.plausible() && bytes.len() >= n {
                        self.record(id, dir, w, &bytes[..n]);
                        bytes = &bytes[n..];
                        continue;
                    }
                }
            }
            let Some(t) = t!(self, id) else { return };
            let d = &mut t.dirs[di(dir)];
            if d.buf.len() < RECORD_HEADER_LEN {
                let n = (RECORD_HEADER_LEN - d.buf.len()).min(bytes.len());
                d.buf.extend_from_slice(&bytes[..n]);
                bytes = &bytes[n..];
                if d.buf.len() < RECORD_HEADER_LEN {
                    return;
                }
            }
            let h = RecordHeader::parse(&d.buf).expect("5 bytes");
            if !h.plausible() {
                let head = to_hex(&d.buf);
                d.lost = true;
                d.dead = true;
                d.encrypted += (d.buf.len() + bytes.len()) as u64;
                d.buf.clear();
                let msg = format!(
                    "{}: {:?} bytes {head} are not a TLS record header; this direction is no \
                     longer read",
                    label(
                        &self.tls.conns[&id].meta,
                        self.tls.conns[&id].t.as_ref().unwrap()
                    ),
                    dir
                );
                self.tls.warn("tls-bad-record", msg);
                return;
            }
            let want = RECORD_HEADER_LEN + h.length as usize - d.buf.len();
            let n = want.min(bytes.len());
            d.buf.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            if n == want {
                let mut rec = std::mem::take(&mut d.buf);
                self.record(id, dir, w, &rec);
                rec.clear();
                if let Some(t) = t!(self, id) {
                    let d = &mut t.dirs[di(dir)];
                    // An idle direction keeps a small buffer only: with thousands of open
                    // connections, a kept 16 KiB record buffer each would add up.
                    if d.buf.is_empty() && rec.capacity() <= KEEP_RECORD_BUF {
                        d.buf = rec;
                    }
                }
            }
        }
    }

    /// One complete record (header + payload) of a TLS direction.
    fn record(&mut self, id: u32, dir: Dir, w: &Write, rec: &[u8]) {
        let Some(t) = t!(self, id) else { return };
        t.dirs[di(dir)].records += 1;
        self.tls.report.records += 1;
        self.inner.tls_record(ConnId(id), dir, w);
        self.process(id, dir, w, rec, false);
    }

    /// Reads or decrypts a record; `replay`: a held record released.
    fn process(&mut self, id: u32, dir: Dir, w: &Write, rec: &[u8], replay: bool) {
        let Some(t) = t!(self, id) else { return };
        let h = RecordHeader::parse(rec).expect("a whole record");
        let d = &t.dirs[di(dir)];
        let payload_len = rec.len() - RECORD_HEADER_LEN;
        if d.dead {
            t.dirs[di(dir)].encrypted += payload_len as u64;
            return;
        }
        let tls13 = t.sh.as_ref().map(|s| s.version == 0x0304);
        let protected = match tls13 {
            Some(true) => h.content_type == wire::APPLICATION_DATA,
            Some(false) => d.ccs && h.content_type != wire::CHANGE_CIPHER_SPEC,
            // Before the ServerHello: the ClientHello and what may precede the version's
            // choice is plaintext; a protected record of the client waits for the hello.
            None => h.content_type == wire::APPLICATION_DATA,
        };
        if !protected {
            if tls13.is_none() && t.client == Some(dir) && h.content_type != wire::HANDSHAKE {
                self.hold(id, dir, w, rec, replay);
                return;
            }
            match h.content_type {
                wire::HANDSHAKE => self.handshake(id, dir, w, &rec[RECORD_HEADER_LEN..]),
                wire::CHANGE_CIPHER_SPEC if tls13 == Some(false) => {
                    t.dirs[di(dir)].ccs = true;
                }
                _ => {}
            }
            return;
        }
        if t.mid_stream || t.unsupported {
            t.dirs[di(dir)].encrypted += payload_len as u64;
            return;
        }
        if t.dirs[di(dir)].dec.is_none() {
            // Keys may still come: the ServerHello (client side, reordered capture) or a key
            // log that catches up (live).
            if t.sh.is_none() || t.wait_since.is_some() {
                self.hold(id, dir, w, rec, replay);
            } else {
                t.dirs[di(dir)].encrypted += payload_len as u64;
            }
            return;
        }
        let header: [u8; 5] = rec[..5].try_into().expect("5 bytes");
        let payload = &rec[RECORD_HEADER_LEN..];
        let trial = t.dirs[di(dir)].trial;
        match self.decrypt(id, dir, w, &header, payload) {
            Ok(len) => {
                let t = t!(self, id).expect("exists");
                t.dirs[di(dir)].trial = false;
                self.plaintext(id, dir, w, h.content_type, len);
                return;
            }
            Err(_) if trial => {
                t!(self, id).expect("exists").dirs[di(dir)].encrypted += payload_len as u64;
                return;
            }
            Err(_) => {}
        }
        if tls13 == Some(true) && !t!(self, id).expect("exists").dirs[di(dir)].app {
            // A handshake message this layer did not see end (or no Finished was recognised):
            // the application key may already be in use.
            if let Some(dec) = self.app_decryptor(id, dir) {
                let t = t!(self, id).expect("exists");
                let d = &mut t.dirs[di(dir)];
                d.dec = Some(dec);
                d.app = true;
                if let Ok(len) = self.decrypt(id, dir, w, &header, payload) {
                    self.plaintext(id, dir, w, h.content_type, len);
                    return;
                }
            }
        }
        let t = t!(self, id).expect("exists");
        let d = &mut t.dirs[di(dir)];
        d.dead = true;
        d.encrypted += payload_len as u64;
        t.auth_failures += 1;
        self.tls.report.auth_failures += 1;
        let seq = d.dec.as_ref().map_or(0, |d| d.seq);
        let who = if t.client == Some(dir) {
            "client"
        } else {
            "server"
        };
        let msg = format!(
            "{}: a {who} TLS record (#{seq} under its key, {payload_len} bytes) failed \
             authentication: wrong key in the key log, or damaged bytes; the {who}'s later \
             records are not decrypted",
            label(
                &self.tls.conns[&id].meta,
                self.tls.conns[&id].t.as_ref().unwrap()
            ),
        );
        self.tls.warn("tls-auth-failure", msg);
    }

    /// Decrypts `payload` (a record of `dir` under its current key) at the end of the pending
    /// plaintext of this write (`out`); returns the plaintext's length there. On failure `out`
    /// is as before.
    fn decrypt(
        &mut self,
        id: u32,
        dir: Dir,
        w: &Write,
        header: &[u8; 5],
        payload: &[u8],
    ) -> Result<usize, crypto::AuthError> {
        if self
            .tls
            .out_to
            .is_some_and(|(i, d, o)| (i, d, o.index) != (id, dir, w.index))
        {
            self.flush();
        }
        let Some(dec) = self
            .tls
            .conns
            .get_mut(&id)
            .and_then(|c| c.t.as_deref_mut())
            .and_then(|t| t.dirs[di(dir)].dec.as_mut())
        else {
            return Err(crypto::AuthError);
        };
        let out = &mut self.tls.out;
        let start = out.len();
        out.extend_from_slice(payload);
        match dec.open(header, &mut out[start..]) {
            Ok(len) => {
                out.truncate(start + len);
                Ok(len)
            }
            Err(e) => {
                out.truncate(start);
                Err(e)
            }
        }
    }

    /// Hands the pending plaintext (one write's records) to the inner sink.
    fn flush(&mut self) {
        if let Some((id, dir, w)) = self.tls.out_to.take() {
            if !self.tls.out.is_empty() {
                self.inner.data(ConnId(id), dir, &w, &self.tls.out);
            }
        }
        self.tls.out.clear();
        if self.tls.out.capacity() > OUT_KEEP {
            self.tls.out = Vec::new();
        }
    }

    /// The application traffic key of `dir`, from the key log as it is now (live, it may
    /// have grown since the handshake keys were found).
    fn app_decryptor(&mut self, id: u32, dir: Dir) -> Option<Decryptor> {
        let t = t!(self, id)?;
        let suite = t.suite?;
        let s = self.tls.keylog.get(&t.client_random?)?;
        let secret = if t.client == Some(dir) {
            s.client_traffic_0.as_ref()?
        } else {
            s.server_traffic_0.as_ref()?
        };
        let dec = Decryptor::tls13(suite, secret)?;
        t.dirs[di(dir)].secret = Some(secret.clone());
        Some(dec)
    }

    /// A decrypted record: the last `len` bytes of `out` are its plaintext. Application data
    /// stays there for the inner sink (see [`Layer::flush`]); anything else is taken out.
    fn plaintext(&mut self, id: u32, dir: Dir, w: &Write, outer_type: u8, len: usize) {
        let start = self.tls.out.len() - len;
        let Some(t) = t!(self, id) else {
            self.tls.out.truncate(start);
            return;
        };
        let pt = &self.tls.out[start..];
        let tls13 = t.sh.as_ref().is_some_and(|s| s.version == 0x0304);
        let (kind, end) = if tls13 {
            // TLSInnerPlaintext: content, the real type, zero padding (RFC 8446 §5.2).
            let Some(end) = pt.iter().rposition(|&b| b != 0) else {
                self.tls.out.truncate(start);
                return;
            };
            (pt[end], end)
        } else {
            (outer_type, len)
        };
        t.decrypted_any = true;
        match kind {
            wire::APPLICATION_DATA => {
                t.dirs[di(dir)].plaintext += end as u64;
                if forward(t) && end > 0 {
                    self.tls.out.truncate(start + end);
                    self.tls.out_to = Some((id, dir, *w));
                } else {
                    self.tls.out.truncate(start);
                }
            }
            wire::HANDSHAKE => {
                let pt = self.tls.out[start..start + end].to_vec();
                self.tls.out.truncate(start);
                self.handshake(id, dir, w, &pt);
            }
            _ => self.tls.out.truncate(start),
        }
    }

    /// Handshake bytes of a direction (plaintext or decrypted).
    fn handshake(&mut self, id: u32, dir: Dir, w: &Write, bytes: &[u8]) {
        let Some(t) = t!(self, id) else { return };
        let mut msgs: Vec<(u8, Vec<u8>)> = Vec::new();
        t.dirs[di(dir)]
            .hs
            .feed(bytes, |m| msgs.push((m.kind, m.body.to_vec())));
        for (kind, body) in msgs {
            self.message(id, dir, w, kind, &body);
        }
    }

    fn message(&mut self, id: u32, dir: Dir, w: &Write, kind: u8, body: &[u8]) {
        let Some(t) = t!(self, id) else { return };
        match kind {
            wire::CLIENT_HELLO if t.client.is_none() || t.client == Some(dir) => {
                if t.client_random.is_some() {
                    return; // the second ClientHello after a HelloRetryRequest
                }
                if let Some(ch) = wire::client_hello(body) {
                    t.client = Some(dir);
                    t.client_random = Some(ch.random);
                    t.alpn_offered = ch.alpn;
                }
            }
            wire::SERVER_HELLO if t.client == Some(other(dir)) && t.sh.is_none() => {
                let Some(sh) = wire::server_hello(body) else {
                    return;
                };
                if sh.hello_retry {
                    return;
                }
                let suite = crypto::suite(sh.cipher);
                let ok = match sh.version {
                    0x0304 => suite.is_some_and(|s| s.tls13),
                    0x0303 => suite.is_some_and(|s| !s.tls13),
                    _ => false,
                };
                if sh.version != 0x0304 {
                    t.alpn = Some(sh.alpn.clone());
                }
                t.suite = suite;
                t.sh = Some(sh);
                if !ok {
                    t.unsupported = true;
                } else {
                    self.setup_keys(id);
                }
                self.release(id, other(dir));
            }
            wire::ENCRYPTED_EXTENSIONS if t.client == Some(other(dir)) => {
                if let Some(alpn) = wire::encrypted_extensions_alpn(body) {
                    t.alpn = Some(alpn);
                }
            }
            wire::FINISHED => {
                let tls13 = t.sh.as_ref().is_some_and(|s| s.version == 0x0304);
                if tls13 && !t.dirs[di(dir)].app {
                    // The records after this side's Finished use its application key.
                    let dec = self.app_decryptor(id, dir);
                    let wait = self.tls.cfg.wait_for_keys;
                    let t = t!(self, id).expect("exists");
                    let d = &mut t.dirs[di(dir)];
                    d.app = true;
                    d.dec = dec;
                    if d.dec.is_none() && wait {
                        // Live: the key log may not have this line yet; hold until it does.
                        t.key_missing = true;
                        if t.wait_since.is_none() {
                            t.wait_since = Some(w.ts);
                            self.tls.waiting += 1;
                        }
                    } else if d.dec.is_none() {
                        t.key_missing = true;
                        d.dead = true;
                        let who = if t.client == Some(dir) {
                            "CLIENT_TRAFFIC_SECRET_0"
                        } else {
                            "SERVER_TRAFFIC_SECRET_0"
                        };
                        let msg = format!(
                            "{}: the key log has no {who}; application data of that side is \
                             not decrypted",
                            label(
                                &self.tls.conns[&id].meta,
                                self.tls.conns[&id].t.as_ref().unwrap()
                            )
                        );
                        self.tls.warn("tls-no-key", msg);
                    }
                }
            }
            wire::KEY_UPDATE => {
                let Some(suite) = t.suite else { return };
                let d = &mut t.dirs[di(dir)];
                if let Some(next) = d
                    .secret
                    .as_ref()
                    .and_then(|s| crypto::next_traffic_secret(suite.hash, s))
                {
                    d.dec = Decryptor::tls13(suite, &next);
                    d.secret = Some(next);
                    t.key_updates += 1;
                    self.tls.report.key_updates += 1;
                }
            }
            _ => {}
        }
    }

    /// Looks the client random up and builds the decryptors the version needs.
    fn setup_keys(&mut self, id: u32) {
        let Some(c) = self.tls.conns.get_mut(&id) else {
            return;
        };
        let Some(t) = c.t.as_deref_mut() else { return };
        let (Some(random), Some(sh), Some(suite), Some(client)) =
            (t.client_random, t.sh.as_ref(), t.suite, t.client)
        else {
            return;
        };
        let secrets = self.tls.keylog.get(&random).cloned().unwrap_or_default();
        let (cd, sd) = (di(client), di(other(client)));
        let ok = if suite.tls13 {
            // Both directions need a key (or are given up).
            let mut ok = true;
            for (i, hs, app) in [
                (cd, &secrets.client_handshake, &secrets.client_traffic_0),
                (sd, &secrets.server_handshake, &secrets.server_traffic_0),
            ] {
                let d = &mut t.dirs[i];
                if d.dec.is_some() || d.dead {
                    continue;
                }
                if d.app {
                    // Past its Finished, waiting for the application secret.
                    if let Some(s) = app {
                        d.dec = Decryptor::tls13(suite, s);
                        d.secret = Some(s.clone());
                    }
                } else if let Some(s) = hs {
                    d.dec = Decryptor::tls13(suite, s);
                } else if let Some(s) = app {
                    d.dec = Decryptor::tls13(suite, s);
                    d.secret = Some(s.clone());
                    d.app = true;
                    d.trial = true;
                }
                ok &= d.dec.is_some();
            }
            ok
        } else if let Some(m) = &secrets.master {
            match Decryptor::tls12(suite, m, &random, &sh.random) {
                Some((c12, s12)) => {
                    t.dirs[cd].dec = Some(c12);
                    t.dirs[sd].dec = Some(s12);
                    true
                }
                None => false,
            }
        } else {
            false
        };
        t.secrets = Some(secrets);
        t.key_missing = !ok;
        if !ok {
            t.key_missing = true;
            if self.tls.cfg.wait_for_keys && t.wait_since.is_none() {
                t.wait_since = Some(c.meta.start);
                self.tls.waiting += 1;
            }
        }
    }

    /// Keeps a record until its keys are known.
    fn hold(&mut self, id: u32, dir: Dir, w: &Write, rec: &[u8], replay: bool) {
        let max = self.tls.cfg.max_held_bytes_per_dir;
        let room = self
            .tls
            .cfg
            .max_held_bytes_total
            .saturating_sub(self.tls.held_total);
        let key_wait = self.tls.cfg.key_wait;
        let Some(t) = t!(self, id) else { return };
        if let Some(since) = t.wait_since {
            if w.ts.saturating_sub(since) > key_wait {
                self.give_up_waiting(id);
                let t = t!(self, id).expect("exists");
                t.dirs[di(dir)].encrypted += (rec.len() - RECORD_HEADER_LEN) as u64;
                return;
            }
        }
        let d = &mut t.dirs[di(dir)];
        if replay {
            // Released but still not decryptable: back in front, in order (already counted
            // in the total before the release).
            d.held_bytes += rec.len();
            self.tls.held_total += rec.len();
            d.held.push_back((*w, rec.to_vec()));
            return;
        }
        if d.held_bytes + rec.len() > max || rec.len() > room {
            d.dead = true;
            let dropped: usize = d
                .held
                .drain(..)
                .map(|(_, r)| r.len() - RECORD_HEADER_LEN)
                .sum();
            d.encrypted += (dropped + rec.len() - RECORD_HEADER_LEN) as u64;
            self.tls.held_total -= d.held_bytes;
            d.held_bytes = 0;
            self.tls.report.held_limit_hits += 1;
            let what = if rec.len() > room {
                format!(
                    "{} bytes of TLS records held in all connections together",
                    self.tls.cfg.max_held_bytes_total
                )
            } else {
                format!("{max} bytes of TLS records held")
            };
            let msg = format!(
                "{}: {what} while waiting for their key; this direction's are dropped \
                 undecrypted and it is given up",
                label(
                    &self.tls.conns[&id].meta,
                    self.tls.conns[&id].t.as_ref().unwrap()
                )
            );
            self.tls.warn("tls-held-limit", msg);
            return;
        }
        d.held_bytes += rec.len();
        self.tls.held_total += rec.len();
        d.held.push_back((*w, rec.to_vec()));
    }

    /// Processes a direction's held records again (keys or the ServerHello arrived).
    fn release(&mut self, id: u32, dir: Dir) {
        let Some(t) = t!(self, id) else { return };
        let d = &mut t.dirs[di(dir)];
        let held = std::mem::take(&mut d.held);
        self.tls.held_total -= d.held_bytes;
        d.held_bytes = 0;
        for (w, rec) in held {
            self.process(id, dir, &w, &rec, true);
        }
    }

    fn give_up_waiting(&mut self, id: u32) {
        let Some(t) = t!(self, id) else { return };
        if t.wait_since.take().is_some() {
            self.tls.waiting -= 1;
        }
        for d in &mut t.dirs {
            let n: usize = d
                .held
                .drain(..)
                .map(|(_, r)| r.len() - RECORD_HEADER_LEN)
                .sum();
            d.encrypted += n as u64;
            self.tls.held_total -= d.held_bytes;
            d.held_bytes = 0;
        }
    }

    /// The connection is over: its summary, warnings, totals.
    fn finish_conn(&mut self, id: u32) {
        self.give_up_waiting(id);
        let Some(c) = self.tls.conns.remove(&id) else {
            return;
        };
        let Some(t) = c.t else { return };
        let lbl = label(&c.meta, &t);
        let h2_offered = t.alpn_offered.iter().any(|p| p == b"h2");
        let alpn_chosen = t.alpn.as_ref().and_then(|a| a.as_deref());
        let encrypted = t.dirs[0].encrypted + t.dirs[1].encrypted;
        let status = if t.mid_stream {
            Status::NoHandshake
        } else if t.client_random.is_none() || t.sh.is_none() {
            Status::TruncatedHandshake
        } else if t.unsupported {
            Status::Unsupported
        } else if t.alpn.is_some() && alpn_chosen != Some(b"h2") {
            Status::NotH2
        } else if t.key_missing {
            Status::NoKey
        } else if t.decrypted_any {
            Status::Decrypted
        } else if t.auth_failures > 0 {
            Status::AuthFailed
        } else {
            Status::NoKey
        };
        let alpn_text = match (alpn_chosen, h2_offered) {
            (Some(p), _) => format!("ALPN {}", name_of(p)),
            (None, true) => "ALPN h2 offered".to_string(),
            (None, false) => "no ALPN h2".to_string(),
        };
        let r = &mut self.tls.report;
        let warning = match status {
            Status::Decrypted => {
                r.decrypted += 1;
                None
            }
            Status::NotH2 => {
                r.not_h2 += 1;
                None
            }
            Status::NoKey => {
                r.without_key += 1;
                let random = t.client_random.map(|r| to_hex(&r)).unwrap_or_default();
                let why = if let Some(src) = &self.tls.cfg.keys_from {
                    format!(
                        "no secret for client random {random} came from {src} (neither end of \
                         the connection is that process, or its secret was lost); the key log \
                         has {} client randoms",
                        self.tls.keylog.len()
                    )
                } else if self.tls.keylog.is_empty() {
                    "no key log given".to_string()
                } else {
                    format!(
                        "the key log ({} client randoms) has no usable secret for client random {random}",
                        self.tls.keylog.len()
                    )
                };
                let howto = match self.tls.cfg.keys_from {
                    Some(_) => "",
                    None => KEYLOG_HOWTO,
                };
                (alpn_chosen == Some(b"h2") || (alpn_chosen.is_none() && h2_offered)).then(|| {
                    (
                        "tls-no-key",
                        format!(
                            "{lbl}: TLS with {alpn_text} seen, {encrypted} bytes encrypted; {why}{}{howto}",
                            if howto.is_empty() { "" } else { "; " }
                        ),
                    )
                })
            }
            Status::NoHandshake => {
                r.no_handshake += 1;
                let msg = match &self.tls.cfg.keys_from {
                    Some(src) => format!(
                        "{lbl}: TLS records seen ({encrypted} bytes) but its handshake came \
                         before h2ledger attached to {src} and began capturing: no secret can \
                         be had for it, so it is not decrypted"
                    ),
                    None => format!(
                        "{lbl}: TLS records seen ({encrypted} bytes) but the capture began after \
                         the handshake: without the ClientHello's random no key can be found, \
                         so there is no way to decrypt it"
                    ),
                };
                Some(("tls-no-handshake", msg))
            }
            Status::TruncatedHandshake => {
                r.truncated_handshake += 1;
                let what = if t.client_random.is_none() {
                    "ClientHello"
                } else {
                    "ServerHello"
                };
                Some((
                    "tls-truncated-handshake",
                    format!(
                        "{lbl}: TLS handshake cut short (no complete {what}); {encrypted} bytes \
                         not decrypted"
                    ),
                ))
            }
            Status::Unsupported => {
                r.unsupported += 1;
                let sh = t.sh.as_ref().expect("unsupported needs a ServerHello");
                Some((
                    "tls-unsupported",
                    format!(
                        "{lbl}: TLS version {:#06x} with cipher suite {:#06x} is not decrypted \
                         (supported: TLS 1.3, and TLS 1.2 AES-GCM / ChaCha20-Poly1305)",
                        sh.version, sh.cipher
                    ),
                ))
            }
            Status::AuthFailed => {
                r.auth_failed += 1;
                None // already warned when it failed
            }
        };
        if let Some((k, m)) = warning {
            self.tls.warn(k, m);
        }
        let (cdir, sdir) = match t.client {
            Some(Dir::Rev) => (1, 0),
            _ => (0, 1),
        };
        let (ca, sa) = match t.client {
            Some(Dir::Rev) => (c.meta.first_dst, c.meta.first_src),
            _ => (c.meta.first_src, c.meta.first_dst),
        };
        if self.tls.report.per_connection.len() < self.tls.cfg.max_conn_reports {
            let rep = ConnReport {
                id,
                client: ca.to_string(),
                server: sa.to_string(),
                version: t.sh.as_ref().map(|s| match s.version {
                    0x0304 => "TLS 1.3",
                    0x0303 => "TLS 1.2",
                    0x0302 => "TLS 1.1",
                    0x0301 => "TLS 1.0",
                    _ => "other",
                }),
                cipher: t.sh.as_ref().map(|s| match crypto::suite(s.cipher) {
                    Some(su) => su.name.to_string(),
                    None => format!("{:#06x}", s.cipher),
                }),
                alpn: alpn_chosen.map(name_of),
                alpn_offered: t.alpn_offered.iter().map(|p| name_of(p)).collect(),
                status,
                client_random: t.client_random.map(|r| to_hex(&r)),
                records: [t.dirs[cdir].records, t.dirs[sdir].records],
                plaintext_bytes: [t.dirs[cdir].plaintext, t.dirs[sdir].plaintext],
                encrypted_bytes: [t.dirs[cdir].encrypted, t.dirs[sdir].encrypted],
                auth_failures: t.auth_failures,
                key_updates: t.key_updates,
            };
            self.tls.report.per_connection.push(rep);
        } else {
            self.tls.report.per_connection_dropped += 1;
        }
    }

    /// [`Sink::data`] without the final [`Layer::flush`].
    fn data_unflushed(&mut self, conn: ConnId, dir: Dir, w: &Write, bytes: &[u8]) {
        let id = conn.0;
        let mode = match self.tls.conns.get(&id) {
            None => Mode::Plain,
            Some(c) => c.mode,
        };
        match mode {
            Mode::Plain => self.inner.data(conn, dir, w, bytes),
            Mode::Tls => self.tls_bytes(id, dir, w, bytes),
            Mode::Undecided => {
                let had = self.tls.conns[&id].first[di(dir)].clone();
                match self.decide(id, dir, bytes) {
                    Mode::Undecided => {}
                    Mode::Plain => {
                        if !had.is_empty() {
                            self.inner.data(conn, dir, w, &had);
                        }
                        let o = std::mem::take(
                            &mut self.tls.conns.get_mut(&id).expect("exists").first[di(other(dir))],
                        );
                        if !o.is_empty() {
                            self.inner.data(conn, other(dir), w, &o);
                        }
                        self.inner.data(conn, dir, w, bytes);
                    }
                    Mode::Tls => {
                        if !had.is_empty() {
                            self.tls_bytes(id, dir, w, &had);
                        }
                        let o = std::mem::take(
                            &mut self.tls.conns.get_mut(&id).expect("exists").first[di(other(dir))],
                        );
                        if !o.is_empty() {
                            self.tls_bytes(id, other(dir), w, &o);
                        }
                        self.tls_bytes(id, dir, w, bytes);
                    }
                }
            }
        }
    }

    /// First bytes of a connection: TLS or not.
    fn decide(&mut self, id: u32, dir: Dir, bytes: &[u8]) -> Mode {
        let Some(c) = self.tls.conns.get_mut(&id) else {
            return Mode::Plain;
        };
        let mut head = std::mem::take(&mut c.first[di(dir)]);
        head.extend_from_slice(&bytes[..bytes.len().min(3)]);
        if head.len() < 3 {
            c.first[di(dir)] = head;
            return Mode::Undecided;
        }
        let at_start = c.meta.syn_sender.is_some() && !c.lost_start;
        let start = wire::looks_like_tls_start(&head);
        let mode = if start || (!at_start && mid_stream_tls(&head, bytes)) {
            Mode::Tls
        } else {
            Mode::Plain
        };
        c.first[di(dir)] = head;
        if mode == Mode::Tls {
            self.start_tls(id, !start);
        } else {
            c.mode = mode;
        }
        mode
    }
}

/// A capture that began mid-connection: a chain of records, or one record header of
/// application data (TLS 1.2+ version) that the first bytes cannot complete.
fn mid_stream_tls(head: &[u8], bytes: &[u8]) -> bool {
    if head.len() > bytes.len() {
        return false; // the start came in pieces: too little to tell
    }
    if wire::record_chain(bytes) {
        return true;
    }
    RecordHeader::parse(bytes).is_some_and(|h| {
        h.plausible()
            && h.content_type == wire::APPLICATION_DATA
            && h.version == 0x0303
            && bytes.len() < RECORD_HEADER_LEN + h.length as usize
    })
}

/// Whether decrypted application data goes to the ledger: ALPN `h2` chosen, or not known and
/// offered (the ledger still looks for HTTP/2 itself).
fn forward(t: &TlsConn) -> bool {
    match &t.alpn {
        Some(Some(p)) => p == b"h2",
        Some(None) => false,
        None => t.alpn_offered.iter().any(|p| p == b"h2"),
    }
}

impl<S: Sink> Sink for Layer<'_, S> {
    fn open(&mut self, meta: &ConnMeta) {
        let c = Conn {
            meta: meta.clone(),
            mode: Mode::Undecided,
            first: [Vec::new(), Vec::new()],
            lost_start: false,
            t: None,
        };
        if self.tls.conns.contains_key(&meta.id.0) {
            self.finish_conn(meta.id.0);
        }
        self.tls.conns.insert(meta.id.0, c);
        self.inner.open(meta);
    }

    fn write(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        self.inner.write(conn, dir, w);
    }

    fn data(&mut self, conn: ConnId, dir: Dir, w: &Write, bytes: &[u8]) {
        self.data_unflushed(conn, dir, w, bytes);
        self.flush();
    }

    fn gap(&mut self, conn: ConnId, dir: Dir, ts: Nanos, len: u64) {
        let id = conn.0;
        if let Some(c) = self.tls.conns.get_mut(&id) {
            match c.mode {
                Mode::Undecided => c.lost_start = true,
                Mode::Plain => {}
                Mode::Tls => {
                    let t = c.t.as_deref_mut().expect("tls");
                    let lbl = label(&c.meta, t);
                    let d = &mut t.dirs[di(dir)];
                    if !d.lost {
                        d.lost = true;
                        d.dead = true;
                        d.encrypted += d.buf.len() as u64 + len;
                        d.buf.clear();
                        let msg = format!(
                            "{lbl}: {len} bytes missing from the capture in a TLS stream ({dir:?}); \
                             records after the gap cannot be framed or decrypted (their sequence \
                             number is unknown)"
                        );
                        self.tls.warn("tls-gap", msg);
                    } else {
                        d.encrypted += len;
                    }
                    // The ledger hears of the gap in the plaintext (its length is unknown).
                }
            }
        }
        self.inner.gap(conn, dir, ts, len);
    }

    fn close(&mut self, conn: ConnId, ts: Nanos, kind: CloseKind) {
        self.finish_conn(conn.0);
        self.inner.close(conn, ts, kind);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
