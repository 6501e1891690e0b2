//! Analysis beyond the frame ledger: calls (streams), what each TCP write carried, PING round
//! trips and BDP rounds, concurrency and latency from the wire, optionally per phase.
//!
//! [`Analysis`] is an [`Observer`]; attach it next to a [`crate::Tally`] only when its output is
//! wanted. Its memory follows what is open, never what has passed: a call is a 64-byte
//! [`CallRec`] while in flight and for a moment after it ends (a BDP PING may still name it),
//! then it is folded into counters and bounded histograms ([`hist::LatencyHist`]) and dropped;
//! a connection's counters are folded by side when it closes. docs/ledger.md states every bound;
//! docs/article.md defines every term (call, write, round, in flight, latency) with the capture
//! it was checked on.
//!
//! ```
//! use h2ledger_core::analysis::{Analysis, Splitter};
//! use h2ledger_core::Ledger;
//!
//! let mut ledger = Ledger::new(Analysis::new(Some(Splitter::every(1_000_000_000))));
//! // ... feed the ledger from a Reassembler, then:
//! ledger.observer.flush();
//! let report = ledger.observer.report(&ledger.connections(), None);
//! assert_eq!(report.concurrency.calls, 0);
//! ```

pub mod hist;
pub mod phase;
mod report;
pub mod stats;
pub mod timeline;

use std::collections::{BTreeMap, HashMap, VecDeque};

use h2_frame_parser::{ping, ErrorCode, Frame};
use h2ledger_tcp::{ConnId, ConnMeta, Dir, Nanos, Write};

use crate::ledger::{ConnSummary, FrameEvent, Observer, NO_WRITE};
use crate::model::{FrameClass, Side};

pub use hist::LatencyHist;
pub use phase::{Cut, Phased, Splitter, MAX_PHASES};
pub use report::*;
pub use stats::{nearest_rank, Percentiles, PERCENTILES};
pub use timeline::Timeline;

/// Calls followed at once (in flight); calls beyond are counted in `limits.untracked_calls`.
pub const MAX_ACTIVE_CALLS: usize = 1 << 16;
/// Distinct `:path` values kept; later ones are counted under `(other)`.
pub const MAX_METHODS: usize = 4096;
/// Distinct methods reported per phase; later ones are counted under `(other)` there.
pub const MAX_PHASE_METHODS: usize = 64;
/// GOAWAY frames listed; later ones are only counted.
pub const MAX_GOAWAYS: usize = 1000;
/// Writes per direction whose frames may still arrive (while the ledger looks for a frame
/// boundary it holds writes back); older ones are closed.
const MAX_OPEN_WRITES: usize = 4096;
/// PINGs per direction waiting for their ACK.
const MAX_OUTSTANDING_PINGS: usize = 64;
/// Distinct calls remembered per BDP round.
const MAX_ROUND_CALLS: usize = 4096;
/// Ended calls kept for a BDP PING that may still name them, at most this many and for at most
/// [`RECENT_NS`] of capture time; then they are folded.
const RECENT_CALLS: usize = 1024;
const RECENT_NS: Nanos = 1_000_000_000;
/// The method of a phase's calls beyond [`MAX_PHASE_METHODS`], reported as `(other)`.
const OTHER_METHOD: u32 = u32::MAX;
/// Label index of a PING payload not in [`ping::KNOWN_PINGS`].
const OTHER_LABEL: u8 = u8::MAX;

/// `CallRec::grpc_status` when the call carried none.
pub const NO_STATUS: u16 = u16::MAX;

/// Frame kinds counted per call: HEADERS, DATA, TRAILERS, anything else on the stream.
pub const CALL_KINDS: [&str; 4] = ["HEADERS", "DATA", "TRAILERS", "other"];

/// The request HEADERS was sent in the connection's `Rev` direction.
const F_REQ_REV: u8 = 1;
/// RST_STREAM ended the call.
const F_RESET: u8 = 2;
/// The call opened a BDP round of the client (its response DATA triggered the client's PING).
const F_OPENED_CLIENT_ROUND: u8 = 4;
/// The call opened a BDP round of the server (its request DATA triggered the server's PING).
const F_OPENED_SERVER_ROUND: u8 = 8;
/// The request HEADERS came from the side known as the client when it was seen (calls the
/// other way round, as on a capture whose client is guessed wrong, are not counted).
const F_REQ_CLIENT: u8 = 16;

/// One call (HTTP/2 stream opened by a request HEADERS), 64 bytes.
#[derive(Clone, Copy, Debug)]
pub struct CallRec {
    /// Time of the request HEADERS (the write that carried its last byte).
    pub start: Nanos,
    /// Nanoseconds from `start` to the first response frame; -1 if none was seen.
    pub first_byte: i64,
    /// Nanoseconds from `start` to the response frame with END_STREAM; -1 if none was seen.
    pub end: i64,
    pub conn: u32,
    pub stream: u32,
    /// Index into [`Analysis::methods`].
    pub method: u32,
    /// `grpc-status` of the response, [`NO_STATUS`] when absent.
    pub grpc_status: u16,
    /// `:status` of the response, 0 when absent.
    pub http_status: u16,
    /// Frames by [`CALL_KINDS`], `[request side][kind]` then `[response side][kind]`.
    pub frames: [[u16; 4]; 2],
    /// Writes that carried the end of at least one of the call's frames, per side.
    pub writes: [u16; 2],
    /// Other calls in flight on the same connection when this one started.
    pub inflight: u16,
    flags: u8,
}

impl CallRec {
    pub fn reset(&self) -> bool {
        self.flags & F_RESET != 0
    }
    pub fn opened_round(&self, pinger: Side) -> bool {
        self.flags
            & match pinger {
                Side::Client => F_OPENED_CLIENT_ROUND,
                Side::Server => F_OPENED_SERVER_ROUND,
            }
            != 0
    }
    fn req_dir(&self) -> Dir {
        if self.flags & F_REQ_REV != 0 {
            Dir::Rev
        } else {
            Dir::Fwd
        }
    }
    /// Counts `ev` among the call's frames (by [`CALL_KINDS`]); returns the frame's side
    /// relative to the call (0 request, 1 response).
    fn count_frame(&mut self, ev: &FrameEvent<'_>) -> usize {
        let rel = usize::from(ev.dir != self.req_dir());
        let kind = match ev.class {
            FrameClass::Headers => 0,
            FrameClass::Data => 1,
            FrameClass::Trailers => 2,
            _ => 3,
        };
        self.frames[rel][kind] = self.frames[rel][kind].saturating_add(1);
        rel
    }

    fn counted(&self) -> bool {
        self.flags & F_REQ_CLIENT != 0
    }
    fn status_key(&self) -> StatusKey {
        if self.reset() {
            StatusKey::Reset
        } else if self.grpc_status != NO_STATUS {
            StatusKey::Grpc(self.grpc_status)
        } else if self.http_status != 0 {
            StatusKey::Http(self.http_status)
        } else {
            StatusKey::None
        }
    }
}

/// A call's outcome, as counted per method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum StatusKey {
    Grpc(u16),
    Http(u16),
    Reset,
    None,
}

impl StatusKey {
    fn name(self) -> String {
        match self {
            StatusKey::Reset => "RST_STREAM".to_string(),
            StatusKey::Grpc(s) => format!("grpc-status {s}"),
            StatusKey::Http(s) => format!(":status {s}"),
            StatusKey::None => "none".to_string(),
        }
    }
}

/// A call in flight or just ended.
#[derive(Clone, Copy, Debug)]
struct Live {
    rec: CallRec,
    last_write: [u64; 2],
    ending: bool,
    /// Opened by a HEADERS frame without END_HEADERS: `:path` comes with the last CONTINUATION.
    path_pending: bool,
}

#[derive(Debug)]
struct OpenWrite {
    index: u64,
    ts: Nanos,
    len: u32,
    frames: u32,
    streams: Vec<u32>,
}

#[derive(Debug)]
struct Round {
    ts: Nanos,
    payload: [u8; 8],
    streams: Vec<u32>,
}

#[derive(Debug, Default)]
struct DirState {
    open_writes: VecDeque<OpenWrite>,
    /// PINGs sent by this direction, waiting for the peer's ACK: payload, time, label.
    pings: Vec<([u8; 8], Nanos, u8)>,
    /// The BDP round this direction has open.
    round: Option<Round>,
    /// The first DATA (stream, call) received by this direction while no round was open.
    candidate: Option<(u32, Option<u64>)>,
    /// Other streams whose DATA arrived after the candidate's, before the PING (at most
    /// `MAX_ROUND_CALLS`): they are in the round the PING opens.
    waiting: Vec<u32>,
}

/// Counters of one direction (or side) within one scope (whole capture or a phase).
#[derive(Clone, Debug, Default)]
struct Acc {
    writes: u64,
    bytes: u64,
    max_bytes: u64,
    without_frame_end: u64,
    frames_in_writes: u64,
    frames_per_write: Vec<u64>,
    writes_by_calls: Vec<u64>,
    pings_sent: u64,
    pings_acked: u64,
    acks_unmatched: u64,
    rounds: u64,
    rounds_acked: u64,
    round_calls: u64,
    calls_per_round: Vec<u64>,
}

/// Histogram bins by small count: counts above this share the last bin.
const MAX_HIST_BIN: usize = 4096;

fn bump(h: &mut Vec<u64>, i: usize) {
    let i = i.min(MAX_HIST_BIN);
    if h.len() <= i {
        h.resize(i + 1, 0);
    }
    h[i] += 1;
}

fn merge_hist(a: &mut Vec<u64>, b: &[u64]) {
    if a.len() < b.len() {
        a.resize(b.len(), 0);
    }
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

impl Acc {
    fn merge(&mut self, o: &Acc) {
        self.writes += o.writes;
        self.bytes += o.bytes;
        self.max_bytes = self.max_bytes.max(o.max_bytes);
        self.without_frame_end += o.without_frame_end;
        self.frames_in_writes += o.frames_in_writes;
        merge_hist(&mut self.frames_per_write, &o.frames_per_write);
        merge_hist(&mut self.writes_by_calls, &o.writes_by_calls);
        self.pings_sent += o.pings_sent;
        self.pings_acked += o.pings_acked;
        self.acks_unmatched += o.acks_unmatched;
        self.rounds += o.rounds;
        self.rounds_acked += o.rounds_acked;
        self.round_calls += o.round_calls;
        merge_hist(&mut self.calls_per_round, &o.calls_per_round);
    }
}

/// One open connection.
#[derive(Debug, Default)]
struct ConnState {
    dirs: [DirState; 2],
    active: u32,
    /// By direction (`Dir::Fwd` first); folded by side when the connection closes.
    whole: [Acc; 2],
    phases: Phased<[Acc; 2]>,
}

/// One method's calls within a scope.
#[derive(Clone, Debug, Default)]
struct MethodAgg {
    calls: u64,
    status: BTreeMap<StatusKey, u64>,
    frames: [[u64; 4]; 2],
    writes: [u64; 2],
    latency: LatencyHist,
}

/// The calls of a scope, folded.
#[derive(Clone, Debug, Default)]
struct CallAgg {
    calls: u64,
    opened: [u64; 2],
    latency: LatencyHist,
    first_byte: LatencyHist,
    inflight_sum: u64,
    max_inflight: u16,
    reset: u64,
    unfinished: u64,
    methods: BTreeMap<u32, MethodAgg>,
}

/// Everything folded for one scope (the whole capture or a phase). Sides by [`Side`] order.
#[derive(Clone, Debug, Default)]
struct Scope {
    sides: [Acc; 2],
    calls: CallAgg,
    rtt: LatencyHist,
    rtt_by_label: BTreeMap<u8, LatencyHist>,
}

#[derive(Clone, Debug)]
struct GoAwayRec {
    ts: Nanos,
    conn: u32,
    side: Side,
    last_stream_id: u32,
    code: ErrorCode,
    debug: String,
}

fn di(d: Dir) -> usize {
    match d {
        Dir::Fwd => 0,
        Dir::Rev => 1,
    }
}

fn si(s: Side) -> usize {
    match s {
        Side::Client => 0,
        Side::Server => 1,
    }
}

fn other(d: usize) -> usize {
    1 - d
}

/// The analysis observer. See the module docs.
#[derive(Debug, Default)]
pub struct Analysis {
    splitter: Splitter,
    phased: bool,
    /// Boxed: hash-map buckets are reserved ahead, and a state is several hundred bytes.
    conns: HashMap<u32, Box<ConnState>>,
    /// Calls in flight and recently ended, by sequence number.
    calls: HashMap<u64, Live>,
    next_seq: u64,
    /// In-flight calls by (connection, stream).
    active: HashMap<(u32, u32), u64>,
    /// Ended calls waiting to be folded, in the order they ended, with their end time.
    recent: VecDeque<(u64, Nanos)>,
    /// The last calls that ended (END_STREAM or RST_STREAM), most recent last: frames that
    /// still arrive on their stream (trailers after a RST_STREAM, a RST after the end) count
    /// in the call while it is not folded.
    ended: VecDeque<((u32, u32), u64)>,
    /// Ended calls that are still a direction's BDP candidate (its next BDP PING will name
    /// them, however late): folded when the PING comes or the connection closes. At most two
    /// per open connection.
    pinned: Vec<u64>,
    whole: Scope,
    phases: Phased<Scope>,
    /// Folded calls kept for [`Analysis::drain_finished`] (only when asked for).
    keep_finished: bool,
    finished: Vec<Finished>,
    /// `:path` values, indexed by [`CallRec::method`].
    pub methods: Vec<String>,
    method_ids: HashMap<Vec<u8>, u32>,
    goaways: Vec<GoAwayRec>,
    pool: Vec<Vec<u32>>,
    limits: AnalysisLimits,
    /// The latest time seen (calls cut short by a close end then).
    now: Nanos,
    /// Flow-control windows and stalls (docs/ledger.md, "Flow control").
    pub flow: crate::flow::Flow,
    /// gRPC messages per call (docs/ledger.md, "gRPC messages").
    pub grpc: crate::grpc::Grpc,
}

impl Analysis {
    /// `splitter`: also keep everything per phase.
    pub fn new(splitter: Option<Splitter>) -> Self {
        Analysis {
            phased: splitter.is_some(),
            splitter: splitter.unwrap_or_default(),
            ..Analysis::default()
        }
    }

    /// Keep every call as it is folded, for [`Analysis::drain_finished`] (`h2ledger calls`).
    pub fn keep_finished(mut self) -> Self {
        self.keep_finished = true;
        self
    }

    /// The time of the capture's first packet (phase offsets and `--every` count from it).
    pub fn set_origin(&mut self, t: Nanos) {
        self.splitter.set_origin(t);
    }

    pub fn splitter(&self) -> &Splitter {
        &self.splitter
    }

    /// The phases that hold something, in time order.
    pub fn phase_indexes(&self) -> Vec<u64> {
        self.phases.indexes().collect()
    }

    fn conn(&mut self, id: ConnId) -> &mut ConnState {
        self.conns.entry(id.0).or_default()
    }

    fn phase(&self, t: Nanos) -> Option<u64> {
        self.phased.then(|| self.splitter.phase_of(t))
    }

    /// Applies `f` to the counters of `(conn, dir)` for the whole capture and for the phase of `t`.
    fn acc(&mut self, conn: u32, d: usize, t: Nanos, f: impl Fn(&mut Acc)) {
        let phase = self.phase(t);
        let c = self.conns.entry(conn).or_default();
        f(&mut c.whole[d]);
        if let Some(p) = phase {
            match c.phases.get_mut(p) {
                Some(a) => f(&mut a[d]),
                None => self.limits.phase_events_dropped += 1,
            }
        }
    }

    /// Applies `f` to the folded scope of the whole capture and of the phase of `t`.
    fn scoped(&mut self, t: Nanos, mut f: impl FnMut(&mut Scope, bool)) {
        f(&mut self.whole, false);
        if let Some(p) = self.phase(t) {
            match self.phases.get_mut(p) {
                Some(s) => f(s, true),
                None => self.limits.phase_events_dropped += 1,
            }
        }
    }

    fn close_write(&mut self, conn: u32, d: usize, w: OpenWrite) {
        let calls = w.streams.len();
        let frames = w.frames as usize;
        self.acc(conn, d, w.ts, |a| {
            a.writes += 1;
            a.bytes += u64::from(w.len);
            a.max_bytes = a.max_bytes.max(u64::from(w.len));
            if frames == 0 {
                a.without_frame_end += 1;
            } else {
                a.frames_in_writes += frames as u64;
                bump(&mut a.frames_per_write, frames);
                bump(&mut a.writes_by_calls, calls);
            }
        });
        let mut s = w.streams;
        s.clear();
        if self.pool.len() < 64 {
            self.pool.push(s);
        }
    }

    fn close_round(&mut self, conn: u32, d: usize, r: Round, acked: bool) {
        let n = r.streams.len();
        self.acc(conn, d, r.ts, |a| {
            a.rounds += 1;
            a.rounds_acked += u64::from(acked);
            a.round_calls += n as u64;
            bump(&mut a.calls_per_round, n);
        });
        let mut s = r.streams;
        s.clear();
        if self.pool.len() < 64 {
            self.pool.push(s);
        }
    }

    /// Closes a connection's open writes and rounds (rounds as unacknowledged).
    fn close_pending(&mut self, conn: u32) {
        for d in 0..2 {
            while let Some(w) = self
                .conns
                .get_mut(&conn)
                .and_then(|c| c.dirs[d].open_writes.pop_front())
            {
                self.close_write(conn, d, w);
            }
            if let Some(r) = self
                .conns
                .get_mut(&conn)
                .and_then(|c| c.dirs[d].round.take())
            {
                self.close_round(conn, d, r, false);
            }
        }
    }

    /// Closes what is still open at the end of the input: writes waiting for frames, BDP rounds
    /// waiting for their ACK (counted as unacknowledged), calls (counted as unfinished). Call it
    /// before [`Analysis::report`].
    pub fn flush(&mut self) {
        let mut ids: Vec<u32> = self.conns.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            self.close_pending(id);
        }
        let mut live: Vec<(u32, u32)> = self.active.keys().copied().collect();
        live.sort_unstable();
        for key in live {
            self.end_call(key, None);
        }
        self.flow.flush();
        let phase = self.phase(self.now);
        self.grpc.flush(|| phase);
        self.fold_recent(Nanos::MAX, true);
    }

    fn method_id(&mut self, path: &[u8]) -> u32 {
        if let Some(&i) = self.method_ids.get(path) {
            return i;
        }
        if self.methods.len() >= MAX_METHODS {
            self.limits.methods_folded += 1;
            return self.method_id_str("(other)");
        }
        let i = self.methods.len() as u32;
        self.methods.push(escape_bytes(path));
        self.method_ids.insert(path.to_vec(), i);
        i
    }

    fn method_id_str(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.method_ids.get(s.as_bytes()) {
            return i;
        }
        let i = self.methods.len() as u32;
        self.methods.push(s.to_string());
        self.method_ids.insert(s.as_bytes().to_vec(), i);
        i
    }

    /// The call on `key` is over (`ts`: when; `None` at the end of the input): it waits in
    /// `recent` for a BDP PING that may still name it.
    fn end_call(&mut self, key: (u32, u32), ts: Option<Nanos>) {
        let Some(seq) = self.active.remove(&key) else {
            return;
        };
        if let Some(c) = self.conns.get_mut(&key.0) {
            c.active = c.active.saturating_sub(1);
        }
        let end = ts.unwrap_or(self.now);
        self.recent.push_back((seq, end));
        if self.recent.len() > RECENT_CALLS {
            self.fold_recent(end, false);
        }
    }

    /// Folds the ended calls older than [`RECENT_NS`] before `now` or beyond [`RECENT_CALLS`]
    /// (all of them with `all`).
    fn fold_recent(&mut self, now: Nanos, all: bool) {
        while let Some(&(seq, end)) = self.recent.front() {
            let due =
                all || self.recent.len() > RECENT_CALLS || end.saturating_add(RECENT_NS) < now;
            if !due {
                break;
            }
            self.recent.pop_front();
            if !all && self.is_candidate(seq) {
                self.pinned.push(seq);
            } else if let Some(l) = self.calls.remove(&seq) {
                self.fold_call(seq, &l.rec);
            }
        }
        if all {
            for seq in std::mem::take(&mut self.pinned) {
                if let Some(l) = self.calls.remove(&seq) {
                    self.fold_call(seq, &l.rec);
                }
            }
        }
    }

    /// Whether call `seq` is a BDP candidate of either direction of its connection.
    fn is_candidate(&self, seq: u64) -> bool {
        self.calls.get(&seq).is_some_and(|l| {
            self.conns.get(&l.rec.conn).is_some_and(|st| {
                st.dirs
                    .iter()
                    .any(|d| d.candidate.is_some_and(|(_, s)| s == Some(seq)))
            })
        })
    }

    /// A pinned call that is no longer anyone's candidate: fold it.
    fn unpin(&mut self, seq: u64) {
        if self.is_candidate(seq) {
            return;
        }
        if let Some(i) = self.pinned.iter().position(|&s| s == seq) {
            self.pinned.swap_remove(i);
            if let Some(l) = self.calls.remove(&seq) {
                self.fold_call(seq, &l.rec);
            }
        }
    }

    fn fold_call(&mut self, seq: u64, c: &CallRec) {
        let flow = self.flow.take_call(seq);
        let method = self
            .methods
            .get(c.method as usize)
            .map(String::as_str)
            .unwrap_or("(other)");
        let latency = (c.end >= 0 && !c.reset()).then_some(c.end);
        let phase = self.phase(c.start);
        let status = c.status_key().name();
        if !c.counted() {
            self.grpc.drop_call(seq);
            return;
        }
        let grpc = self.grpc.fold_call(seq, method, &status, latency, phase);
        if self.keep_finished {
            self.finished.push(Finished {
                rec: *c,
                flow,
                grpc,
            });
        }
        let mut folded = 0;
        self.scoped(c.start, |s, is_phase| {
            let agg = &mut s.calls;
            agg.calls += 1;
            for side in Side::ALL {
                agg.opened[si(side)] += u64::from(c.opened_round(side));
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

    fn on_call_frame(&mut self, ev: &FrameEvent<'_>) {
        let sid = ev.head.stream_id;
        let key = (ev.conn.0, sid);
        if ev.class == FrameClass::Headers && !self.active.contains_key(&key) {
            let is_response = ev
                .headers
                .and_then(|h| h.iter().next())
                .is_some_and(|h| h.name == b":status");
            if is_response {
                return;
            }
            if self.active.len() >= MAX_ACTIVE_CALLS {
                self.limits.untracked_calls += 1;
                return;
            }
            let method = match ev.headers.and_then(|h| h.get(b":path")) {
                Some(p) => self.method_id(p),
                None => self.method_id_str("(unknown)"),
            };
            let c = self.conn(ev.conn);
            let inflight = c.active.min(u32::from(u16::MAX)) as u16;
            c.active += 1;
            let seq = self.next_seq;
            self.next_seq += 1;
            let mut flags = if ev.dir == Dir::Rev { F_REQ_REV } else { 0 };
            if ev.side == Side::Client {
                flags |= F_REQ_CLIENT;
            }
            self.calls.insert(
                seq,
                Live {
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
                        inflight,
                        flags,
                    },
                    last_write: [NO_WRITE; 2],
                    ending: false,
                    path_pending: !ev.head.flags.is_end_headers(),
                },
            );
            self.active.insert(key, seq);
        }
        if ev.class == FrameClass::Continuation {
            let pending = self
                .active
                .get(&key)
                .and_then(|q| self.calls.get(q))
                .is_some_and(|l| l.path_pending);
            if pending {
                if let Some(p) = ev.headers.and_then(|h| h.get(b":path")) {
                    let m = self.method_id(p);
                    if let Some(l) = self.active.get(&key).and_then(|q| self.calls.get_mut(q)) {
                        l.path_pending = false;
                        l.rec.method = m;
                    }
                }
            }
        }
        let Some(&seq) = self.active.get(&key) else {
            // A frame after the call's end: counted in it while it is not folded.
            if let Some(&(_, q)) = self.ended.iter().rev().find(|r| r.0 == key) {
                if let Some(l) = self.calls.get_mut(&q) {
                    l.rec.count_frame(ev);
                }
            }
            return;
        };
        let Some(a) = self.calls.get_mut(&seq) else {
            return;
        };
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
                if let Some(s) = h.get(b":status").and_then(parse_u16) {
                    call.http_status = s;
                }
                if let Some(s) = h.get(b"grpc-status").and_then(parse_u16) {
                    call.grpc_status = s;
                }
            }
        }
        let mut done = false;
        if ev.class == FrameClass::RstStream {
            call.flags |= F_RESET;
            done = true;
        } else if rel == 1 {
            let header_kind = matches!(ev.class, FrameClass::Headers | FrameClass::Trailers);
            if ev.head.flags.is_end_stream()
                && (header_kind || ev.class == FrameClass::Data)
                && call.end < 0
            {
                call.end = dt;
                if header_kind && !ev.head.flags.is_end_headers() {
                    a.ending = true; // grpc-status may follow in CONTINUATION
                } else {
                    done = true;
                }
            } else if a.ending
                && ev.class == FrameClass::Continuation
                && ev.head.flags.is_end_headers()
            {
                done = true;
            }
        }
        if done {
            if self.ended.len() >= 64 {
                self.ended.pop_front();
            }
            self.ended.push_back((key, seq));
            self.end_call(key, Some(ev.ts));
        }
    }

    fn on_ping(&mut self, ev: &FrameEvent<'_>, payload: [u8; 8], ack: bool) {
        let conn = ev.conn.0;
        let d = di(ev.dir);
        let known = ping::classify(&payload);
        if !ack {
            let label = known
                .and_then(|k| ping::KNOWN_PINGS.iter().position(|x| x.label == k.label))
                .map(|i| i as u8)
                .unwrap_or(OTHER_LABEL);
            self.acc(conn, d, ev.ts, |a| a.pings_sent += 1);
            let ds = &mut self.conn(ev.conn).dirs[d];
            if ds.pings.len() >= MAX_OUTSTANDING_PINGS {
                ds.pings.remove(0);
            }
            ds.pings.push((payload, ev.ts, label));
            if known.is_some_and(|k| k.bdp) {
                let prev = ds.round.take();
                let cand = ds.candidate.take();
                let mut streams = self.pool.pop().unwrap_or_default();
                if let Some((s, seq)) = cand {
                    streams.push(s);
                    streams.append(&mut self.conn(ev.conn).dirs[d].waiting);
                    if let Some(call) = seq.and_then(|q| self.calls.get_mut(&q)) {
                        let call = &mut call.rec;
                        call.flags |= if ev.dir == call.req_dir() {
                            F_OPENED_CLIENT_ROUND
                        } else {
                            F_OPENED_SERVER_ROUND
                        };
                    }
                    if let Some(q) = seq {
                        self.unpin(q);
                    }
                }
                self.conn(ev.conn).dirs[d].round = Some(Round {
                    ts: ev.ts,
                    payload,
                    streams,
                });
                if let Some(r) = prev {
                    self.close_round(conn, d, r, false);
                }
            }
            return;
        }
        // An ACK from `d` answers a PING sent by the other direction.
        let p = other(d);
        let ds = &mut self.conn(ev.conn).dirs[p];
        let found = ds.pings.iter().position(|x| x.0 == payload);
        match found {
            Some(i) => {
                let (_, ts, label) = ds.pings.remove(i);
                let round = match &ds.round {
                    Some(r) if r.payload == payload && r.ts <= ts => ds.round.take(),
                    _ => None,
                };
                let rtt = ev.ts - ts;
                self.scoped(ts, |s, _| {
                    s.rtt.record(rtt);
                    s.rtt_by_label.entry(label).or_default().record(rtt);
                });
                self.acc(conn, p, ts, |a| a.pings_acked += 1);
                if let Some(r) = round {
                    self.close_round(conn, p, r, true);
                }
            }
            None => self.acc(conn, d, ev.ts, |a| a.acks_unmatched += 1),
        }
    }

    /// The report for the whole capture (`phase` None) or one phase: the connections already
    /// closed, and those among the open `conns` (from [`crate::Ledger::connections`]). Call
    /// [`Analysis::flush`] first: calls still in flight are not in it.
    pub fn report(&self, conns: &[ConnSummary], phase: Option<u64>) -> AnalysisReport {
        let empty = Scope::default();
        let scope = match phase {
            None => &self.whole,
            Some(p) => self.phases.get(p).unwrap_or(&empty),
        };
        let mut r = AnalysisReport::default();
        // Sides: folded, then the open connections.
        let mut accs = scope.sides.clone();
        for c in conns.iter().filter(|c| c.http2) {
            let Some(st) = self.conns.get(&c.id.0) else {
                continue;
            };
            let scoped = match phase {
                None => Some(&st.whole),
                Some(p) => st.phases.get(p),
            };
            if let Some(s) = scoped {
                let ci = di(c.client_dir);
                accs[0].merge(&s[ci]);
                accs[1].merge(&s[other(ci)]);
            }
        }
        let calls = &scope.calls;
        let n_calls = calls.calls;
        for side in Side::ALL {
            let a = &accs[si(side)];
            let opened = calls.opened[si(side)];
            let s = SideAnalysis {
                writes_by_calls: Hist(if a.writes_by_calls.is_empty() {
                    vec![0]
                } else {
                    a.writes_by_calls.clone()
                }),
                writes_without_frame_end: a.without_frame_end,
                control_only_writes: a.writes_by_calls.first().copied().unwrap_or(0),
                frames_per_write: FramesPerWrite {
                    mean: ratio(a.frames_in_writes, a.writes - a.without_frame_end),
                    histogram: Hist(a.frames_per_write.clone()),
                },
                bytes_per_write: BytesPerWrite {
                    mean: ratio(a.bytes, a.writes),
                    max: a.max_bytes,
                },
                pings: PingSide {
                    sent: a.pings_sent,
                    acked: a.pings_acked,
                    unanswered: a.pings_sent - a.pings_acked.min(a.pings_sent),
                    acks_unmatched: a.acks_unmatched,
                },
                rounds: RoundSide {
                    rounds: a.rounds,
                    acked: a.rounds_acked,
                    calls_per_round: ratio(a.round_calls, a.rounds),
                    calls_per_round_histogram: Hist(a.calls_per_round.clone()),
                    calls_opening: opened,
                    share_of_calls_opening: ratio(opened, n_calls),
                },
            };
            match side {
                Side::Client => r.sides.client = s,
                Side::Server => r.sides.server = s,
            }
        }
        r.latency_us = Latency {
            call: Percentiles::of_hist(&calls.latency),
            first_byte: Percentiles::of_hist(&calls.first_byte),
            ping_rtt: Percentiles::of_hist(&scope.rtt),
            ping_rtt_by_label: {
                let mut m: BTreeMap<&'static str, LatencyHist> = BTreeMap::new();
                for (label, h) in &scope.rtt_by_label {
                    let name = ping::KNOWN_PINGS
                        .get(*label as usize)
                        .map(|k| k.label)
                        .unwrap_or("other");
                    m.entry(name).or_default().merge(h);
                }
                m.into_iter()
                    .map(|(k, h)| (k, Percentiles::of_hist(&h)))
                    .collect()
            },
        };
        r.concurrency = Concurrency {
            calls: n_calls,
            mean_in_flight: ratio(calls.inflight_sum, n_calls),
            max_in_flight: calls.max_inflight,
            reset: calls.reset,
            unfinished: calls.unfinished,
        };
        for (m, agg) in &calls.methods {
            let n = agg.calls;
            let side = |rel: usize| MethodSide {
                frames: CALL_KINDS.iter().copied().zip(agg.frames[rel]).collect(),
                frames_per_call: ratio(agg.frames[rel].iter().sum(), n),
                writes: agg.writes[rel],
                writes_per_call: ratio(agg.writes[rel], n),
            };
            r.methods.push(MethodReport {
                method: self
                    .methods
                    .get(*m as usize)
                    .cloned()
                    .unwrap_or_else(|| "(other)".to_string()),
                calls: n,
                status: agg.status.iter().map(|(k, v)| (k.name(), *v)).collect(),
                client: side(0),
                server: side(1),
                latency_us: Percentiles::of_hist(&agg.latency),
            });
        }
        for g in &self.goaways {
            if phase.is_some_and(|p| self.splitter.phase_of(g.ts) != p) {
                continue;
            }
            let calm = g.code == ErrorCode::ENHANCE_YOUR_CALM;
            r.too_many_pings += u64::from(calm);
            r.goaways.push(GoAwayReport {
                time: g.ts as f64 / 1e9,
                conn: g.conn,
                side: g.side.name(),
                last_stream_id: g.last_stream_id,
                error: g.code.to_string(),
                debug: g.debug.clone(),
                too_many_pings: calm,
            });
        }
        r.limits = self.limits.clone();
        r.flow_control = self.flow.report(phase);
        r.grpc = self.grpc.report(phase);
        r
    }

    /// Hands the calls folded since the last call to `f`, in the order they were folded (about
    /// the order they ended). Needs [`Analysis::keep_finished`].
    pub fn drain_finished(&mut self, mut f: impl FnMut(CallView<'_>)) {
        for c in self.finished.drain(..) {
            f(CallView {
                rec: &c.rec,
                method: self
                    .methods
                    .get(c.rec.method as usize)
                    .map(String::as_str)
                    .unwrap_or(""),
                flow: c.flow,
                grpc: c.grpc.as_ref(),
            });
        }
    }

    /// Whether DATA payloads of this stream are wanted (a gRPC call being cut into messages).
    pub fn wants_data(&self, conn: ConnId, stream: u32) -> bool {
        self.grpc.wants_data(conn, stream)
    }
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

fn parse_u16(v: &[u8]) -> Option<u16> {
    std::str::from_utf8(v).ok()?.trim().parse().ok()
}

/// Header bytes as text: valid UTF-8 is kept; every byte of an invalid sequence is written
/// `\xNN` (two lowercase hex digits) and a backslash is written `\\`, so the bytes can be
/// recovered exactly.
pub fn escape_bytes(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    for chunk in b.utf8_chunks() {
        for ch in chunk.valid().chars() {
            if ch == '\\' {
                out.push_str("\\\\");
            } else {
                out.push(ch);
            }
        }
        for x in chunk.invalid() {
            out.push_str(&format!("\\x{x:02x}"));
        }
    }
    out
}

impl Observer for Analysis {
    fn wants_data(&self, conn: ConnId, stream: u32) -> bool {
        self.grpc.wants_data(conn, stream)
    }

    fn open(&mut self, meta: &ConnMeta) {
        self.flow.open(meta);
    }

    fn gap(&mut self, conn: ConnId, dir: Dir, ts: Nanos, framing_lost: bool) {
        let phase = self.phase(ts);
        self.flow.gap(conn, framing_lost, phase);
        self.grpc.gap(conn, dir, framing_lost);
    }

    fn upgraded_request(&mut self, conn: ConnId, dir: Dir, w: &Write, _m: &[u8], target: &[u8]) {
        // Stream 1 is the upgraded request's call (docs/ledger.md, "Call"); it was sent by the
        // client (the side that sent the Upgrade request).
        let key = (conn.0, 1);
        if self.active.contains_key(&key) || self.active.len() >= MAX_ACTIVE_CALLS {
            return;
        }
        let method = self.method_id(target);
        let c = self.conn(conn);
        let inflight = c.active.min(u32::from(u16::MAX)) as u16;
        c.active += 1;
        let seq = self.next_seq;
        self.next_seq += 1;
        let flags = F_REQ_CLIENT | if dir == Dir::Rev { F_REQ_REV } else { 0 };
        self.calls.insert(
            seq,
            Live {
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
                    inflight,
                    flags,
                },
                last_write: [w.index, NO_WRITE],
                ending: false,
                path_pending: false,
            },
        );
        self.active.insert(key, seq);
    }

    fn write(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        if self.splitter.origin().is_none() {
            self.splitter.set_origin(w.ts);
        }
        self.now = self.now.max(w.ts);
        let d = di(dir);
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

    fn frame(&mut self, ev: &FrameEvent<'_>) {
        if self.splitter.origin().is_none() {
            self.splitter.set_origin(ev.ts);
        }
        self.now = self.now.max(ev.ts);
        let d = di(ev.dir);
        let sid = ev.head.stream_id;
        // What the write carried.
        if ev.write != NO_WRITE {
            loop {
                let ds = &mut self.conn(ev.conn).dirs[d];
                match ds.open_writes.front() {
                    Some(w) if w.index < ev.write => {
                        let w = ds.open_writes.pop_front().expect("front exists");
                        self.close_write(ev.conn.0, d, w);
                    }
                    _ => break,
                }
            }
            let ds = &mut self.conn(ev.conn).dirs[d];
            if let Some(w) = ds.open_writes.front_mut() {
                if w.index == ev.write {
                    w.frames += 1;
                    if sid != 0 && !ev.class.is_control() && !w.streams.contains(&sid) {
                        w.streams.push(sid);
                    }
                }
            }
        }
        let call_before = self.active.get(&(ev.conn.0, sid)).copied();
        if sid != 0 {
            self.on_call_frame(ev);
        }
        let call = call_before.or_else(|| self.active.get(&(ev.conn.0, sid)).copied());
        let phase = self.phase(ev.ts);
        self.flow.frame(ev, phase, call);
        self.grpc.frame(ev, phase, call);
        match (ev.class, ev.frame) {
            (FrameClass::Data, _) if sid != 0 => {
                // DATA received by the other direction: BDP round bookkeeping of the receiver.
                let seq = self.active.get(&(ev.conn.0, sid)).copied();
                let ds = &mut self.conn(ev.conn).dirs[other(d)];
                match ds.round.as_mut() {
                    Some(r) => {
                        if r.streams.len() < MAX_ROUND_CALLS && !r.streams.contains(&sid) {
                            r.streams.push(sid);
                        }
                    }
                    None => match ds.candidate {
                        None => ds.candidate = Some((sid, seq)),
                        Some((c, _)) => {
                            if c != sid
                                && ds.waiting.len() + 1 < MAX_ROUND_CALLS
                                && !ds.waiting.contains(&sid)
                            {
                                ds.waiting.push(sid);
                            }
                        }
                    },
                }
            }
            (FrameClass::Ping | FrameClass::PingAck, Some(Frame::Ping(p))) => {
                self.on_ping(ev, p.payload, ev.class == FrameClass::PingAck);
            }
            (FrameClass::GoAway, Some(Frame::GoAway(g))) => {
                if self.goaways.len() < MAX_GOAWAYS {
                    let debug = escape_bytes(&g.debug[..g.debug.len().min(256)]);
                    self.goaways.push(GoAwayRec {
                        ts: ev.ts,
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
        if self
            .recent
            .front()
            .is_some_and(|(_, end)| end.saturating_add(RECENT_NS) < ev.ts)
        {
            self.fold_recent(ev.ts, false);
        }
    }

    fn close(&mut self, summary: &ConnSummary) {
        let id = summary.id.0;
        let phase = self.phase(self.now);
        self.flow.close(summary.id);
        self.grpc.close(summary.id, phase);
        self.close_pending(id);
        let mut live: Vec<(u32, u32)> = self.active.keys().filter(|k| k.0 == id).copied().collect();
        live.sort_unstable();
        for key in live {
            self.end_call(key, None);
        }
        let Some(st) = self.conns.remove(&id) else {
            return;
        };
        for (_, seq) in st.dirs.iter().filter_map(|d| d.candidate) {
            if let Some(q) = seq {
                self.unpin(q);
            }
        }
        if !summary.http2 {
            return;
        }
        let ci = di(summary.client_dir);
        let fold = |into: &mut [Acc; 2], from: &[Acc; 2]| {
            into[0].merge(&from[ci]);
            into[1].merge(&from[other(ci)]);
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

/// A folded call kept for [`Analysis::drain_finished`].
#[derive(Debug)]
struct Finished {
    rec: CallRec,
    flow: crate::flow::CallFlow,
    grpc: Option<crate::grpc::CallGrpc>,
}

/// One call, with its method name, its flow-control stalls and its gRPC messages.
#[derive(Clone, Copy, Debug)]
pub struct CallView<'a> {
    pub rec: &'a CallRec,
    pub method: &'a str,
    pub flow: crate::flow::CallFlow,
    pub grpc: Option<&'a crate::grpc::CallGrpc>,
}

impl CallView<'_> {
    /// `grpc-status N`, `:status N`, `RST_STREAM` or `none`.
    pub fn status(&self) -> String {
        self.rec.status_key().name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_record_is_compact() {
        assert_eq!(std::mem::size_of::<CallRec>(), 64);
    }

    #[test]
    fn escaping() {
        assert_eq!(escape_bytes(b"/a.B/C"), "/a.B/C");
        assert_eq!(escape_bytes(b"a\\b"), "a\\\\b");
        assert_eq!(escape_bytes(b"x\xffy\xc3"), "x\\xffy\\xc3");
        assert_eq!(escape_bytes("é".as_bytes()), "é");
    }

    #[test]
    fn hist_keys_are_numeric_order() {
        let h = Hist(vec![1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 5]);
        let s = serde_json::to_string(&h).unwrap();
        assert_eq!(
            s,
            r#"{"0":1,"1":0,"2":2,"3":0,"4":0,"5":0,"6":0,"7":0,"8":0,"9":0,"10":5}"#
        );
    }
}
