//! Where HTTP/2 begins on a direction: the preface, an HTTP/1.1 upgrade or CONNECT, or, mid-
//! stream, the first run of plausible frame heads.

use super::*;

impl<O: Observer> Ledger<O> {
    pub(super) fn detect(&mut self, id: ConnId, dir: Dir, w: &Write, bytes: &[u8], closing: bool) {
        let Some(c) = self.conns.get_mut(id.0 as usize) else {
            return;
        };
        let ds = &mut c.dirs[dir];
        if !bytes.is_empty() {
            let at = ds.pending.len();
            ds.scanner().segment_start(at);
            ds.pending.extend_from_slice(bytes);
            ds.pending_writes.push((ds.pending.len(), *w));
        }
        let limit = ds.scan_limit();
        // The other direction already proved HTTP/2 and we hold this one from its first byte:
        // that byte starts a frame (a server that skipped its SETTINGS still frames; the
        // client preface is never a plausible head).
        let at_start = ds.phase.at_start();
        let first_is_frame = at_start
            && c.http2
            && ds.pending.len() >= HEAD_LEN
            && Head::parse(&ds.pending).is_ok_and(|(_, h)| h.plausible(limit));
        let found = if first_is_frame {
            Found::Frames(0)
        } else {
            let scan = ds.scan.get_or_insert_with(Box::default);
            scan.scan(&ds.pending, at_start, closing, limit)
        };
        if ds.scan.as_ref().is_some_and(|s| s.candidates_full) && ds.said.first(Cap::Detect) {
            let (src, dst) = c.addrs(dir);
            self.warnings.add("detect-cap", || {
                format!(
                    "connection {} {src} -> {dst}: more than {} undecided frame-boundary candidates; later offsets are not followed",
                    id.0,
                    crate::detect::MAX_CANDIDATES
                )
            });
        }
        let ds = &mut c.dirs[dir];
        let mut http1 = None;
        let (skip, preface) = match found {
            Found::NotHttp2 => {
                // Held from its start and not HTTP/2: neither is the connection, unless the
                // other side already proved it (then this side's bytes are said as not framed).
                if c.http2 {
                    let n = ds.pending.len();
                    let (src, dst) = c.addrs(dir);
                    self.warnings.add("no-http2-boundary", || {
                        format!(
                            "connection {} {src} -> {dst}: {n} bytes that start with no HTTP/2 frame, while the other side spoke HTTP/2; this direction is not counted",
                            id.0
                        )
                    });
                } else if matches!(c.dirs[dir.other()].phase, Phase::Unframed(_, Seek::Detect)) {
                    c.dirs[dir.other()].die();
                }
                c.dirs[dir].die();
                return;
            }
            Found::Wait => {
                if ds.pending.len() > MAX_DETECT_BYTES {
                    let resync = ds.phase.resyncing();
                    ds.phase.die();
                    ds.pending = Vec::new();
                    ds.pending_writes = Vec::new();
                    let (src, dst) = c.addrs(dir);
                    self.warnings.add("no-http2-boundary", || {
                        format!(
                            "connection {} {src} -> {dst}: no HTTP/2 frame boundary in the first {} bytes{}; this direction is not counted further",
                            id.0,
                            MAX_DETECT_BYTES,
                            if resync { " after a gap" } else { "" }
                        )
                    });
                }
                return;
            }
            Found::Preface(at) => {
                if at > PREFACE.len() {
                    let connect = ds.pending.starts_with(b"CONNECT ");
                    if c.prelude.is_none() {
                        c.prelude = Some(if connect {
                            Prelude::Connect
                        } else {
                            Prelude::Upgrade
                        });
                    }
                    if !connect && c.upgrade_req.is_none() {
                        if let (Some((m, t)), Some(&(_, rw))) =
                            (request_line(&ds.pending), ds.pending_writes.first())
                        {
                            c.upgrade_req = Some(Box::new((dir, m.to_vec(), t.to_vec(), rw)));
                        }
                    }
                }
                (at, true)
            }
            Found::Http1 { end, upgrade } => {
                http1 = Some(upgrade);
                (end, false)
            }
            Found::Frames(at) => (at, false),
        };
        let was_resync = ds.phase.resyncing();
        let pending = std::mem::take(&mut ds.pending);
        let writes = std::mem::take(&mut ds.pending_writes);
        ds.head_have = 0;
        ds.cur = None;
        ds.scan = None;
        // The preface ends at `skip`: anything before it (or an HTTP/1.1 prelude) was not
        // HTTP/2.
        let before = if preface {
            skip.saturating_sub(h2_frame_parser::PREFACE.len())
        } else {
            skip
        };
        let boundary = Boundary {
            preface,
            http1: http1.is_some(),
            skip,
            before,
        };
        if ds.phase.frames(boundary) {
            ds.set_decoder(mid_stream_decoder());
        }
        let mid_stream = ds.phase.mid_stream();
        if preface {
            c.set_client(dir, ClientBy::Preface);
        }
        if !c.http2 {
            c.http2 = true;
        }
        if let Some(upgrade) = http1 {
            if upgrade {
                c.prelude = Some(Prelude::Upgrade);
            } else if c.prelude.is_none() {
                c.prelude = Some(Prelude::Connect);
            }
        } else if skip > 0 && !preface {
            let (src, dst) = c.addrs(dir);
            let what = if was_resync {
                "after a gap, resynchronised"
            } else if mid_stream {
                "capture starts mid-frame, skipped"
            } else {
                "skipped"
            };
            self.warnings.add("skipped-bytes", || {
                format!(
                    "connection {} {src} -> {dst}: {what} {skip} bytes before the first proven frame boundary",
                    id.0
                )
            });
        } else if mid_stream && !was_resync {
            let (src, dst) = c.addrs(dir);
            self.warnings.add("mid-stream", || {
                format!(
                    "connection {} {src} -> {dst}: capture starts mid-connection; HPACK references to entries never seen decode as placeholders",
                    id.0
                )
            });
        }
        if http1 == Some(true) && !c.upgrade_seen {
            c.upgrade_seen = true;
            // The request may still be buffered in the other direction (when the 101 and the
            // server's first frame came before the client's preface).
            let other = &c.dirs[dir.other()];
            if c.upgrade_req.is_none() {
                if let (Some((m, t)), Some(&(_, rw))) =
                    (request_line(&other.pending), other.pending_writes.first())
                {
                    c.upgrade_req = Some(Box::new((dir.other(), m.to_vec(), t.to_vec(), rw)));
                }
            }
        }
        if c.upgrade_seen && !c.upgraded_call {
            if let Some(req) = c.upgrade_req.take() {
                let (rd, m, t, rw) = *req;
                c.upgraded_call = true;
                self.observer.upgraded_request(id, rd, &rw, &m, &t);
            }
        }
        // Replay the buffered bytes, each chunk with the write that carried it.
        let mut start = 0;
        for (end, w) in &writes {
            if *end > skip {
                let from = start.max(skip);
                self.frames(id, dir, w, &pending[from..*end]);
            }
            start = *end;
        }
        if let Some(c) = self.conns.get_mut(id.0 as usize) {
            let ds = &mut c.dirs[dir];
            if ds.pending.is_empty() {
                // Keep the allocation for a later resync.
                let mut p = pending;
                p.clear();
                ds.pending = p;
                let mut pw = writes;
                pw.clear();
                ds.pending_writes = pw;
            }
        }
    }
}
