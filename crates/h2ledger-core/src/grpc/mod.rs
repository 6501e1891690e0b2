//! gRPC messages per call, cut from the DATA payloads without any .proto file, and the
//! server time of every call.
//!
//! A call is gRPC when its request `content-type` starts with `application/grpc`. Each
//! direction's DATA payloads (padding removed, in order) are a sequence of length-prefixed
//! messages: a 1-byte Compressed-Flag, a 4-byte big-endian Message-Length, the message
//! (gRPC's PROTOCOL-HTTP2.md). `Cutter` finds the boundaries incrementally, keeping at most 5
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
//! counted as untracked), freed when the call ends; per connection the last round trip (PINGs
//! are matched once, by the connection model: [`crate::PingFact`]), freed at close;
//! per recorded call a [`CallGrpc`]. A lost framing is recorded in O(1) per gap (a per-direction
//! loss counter each stream compares with the one it last saw).

use crate::FastMap;

use crate::phase::Phased;
use std::sync::Arc;

use h2_frame_parser::Frame;
use h2ledger_tcp::{ConnId, Dir, Dirs, Nanos};

use crate::ledger::FrameEvent;
use crate::model::{FrameClass, Sides};
use crate::stats::LogHist;
use crate::stats::Percentiles;
use crate::text::escape_bytes;

/// A call of the analysis, by its place in the analysis' slab of calls and its sequence
/// number: a handle kept where the call may be gone by the time it is used (a BDP candidate,
/// the last ended calls, a gRPC stream); the number tells a reused slot from the call's own
/// (decision 231).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CallId {
    pub(crate) slot: u32,
    pub(crate) seq: u64,
}

/// Where the gRPC records live: in the analysis' call slots (decision 232). A trait, so that
/// this module does not name the analysis (no module cycle).
pub(crate) trait Recs {
    /// The gRPC record of call `id` while the call is not folded, made when it has none.
    fn grpc_mut(&mut self, id: CallId) -> Option<&mut CallGrpc>;
    /// The gRPC record of call `id` while the call is not folded, if it has one.
    fn grpc_if_any(&mut self, id: CallId) -> Option<&mut CallGrpc>;
    /// Call `id`'s plain stream, which the call holds for the tracker while both are open
    /// (decision 466); `None` where calls hold none.
    fn plain(&mut self, id: CallId) -> Option<&mut Plain>;
}

/// A plain call's stream (not gRPC) as its call holds it while both are open (decision 466):
/// what [`Stream`] keeps of one, without a table look-up per frame.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plain {
    /// The call holds its stream (counted among the open ones).
    pub(crate) held: bool,
    responded: bool,
    req_dir: Dir,
    req_end: Option<Nanos>,
}

impl Default for Plain {
    fn default() -> Self {
        Plain {
            held: false,
            responded: false,
            req_dir: Dir::Fwd,
            req_end: None,
        }
    }
}

/// gRPC status codes by number, as grpc/grpc doc/statuscodes.md names them.
pub const STATUS_NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// A gRPC status by name (`NOT_FOUND`); an unknown code as grpc-go prints it, `Code(17)`.
pub fn status_name(code: u16) -> std::borrow::Cow<'static, str> {
    match STATUS_NAMES.get(usize::from(code)) {
        Some(s) => std::borrow::Cow::Borrowed(s),
        None => std::borrow::Cow::Owned(format!("Code({code})")),
    }
}

/// Calls followed at once.
pub const MAX_GRPC_STREAMS: usize = crate::model::MAX_OPEN_STREAMS;
/// Bytes of `grpc-message` kept (after percent-decoding).
const MAX_GRPC_MESSAGE: usize = 256;
/// Bytes kept of a `grpc-status-details-bin` value (base64 text, as sent): 64 KiB of base64
/// is 48 KiB of `google.rpc.Status`, far above any error detail seen; a longer value is cut
/// there and then does not decode (its anomaly says so).
pub const MAX_STATUS_DETAILS: usize = 64 << 10;
/// Distinct `grpc-encoding` values named; later ones are `(other)`.
const MAX_ENCODINGS: usize = 32;

mod cutter;
mod frame;
mod keep;
mod per_frame;
mod report;

pub use cutter::{Counts, CutEvents, Cutter, Pending};
pub use keep::{Budget, KeepLimits, Kept, KeptHow, KeptMsg, MAX_KEPT_BYTES};
pub use per_frame::{FrameCut, FrameMsg, PerFrame};
pub(crate) use report::MAX_GRPC_METHODS;
pub use report::{GrpcMethod, GrpcReport, GrpcSide, LatencyP, MessageSize};
use report::{GrpcMethodAgg, GrpcScope};

/// Per call: what [`Grpc`] saw. Index 0 is the client (request) side, 1 the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallGrpc {
    /// The request's content-type starts with `application/grpc`.
    pub grpc: bool,
    /// Messages per direction of the call.
    pub counts: [Counts; 2],
    /// `grpc-encoding` of the request and of the response (interned: calls with the same value share one string).
    pub encoding: [Option<Arc<str>>; 2],
    /// `grpc-message` of the response (trailers or trailers-only), percent-decoded, at most 256
    /// bytes, escaped as [`crate::analysis::escape_bytes`] does.
    pub grpc_message: Option<Box<str>>,
    /// `grpc-status-details-bin` of the response (trailers or trailers-only), as sent
    /// (base64 of a `google.rpc.Status`), at most [`MAX_STATUS_DETAILS`] bytes.
    pub status_details: Option<Box<[u8]>>,
    /// Request END_STREAM to the first response HEADERS, nanoseconds; -1 when not seen.
    pub server_time_ns: i64,
    /// The connection's latest PING round trip before the call's last frame; -1 if none.
    pub ping_rtt_ns: i64,
    /// The messages' bytes, when [`Grpc::keep_messages`] asked for them (a gRPC call only).
    /// Shared once the call is handed out; the tracker only writes it while it is not.
    pub kept: Option<Arc<Kept>>,
}

impl Default for CallGrpc {
    fn default() -> Self {
        CallGrpc {
            grpc: false,
            counts: [Counts::default(); 2],
            encoding: [None, None],
            grpc_message: None,
            status_details: None,
            server_time_ns: -1,
            ping_rtt_ns: -1,
            kept: None,
        }
    }
}

#[derive(Debug)]
struct Stream {
    /// The analysis' call: its gRPC record is kept with it ([`Recs::grpc_mut`]).
    call: CallId,
    req_dir: Dir,
    grpc: bool,
    cut: [Cutter; 2],
    /// The connection's loss counter of each side's direction when last looked at.
    epoch: [u32; 2],
    req_end: Option<Nanos>,
    responded: bool,
    /// [`PerFrame`]'s: the path, encodings and messages in progress (a gRPC call only).
    bytes: Option<Box<per_frame::StreamBytes>>,
}

#[derive(Debug, Default)]
struct ConnG {
    /// Framing losses per direction.
    epoch: Dirs<u32>,
    /// The latest PING round trip (the connection model's match, [`crate::FrameEvent::ping`]).
    last_rtt: i64,
    /// Stream ids are the wire's: the seeded table (decisions 246, 262).
    streams: crate::table::IdTable<Stream>,
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
    /// Of the `open` streams, those of gRPC calls: none, and no DATA payload is wanted.
    open_grpc: usize,
    /// `grpc-encoding` values seen.
    pub(crate) encodings: Vec<Arc<str>>,
    whole: [SideMsgs; 2],
    phases: Phased<[SideMsgs; 2]>,
    /// Per-method totals of the folded gRPC calls: the whole capture, and per phase.
    methods: GrpcScope,
    phase_methods: Phased<GrpcScope>,
    /// Calls not followed because [`MAX_GRPC_STREAMS`] were open.
    pub untracked_calls: u64,
    /// Keep each message's bytes ([`Grpc::keep_messages`]), and records recycled for reuse.
    keep: Option<(KeepLimits, Budget)>,
    stash: Vec<Arc<Kept>>,
    credit: keep::Credit,
    /// [`PerFrame`]'s: the messages the last frame completed (None in the analysis).
    per_frame: Option<per_frame::Completed>,
    /// Nothing reads the record of a call that is not gRPC ([`Grpc::no_plain_records`]): its
    /// stream is followed only to its end (decision 464).
    no_plain: bool,
    /// Of the `open` streams, the plain ones their calls hold ([`Recs::plain`]); the others
    /// are in the connections' tables (decision 466).
    plain_held: usize,
    /// Some connection's PING was answered: before, every call's round trip is -1 and is
    /// not looked up.
    rtt_seen: bool,
}

impl Drop for Grpc {
    fn drop(&mut self) {
        // The records kept for reuse hold the budget that holds them.
        if let Some((_, b)) = &self.keep {
            b.close();
            b.give(self.credit.unused());
        }
    }
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

/// Call `call`'s kept messages, while the tracker is the only one holding them.
fn kept_mut(recs: &mut impl Recs, call: CallId) -> Option<&mut Kept> {
    recs.grpc_if_any(call)
        .and_then(|g| g.kept.as_mut())
        .and_then(Arc::get_mut)
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
    /// An empty tracker (the same as `Grpc::default()`).
    pub fn new() -> Self {
        Grpc::default()
    }

    /// Keeps no record for a call that is not gRPC: its server time, response `grpc-encoding`,
    /// `grpc-message` and round trip are not looked for, since nothing reads them (the
    /// report's totals count gRPC calls only; the `calls` view and the metrics read every
    /// call's record and do not ask for this). Its stream is still followed to its end: the
    /// streams open count against [`MAX_GRPC_STREAMS`] as before (decision 464).
    pub fn no_plain_records(&mut self) {
        self.no_plain = true;
    }

    /// Keeps the bytes of every message of each gRPC call within `limits`, in
    /// [`CallGrpc::kept`] (`calls --messages`). Off by default: nothing is copied.
    pub fn keep_messages(&mut self, limits: KeepLimits) {
        self.keep = Some((limits, Budget::new(limits.max_total_bytes)));
    }

    /// The budget of the kept messages' bytes, when they are kept.
    pub fn kept_budget(&self) -> Option<&Budget> {
        self.keep.as_ref().map(|k| &k.1)
    }

    /// Bytes of messages held now by every record of the run (the budget's count without
    /// what the tracker took ahead).
    pub fn kept_bytes(&self) -> usize {
        self.kept_budget()
            .map_or(0, |b| b.held().saturating_sub(self.credit.unused()))
    }

    /// Folds a call's record `g` (the analysis hands it over as it folds the call) into the
    /// per-method totals of the whole capture and of `phase`, and hands it back.
    pub(crate) fn fold_call(
        &mut self,
        g: Option<Box<CallGrpc>>,
        method: &str,
        status: impl FnOnce() -> String,
        latency: Option<i64>,
        phase: Option<u64>,
    ) -> Option<Box<CallGrpc>> {
        let g = g?;
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
    pub(crate) fn wants_data(&self, conn: ConnId, stream: u32) -> bool {
        if self.open_grpc == 0 {
            return false;
        }
        self.conns
            .get(&conn.0)
            .and_then(|c| c.streams.get(stream))
            .is_some_and(|s| s.grpc && !(s.cut[0].is_lost() && s.cut[1].is_lost()))
    }

    fn encoding_id(&mut self, v: &[u8]) -> Arc<str> {
        encoding_id(&mut self.encodings, v)
    }

    fn sides(&mut self, phase: Option<u64>) -> impl Iterator<Item = &mut [SideMsgs; 2]> {
        let ph = phase.and_then(|p| self.phases.get_mut(p));
        std::iter::once(&mut self.whole).chain(ph)
    }

    fn incomplete(&mut self, recs: &mut impl Recs, call: CallId, rel: usize, phase: Option<u64>) {
        if let Some(g) = recs.grpc_mut(call) {
            let c = &mut g.counts[rel];
            c.incomplete = c.incomplete.saturating_add(1);
        }
        for s in self.sides(phase) {
            s[rel].incomplete += 1;
        }
    }
}

impl Grpc {
    /// A call that held its plain stream ([`Recs::plain`]) ended with its connection or the
    /// input: the stream is no longer open, as [`Grpc::close`] says of those in a table.
    pub(crate) fn plain_closed(&mut self) {
        self.open -= 1;
        self.plain_held -= 1;
    }

    /// Bytes of `dir` lost: when frames may be missing, every open call there lacks bytes.
    pub(crate) fn gap(&mut self, conn: ConnId, dir: Dir, framing_lost: bool) {
        if framing_lost {
            if let Some(c) = self.conns.get_mut(&conn.0) {
                c.epoch[dir] = c.epoch[dir].wrapping_add(1);
            }
        }
    }

    /// The connection ended: messages in progress are incomplete; its state is dropped.
    pub(crate) fn close(&mut self, conn: ConnId, phase: Option<u64>, recs: &mut impl Recs) {
        let Some(c) = self.conns.remove(&conn.0) else {
            return;
        };
        for mut st in c.streams.into_values() {
            self.open -= 1;
            self.open_grpc -= usize::from(st.grpc);
            for r in 0..2 {
                let dir = if r == 0 {
                    st.req_dir
                } else {
                    st.req_dir.other()
                };
                let lost = st.grpc && st.epoch[r] != c.epoch[dir] && st.cut[r].lose();
                if lost || st.cut[r].end() {
                    self.incomplete(recs, st.call, r, phase);
                }
            }
            if let Some(k) = kept_mut(recs, st.call) {
                // The message in progress either way is lost.
                k.abandon(0);
                k.abandon(1);
            }
        }
    }

    /// End of input: every connection still open is closed.
    pub(crate) fn flush(&mut self, phase_of: impl Fn() -> Option<u64>, recs: &mut impl Recs) {
        let ids: Vec<u32> = self.conns.keys().copied().collect();
        for id in ids {
            self.close(ConnId(id), phase_of(), recs);
        }
    }

    /// The message sizes per side and each listed method's latency (in the order of
    /// `grpc.methods`) of the whole capture (`phase` None) or one phase, as data: what a report
    /// carries for `grpc` to merge (issue 39).
    pub(crate) fn data(
        &self,
        phase: Option<u64>,
    ) -> (
        Sides<crate::stats::LogBuckets>,
        Vec<crate::stats::HistBuckets>,
    ) {
        self.scope(phase, |s, sc| {
            (
                Sides {
                    client: s[0].sizes.data(),
                    server: s[1].sizes.data(),
                },
                sc.methods.values().map(|m| m.latency.buckets()).collect(),
            )
        })
    }

    /// `f` of one scope's messages per side and methods (`phase` None: the whole capture; a
    /// phase that holds none: empty ones).
    fn scope<R>(&self, phase: Option<u64>, f: impl FnOnce(&[SideMsgs; 2], &GrpcScope) -> R) -> R {
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
        f(s, sc)
    }

    /// The per-side report of one scope (`phase` None: the whole capture), with the per-method
    /// totals of the calls folded in it.
    pub(crate) fn report(&self, phase: Option<u64>) -> GrpcReport {
        self.scope(phase, |s, sc| {
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
        })
    }
}

#[cfg(test)]
mod tests;
