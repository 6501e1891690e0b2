//! The analysis as an [`Observer`]: each write, frame, gap and close routed to the jobs above.

use super::*;
use crate::ledger::HeaderNeed;

/// Whether `name` is a header field the analysis and its trackers read (`:path`, `:status`,
/// `grpc-status`, `grpc-message`, `grpc-status-details-bin`, `grpc-encoding`, `content-type`).
#[inline]
pub(crate) fn reads_header(name: &[u8]) -> bool {
    matches!(
        name,
        b":path"
            | b":method"
            | b":status"
            | b"grpc-status"
            | b"grpc-message"
            | b"grpc-status-details-bin"
            | b"grpc-encoding"
            | b"grpc-timeout"
            | b"content-type"
    )
}

impl Observer for Analysis {
    fn header_need(&self) -> HeaderNeed {
        HeaderNeed::Some(reads_header)
    }

    fn wants_data(&self, conn: ConnId, stream: StreamId) -> bool {
        Analysis::wants_data(self, conn, stream)
    }

    fn open(&mut self, meta: &ConnMeta) {
        self.flow.open(meta);
    }

    fn gap(&mut self, conn: ConnId, dir: Dir, ts: Nanos, framing_lost: bool) {
        let phase = self.phase(ts);
        self.flow.gap(conn, framing_lost, phase);
        self.grpc.gap(conn, dir, framing_lost);
    }

    fn upgraded_request(&mut self, conn: ConnId, dir: Dir, w: &Write, m: &[u8], target: &[u8]) {
        // Stream 1 is the upgraded request's call (docs/ledger.md, "Call"); it was sent by the
        // client (the side that sent the Upgrade request).
        let key = (conn.0, 1);
        if self.active_slot(key.0, key.1).is_some() || self.active_len >= MAX_ACTIVE_CALLS {
            return;
        }
        let method = self.method_id(m, target);
        self.method_seen(method, w.ts);
        let seq = self.next_seq;
        self.next_seq += 1;
        let flags = F_REQ_CLIENT | if dir == Dir::Rev { F_REQ_REV } else { 0 };
        self.insert_in_flight(
            conn,
            1,
            Live {
                seq,
                grpc: None,
                plain: Default::default(),
                links: [NO_SLOT; 2],
                rec: CallRec {
                    start: w.ts,
                    first_byte: -1,
                    end: -1,
                    conn: conn.0,
                    stream: 1,
                    method,
                    grpc_status: NO_STATUS,
                    http_status: 0,
                    frames: [[0; 4]; 2],
                    writes: [1, 0],
                    inflight: 0,
                    flags,
                    reset_code: 0,
                },
                last_write: [w.index, NO_WRITE],
            },
        );
    }

    fn write(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        self.write_in(conn, dir, w);
    }

    fn frame(&mut self, ev: &FrameEvent<'_>) {
        let phase = self.route(ev.ts);
        self.frame_in(ev, phase);
    }
    fn close(&mut self, summary: &ConnSummary) {
        let id = summary.id.0;
        // The phase of the connection's own end (its second FIN, its RST, the run's end), not
        // of the clock: the latest write or frame of any connection so far depends on what
        // else the session saw, so a part of `-j N` would close it earlier (decision 460).
        let phase = self.phase(summary.end.unwrap_or(self.now));
        self.flow.close(summary.id, phase);
        self.grpc.close(summary.id, phase, &mut self.calls);
        self.close_pending(id);
        let mut live: Vec<(u32, u32)> = self
            .in_flight_streams(id)
            .into_iter()
            .map(|sid| (id, sid))
            .collect();
        live.sort_unstable();
        for key in live {
            self.end_call(key, None);
        }
        let Some(st) = self.conns.remove(&id) else {
            return;
        };
        // Its calls in flight were ended above (their list is their table's contents); the
        // count over all connections stays exact whatever is left.
        debug_assert_eq!(st.active.len(), 0);
        self.active_len = self.active_len.saturating_sub(st.active.len());
        let was = st.dirs.iter().flat_map(|(_, d)| [d.candidate, d.latest]);
        for q in was.flatten().filter_map(|c| c.call) {
            self.unpin(q);
        }
        if !summary.http2 {
            return;
        }
        let ci = summary.client_dir;
        let fold = |into: &mut Sides<Acc>, from: &Dirs<Acc>| {
            into.client.merge(&from[ci]);
            into.server.merge(&from[ci.other()]);
        };
        fold(&mut self.whole.sides, &st.whole);
        for (p, accs) in st.phases.iter() {
            match self.phases.get_mut(p) {
                Some(s) => fold(&mut s.sides, accs),
                None => self.limits.phase_events_dropped += 1,
            }
        }
    }
}

impl Analysis {
    /// One write (its phase, when the run has phases, is routed when its frames are counted).
    pub fn write_in(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        self.origin(w.ts);
        self.now = self.now.max(w.ts);

        if self.calls_only {
            return;
        }
        let d = dir;
        let streams = self.pool.pop().unwrap_or_default();
        let ds = &mut self.conn(conn).dirs[d];
        ds.open_writes.push_back(OpenWrite {
            index: w.index,
            ts: w.ts,
            len: w.len,
            frames: 0,
            streams,
        });
        if ds.open_writes.len() > MAX_OPEN_WRITES {
            if let Some(old) = ds.open_writes.pop_front() {
                self.close_write(conn.0, d, old);
            }
        }
    }

    /// Closes the open writes of `(conn, d)` before write `index`.
    fn close_writes_before(&mut self, conn: ConnId, d: Dir, index: u64) {
        loop {
            let ds = &mut self.conn(conn).dirs[d];
            match ds.open_writes.front() {
                Some(w) if w.index < index => {
                    let w = ds.open_writes.pop_front().expect("front exists");
                    self.close_write(conn.0, d, w);
                }
                _ => break,
            }
        }
    }

    /// One frame, in `phase` (the run routes each frame to its phase once; [`Analysis::route`]).
    pub fn frame_in(&mut self, ev: &FrameEvent<'_>, phase: Option<u64>) {
        self.origin(ev.ts);
        self.now = self.now.max(ev.ts);
        let d = ev.dir;
        let sid = ev.head.stream_id.0;
        // What the write carried.
        if ev.write != NO_WRITE && !self.calls_only {
            // One lookup of the connection per frame; the writes before this frame's are closed
            // once per write, not per frame.
            let mut ds = &mut self.conn(ev.conn).dirs[d];
            if ds.open_writes.front().is_some_and(|w| w.index < ev.write) {
                self.close_writes_before(ev.conn, d, ev.write);
                ds = &mut self.conn(ev.conn).dirs[d];
            }
            if let Some(w) = ds.open_writes.front_mut() {
                if w.index == ev.write {
                    w.frames += 1;
                    if sid != 0 && !ev.class.is_control() && !w.streams.contains(&sid) {
                        w.streams.push(sid);
                    }
                }
            }
        }
        // The call before this frame, and after it (a frame may open or end it); stream 0
        // carries no call.
        let (call_before, call_after) = if sid != 0 {
            let before = self.active_slot(ev.conn.0, sid);
            let before_id =
                before.and_then(|slot| self.calls.get(slot).map(|l| CallId { slot, seq: l.seq }));
            (before_id, self.on_call_frame(ev, before))
        } else {
            (None, None)
        };
        let call = call_before.or(call_after);
        self.flow.frame(ev, phase, call.map(|c| c.seq));
        let call_over = call_before.is_some() && call_after.is_none();
        self.grpc.frame(ev, phase, call, call_over, &mut self.calls);
        match (ev.class, ev.frame) {
            (FrameClass::Data, _) if sid != 0 => {
                // DATA received by the other direction: BDP round bookkeeping of the receiver.
                let seq = call_after;
                let ds = &mut self.conn(ev.conn).dirs[d.other()];
                let new = super::Candidate {
                    stream: sid,
                    call: seq,
                    ts: ev.ts,
                };
                // A call that stops being a candidate here while pinned is folded by the next
                // sweep of the pinned calls, within RECENT_NS of its DATA (decision 472).
                match ds.round.as_mut() {
                    Some(r) => {
                        if r.streams.len() < MAX_ROUND_CALLS {
                            r.streams.insert(sid);
                        }
                    }
                    None => {
                        if ds.on_latest {
                            ds.latest = Some(new);
                        }
                        match ds.candidate {
                            None => ds.candidate = Some(new),
                            // No BDP PING came for the candidate's DATA in time: this DATA is
                            // the next one a PING may name.
                            Some(c) if c.stale(ev.ts) => {
                                ds.candidate = Some(new);
                                ds.waiting.clear();
                            }
                            Some(c) => {
                                if c.stream != sid && ds.waiting.len() + 1 < MAX_ROUND_CALLS {
                                    ds.waiting.insert(sid);
                                }
                            }
                        }
                    }
                }
            }
            (FrameClass::Ping | FrameClass::PingAck, Some(Frame::Ping(p))) => {
                self.on_ping(ev, p.payload, ev.class == FrameClass::PingAck);
            }
            (FrameClass::RstStream, Some(Frame::RstStream(r))) => {
                let (side, slot) = (ev.side, super::rst_slot(r.code.0));
                self.codes.rst_stream[side][slot] += 1;
                self.scoped(ev.ts, |s, _| s.resets[side][slot] += 1);
            }
            (FrameClass::GoAway, Some(Frame::GoAway(g))) => {
                if g.code == ErrorCode::ENHANCE_YOUR_CALM {
                    self.calm_goaways[ev.side] += 1;
                }
                self.codes.goaway[ev.side][super::rst_slot(g.code.0)] += 1;
                if self.goaways.len() < MAX_GOAWAYS {
                    let debug = escape_bytes(&g.debug[..g.debug.len().min(256)]);
                    self.goaways.push(GoAwayRec {
                        ts: ev.ts,
                        phase,
                        conn: ev.conn.0,
                        side: ev.side,
                        last_stream_id: g.last_stream_id,
                        code: g.code,
                        debug,
                    });
                } else {
                    self.limits.goaways_omitted += 1;
                }
            }
            _ => {}
        }
        self.advance(ev.ts);
    }
}
