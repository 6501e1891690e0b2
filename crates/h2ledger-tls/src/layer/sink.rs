//! The [`Sink`] glue: a connection opens and is found TLS or not, its bytes are framed into
//! records (or pass through), gaps stop a direction's framing, key log text added live
//! releases the records that waited for it, and a connection that ends is folded into the
//! report. [`TlsLayer`] is the owning variant.

use h2ledger_tcp::{CloseKind, ConnId, ConnMeta, Dir, Nanos, Sink, Write};

use super::conn::{Conn, Mode, TlsConn};
use super::detect::{detect, Detected};
use super::framing::Next;
use super::state::{Event, State};
use super::tls::{Layer, Tls};
use crate::keylog::to_hex;

/// An owning [`Layer`]: `TlsLayer { tls, inner: ledger }` is itself a [`Sink`].
pub struct TlsLayer<S: Sink> {
    /// The TLS state.
    pub tls: Tls,
    /// The sink the plaintext goes to (the ledger).
    pub inner: S,
}

impl<S: Sink> TlsLayer<S> {
    /// `tls` in front of `inner`.
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

impl<S: Sink> Layer<'_, S> {
    /// Adds key log text (live: what was appended to the file). Connections waiting for
    /// these keys are decrypted now, their held records handed to the ledger in order.
    /// Returns the key lines added.
    pub fn add_keys(&mut self, text: &str) -> u64 {
        let n = self.tls.keylog.add_text(text);
        if n > 0 && self.tls.waiting > 0 {
            for id in self.tls.conns.waiting() {
                self.retry_keys(id);
            }
            self.flush();
        }
        n
    }

    /// Looks a waiting connection's keys up again; found, its held records are processed.
    fn retry_keys(&mut self, id: u32) {
        self.tls.setup_keys(id);
        let Some(t) = self.tls.conns.tls_mut(id) else {
            return;
        };
        if !t.keys.missing() {
            self.release(id, Dir::Fwd);
            self.release(id, Dir::Rev);
        }
    }

    /// [`Sink::data`] without the final [`Layer::flush`].
    fn data_unflushed(&mut self, conn: ConnId, dir: Dir, w: &Write, bytes: &[u8]) {
        let id = conn.0;
        let Some(c) = self.tls.conns.get_mut(id) else {
            return self.inner.data(conn, dir, w, bytes);
        };
        let (first, lost_start) = match &mut c.mode {
            Mode::Plain => return self.inner.data(conn, dir, w, bytes),
            Mode::Tls(_) => return self.tls_bytes(id, dir, w, bytes),
            Mode::Undecided { first, lost_start } => (first, *lost_start),
        };
        let at_start = c.meta.syn_sender.is_some() && !lost_start;
        let Some(found) = detect(first.get(dir), bytes, at_start) else {
            first.get_mut(dir).extend_from_slice(bytes);
            return;
        };
        // What each direction sent before it was decided goes first.
        let had = std::mem::take(first.get_mut(dir));
        let other = std::mem::take(first.get_mut(dir.other()));
        let earlier = [(dir, &had[..]), (dir.other(), &other[..])];
        match found {
            Detected::Plain => {
                c.mode = Mode::Plain;
                for (d, b) in earlier {
                    if !b.is_empty() {
                        self.inner.data(conn, d, w, b);
                    }
                }
                self.inner.data(conn, dir, w, bytes);
            }
            Detected::Tls { mid_stream } => {
                c.mode = Mode::Tls(Box::new(TlsConn::new(mid_stream)));
                self.tls.report.connections += 1;
                for (d, b) in earlier {
                    if !b.is_empty() {
                        self.tls_bytes(id, d, w, b);
                    }
                }
                self.tls_bytes(id, dir, w, bytes);
            }
        }
    }

    /// Bytes of a TLS direction, in order: framed into records.
    fn tls_bytes(&mut self, id: u32, dir: Dir, w: &Write, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let Some(t) = self.tls.conns.tls_mut(id) else {
                return;
            };
            let d = t.dirs.get_mut(dir);
            if d.state == State::Lost {
                d.encrypted += bytes.len() as u64;
                return;
            }
            match d.framer.next(&mut bytes) {
                Next::Whole(rec) => self.record(id, dir, w, rec),
                Next::Buffered => {
                    let rec = d.framer.take();
                    self.record(id, dir, w, &rec);
                    if let Some(t) = self.tls.conns.tls_mut(id) {
                        t.dirs.get_mut(dir).framer.give_back(rec);
                    }
                }
                Next::More => return,
                Next::NotAHeader => {
                    let head = to_hex(d.framer.head());
                    d.state.on(Event::FramingLost);
                    d.encrypted += (d.framer.discard() + bytes.len()) as u64;
                    let msg = format!(
                        "{}: {:?} bytes {head} are not a TLS record header; this direction is \
                         no longer read",
                        self.tls.conns.label(id),
                        dir
                    );
                    self.tls.warnings.push("tls-bad-record", msg);
                    return;
                }
            }
        }
    }
}

impl Tls {
    /// Connection `id` is over: its summary, warning and totals.
    fn finish_conn(&mut self, id: u32) {
        self.give_up_waiting(id);
        let Some(c) = self.conns.remove(id) else {
            return;
        };
        let Mode::Tls(t) = c.mode else { return };
        let max = self.cfg.max_conn_reports;
        let keys_from = self.cfg.keys_from.as_deref();
        let piped = self.cfg.piped;
        if let Some((kind, msg)) =
            self.report
                .fold(&c.meta, &t, &self.keylog, keys_from, piped, max)
        {
            self.warnings.push(kind, msg);
        }
    }
}

impl<S: Sink> Sink for Layer<'_, S> {
    fn open(&mut self, meta: &ConnMeta) {
        if self.tls.conns.contains(meta.id.0) {
            self.tls.finish_conn(meta.id.0);
        }
        self.tls.conns.insert(meta.id.0, Conn::new(meta));
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
        if let Some(c) = self.tls.conns.get_mut(conn.0) {
            match &mut c.mode {
                Mode::Undecided { lost_start, .. } => *lost_start = true,
                Mode::Plain => {}
                Mode::Tls(t) => {
                    let d = t.dirs.get_mut(dir);
                    if d.state == State::Lost {
                        d.encrypted += len;
                    } else {
                        d.state.on(Event::FramingLost);
                        d.encrypted += d.framer.discard() as u64 + len;
                        let msg = format!(
                            "{}: {len} bytes missing from the capture in a TLS stream ({dir:?}); \
                             records after the gap cannot be framed or decrypted (their sequence \
                             number is unknown)",
                            super::conn::label(&c.meta, t.client)
                        );
                        self.tls.warnings.push("tls-gap", msg);
                    }
                    // The ledger hears of the gap in the plaintext (its length is unknown).
                }
            }
        }
        self.inner.gap(conn, dir, ts, len);
    }

    fn close(&mut self, conn: ConnId, ts: Nanos, kind: CloseKind) {
        self.tls.finish_conn(conn.0);
        self.inner.close(conn, ts, kind);
    }
}
