//! What each frame of a call does: request and response headers, DATA cut into messages,
//! trailers, resets; PINGs for the round trip next to each call.

use super::*;
use crate::StreamStep;

/// [`CutEvents`] that list each complete message (length, compressed) for the counts.
struct Count<'a>(&'a mut Vec<(u32, bool)>);

impl CutEvents<'_> for Count<'_> {
    fn done(&mut self, len: u32, flag: u8) {
        self.0.push((len, flag != 0));
    }
}

/// A `grpc-message` value as the record keeps it: percent-decoded, at most
/// [`MAX_GRPC_MESSAGE`] bytes, escaped.
/// What a response's frame tells a call's record: its `grpc-encoding`, `grpc-message`, the
/// server's time and the last PING round trip, each when known.
#[inline]
fn response(
    cg: &mut CallGrpc,
    e: Option<Arc<str>>,
    msg: Option<Box<str>>,
    details: Option<Box<[u8]>>,
    server_time: Option<i64>,
    last_rtt: i64,
) {
    if let Some(e) = e {
        cg.encoding[1] = Some(e);
    }
    if msg.is_some() {
        cg.grpc_message = msg;
    }
    if details.is_some() {
        cg.status_details = details;
    }
    if let Some(t) = server_time {
        cg.server_time_ns = t.max(0);
    }
    if last_rtt >= 0 {
        cg.ping_rtt_ns = last_rtt;
    }
}

/// What a frame of a plain (not gRPC) call tells, in the table or held by its call (decision
/// 466): the server time when it is the first response block (`rel` 1: the responder's side;
/// `responded` and `req_end` its stream's), and whether the stream is over (a RST_STREAM, or
/// the ledger's step: a header block's where the block ends, `FrameEvent::block_step`,
/// decision 454); the request's end is noted when the requester's half closes.
#[inline]
fn plain_step(
    ev: &FrameEvent<'_>,
    rel: usize,
    responded: &mut bool,
    req_end: &mut Option<Nanos>,
) -> (Option<i64>, bool) {
    let server_time = if rel == 1 && !*responded && ev.class == FrameClass::Headers {
        *responded = true;
        req_end.map(|t| ev.ts - t)
    } else {
        None
    };
    let step = ev.block_step();
    let end = if ev.class == FrameClass::RstStream {
        true
    } else if matches!(step, StreamStep::HalfClosed | StreamStep::Ended) {
        if rel == 0 {
            *req_end = Some(ev.ts);
        }
        step == StreamStep::Ended
    } else {
        false
    };
    (server_time, end)
}

/// What a frame of a plain call adds to its record (`rec`, asked for only then), for a stream
/// in the table and one held by its call alike (decision 466): a responder's (`rel` 1) header
/// block's grpc-encoding, grpc-message and grpc-status-details-bin, the server time, and the
/// connection's last round trip (`last_rtt`, -1 when none); nothing when none is known.
fn plain_reply<'r>(
    encodings: &mut Vec<Arc<str>>,
    ev: &FrameEvent<'_>,
    rel: usize,
    server_time: Option<i64>,
    last_rtt: i64,
    rec: impl FnOnce() -> Option<&'r mut CallGrpc>,
) {
    let header_kind = matches!(
        ev.class,
        FrameClass::Headers | FrameClass::Trailers | FrameClass::Continuation
    );
    let (e, (msg, details)) = match (rel, ev.headers) {
        (1, Some(h)) if header_kind => (
            h.known(crate::Known::GrpcEncoding)
                .map(|v| encoding_id(encodings, v)),
            message_and_details(h),
        ),
        _ => (None, (None, None)),
    };
    if e.is_none() && msg.is_none() && details.is_none() && server_time.is_none() && last_rtt < 0 {
        return;
    }
    if let Some(cg) = rec() {
        response(cg, e, msg, details, server_time, last_rtt);
    }
}

/// A `grpc-status-details-bin` value as sent (base64), at most [`MAX_STATUS_DETAILS`] bytes.
fn status_details(v: &[u8]) -> Box<[u8]> {
    v[..v.len().min(MAX_STATUS_DETAILS)].into()
}

/// A response block's `grpc-message` ([`grpc_message`]) and `grpc-status-details-bin`
/// ([`status_details`]), each the first of its name, found in one pass over the fields.
fn message_and_details(h: &crate::HeaderList) -> (Option<Box<str>>, Option<Box<[u8]>>) {
    let (mut msg, mut details) = (None, None);
    for f in h.iter() {
        match f.name {
            b"grpc-message" if msg.is_none() => msg = Some(grpc_message(f.value)),
            b"grpc-status-details-bin" if details.is_none() => {
                details = Some(status_details(f.value));
            }
            _ => {}
        }
    }
    (msg, details)
}

fn grpc_message(m: &[u8]) -> Box<str> {
    let mut b = percent_decode(m);
    b.truncate(MAX_GRPC_MESSAGE);
    escape_bytes(&b).into_boxed_str()
}

/// Whether `ev` ends its stream for the tracker: a RST_STREAM, or the step (a header block's
/// where it ends) that closes the stream's second half.
#[inline]
fn ends_stream(ev: &FrameEvent<'_>) -> bool {
    ev.class == FrameClass::RstStream || ev.block_step() == StreamStep::Ended
}

/// A plain call's stream, held by its call until now ([`Recs::plain`]), goes on in the table
/// of its connection as it is (decision 466): its call ended before its stream.
fn detach(conns: &mut crate::FastMap<u32, ConnG>, conn: u32, sid: u32, id: CallId, p: Plain) {
    let c = conns.entry(conn).or_insert_with(|| ConnG {
        last_rtt: -1,
        ..ConnG::default()
    });
    let dir = p.req_dir;
    c.streams.insert(
        sid,
        Stream {
            call: id,
            req_dir: dir,
            grpc: false,
            cut: [Cutter::default(); 2],
            epoch: [c.epoch[dir], c.epoch[dir.other()]],
            req_end: p.req_end,
            responded: p.responded,
            bytes: None,
        },
    );
}

impl Grpc {
    /// One frame; `phase` is the phase of `ev.ts`, `call` the call index of the frame's stream,
    /// `call_over` whether the analysis ended that call at this frame.
    pub(crate) fn frame(
        &mut self,
        ev: &FrameEvent<'_>,
        phase: Option<u64>,
        call: Option<CallId>,
        call_over: bool,
        recs: &mut impl super::Recs,
    ) {
        let conn = ev.conn.0;
        let sid = ev.head.stream_id.0;
        if let Some(p) = &mut self.per_frame {
            p.clear();
        }
        if sid == 0 {
            if self.per_frame.is_some() {
                // No call records: the round trip is not needed.
                return;
            }
            if let crate::PingFact::Acked { sent } = ev.ping {
                let c = self.conns.entry(conn).or_insert_with(|| ConnG {
                    last_rtt: -1,
                    ..ConnG::default()
                });
                c.last_rtt = ev.ts - sent;
                self.rtt_seen = true;
            }
            return;
        }
        if let (Some(id), None) = (call, &self.per_frame) {
            if self.plain_frame(ev, id, call_over, recs) {
                return;
            }
        }
        let Grpc {
            conns,
            open,
            open_grpc,
            encodings,
            untracked_calls,
            keep,
            stash,
            credit,
            per_frame,
            no_plain,
            ..
        } = self;
        if per_frame.is_some() && call.is_none() && !conns.contains_key(&conn) {
            // `PerFrame` holds a connection only once it follows a gRPC stream there.
            return;
        }
        let c = conns.entry(conn).or_insert_with(|| ConnG {
            last_rtt: -1,
            ..ConnG::default()
        });
        let slot = match c.streams.find(sid) {
            Some(i) => i,
            None => {
                // A call's first HEADERS opens its stream here.
                if ev.class != FrameClass::Headers {
                    return;
                }
                let Some(id) = call else {
                    return;
                };
                if *open >= MAX_GRPC_STREAMS {
                    *untracked_calls += 1;
                    return;
                }
                let grpc = ev
                    .headers
                    .and_then(|h| h.known(crate::Known::ContentType))
                    .is_some_and(|v| v.starts_with(b"application/grpc"));
                if !grpc && per_frame.is_none() && recs.plain(id).is_some() {
                    // Held by its call, not put here (decision 466).
                    return self.open_plain(ev, id, call_over, recs);
                }
                let epoch = [c.epoch[ev.dir], c.epoch[ev.dir.other()]];
                let i = c.streams.insert(
                    sid,
                    Stream {
                        call: id,
                        req_dir: ev.dir,
                        grpc,
                        cut: [Cutter::default(); 2],
                        epoch,
                        req_end: None,
                        responded: false,
                        bytes: (grpc && per_frame.is_some())
                            .then(|| per_frame::StreamBytes::new(ev.headers)),
                    },
                );
                *open += 1;
                *open_grpc += usize::from(grpc);
                if !grpc && *no_plain {
                    // No record: only the stream's end is looked for (decision 464).
                    if ends_stream(ev) {
                        c.streams.discard_at(i);
                        *open -= 1;
                    }
                    return;
                }
                let e = ev
                    .headers
                    .and_then(|h| h.known(crate::Known::GrpcEncoding))
                    .map(|v| encoding_id(encodings, v));
                if let Some(cg) = recs.grpc_mut(id) {
                    cg.grpc = grpc;
                    cg.encoding[0] = e;
                    if let (Some((limits, budget)), true) = (keep.as_ref(), grpc) {
                        let path = ev
                            .headers
                            .and_then(|h| h.known(crate::Known::Path))
                            .unwrap_or_default();
                        cg.kept = Some(keep::Kept::make(path, *limits, budget, stash));
                    }
                }
                i
            }
        };
        let Some(st) = c.streams.slot_mut(slot) else {
            unreachable!("a found or inserted slot holds its stream")
        };
        let last_rtt = c.last_rtt;
        let idx = st.call;
        let rel = usize::from(ev.dir != st.req_dir);
        if !st.grpc && *no_plain {
            // Nothing reads the call's record: the stream's end is all (decision 464).
            if ends_stream(ev) {
                c.streams.discard_at(slot);
                *open -= 1;
            }
            return;
        }
        if !st.grpc {
            // Not gRPC (decision 233): nothing is cut, so no message is counted, lost or left
            // incomplete (the cutters stay as made); the stream's ends, the server time, the
            // response's grpc-encoding and grpc-message and the round trip are what is left.
            let (server_time, end) = plain_step(ev, rel, &mut st.responded, &mut st.req_end);
            if end {
                c.streams.discard_at(slot);
                *open -= 1;
            }
            plain_reply(encodings, ev, rel, server_time, last_rtt, || {
                recs.grpc_mut(idx)
            });
            return;
        }
        // Framing lost in a gap since this stream last looked: those directions lack bytes.
        let mut lost = [false; 2];
        for (r, l) in lost.iter_mut().enumerate() {
            let dir = if r == 0 {
                st.req_dir
            } else {
                st.req_dir.other()
            };
            let e = c.epoch[dir];
            if st.epoch[r] != e {
                st.epoch[r] = e;
                *l = st.grpc && st.cut[r].lose();
            }
        }
        let header_kind = matches!(
            ev.class,
            FrameClass::Headers | FrameClass::Trailers | FrameClass::Continuation
        );
        let mut done: Vec<(u32, bool)> = Vec::new();
        if let (Some(sb), 1, true) = (st.bytes.as_deref_mut(), rel, header_kind) {
            if let Some(v) = ev.headers.and_then(|h| h.get(b"grpc-encoding")) {
                sb.response_encoding(v);
            }
        }
        if ev.class == FrameClass::Data && st.grpc {
            match ev.frame {
                Some(Frame::Data(d)) if st.bytes.is_some() && per_frame.is_some() => {
                    let (Some(sb), Some(out)) = (st.bytes.as_deref_mut(), per_frame.as_mut())
                    else {
                        unreachable!("both are there")
                    };
                    let mut ev = out.events(sb, rel, &mut done);
                    st.cut[rel].feed_with(d.data, &mut ev);
                }
                Some(Frame::Data(d)) => {
                    let kept = match keep {
                        Some(_) => super::kept_mut(recs, idx),
                        None => None,
                    };
                    match kept {
                        Some(k) => {
                            let mut counts = Count(&mut done);
                            let mut ev = k.events(rel, credit, &mut counts);
                            st.cut[rel].feed_with(d.data, &mut ev);
                        }
                        None => st.cut[rel].feed(d.data, |n, z| done.push((n, z))),
                    }
                }
                _ => lost[rel] |= st.cut[rel].lose(),
            }
        }
        let first_response = rel == 1 && !st.responded && ev.class == FrameClass::Headers;
        if first_response {
            st.responded = true;
        }
        let server_time = match (first_response, st.req_end) {
            (true, Some(t)) => Some(ev.ts - t),
            _ => None,
        };
        let mut end = false;
        let mut partial = [false; 2];
        let step = ev.block_step();
        if ev.class == FrameClass::RstStream {
            partial = [st.cut[0].end(), st.cut[1].end()];
            end = true;
        } else if matches!(step, StreamStep::HalfClosed | StreamStep::Ended) {
            // A header block's step where the block ends, with its fields (decision 454).
            if rel == 0 {
                st.req_end = Some(ev.ts);
            }
            partial[rel] = st.cut[rel].end();
            end = step == StreamStep::Ended;
        }
        if let Some(sb) = st.bytes.as_deref_mut() {
            for r in 0..2 {
                if lost[r] || partial[r] || st.cut[r].is_lost() {
                    // Never cut again: the message in progress is dropped.
                    sb.buf[r] = Vec::new();
                }
            }
        }
        if end {
            c.streams.discard_at(slot);
            *open -= 1;
            *open_grpc -= 1;
        }
        // Per-call record and totals.
        let (enc, (msg, details)) = match (rel, ev.headers) {
            (1, Some(h)) if header_kind => (
                h.known(crate::Known::GrpcEncoding).map(<[u8]>::to_vec),
                message_and_details(h),
            ),
            _ => (None, (None, None)),
        };
        let e = enc.map(|v| self.encoding_id(&v));
        for (n, z) in &done {
            for s in self.sides(phase) {
                s[rel].messages += 1;
                s[rel].compressed += u64::from(*z);
                s[rel].sizes.add(u64::from(*n));
            }
        }
        for r in 0..2 {
            if lost[r] || partial[r] {
                self.incomplete(recs, idx, r, phase);
                if let Some(k) = super::kept_mut(recs, idx) {
                    k.abandon(r);
                }
            }
        }
        if done.is_empty()
            && e.is_none()
            && msg.is_none()
            && details.is_none()
            && server_time.is_none()
            && last_rtt < 0
        {
            // Nothing for the call's record (most frames of a call that is not gRPC).
            return;
        }
        let Some(cg) = recs.grpc_mut(idx) else {
            // The analysis folded the call already: nothing reads its record any more.
            return;
        };
        for (n, z) in done {
            let k = &mut cg.counts[rel];
            k.messages = k.messages.saturating_add(1);
            k.bytes += u64::from(n);
            k.compressed = k.compressed.saturating_add(u32::from(z));
        }
        response(cg, e, msg, details, server_time, last_rtt);
    }
}

impl Grpc {
    /// A frame of call `id`'s stream when the call holds it, or when no stream is in any
    /// table and this frame opens a plain call's (decision 466): done here, and `true`;
    /// `false` for a frame the connections' tables are for.
    #[inline]
    fn plain_frame(
        &mut self,
        ev: &FrameEvent<'_>,
        id: CallId,
        call_over: bool,
        recs: &mut impl super::Recs,
    ) -> bool {
        match recs.plain(id) {
            Some(p) if p.held && self.no_plain => {
                // Nothing reads the record (decision 464): the stream's end, or its call's.
                let end = ends_stream(ev);
                if end || call_over {
                    let gone = *p;
                    p.held = false;
                    self.let_go(ev, id, end, gone);
                }
                return true;
            }
            Some(p) if p.held => {
                self.held_frame(ev, id, call_over, recs);
                return true;
            }
            _ => {}
        }
        if self.open != self.plain_held {
            // A table may hold this stream: looked up there.
            return false;
        }
        // No stream in any table, so not this one: only a call's first HEADERS opens it.
        if ev.class != FrameClass::Headers {
            return true;
        }
        if self.open >= MAX_GRPC_STREAMS {
            self.untracked_calls += 1;
            return true;
        }
        let grpc = ev
            .headers
            .and_then(|h| h.known(crate::Known::ContentType))
            .is_some_and(|v| v.starts_with(b"application/grpc"));
        if grpc || recs.plain(id).is_none() {
            // Into a table.
            return false;
        }
        self.open_plain(ev, id, call_over, recs);
        true
    }

    /// A plain call's stream opens at its first HEADERS `ev`: held by call `id`, with its
    /// record's start when records are kept, then this frame as any other of it.
    fn open_plain(
        &mut self,
        ev: &FrameEvent<'_>,
        id: CallId,
        call_over: bool,
        recs: &mut impl super::Recs,
    ) {
        let Some(p) = recs.plain(id) else {
            return;
        };
        *p = Plain {
            held: true,
            req_dir: ev.dir,
            ..Plain::default()
        };
        self.open += 1;
        self.plain_held += 1;
        if self.no_plain {
            // No record (decision 464): the stream's end, or its call's, is all.
            let end = ends_stream(ev);
            if end || call_over {
                let gone = *p;
                p.held = false;
                self.let_go(ev, id, end, gone);
            }
            return;
        }
        let e = ev
            .headers
            .and_then(|h| h.known(crate::Known::GrpcEncoding))
            .map(|v| encoding_id(&mut self.encodings, v));
        if let Some(cg) = recs.grpc_mut(id) {
            cg.grpc = false;
            cg.encoding[0] = e;
        }
        self.held_frame(ev, id, call_over, recs);
    }

    /// Call `id` no longer holds its plain stream `gone` at `ev`: the stream ended (`end`),
    /// or goes on in its connection's table.
    fn let_go(&mut self, ev: &FrameEvent<'_>, id: CallId, end: bool, gone: Plain) {
        self.plain_held -= 1;
        if end {
            self.open -= 1;
        } else {
            detach(&mut self.conns, ev.conn.0, ev.head.stream_id.0, id, gone);
        }
    }

    /// A frame of a plain stream its call `id` holds: what the table's plain stream does
    /// below (decision 233) on the call's [`Plain`] instead; the stream goes to the table
    /// when the call ends first (`call_over`).
    fn held_frame(
        &mut self,
        ev: &FrameEvent<'_>,
        id: CallId,
        call_over: bool,
        recs: &mut impl super::Recs,
    ) {
        let Some(p) = recs.plain(id) else {
            return;
        };
        let rel = usize::from(ev.dir != p.req_dir);
        let (server_time, end) = plain_step(ev, rel, &mut p.responded, &mut p.req_end);
        if end || call_over {
            let gone = *p;
            p.held = false;
            self.let_go(ev, id, end, gone);
        }
        if self.no_plain {
            return;
        }
        // A round trip only once some PING was answered (the connection's is -1 before).
        let last_rtt = if self.rtt_seen {
            self.conns.get(&ev.conn.0).map_or(-1, |c| c.last_rtt)
        } else {
            -1
        };
        plain_reply(&mut self.encodings, ev, rel, server_time, last_rtt, || {
            recs.grpc_mut(id)
        });
    }
}
