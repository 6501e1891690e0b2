//! The ledger as the reassembler's [`Sink`]: connections opened, bytes delivered, gaps, closes
//! and evictions.

use super::*;

impl<O: Observer> Ledger<O> {
    /// The connection `id` stands for: itself, or the evicted one it resumes.
    pub(super) fn root(&self, id: ConnId) -> ConnId {
        self.aliases.get(&id.0).copied().unwrap_or(id)
    }

    /// The connection is over for good: its observers fold it, and it is freed.
    pub(super) fn finalize(&mut self, id: ConnId) {
        if let Some(c) = self.conns.0.remove(&id.0) {
            self.observer.close(&c.summary());
        }
    }

    /// The reassembler evicted `id` (standing for `root`) while it was open. It keeps where
    /// each direction stood, so a return goes on exactly (bytes missed meanwhile come as a
    /// gap): the state stays as it is, among the [`MAX_EVICTED_KEPT`] last evicted. Beyond,
    /// the oldest ends as at the end of the capture and what its return needs is folded.
    fn evicted(&mut self, id: ConnId, root: ConnId) {
        if let Some(c) = self.conns.get(root.0 as usize).filter(|c| c.http2) {
            let (a, b) = (c.meta.first_src, c.meta.first_dst);
            self.warnings.add("evicted", || {
                format!(
                    "connection {} {a} <-> {b}: evicted from reassembly (more than --max-connections open at once); its state is kept, and if it comes back it goes on where it stopped",
                    root.0
                )
            });
        }
        let Some((old, root)) = self.kept.insert(id.0, root) else {
            return;
        };
        let Some(c) = self.conns.get(root.0 as usize) else {
            return;
        };
        let folded = Folded {
            root,
            http2: c.http2,
            client: c.client,
            dirs: [DirFold::of(&c.dirs.fwd), DirFold::of(&c.dirs.rev)],
        };
        let (a, b) = (c.meta.first_src, c.meta.first_dst);
        let ts = c.last_ts.unwrap_or(c.meta.start);
        self.warnings.add("evicted-folded", || {
            format!(
                "connection {} {a} <-> {b}: evicted from reassembly (more than --max-connections open at once) and its state folded (more than {MAX_EVICTED_KEPT} evicted kept); if it comes back it goes on as the same connection, framed where it stood between frames with nothing to remember, else joined mid-stream",
                root.0
            )
        });
        self.end(root, ts);
        self.folded.insert(old, &folded);
    }
}

impl<O: Observer> Sink for Ledger<O> {
    fn open(&mut self, meta: &ConnMeta) {
        self.number(meta);
        // An evicted connection back: its bytes go to the original (counted once), if its
        // state is still kept; else it goes on from what was folded of it.
        if let Some(r) = meta.resumes {
            if let Some(root) = self.kept.remove(r.0) {
                if self.conns.get(root.0 as usize).is_some() {
                    self.aliases.insert(meta.id.0, root);
                    return;
                }
            }
            if let Some(f) = self.folded.remove(r.0) {
                let mut c = new_conn(meta.clone());
                c.continues = Some((f.root, f.http2));
                c.http2 = f.http2;
                c.client = f.client.or(c.client);
                c.dirs.fwd = f.dirs[0].state();
                c.dirs.rev = f.dirs[1].state();
                self.conns.0.insert(meta.id.0, Box::new(c));
                self.observer.open(meta);
                return;
            }
        }
        self.conns
            .0
            .insert(meta.id.0, Box::new(new_conn(meta.clone())));
        self.observer.open(meta);
    }

    fn write(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        let conn = self.root(conn);
        self.observer.write(conn, dir, w);
    }

    fn tls_record(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        let conn = self.root(conn);
        self.observer.tls_record(conn, dir, w);
    }

    fn data(&mut self, conn: ConnId, dir: Dir, w: &Write, bytes: &[u8]) {
        let conn = self.root(conn);
        let Some(c) = self.conn_mut(conn) else {
            return;
        };
        c.last_ts = Some(w.ts);
        let ds = &mut c.dirs[dir];
        ds.tail_of = match ds.tail_of {
            Some((t, n)) if t.index == w.index => Some((t, n + bytes.len() as u64)),
            _ => Some((*w, bytes.len() as u64)),
        };
        let phase = c.dirs[dir].phase;
        if phase.framed() {
            self.frames(conn, dir, w, bytes);
        } else if phase.detecting() {
            self.detect(conn, dir, w, bytes, false);
        }
    }

    fn gap(&mut self, conn: ConnId, dir: Dir, ts: Nanos, len: u64) {
        let conn = self.root(conn);
        // A direction still looking for a boundary: a chain that ends exactly at the gap (or
        // whose last frame runs into it) is proven like one at the end of the connection.
        if let Some(c) = self.conns.get(conn.0 as usize) {
            let ds = &c.dirs[dir];
            if ds.phase.detecting() && !ds.pending.is_empty() {
                if let Some(&(_, w)) = ds.pending_writes.last() {
                    self.detect(conn, dir, &w, &[], true);
                }
            }
        }
        let Some(c) = self.conns.get_mut(conn.0 as usize) else {
            return;
        };
        let (src, dst) = c.addrs(dir);
        let ds = &mut c.dirs[dir];
        // A snaplen-cut tail: the frame bytes in it were carried by that write.
        let tail = match ds.tail_of.take() {
            Some((t, n)) if n > 0 && n + len == u64::from(t.len) => Some(t),
            _ => None,
        };
        let mut cut_short = None;
        let mut ends_here = None;
        let mut framing_lost = true;
        let mut discarded = 0;
        let what = match ds.phase {
            Phase::Unframed(_, Seek::Dead) | Phase::Framed(_, Framing::Dead) => return,
            Phase::Framed(_, Framing::Frames) => {
                match ds.cur.as_mut() {
                    Some(p) if len <= p.remaining as u64 && ds.head_have == 0 => {
                        // The gap falls inside the current frame: framing survives.
                        let consumed = p.head.length - p.remaining;
                        if consumed < p.keep {
                            p.lossy = true;
                        }
                        p.remaining -= len as u32;
                        if p.remaining == 0 {
                            // Its last byte was in the gap: the frame is complete now.
                            ends_here = ds.cur.take();
                        }
                        framing_lost = false;
                        "inside a frame; framing kept"
                    }
                    _ => {
                        // A frame whose head we saw existed on the wire: count it, unread.
                        cut_short = ds.cur.take().map(|p| p.head);
                        ds.lose_framing();
                        "framing lost; resynchronising, HPACK state reset"
                    }
                }
            }
            Phase::Unframed(_, Seek::Detect) | Phase::Framed(_, Framing::Resync) => {
                discarded = ds.pending.len();
                ds.pending.clear();
                ds.pending_writes.clear();
                ds.scan = None;
                ds.phase.gap();
                "before the first frame boundary"
            }
        };
        let lost = Write {
            index: NO_WRITE,
            ts,
            len: 0,
        };
        if let Some(p) = ends_here {
            let w = tail.unwrap_or(lost);
            let ds = &mut self.conns[conn.0 as usize].dirs[dir];
            let carry = std::mem::take(&mut ds.carry);
            self.frame(conn, dir, &w, p.head, &carry, false, p.spanned);
            let mut carry = carry;
            carry.clear();
            self.conns[conn.0 as usize].dirs[dir].carry = carry;
        }
        if let Some(head) = cut_short {
            let w = tail.unwrap_or(lost);
            self.frame(conn, dir, &w, head, &[], false, false);
            if let Some(c) = self.conns.get_mut(conn.0 as usize) {
                c.dirs[dir].carry.clear();
            }
        }
        self.observer.gap(conn, dir, ts, framing_lost);
        self.warnings.add("gap", || {
            format!(
                "connection {} {src} -> {dst}: {len} bytes missing from the capture ({what}){}",
                conn.0,
                if discarded > 0 {
                    format!("; the {discarded} bytes before it had no proven frame boundary and are not counted")
                } else {
                    String::new()
                }
            )
        });
    }

    fn close(&mut self, id: ConnId, ts: Nanos, kind: CloseKind) {
        let conn = self.root(id);
        self.aliases.remove(&id.0);
        if kind == CloseKind::Evicted {
            if self.conns.get(conn.0 as usize).is_some() {
                self.evicted(id, conn);
            }
            return;
        }
        self.end(conn, ts);
    }
}

impl<O: Observer> Ledger<O> {
    /// The connection `conn` ended at `ts` (its close, or the end of the capture for one
    /// evicted and never back): the last proofs, what is left unfinished, then its fold.
    pub(super) fn end(&mut self, conn: ConnId, ts: Nanos) {
        // Directions still looking for a boundary get a last, shorter proof.
        for dir in [Dir::Fwd, Dir::Rev] {
            let Some(c) = self.conns.get(conn.0 as usize) else {
                return;
            };
            let ds = &c.dirs[dir];
            if ds.phase.detecting() && !ds.pending.is_empty() {
                let w = ds.pending_writes.last().map(|x| x.1).unwrap_or(Write {
                    index: 0,
                    ts: 0,
                    len: 0,
                });
                self.detect(conn, dir, &w, &[], true);
            }
            // Still no boundary on an HTTP/2 connection: say what is not counted.
            let Some(c) = self.conns.get(conn.0 as usize) else {
                return;
            };
            let ds = &c.dirs[dir];
            if c.http2 && ds.phase.detecting() && !ds.pending.is_empty() {
                let n = ds.pending.len();
                let (src, dst) = c.addrs(dir);
                // An HTTP/1.1 request that HTTP/2 never followed on this direction: say so
                // (decision 278), rather than speak of frames it never had.
                let http1 = ds
                    .phase
                    .at_start()
                    .then(|| request_line(&ds.pending))
                    .flatten()
                    .map(|(m, t)| format!("{} {}", wire_word(m), wire_word(t)));
                let upgraded = c.upgrade_seen;
                self.warnings.add("no-http2-boundary", || match http1 {
                    Some(req) if upgraded => format!(
                        "connection {} {src} -> {dst}: the HTTP/1.1 request ({req}) was answered 101 Switching Protocols, but this side never sent the HTTP/2 connection preface: the h2c upgrade was not completed ({n} bytes, no frames)",
                        conn.0
                    ),
                    Some(req) => format!(
                        "connection {} {src} -> {dst}: {n} bytes of HTTP/1.1 ({req}), not the HTTP/2 connection preface, while the other side spoke HTTP/2; not counted (a server that takes only prior-knowledge h2c wants the preface first: curl --http2-prior-knowledge)",
                        conn.0
                    ),
                    None => format!(
                        "connection {} {src} -> {dst}: the last {n} bytes have no proven frame boundary; their frames are not counted",
                        conn.0
                    ),
                });
            }
        }
        if let Some(c) = self.conns.get_mut(conn.0 as usize) {
            let unfinished = c
                .dirs
                .iter()
                .filter(|(_, d)| d.phase.framed() && (d.cur.is_some() || d.head_have > 0))
                .map(|(dir, _)| dir)
                .collect::<Vec<_>>();
            for dir in unfinished {
                let (src, dst) = c.addrs(dir);
                let ds = &mut c.dirs[dir];
                ds.cur = None;
                ds.head_have = 0;
                if c.http2 {
                    self.warnings.add("truncated-frame", || {
                        format!(
                            "connection {} {src} -> {dst}: the capture ends inside a frame (not counted)",
                            conn.0
                        )
                    });
                }
            }
            c.streams = StreamMap::default();
            c.ended = Some(ts);
        }
        self.finalize(conn);
    }
}

/// A word of an HTTP/1.1 request line from the wire, for a one-line warning: at most 64 bytes,
/// invalid UTF-8 as `\xNN`, control characters escaped, and `...` when cut.
fn wire_word(b: &[u8]) -> String {
    const MAX: usize = 64;
    let mut out = String::new();
    for chunk in b[..b.len().min(MAX)].utf8_chunks() {
        out.extend(chunk.valid().chars().flat_map(char::escape_debug));
        for x in chunk.invalid() {
            out.push_str(&format!("\\x{x:02x}"));
        }
    }
    if b.len() > MAX {
        out.push_str("...");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::wire_word;
    use crate::ledger::{Ledger, MAX_NUMBERED};
    use crate::Tally;
    use h2ledger_tcp::{ConnId, ConnMeta, Dir, Sink};

    fn meta(id: u32) -> ConnMeta {
        ConnMeta {
            id: ConnId(id),
            first_src: "127.0.0.1:50000".parse().unwrap(),
            first_dst: "127.0.0.1:50051".parse().unwrap(),
            syn_sender: Some(Dir::Fwd),
            start: 100 + i64::from(id),
            resumes: None,
        }
    }

    /// The first packet of every connection not listed, by number; none past the cap
    /// (decision 447).
    #[test]
    fn unlisted_connections_keep_their_first_packet_up_to_the_cap() {
        let mut l = Ledger::new(Tally::new());
        for id in 0..5 {
            l.open(&meta(id));
        }
        assert_eq!(l.unlisted_first(&[1, 3]), Some(vec![100, 102, 104]));
        assert_eq!(l.unlisted_first(&[]).map(|v| v.len()), Some(5));
        for id in 5..MAX_NUMBERED as u32 {
            l.open(&meta(id));
        }
        assert_eq!(l.unlisted_first(&[]).map(|v| v.len()), Some(MAX_NUMBERED));
        l.open(&meta(MAX_NUMBERED as u32));
        assert_eq!(l.unlisted_first(&[]), None);
    }

    /// A request line's words from a hostile peer stay one printable line: control characters
    /// and invalid UTF-8 escaped, at most 64 bytes shown.
    #[test]
    fn wire_words_are_one_short_printable_line() {
        assert_eq!(wire_word(b"GET"), "GET");
        assert_eq!(wire_word(b"/a\x1b[2J\nb"), "/a\\u{1b}[2J\\nb");
        assert_eq!(wire_word(b"/\xff\xfe"), "/\\xff\\xfe");
        let long = wire_word(&[b'a'; 100]);
        assert_eq!(long, format!("{}...", "a".repeat(64)));
        assert!(!wire_word(b"\r\n\t\x00").chars().any(char::is_control));
    }
}
