//! Calls: opened by a request HEADERS, followed frame by frame while in flight, kept for a
//! moment after they end, then folded into their scope's counters and histograms.

use super::*;
use crate::StreamStep;

impl Analysis {
    /// The id of the pair (HTTP method, `:path`): calls are grouped by both (issue 20, item
    /// 6). The key is the method's length, the method, then the path.
    pub(super) fn method_id(&mut self, http: &[u8], path: &[u8]) -> u32 {
        let http = &http[..http.len().min(255)];
        // Calls of one method in a row: compared with the last key in place, not built first.
        if let (last, Some(i)) = &self.last_method {
            let n = http.len();
            if last.len() == 1 + n + path.len()
                && last[0] == n as u8
                && &last[1..1 + n] == http
                && &last[1 + n..] == path
            {
                return *i;
            }
        }
        let mut key = std::mem::take(&mut self.method_key);
        key.clear();
        key.push(http.len() as u8);
        key.extend_from_slice(http);
        key.extend_from_slice(path);
        let i = self.method_id_of_key(&key, http, path);
        self.method_key = key;
        i
    }

    fn method_id_of_key(&mut self, key: &[u8], http: &[u8], path: &[u8]) -> u32 {
        let (last, last_id) = &mut self.last_method;
        if let Some(i) = *last_id {
            if last.as_slice() == key {
                return i;
            }
        }
        let i = match self.method_ids.get(key) {
            Some(&i) => i,
            None => {
                if self.methods.len() >= MAX_METHODS {
                    // Not remembered: each such call is counted in `methods_folded`.
                    self.limits.methods_folded += 1;
                    return self.method_id_str("(other)");
                }
                let i = self.methods.len() as u32;
                self.methods.push(escape_bytes(path));
                self.http_methods.push(escape_bytes(http));
                self.method_first.push(Nanos::MAX);
                self.method_ids.insert(key.to_vec(), i);
                i
            }
        };
        let (last, last_id) = &mut self.last_method;
        last.clear();
        last.extend_from_slice(key);
        *last_id = Some(i);
        i
    }

    /// A call of method `m` started at `ts`: the method's first time is its earliest call's
    /// (the order of a whole capture's `methods`, and of merged ones: issue 39).
    #[inline]
    pub(super) fn method_seen(&mut self, m: u32, ts: Nanos) {
        if let Some(t) = self.method_first.get_mut(m as usize) {
            *t = (*t).min(ts);
        }
    }

    /// The id of a name of our own (`(other)`, `(unknown)`), without an HTTP method.
    pub(super) fn method_id_str(&mut self, s: &str) -> u32 {
        let mut key = vec![0];
        key.extend_from_slice(s.as_bytes());
        if let Some(&i) = self.method_ids.get(&key) {
            return i;
        }
        let i = self.methods.len() as u32;
        self.methods.push(s.to_string());
        self.http_methods.push(String::new());
        self.method_first.push(Nanos::MAX);
        self.method_ids.insert(key, i);
        i
    }

    /// The call on `key` is over (`ts`: when; `None` at the end of the input): it waits in
    /// `recent` for a BDP PING that may still name it.
    pub(super) fn end_call(&mut self, key: (u32, u32), ts: Option<Nanos>) {
        let Some(slot) = self.take_active(key) else {
            return;
        };
        if ts.is_none() {
            // Its connection or the input ended (a frame that ends a call is the gRPC
            // tracker's next, and it lets the stream go then): so did the stream it held.
            if let Some(l) = self.calls.get_mut(slot).filter(|l| l.plain.held) {
                l.plain.held = false;
                self.grpc.plain_closed();
            }
        }
        self.unlink(key.0, slot);
        let end = ts.unwrap_or(self.now);
        self.recent.push_back((slot, end));
        if self.recent.len() > RECENT_CALLS {
            self.fold_recent(end, false);
        }
    }

    /// Folds the ended calls older than [`RECENT_NS`] before `now` or beyond [`RECENT_CALLS`]
    /// (all of them with `all`).
    pub(super) fn fold_recent(&mut self, now: Nanos, all: bool) {
        while let Some(&(slot, end)) = self.recent.front() {
            let due =
                all || self.recent.len() > RECENT_CALLS || end.saturating_add(RECENT_NS) < now;
            if !due {
                break;
            }
            self.recent.pop_front();
            self.pin_or_fold(slot, now, all);
        }
        if !all && self.pin_sweep.is_some_and(|t| t < now) {
            self.sweep_pinned(now);
        }
        if all {
            self.pin_sweep = None;
            for slot in std::mem::take(&mut self.pinned) {
                if let Some(l) = self.calls.take(slot) {
                    self.fold_call(l);
                }
            }
        }
    }

    /// The pinned calls whose candidacy ran out by `now` are folded (in the order they were
    /// pinned); the others stay, and the next sweep is due when the first of them runs out.
    fn sweep_pinned(&mut self, now: Nanos) {
        self.pin_sweep = None;
        self.swept = now;
        for slot in std::mem::take(&mut self.pinned) {
            self.pin_or_fold(slot, now, false);
        }
    }

    /// The ended call in `slot` is due at `now`: folded, unless it is still a BDP candidate
    /// whose time has not run out (then it stays in its slot, pinned there; decision 472);
    /// `all`: folded whatever it is.
    #[inline]
    fn pin_or_fold(&mut self, slot: u32, now: Nanos, all: bool) {
        let Some(l) = self.calls.get(slot) else {
            return;
        };
        let (id, conn) = (CallId { slot, seq: l.seq }, l.rec.conn);
        match self.still_candidate(id, conn, now, all) {
            Some(ts) => {
                self.pin(slot);
                self.sweep_at(ts);
            }
            None => {
                if let Some(l) = self.calls.take(slot) {
                    self.fold_call(l);
                }
            }
        }
    }

    /// When the DATA that made call `id` (of connection `conn`) a BDP candidate came, if its
    /// time has not run out at `now` (and not `all`); otherwise `None`, and it is no longer a
    /// candidate of either direction (a PING after it opens a round of the streams whose DATA
    /// comes after the PING). One look-up of the
    /// connection: every call passes here once.
    #[inline]
    fn still_candidate(&mut self, id: CallId, conn: u32, now: Nanos, all: bool) -> Option<Nanos> {
        // Most calls are no direction's candidate: read first, change only a candidate.
        let mut ts = Nanos::MIN;
        for (_, d) in self.conns.get(&conn)?.dirs.iter() {
            if let Some(c) = &d.candidate {
                if c.call == Some(id) {
                    ts = ts.max(c.ts);
                }
            }
            if let Some(c) = &d.latest {
                if c.call == Some(id) {
                    ts = ts.max(c.ts);
                }
            }
        }
        if ts == Nanos::MIN {
            return None;
        }
        if !all && !lapsed(ts, now) {
            return Some(ts);
        }
        let st = self.conns.get_mut(&conn)?;
        for d in st.dirs.iter_mut() {
            if d.candidate.is_some_and(|c| c.call == Some(id)) {
                d.candidate = None;
                d.waiting.clear();
            }
            if d.latest.is_some_and(|c| c.call == Some(id)) {
                d.latest = None;
            }
        }
        None
    }

    /// The ended call in `slot` waits among the pinned ones (marked in its links, which an
    /// ended call no longer uses, so that [`Analysis::unpin`] looks among them only for it).
    fn pin(&mut self, slot: u32) {
        if let Some(l) = self.calls.get_mut(slot) {
            l.links[0] = PINNED;
        }
        self.pinned.push(slot);
    }

    /// A call whose candidacy began at `ts` is pinned: the next sweep comes when it runs out,
    /// but not sooner than [`PIN_SWEEP_NS`] after the last sweep, so that the sweeps' work (each
    /// looks at every pinned call) stays at most 16 a second of capture time.
    fn sweep_at(&mut self, ts: Nanos) {
        let due = ts
            .saturating_add(RECENT_NS)
            .max(self.swept.saturating_add(PIN_SWEEP_NS));
        self.pin_sweep = Some(self.pin_sweep.map_or(due, |t| t.min(due)));
    }

    /// Whether call `id` is a BDP candidate of either direction of its connection.
    pub(super) fn is_candidate(&self, id: CallId) -> bool {
        self.calls
            .get(id.slot)
            .filter(|l| l.seq == id.seq)
            .is_some_and(|l| self.is_candidate_rec(id, l.rec.conn))
    }

    /// [`Analysis::is_candidate`] for call `id` of connection `conn`.
    fn is_candidate_rec(&self, id: CallId, conn: u32) -> bool {
        self.conns.get(&conn).is_some_and(|st| {
            st.dirs
                .iter()
                .flat_map(|(_, d)| [d.candidate, d.latest])
                .any(|c| c.is_some_and(|c| c.call == Some(id)))
        })
    }

    /// A pinned call that is no longer anyone's candidate: fold it.
    pub(super) fn unpin(&mut self, id: CallId) {
        if self.is_candidate(id) {
            return;
        }
        // A pinned slot holds its call: nothing else folds it. A call not pinned (in flight,
        // or ended and not yet folded) is not looked for among the pinned.
        if self
            .calls
            .get(id.slot)
            .is_none_or(|l| l.seq != id.seq || l.links[0] != PINNED)
        {
            return;
        }
        if let Some(i) = self.pinned.iter().position(|&s| s == id.slot) {
            self.pinned.swap_remove(i);
            if let Some(l) = self.calls.take(id.slot) {
                self.fold_call(l);
            }
        }
    }

    fn fold_call(&mut self, l: Live) {
        let Live {
            seq,
            grpc: g,
            rec: ref c,
            ..
        } = l;
        let flow = self.flow.take_call(seq);
        let method = self
            .methods
            .get(c.method as usize)
            .map(String::as_str)
            .unwrap_or("(other)");
        let latency = (c.end >= 0 && !c.reset()).then_some(c.end);
        let phase = self.phase(c.start);
        if !c.counted() {
            return;
        }
        if self.calls_only {
            self.finished.push(Finished {
                rec: *c,
                flow,
                grpc: g,
            });
            return;
        }
        let key = c.status_key();
        let grpc = self
            .grpc
            .fold_call(g, method, || key.name(), latency, phase);
        if self.keep_finished {
            self.finished.push(Finished {
                rec: *c,
                flow,
                grpc,
            });
        } else {
            self.calls.recycle(grpc);
        }
        let mut folded = 0;
        self.scoped(c.start, |s, is_phase| {
            let agg = &mut s.calls;
            agg.calls += 1;
            for side in Side::ALL {
                agg.opened[side] += u64::from(c.opened_round(side));
            }
            if c.end >= 0 && !c.reset() {
                agg.latency.record(c.end);
            }
            if c.first_byte >= 0 {
                agg.first_byte.record(c.first_byte);
            }
            agg.inflight_sum += u64::from(c.inflight);
            agg.max_inflight = agg.max_inflight.max(c.inflight);
            agg.reset += u64::from(c.reset());
            agg.unfinished += u64::from(c.end < 0 && !c.reset());
            let mut method = c.method;
            if is_phase
                && !agg.methods.contains_key(&method)
                && agg.methods.len() >= MAX_PHASE_METHODS
            {
                folded += 1;
                method = OTHER_METHOD;
            }
            let m = agg.methods.entry(method).or_default();
            m.first = if m.calls == 0 {
                c.start
            } else {
                m.first.min(c.start)
            };
            m.calls += 1;
            *m.status.entry(c.status_key()).or_default() += 1;
            for rel in 0..2 {
                for k in 0..4 {
                    m.frames[rel][k] += u64::from(c.frames[rel][k]);
                }
                m.writes[rel] += u64::from(c.writes[rel]);
            }
            if c.end >= 0 && !c.reset() {
                m.latency.record(c.end);
            }
        });
        self.limits.methods_folded += folded;
    }

    /// `before`: the call of this frame's stream before it (its connection's `active` entry);
    /// returns the call after it (none when the frame ended it).
    pub(super) fn on_call_frame(
        &mut self,
        ev: &FrameEvent<'_>,
        before: Option<u32>,
    ) -> Option<CallId> {
        let sid = ev.head.stream_id.0;
        let key = (ev.conn.0, sid);
        let mut cur = before;
        if ev.class == FrameClass::Headers && cur.is_none() {
            let is_response = ev
                .headers
                .and_then(|h| h.iter().next())
                .is_some_and(|h| h.name == b":status");
            if is_response {
                return None;
            }
            if self.active_len >= MAX_ACTIVE_CALLS {
                self.limits.untracked_calls += 1;
                return None;
            }
            let http = ev
                .headers
                .and_then(|h| h.known(crate::Known::Method))
                .unwrap_or(b"");
            let method = match ev.headers.and_then(|h| h.known(crate::Known::Path)) {
                Some(p) => self.method_id(http, p),
                None => self.method_id_str("(unknown)"),
            };
            self.method_seen(method, ev.ts);
            let seq = self.next_seq;
            self.next_seq += 1;
            let mut flags = if ev.dir == Dir::Rev { F_REQ_REV } else { 0 };
            if ev.side == Side::Client {
                flags |= F_REQ_CLIENT;
            }
            let slot = self.insert_in_flight(
                ev.conn,
                sid,
                Live {
                    seq,
                    grpc: None,
                    plain: Default::default(),
                    links: [NO_SLOT; 2],
                    rec: CallRec {
                        start: ev.ts,
                        first_byte: -1,
                        end: -1,
                        conn: ev.conn.0,
                        stream: sid,
                        method,
                        grpc_status: NO_STATUS,
                        http_status: 0,
                        frames: [[0; 4]; 2],
                        writes: [0; 2],
                        inflight: 0,
                        flags,
                        reset_code: 0,
                    },
                    last_write: [NO_WRITE; 2],
                },
            );
            cur = Some(slot);
        }
        if ev.class == FrameClass::Continuation && ev.block_class() == Some(FrameClass::Headers) {
            // The end of a first block split over CONTINUATION (decision 454): the request's
            // `:path` is here when its sender is the requester.
            let pending = cur.and_then(|q| self.calls.get(q)).is_some_and(|l| {
                let rev = l.rec.flags & F_REQ_REV != 0;
                rev == (ev.dir == Dir::Rev)
            });
            if pending {
                if let Some(p) = ev.headers.and_then(|h| h.known(crate::Known::Path)) {
                    let http = ev
                        .headers
                        .and_then(|h| h.known(crate::Known::Method))
                        .unwrap_or(b"");
                    let m = self.method_id(http, p);
                    self.method_seen(m, ev.ts);
                    if let Some(l) = cur.and_then(|q| self.calls.get_mut(q)) {
                        l.rec.method = m;
                    }
                }
            }
        }
        let Some(slot) = cur else {
            // A frame after the call's end: counted in it while it is not folded.
            if let Some(&(_, q)) = self.ended.iter().rev().find(|r| r.0 == key) {
                if let Some(l) = self.calls.get_id_mut(q) {
                    l.rec.count_frame(ev);
                }
            }
            return None;
        };
        let a = self.calls.get_mut(slot)?;
        let id = CallId { slot, seq: a.seq };
        let call = &mut a.rec;
        let rel = call.count_frame(ev);
        if ev.write != NO_WRITE && ev.write != a.last_write[rel] {
            a.last_write[rel] = ev.write;
            call.writes[rel] = call.writes[rel].saturating_add(1);
        }
        let dt = ev.ts - call.start;
        if rel == 1 {
            if call.first_byte < 0 {
                call.first_byte = dt;
            }
            if let Some(h) = ev.headers {
                if let Some(s) = h.known(crate::Known::Status).and_then(parse_u16) {
                    call.http_status = s;
                }
                if let Some(s) = h.known(crate::Known::GrpcStatus).and_then(parse_u16) {
                    call.grpc_status = s;
                }
            }
        }
        let mut done = false;
        if ev.class == FrameClass::RstStream {
            let code = match ev.frame {
                Some(h2_frame_parser::Frame::RstStream(r)) => r.code.0,
                _ => h2_frame_parser::ErrorCode::NO_ERROR.0,
            };
            call.set_reset(code, ev.side);
            done = true;
        } else if rel == 1 {
            // The server's half closed, as the ledger's model of the stream says: a header
            // block's where the block ends, with its grpc-status (decision 454).
            if matches!(ev.block_step(), StreamStep::HalfClosed | StreamStep::Ended) && call.end < 0
            {
                call.end = dt;
                done = true;
            }
        }
        if done {
            if self.ended.len() >= 64 {
                self.ended.pop_front();
            }
            self.ended.push_back((key, id));
            self.end_call(key, Some(ev.ts));
            return None;
        }
        Some(id)
    }

    /// Hands the calls folded since the last call to `f`, in the order they were folded (about
    /// the order they ended). Needs [`Analysis::keep_finished`].
    pub fn drain_finished(&mut self, mut f: impl FnMut(CallView<'_>)) {
        // Read in place, then dropped at once: a record is not moved out to be looked at.
        for c in &self.finished {
            f(CallView {
                rec: &c.rec,
                method: self
                    .methods
                    .get(c.rec.method as usize)
                    .map(String::as_str)
                    .unwrap_or(""),
                http_method: self
                    .http_methods
                    .get(c.rec.method as usize)
                    .map(String::as_str)
                    .unwrap_or(""),
                flow: c.flow,
                grpc: c.grpc.as_deref(),
            });
        }
        for c in self.finished.drain(..) {
            self.calls.recycle(c.grpc);
        }
    }
}

/// A folded call kept for [`Analysis::drain_finished`].
#[derive(Debug)]
pub(super) struct Finished {
    pub(super) rec: CallRec,
    pub(super) flow: crate::flow::CallFlow,
    pub(super) grpc: Option<Box<crate::grpc::CallGrpc>>,
}

/// One call, with its method name, its flow-control stalls and its gRPC messages.
#[derive(Clone, Copy, Debug)]
pub struct CallView<'a> {
    /// The call's record: times, status, frames and writes per side.
    pub rec: &'a CallRec,
    /// The call's `:path` (escaped as [`escape_bytes`] does), or `(unknown)` / `(other)`.
    pub method: &'a str,
    /// The call's `:method` (`GET`, `POST`; escaped), empty when it had none.
    pub http_method: &'a str,
    /// Its flow-control stalls per side.
    pub flow: crate::flow::CallFlow,
    /// What the gRPC tracker saw of it (whether it is gRPC at all, its messages per side);
    /// `None` when the tracker kept no record of it ([`crate::grpc::MAX_GRPC_STREAMS`] calls
    /// were open).
    pub grpc: Option<&'a crate::grpc::CallGrpc>,
}

impl CallView<'_> {
    /// `grpc-status N`, `:status N`, `RST_STREAM` or `none`.
    pub fn status(&self) -> String {
        self.rec.status_key().name()
    }

    /// [`CallView::status`] in two parts, the text and the number after it (`("grpc-status ",
    /// Some(0))`, `("RST_STREAM", None)`), for writers that print it without a `String`.
    pub fn status_parts(&self) -> (&'static str, Option<u16>) {
        self.rec.status_key().parts()
    }
}
