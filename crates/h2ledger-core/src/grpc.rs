//! gRPC messages per call, cut from the DATA payloads without any .proto file, and the
//! server time of every call.
//!
//! A call is gRPC when its request `content-type` starts with `application/grpc`. Each
//! direction's DATA payloads (padding removed, in order) are a sequence of length-prefixed
//! messages: a 1-byte Compressed-Flag, a 4-byte big-endian Message-Length, the message
//! (gRPC's PROTOCOL-HTTP2.md). [`Cutter`] finds the boundaries incrementally, keeping at most 5
//! bytes: a message may span any number of DATA frames and a frame may hold many messages.
//!
//! Never guessed: when the capture lacks bytes of a direction (a DATA frame cut by a gap, lost
//! framing), the message in progress and the rest of that direction are not cut; the loss
//! counts one `incomplete` message (at least one message lacked bytes). A message still
//! unfinished when its direction ends (END_STREAM, RST_STREAM, the capture's end) is
//! `incomplete` too.
//!
//! **Server time** of a call: from the request's END_STREAM to the first response HEADERS
//! (when the response HEADERS comes first, as in a bidirectional stream, there is none). Next to
//! it, the latest PING round trip measured on the call's connection before the call's last
//! frame, so a reader sees how much of a call was the network.
//!
//! Memory: per open call a few dozen bytes (at most [`MAX_GRPC_STREAMS`]; beyond, calls are
//! counted as untracked), freed when the call ends; per connection 8 PINGs, freed at close;
//! per recorded call a [`CallGrpc`]. A lost framing is recorded in O(1) per gap (a per-direction
//! loss counter each stream compares with the one it last saw).

use std::collections::hash_map::Entry;
use std::collections::BTreeMap;

use crate::FastMap;

use crate::phase::Phased;
use std::sync::Arc;

use h2_frame_parser::Frame;
use h2ledger_tcp::{ConnId, Dir, Dirs, Nanos};
use serde::Serialize;

use crate::ledger::FrameEvent;
use crate::model::{FrameClass, Sides};
use crate::stats::LogHist;
use crate::stats::Percentiles;
use crate::text::escape_bytes;

/// Calls followed at once.
pub const MAX_GRPC_STREAMS: usize = 1 << 20;
/// Bytes of `grpc-message` kept (after percent-decoding).
const MAX_GRPC_MESSAGE: usize = 256;
/// Distinct `grpc-encoding` values named; later ones are `(other)`.
const MAX_ENCODINGS: usize = 32;
/// PINGs per connection waiting for their ACK.
const MAX_PINGS: usize = 8;

/// Messages of one direction of one call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Complete messages.
    pub messages: u32,
    /// Sum of their Message-Length fields.
    pub bytes: u64,
    /// Of the complete messages, those with Compressed-Flag set.
    pub compressed: u32,
    /// Messages whose bytes the capture lacks (see the module docs).
    pub incomplete: u32,
}

/// Incremental gRPC message framing of one direction.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cutter {
    hdr: [u8; 5],
    have: u8,
    in_payload: bool,
    remaining: u64,
    len: u32,
    flag: u8,
    lost: bool,
}

impl Cutter {
    /// Feeds payload bytes; `done(length, compressed)` for each message completed.
    pub fn feed(&mut self, mut b: &[u8], mut done: impl FnMut(u32, bool)) {
        if self.lost {
            return;
        }
        while !b.is_empty() {
            if self.in_payload {
                let n = (self.remaining.min(b.len() as u64)) as usize;
                self.remaining -= n as u64;
                b = &b[n..];
                if self.remaining == 0 {
                    self.in_payload = false;
                    done(self.len, self.flag != 0);
                }
            } else {
                let have = usize::from(self.have);
                let n = (5 - have).min(b.len());
                self.hdr[have..have + n].copy_from_slice(&b[..n]);
                self.have += n as u8;
                b = &b[n..];
                if self.have == 5 {
                    self.have = 0;
                    self.flag = self.hdr[0];
                    self.len =
                        u32::from_be_bytes([self.hdr[1], self.hdr[2], self.hdr[3], self.hdr[4]]);
                    if self.len == 0 {
                        done(0, self.flag != 0);
                    } else {
                        self.in_payload = true;
                        self.remaining = u64::from(self.len);
                    }
                }
            }
        }
    }

    /// Bytes the capture lacks: true when this counts an incomplete message (the first loss).
    pub fn lose(&mut self) -> bool {
        let first = !self.lost;
        self.lost = true;
        first
    }

    /// The direction ended: true when a message was in progress (incomplete).
    pub fn end(&mut self) -> bool {
        let partial = !self.lost && (self.in_payload || self.have > 0);
        self.in_payload = false;
        self.have = 0;
        self.lost = true;
        partial
    }

    fn is_lost(&self) -> bool {
        self.lost
    }
}

/// Per call: what [`Grpc`] saw. Index 0 is the client (request) side, 1 the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallGrpc {
    /// The request's content-type starts with `application/grpc`.
    pub grpc: bool,
    pub counts: [Counts; 2],
    /// `grpc-encoding` of the request and of the response (shared with [`Grpc::encodings`]).
    pub encoding: [Option<Arc<str>>; 2],
    pub grpc_message: Option<Box<str>>,
    /// Request END_STREAM to the first response HEADERS, nanoseconds; -1 when not seen.
    pub server_time_ns: i64,
    /// The connection's latest PING round trip before the call's last frame; -1 if none.
    pub ping_rtt_ns: i64,
}

impl Default for CallGrpc {
    fn default() -> Self {
        CallGrpc {
            grpc: false,
            counts: [Counts::default(); 2],
            encoding: [None, None],
            grpc_message: None,
            server_time_ns: -1,
            ping_rtt_ns: -1,
        }
    }
}

#[derive(Debug)]
struct Stream {
    idx: u64,
    req_dir: Dir,
    grpc: bool,
    cut: [Cutter; 2],
    /// The connection's loss counter of each side's direction when last looked at.
    epoch: [u32; 2],
    ended: [bool; 2],
    req_end: Option<Nanos>,
    responded: bool,
    /// END_STREAM was on a header block still waiting for CONTINUATION.
    ending: bool,
}

#[derive(Debug, Default)]
struct ConnG {
    /// Framing losses per direction.
    epoch: Dirs<u32>,
    pings: Vec<([u8; 8], Nanos, Dir)>,
    last_rtt: i64,
    streams: FastMap<u32, Stream>,
}

#[derive(Clone, Debug, Default)]
struct SideMsgs {
    messages: u64,
    compressed: u64,
    incomplete: u64,
    sizes: LogHist,
}

/// The gRPC tracker. [`crate::Analysis`] feeds it every frame.
#[derive(Debug, Default)]
pub struct Grpc {
    conns: FastMap<u32, ConnG>,
    open: usize,
    /// Per call in flight or not yet folded, by the analysis' call sequence number.
    calls: FastMap<u64, CallGrpc>,
    /// `grpc-encoding` values seen.
    pub encodings: Vec<Arc<str>>,
    whole: [SideMsgs; 2],
    phases: Phased<[SideMsgs; 2]>,
    /// Per-method totals of the folded gRPC calls: the whole capture, and per phase.
    methods: GrpcScope,
    phase_methods: Phased<GrpcScope>,
    /// Calls not followed because [`MAX_GRPC_STREAMS`] were open.
    pub untracked_calls: u64,
}

/// `%XX` sequences decoded (gRPC percent-encodes grpc-message); invalid ones kept as is.
fn percent_decode(v: &[u8]) -> Vec<u8> {
    let hex = |c: u8| (c as char).to_digit(16).map(|x| x as u8);
    let mut out = Vec::with_capacity(v.len());
    let mut i = 0;
    while i < v.len() {
        if v[i] == b'%' && i + 2 < v.len() {
            if let (Some(a), Some(b)) = (hex(v[i + 1]), hex(v[i + 2])) {
                out.push(a << 4 | b);
                i += 3;
                continue;
            }
        }
        out.push(v[i]);
        i += 1;
    }
    out
}

/// The interned `grpc-encoding` value `v` (at most [`MAX_ENCODINGS`] distinct, then "(other)").
fn encoding_id(encodings: &mut Vec<Arc<str>>, v: &[u8]) -> Arc<str> {
    let s = escape_bytes(&v[..v.len().min(64)]);
    if let Some(e) = encodings.iter().find(|e| ***e == *s) {
        return e.clone();
    }
    if encodings.len() >= MAX_ENCODINGS {
        return Arc::from("(other)");
    }
    let e: Arc<str> = Arc::from(s);
    encodings.push(e.clone());
    e
}

impl Grpc {
    pub fn new() -> Self {
        Grpc::default()
    }

    /// The record of call `seq` while it is not folded.
    pub fn call(&self, seq: u64) -> Option<&CallGrpc> {
        self.calls.get(&seq)
    }

    /// Forgets call `seq` (a call the analysis does not count).
    pub fn drop_call(&mut self, seq: u64) {
        self.calls.remove(&seq);
    }

    /// Call `seq`'s record, removed, without folding it into any total (the calls view).
    pub fn take_call(&mut self, seq: u64) -> Option<CallGrpc> {
        self.calls.remove(&seq)
    }

    /// Folds call `seq` (the analysis' call sequence number) into the per-method totals of
    /// the whole capture and of `phase`, and hands its record back (removed).
    pub fn fold_call(
        &mut self,
        seq: u64,
        method: &str,
        status: impl FnOnce() -> String,
        latency: Option<i64>,
        phase: Option<u64>,
    ) -> Option<CallGrpc> {
        let g = self.calls.remove(&seq)?;
        if g.grpc {
            let status = status();
            let scopes = std::iter::once(&mut self.methods)
                .chain(phase.and_then(|p| self.phase_methods.get_mut(p)));
            for sc in scopes {
                sc.calls += 1;
                if !sc.methods.contains_key(method) && sc.methods.len() >= MAX_GRPC_METHODS {
                    sc.methods_folded += 1;
                    continue;
                }
                // Looked up before inserting: no key is allocated for a method or status seen.
                if !sc.methods.contains_key(method) {
                    sc.methods
                        .insert(method.to_string(), GrpcMethodAgg::default());
                }
                let m = sc.methods.get_mut(method).expect("inserted above");
                m.calls += 1;
                match m.status.get_mut(status.as_str()) {
                    Some(n) => *n += 1,
                    None => {
                        m.status.insert(status.clone(), 1);
                    }
                }
                for k in 0..2 {
                    m.messages[k] += u64::from(g.counts[k].messages);
                    m.bytes[k] += g.counts[k].bytes;
                }
                if let Some(l) = latency {
                    m.latency.record(l);
                }
            }
        }
        Some(g)
    }

    /// Whether DATA payloads of this stream are wanted (an open gRPC call still being cut).
    pub fn wants_data(&self, conn: ConnId, stream: u32) -> bool {
        self.conns
            .get(&conn.0)
            .and_then(|c| c.streams.get(&stream))
            .is_some_and(|s| s.grpc && !(s.cut[0].is_lost() && s.cut[1].is_lost()))
    }

    fn encoding_id(&mut self, v: &[u8]) -> Arc<str> {
        encoding_id(&mut self.encodings, v)
    }

    fn call_mut(&mut self, idx: u64) -> &mut CallGrpc {
        self.calls.entry(idx).or_default()
    }

    fn sides(&mut self, phase: Option<u64>) -> impl Iterator<Item = &mut [SideMsgs; 2]> {
        let ph = phase.and_then(|p| self.phases.get_mut(p));
        std::iter::once(&mut self.whole).chain(ph)
    }

    fn incomplete(&mut self, idx: u64, rel: usize, phase: Option<u64>) {
        let c = &mut self.call_mut(idx).counts[rel];
        c.incomplete = c.incomplete.saturating_add(1);
        for s in self.sides(phase) {
            s[rel].incomplete += 1;
        }
    }

    /// One frame; `phase` is the phase of `ev.ts`, `call` the call index of the frame's stream.
    pub fn frame(&mut self, ev: &FrameEvent<'_>, phase: Option<u64>, call: Option<u64>) {
        let conn = ev.conn.0;
        let sid = ev.head.stream_id.0;
        if sid == 0 {
            if let Some(Frame::Ping(p)) = ev.frame {
                let c = self.conns.entry(conn).or_insert_with(|| ConnG {
                    last_rtt: -1,
                    ..ConnG::default()
                });
                if ev.class == FrameClass::PingAck {
                    let from = ev.dir.other();
                    if let Some(i) = c.pings.iter().position(|x| x.0 == p.payload && x.2 == from) {
                        let (_, t, _) = c.pings.remove(i);
                        c.last_rtt = ev.ts - t;
                    }
                } else {
                    if c.pings.len() >= MAX_PINGS {
                        c.pings.remove(0);
                    }
                    c.pings.push((p.payload, ev.ts, ev.dir));
                }
            }
            return;
        }
        let Grpc {
            conns,
            open,
            calls,
            encodings,
            untracked_calls,
            ..
        } = self;
        let c = conns.entry(conn).or_insert_with(|| ConnG {
            last_rtt: -1,
            ..ConnG::default()
        });
        let st = match c.streams.entry(sid) {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(v) => {
                // A call's first HEADERS opens its stream here.
                if ev.class != FrameClass::Headers {
                    return;
                }
                let Some(idx) = call else {
                    return;
                };
                if *open >= MAX_GRPC_STREAMS {
                    *untracked_calls += 1;
                    return;
                }
                let grpc = ev
                    .headers
                    .and_then(|h| h.get(b"content-type"))
                    .is_some_and(|v| v.starts_with(b"application/grpc"));
                let st = v.insert(Stream {
                    idx,
                    req_dir: ev.dir,
                    grpc,
                    cut: [Cutter::default(); 2],
                    epoch: [c.epoch[ev.dir], c.epoch[ev.dir.other()]],
                    ended: [false; 2],
                    req_end: None,
                    responded: false,
                    ending: false,
                });
                *open += 1;
                let e = ev
                    .headers
                    .and_then(|h| h.get(b"grpc-encoding"))
                    .map(|v| encoding_id(encodings, v));
                let cg = calls.entry(idx).or_default();
                cg.grpc = grpc;
                cg.encoding[0] = e;
                st
            }
        };
        let last_rtt = c.last_rtt;
        let idx = st.idx;
        let rel = usize::from(ev.dir != st.req_dir);
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
        let mut done: Vec<(u32, bool)> = Vec::new();
        if ev.class == FrameClass::Data && st.grpc {
            match ev.frame {
                Some(Frame::Data(d)) => st.cut[rel].feed(d.data, |n, z| done.push((n, z))),
                _ => lost[rel] |= st.cut[rel].lose(),
            }
        }
        let header_kind = matches!(
            ev.class,
            FrameClass::Headers | FrameClass::Trailers | FrameClass::Continuation
        );
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
        if ev.class == FrameClass::RstStream {
            partial = [st.cut[0].end(), st.cut[1].end()];
            end = true;
        } else if ev.head.flags.is_end_stream()
            && (header_kind || ev.class == FrameClass::Data)
            && !st.ended[rel]
        {
            st.ended[rel] = true;
            if rel == 0 {
                st.req_end = Some(ev.ts);
            }
            partial[rel] = st.cut[rel].end();
            if st.ended == [true; 2] {
                if header_kind && !ev.head.flags.is_end_headers() {
                    st.ending = true;
                } else {
                    end = true;
                }
            }
        } else if st.ending
            && ev.class == FrameClass::Continuation
            && ev.head.flags.is_end_headers()
        {
            end = true;
        }
        if end {
            c.streams.remove(&sid);
            *open -= 1;
        }
        // Per-call record and totals.
        let (enc, msg) = match (rel, ev.headers) {
            (1, Some(h)) if header_kind => (
                h.get(b"grpc-encoding").map(<[u8]>::to_vec),
                h.get(b"grpc-message").map(|m| {
                    let mut b = percent_decode(m);
                    b.truncate(MAX_GRPC_MESSAGE);
                    escape_bytes(&b).into_boxed_str()
                }),
            ),
            _ => (None, None),
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
                self.incomplete(idx, r, phase);
            }
        }
        if done.is_empty() && e.is_none() && msg.is_none() && server_time.is_none() && last_rtt < 0
        {
            // Nothing for the call's record (most frames of a call that is not gRPC).
            return;
        }
        let cg = self.call_mut(idx);
        for (n, z) in done {
            let k = &mut cg.counts[rel];
            k.messages = k.messages.saturating_add(1);
            k.bytes += u64::from(n);
            k.compressed = k.compressed.saturating_add(u32::from(z));
        }
        if let Some(e) = e {
            cg.encoding[1] = Some(e);
        }
        if msg.is_some() {
            cg.grpc_message = msg;
        }
        if let Some(t) = server_time {
            cg.server_time_ns = t.max(0);
        }
        if last_rtt >= 0 {
            cg.ping_rtt_ns = last_rtt;
        }
    }

    /// Bytes of `dir` lost: when frames may be missing, every open call there lacks bytes.
    pub fn gap(&mut self, conn: ConnId, dir: Dir, framing_lost: bool) {
        if framing_lost {
            if let Some(c) = self.conns.get_mut(&conn.0) {
                c.epoch[dir] = c.epoch[dir].wrapping_add(1);
            }
        }
    }

    /// The connection ended: messages in progress are incomplete; its state is dropped.
    pub fn close(&mut self, conn: ConnId, phase: Option<u64>) {
        let Some(c) = self.conns.remove(&conn.0) else {
            return;
        };
        for (_, mut st) in c.streams {
            self.open -= 1;
            for r in 0..2 {
                let dir = if r == 0 {
                    st.req_dir
                } else {
                    st.req_dir.other()
                };
                let lost = st.grpc && st.epoch[r] != c.epoch[dir] && st.cut[r].lose();
                if lost || st.cut[r].end() {
                    self.incomplete(st.idx, r, phase);
                }
            }
        }
    }

    /// End of input: every connection still open is closed.
    pub fn flush(&mut self, phase_of: impl Fn() -> Option<u64>) {
        let ids: Vec<u32> = self.conns.keys().copied().collect();
        for id in ids {
            self.close(ConnId(id), phase_of());
        }
    }

    /// The per-side report of one scope (`phase` None: the whole capture), with the per-method
    /// totals of the calls folded in it.
    pub fn report(&self, phase: Option<u64>) -> GrpcReport {
        let empty: [SideMsgs; 2] = Default::default();
        let s = match phase {
            None => &self.whole,
            Some(p) => self.phases.get(p).unwrap_or(&empty),
        };
        let no_methods = GrpcScope::default();
        let sc = match phase {
            None => &self.methods,
            Some(p) => self.phase_methods.get(p).unwrap_or(&no_methods),
        };
        let side = |m: &SideMsgs| GrpcSide {
            messages: m.messages,
            message_bytes: m.sizes.sum,
            message_size: MessageSize {
                p50: m.sizes.percentile(50),
                p99: m.sizes.percentile(99),
                max: (m.sizes.count > 0).then_some(m.sizes.max),
            },
            compressed: m.compressed,
            incomplete: m.incomplete,
        };
        let mut r = GrpcReport {
            calls: sc.calls,
            sides: Sides {
                client: side(&s[0]),
                server: side(&s[1]),
            },
            methods: Vec::new(),
            untracked_calls: self.untracked_calls,
            methods_folded: sc.methods_folded,
        };
        for (name, m) in &sc.methods {
            let p = Percentiles::of_hist(&m.latency);
            r.methods.push(GrpcMethod {
                method: name.clone(),
                calls: m.calls,
                status: m.status.clone(),
                messages: Sides {
                    client: m.messages[0],
                    server: m.messages[1],
                },
                message_bytes: Sides {
                    client: m.bytes[0],
                    server: m.bytes[1],
                },
                latency_us: LatencyP {
                    p50: p.p50,
                    p99: p.p99,
                },
            });
        }
        r
    }
}

/// Distinct methods kept per scope in the gRPC block; calls of further methods are counted in
/// the scope's `calls` only.
const MAX_GRPC_METHODS: usize = 256;

/// The per-method totals of one scope.
#[derive(Clone, Debug, Default)]
struct GrpcScope {
    calls: u64,
    methods: BTreeMap<String, GrpcMethodAgg>,
    methods_folded: u64,
}

#[derive(Clone, Debug, Default)]
struct GrpcMethodAgg {
    calls: u64,
    status: BTreeMap<String, u64>,
    messages: [u64; 2],
    bytes: [u64; 2],
    latency: crate::stats::LatencyHist,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MessageSize {
    pub max: Option<u64>,
    pub p50: Option<u64>,
    pub p99: Option<u64>,
}

/// `grpc.client` / `.server` of the analysis.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GrpcSide {
    pub compressed: u64,
    pub incomplete: u64,
    pub message_bytes: u64,
    /// Bytes per message (p50/p99 per [`crate::stats::LogHist`]).
    pub message_size: MessageSize,
    pub messages: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencyP {
    pub p50: Option<f64>,
    pub p99: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GrpcMethod {
    pub calls: u64,
    /// Call latency (request HEADERS to the response's END_STREAM), microseconds.
    pub latency_us: LatencyP,
    pub message_bytes: Sides<u64>,
    pub messages: Sides<u64>,
    pub method: String,
    pub status: BTreeMap<String, u64>,
}

/// `grpc` of the analysis.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GrpcReport {
    /// Calls whose request content-type is gRPC.
    pub calls: u64,
    /// Per side, as the keys `client` and `server`.
    pub sides: Sides<GrpcSide>,
    pub methods: Vec<GrpcMethod>,
    pub untracked_calls: u64,
    /// Calls in `calls` whose method is not listed (beyond 256 methods in the scope).
    pub methods_folded: u64,
}

impl Serialize for GrpcReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        /// The published keys, in their order.
        #[derive(Serialize)]
        struct Json<'a> {
            calls: u64,
            client: &'a GrpcSide,
            methods: &'a [GrpcMethod],
            methods_folded: u64,
            server: &'a GrpcSide,
            untracked_calls: u64,
        }
        Json {
            calls: self.calls,
            client: &self.sides.client,
            methods: &self.methods,
            methods_folded: self.methods_folded,
            server: &self.sides.server,
            untracked_calls: self.untracked_calls,
        }
        .serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(flag: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![flag];
        v.extend_from_slice(&(body.len() as u32).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn cutter_any_split() {
        let mut all = msg(0, b"hello");
        all.extend(msg(1, &[7; 300]));
        all.extend(msg(0, b""));
        all.extend(msg(0, b"x"));
        for chunk in 1..all.len() {
            let mut c = Cutter::default();
            let mut got = Vec::new();
            for part in all.chunks(chunk) {
                c.feed(part, |n, z| got.push((n, z)));
            }
            assert_eq!(
                got,
                vec![(5, false), (300, true), (0, false), (1, false)],
                "{chunk}"
            );
            assert!(!c.end());
        }
    }

    #[test]
    fn cutter_partial_and_loss() {
        let mut c = Cutter::default();
        let mut got = 0;
        c.feed(&msg(0, b"hello")[..7], |_, _| got += 1);
        assert_eq!(got, 0);
        assert!(c.end(), "a message in progress at the end is incomplete");
        let mut c = Cutter::default();
        c.feed(&[0, 0], |_, _| got += 1);
        assert!(c.lose());
        assert!(!c.lose(), "one loss counts once");
        c.feed(&msg(0, b"a"), |_, _| got += 1);
        assert_eq!(got, 0, "nothing is cut after a loss");
        assert!(!c.end());
    }

    #[test]
    fn percent() {
        assert_eq!(percent_decode(b"a%20b%zz%4"), b"a b%zz%4");
        assert_eq!(percent_decode(b"%E2%9C%93"), "✓".as_bytes());
    }
}

#[cfg(test)]
mod ledger_tests {
    use super::*;
    use crate::testkit::*;

    fn grpc_msg(flag: u8, n: usize) -> Vec<u8> {
        let mut v = vec![flag];
        v.extend_from_slice(&(n as u32).to_be_bytes());
        v.extend(std::iter::repeat_n(0xab, n));
        v
    }

    /// The report with every call folded (the input ends here).
    fn report(c: &mut Conn) -> GrpcReport {
        let a = &mut c.ledger.observer;
        a.flush();
        a.grpc.report(None)
    }

    /// `calls` runs the analysis with [`Analysis::calls_only`]: each call's record (times,
    /// frames, writes, BDP round, stalls, gRPC) must be the one the full analysis gives.
    #[test]
    fn calls_only_gives_the_same_call_records() {
        use crate::Analysis;
        let run = |an: Analysis| {
            let mut c = Conn::started_with(an, &[(4, 20)]);
            for s in [1u32, 3, 5, 7] {
                c.client(&request(s, "/pkg.S/M", s != 5));
                // Past the 20-byte window: a stall, which the WINDOW_UPDATE below ends.
                c.client(&fr(0, 0, s, &grpc_msg(0, 30)));
                c.client(&fr(0, 1, s, &[]));
                // BDP estimator PING and its ACK, a WINDOW_UPDATE.
                c.server(&fr(6, 0, 0, &[2, 4, 16, 16, 9, 14, 7, 7]));
                c.client(&fr(6, 1, 0, &[2, 4, 16, 16, 9, 14, 7, 7]));
                c.client(&fr(8, 0, 0, &100u32.to_be_bytes()));
                c.server(&fr(8, 0, s, &100u32.to_be_bytes()));
                if s == 7 {
                    c.client(&fr(3, 0, s, &8u32.to_be_bytes()));
                    continue;
                }
                c.server(&response(s, false, &[]));
                c.server(&fr(0, 0, s, &grpc_msg(0, 25)));
                c.server(&trailers(s, &[("grpc-status", "0")]));
            }
            c.client(&request(9, "/pkg.S/Open", true));
            c.close();
            let mut out = Vec::new();
            c.ledger.observer.drain_finished(|v| {
                out.push(format!(
                    "{:?} {} {:?} {:?}",
                    v.rec, v.method, v.flow, v.grpc
                ));
            });
            out
        };
        let full = run(Analysis::new(None).keep_finished());
        assert_eq!(full.len(), 5, "{full:#?}");
        assert!(full[0].contains("stalls: [1, 0]"), "{full:#?}");
        assert_eq!(full, run(Analysis::new(None).calls_only()));
    }

    #[test]
    fn messages_across_frames_writes_and_padding() {
        let mut c = Conn::started(&[]);
        c.client(&request(1, "/pkg.S/M", true));
        // Two messages in one frame, then one split over three frames and two writes, the
        // middle frame padded.
        let mut m = grpc_msg(0, 3);
        m.extend(grpc_msg(1, 10));
        c.client(&fr(0, 0, 1, &m));
        let big = grpc_msg(0, 40_000);
        c.client(&fr(0, 0, 1, &big[..16_000]));
        let mut padded = vec![5];
        padded.extend_from_slice(&big[16_000..30_000]);
        padded.extend([0; 5]);
        let f = fr(0, 0x8, 1, &padded);
        c.client(&f[..100]);
        c.client(&[&f[100..], &fr(0, 1, 1, &big[30_000..])[..]].concat());
        let t_end = c.t;
        c.server(&response(1, false, &[("grpc-encoding", "gzip")]));
        let server_time = c.t - t_end;
        c.server(&fr(0, 0, 1, &grpc_msg(1, 7)));
        c.server(&trailers(
            1,
            &[("grpc-status", "3"), ("grpc-message", "bad%20arg")],
        ));
        let g = c.ledger.observer.grpc.call(0).unwrap().clone();
        assert!(g.grpc);
        assert_eq!(
            g.counts[0],
            Counts {
                messages: 3,
                bytes: 40_013,
                compressed: 1,
                incomplete: 0
            }
        );
        assert_eq!(
            g.counts[1],
            Counts {
                messages: 1,
                bytes: 7,
                compressed: 1,
                incomplete: 0
            }
        );
        assert_eq!(g.grpc_message.as_deref(), Some("bad arg"));
        assert_eq!(g.encoding[1].as_deref(), Some("gzip"));
        assert_eq!(g.encoding[0], None);
        assert_eq!(g.server_time_ns, server_time);
        assert!(
            c.ledger.observer.grpc.conns[&0].streams.is_empty(),
            "freed at the end"
        );
        let r = report(&mut c);
        assert_eq!(r.calls, 1);
        assert_eq!(
            (r.sides.client.messages, r.sides.client.message_bytes),
            (3, 40_013)
        );
        assert_eq!(r.sides.client.message_size.max, Some(40_000));
        assert_eq!(r.sides.client.message_size.p50, Some(10));
        assert_eq!(r.methods.len(), 1);
        assert_eq!(r.methods[0].status.get("grpc-status 3"), Some(&1));
        assert_eq!(
            r.methods[0].messages,
            Sides {
                client: 3,
                server: 1
            }
        );
    }

    #[test]
    fn gap_inside_a_message_is_incomplete_not_guessed() {
        let mut c = Conn::started(&[]);
        c.client(&request(1, "/pkg.S/M", true));
        let m = [grpc_msg(0, 100), grpc_msg(0, 100)].concat();
        let f = fr(0, 0, 1, &m);
        c.client(&f[..50]);
        c.gap(Dir::Fwd, 20); // inside the frame: framing kept, payload lost
        c.client(&f[70..]);
        c.client(&fr(0, 1, 1, &grpc_msg(0, 5)));
        let g = c.ledger.observer.grpc.call(0).unwrap().clone();
        assert_eq!((g.counts[0].messages, g.counts[0].incomplete), (0, 1));
        assert_eq!(report(&mut c).sides.client.incomplete, 1);
    }

    #[test]
    fn lost_framing_and_capture_end() {
        let mut c = Conn::started(&[]);
        c.client(&request(1, "/pkg.S/M", true));
        c.client(&request(3, "/pkg.S/M", true));
        c.client(&fr(0, 0, 3, &grpc_msg(0, 4)));
        c.gap(Dir::Fwd, 1000); // between frames: framing lost, both streams lack bytes
        c.server(&response(1, false, &[]));
        c.server(&fr(0, 0, 1, &grpc_msg(0, 10)[..8]));
        c.close();
        // Folded at the end of the input: the records reach the calls view.
        let calls = c.folded_grpc();
        assert_eq!(calls[&1].counts[0].incomplete, 1);
        assert_eq!(calls[&3].counts[0].messages, 1);
        assert_eq!(calls[&3].counts[0].incomplete, 1);
        // The response message the capture ends inside is incomplete too.
        assert_eq!(calls[&1].counts[1].incomplete, 1);
        let a = &c.ledger.observer.grpc;
        assert!(a.conns.is_empty());
        assert!(a.calls.is_empty(), "folded calls are freed");
        assert_eq!(a.open, 0);
    }

    #[test]
    fn not_grpc_is_not_cut_and_trailers_only() {
        let mut c = Conn::started(&[]);
        c.client(&request(1, "/x", false));
        assert!(!c.ledger.observer.grpc.wants_data(ConnId(0), 1));
        c.client(&fr(0, 1, 1, &grpc_msg(0, 3)));
        c.server(&response(1, true, &[]));
        assert_eq!(
            c.ledger.observer.grpc.call(0).unwrap().counts[0].messages,
            0
        );
        c.client(&request(3, "/pkg.S/M", true));
        c.client(&fr(0, 1, 3, &grpc_msg(0, 3)));
        c.server(&response(
            3,
            true,
            &[("grpc-status", "12"), ("grpc-message", "nope")],
        ));
        let g = c.ledger.observer.grpc.call(1).unwrap();
        assert_eq!(g.grpc_message.as_deref(), Some("nope"));
        assert_eq!(g.counts[0].messages, 1);
        assert_eq!(report(&mut c).calls, 1);
    }
}

#[cfg(test)]
mod size_tests {
    #[test]
    fn per_call_records_are_small() {
        // docs/ledger.md "Memory bounds" quotes these sizes.
        assert_eq!(std::mem::size_of::<super::CallGrpc>(), 120);
        assert_eq!(std::mem::size_of::<crate::flow::CallFlow>(), 24);
    }
}
