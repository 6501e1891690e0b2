//! Analysis beyond the frame ledger: calls (streams), what each TCP write carried, PING round
//! trips and BDP rounds, concurrency and latency from the wire, optionally per phase.
//!
//! [`Analysis`] is an [`Observer`]; attach it next to a [`crate::Tally`] only when its output is
//! wanted. Its memory follows what is open, never what has passed: a call is a 64-byte
//! [`CallRec`] while in flight and for a moment after it ends (a BDP PING may still name it),
//! then it is folded into counters and bounded histograms ([`LatencyHist`]) and dropped;
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

mod report;
pub mod timeline;

mod build;
mod calls;
pub mod merge;
mod observer;
mod pings;
mod writes;

use std::collections::{BTreeMap, VecDeque};

use crate::table::IdTable;
use crate::FastMap;

use h2_frame_parser::{ping, ErrorCode, Frame, StreamId};
use h2ledger_tcp::{ConnId, ConnMeta, Dir, Dirs, Nanos, Write};

use crate::ledger::{ConnSummary, FrameEvent, Observer, NO_WRITE};
use crate::model::{FrameClass, Side, Sides};

pub use crate::phase::{Cut, Phased, Splitter, MAX_PHASES};
pub use crate::stats::{nearest_rank, LatencyHist, Percentiles, PERCENTILES};
pub use crate::text::escape_bytes;
pub use calls::CallView;
use calls::Finished;
pub(crate) use observer::reads_header;
pub use report::*;
pub use timeline::Timeline;

/// Calls followed at once (in flight); calls beyond are counted in `limits.untracked_calls`.
pub const MAX_ACTIVE_CALLS: usize = crate::model::MAX_OPEN_STREAMS;
/// Distinct `:path` values kept; later ones are counted under `(other)`.
pub const MAX_METHODS: usize = 4096;
/// Distinct methods reported per phase; later ones are counted under `(other)` there.
pub const MAX_PHASE_METHODS: usize = 64;
/// GOAWAY frames listed; later ones are only counted.
pub const MAX_GOAWAYS: usize = 1000;
/// Writes per direction whose frames may still arrive (while the ledger looks for a frame
/// boundary it holds writes back); older ones are closed.
const MAX_OPEN_WRITES: usize = 4096;
/// Distinct calls remembered per BDP round.
const MAX_ROUND_CALLS: usize = 4096;
/// Ended calls kept for a BDP PING that may still name them, at most this many and for at most
/// [`RECENT_NS`] of capture time; then they are folded.
const RECENT_CALLS: usize = 1024;
/// How long after its end a call is folded (and handed to `calls`): a tick of `calls --every`
/// waits this long after its period to count every call that ended in it.
pub const RECENT_NS: Nanos = 1_000_000_000;
/// The least time between two sweeps of the pinned calls (decision 472): a pinned call is
/// folded at most this long after its candidacy ran out.
const PIN_SWEEP_NS: Nanos = RECENT_NS / 16;
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
/// The server sent the RST_STREAM that ended the call.
const F_RESET_BY_SERVER: u8 = 32;

/// RST_STREAM error codes counted one by one: RFC 9113's 0x0 to 0xd; any other code counts in
/// the last slot ("other").
pub const RST_CODES: usize = 15;

/// The slot of `code` in a [`RST_CODES`] array.
pub fn rst_slot(code: u32) -> usize {
    (code as usize).min(RST_CODES - 1)
}

/// The name of a slot of a [`RST_CODES`] array: the RFC 9113 name, or `other`.
pub fn rst_slot_name(slot: usize) -> String {
    if slot + 1 >= RST_CODES {
        "other".to_string()
    } else {
        h2_frame_parser::ErrorCode(slot as u32).to_string()
    }
}

/// One call (HTTP/2 stream opened by a request HEADERS), 64 bytes.
#[derive(Clone, Copy, Debug)]
pub struct CallRec {
    /// Time of the request HEADERS (the write that carried its last byte).
    pub start: Nanos,
    /// Nanoseconds from `start` to the first response frame; -1 if none was seen.
    pub first_byte: i64,
    /// Nanoseconds from `start` to the response frame with END_STREAM; -1 if none was seen.
    pub end: i64,
    /// The connection's id ([`ConnId`]'s number).
    pub conn: u32,
    /// The stream id of the call.
    pub stream: u32,
    /// Index of the call's `:path` in the run's table of methods ([`CallView::method`] is its
    /// name).
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
    /// The RST_STREAM's error code when one ended the call (capped at 255: RFC 9113's codes
    /// end at 0xd).
    reset_code: u8,
}

impl CallRec {
    /// Whether an RST_STREAM ended the call.
    pub fn reset(&self) -> bool {
        self.flags & F_RESET != 0
    }
    /// The error code and sender of the RST_STREAM that ended the call, if one did.
    pub fn reset_by(&self) -> Option<(h2_frame_parser::ErrorCode, Side)> {
        self.reset().then(|| {
            let side = if self.flags & F_RESET_BY_SERVER != 0 {
                Side::Server
            } else {
                Side::Client
            };
            (h2_frame_parser::ErrorCode(u32::from(self.reset_code)), side)
        })
    }
    pub(crate) fn set_reset(&mut self, code: u32, by: Side) {
        self.flags |= F_RESET;
        if by == Side::Server {
            self.flags |= F_RESET_BY_SERVER;
        }
        self.reset_code = code.min(255) as u8;
    }
    /// Whether the call opened a BDP round of `pinger` (its DATA triggered that side's BDP PING;
    /// docs/pings.md, "BDP rounds").
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
        match self.parts() {
            (text, Some(n)) => format!("{text}{n}"),
            (text, None) => text.to_string(),
        }
    }

    fn parts(self) -> (&'static str, Option<u16>) {
        match self {
            StatusKey::Reset => ("RST_STREAM", None),
            StatusKey::Grpc(s) => ("grpc-status ", Some(s)),
            StatusKey::Http(s) => (":status ", Some(s)),
            StatusKey::None => ("none", None),
        }
    }
}

/// A call in flight or just ended.
#[derive(Debug)]
pub(crate) struct Live {
    /// The call's sequence number (what the flow tracker knows it by).
    seq: u64,
    /// What the gRPC tracker saw of it: made when its stream opens there (decision 232).
    /// Boxed (decision 463): the record is about 150 bytes, and a slot is moved in and out
    /// once per call.
    grpc: Option<Box<crate::grpc::CallGrpc>>,
    /// Its stream as the gRPC tracker follows a plain call's, held here while both are open
    /// (decision 466).
    plain: crate::grpc::Plain,
    /// The previous and next call in flight on its connection (slots, [`NO_SLOT`] for none);
    /// both [`NO_SLOT`] once it ended.
    links: [u32; 2],
    rec: CallRec,
    last_write: [u64; 2],
}

/// No slot: the end of a connection's list of calls in flight.
const NO_SLOT: u32 = u32::MAX;
/// [`Live::links`]`[0]` of an ended call that waits among the pinned ones.
const PINNED: u32 = u32::MAX - 1;

pub(crate) use crate::grpc::CallId;

/// The calls in flight and recently ended, each in a slot of its own (decision 231): the
/// in-flight map gives a call's slot, and its frames, end and fold reach the record by index
/// instead of a hash lookup by sequence number. A freed slot is reused by the next call, so
/// the slab holds as many slots as calls were ever live at once (at most
/// [`MAX_ACTIVE_CALLS`] in flight, [`RECENT_CALLS`] ended and the pinned ones), like the map
/// it replaced.
#[derive(Debug, Default)]
pub(crate) struct Slab {
    slots: Vec<Option<Live>>,
    free: Vec<u32>,
    /// Emptied gRPC records of folded calls, for the next calls (at most [`SPARE_RECORDS`]):
    /// a record is boxed, and taken and given back once per call (decision 463). The boxes
    /// themselves are what is kept: each goes back into a call's slot as it is.
    #[allow(clippy::vec_box)]
    spare: Vec<Box<crate::grpc::CallGrpc>>,
}

/// Emptied gRPC records kept for reuse ([`Slab::recycle`]): as many as calls end between two
/// drains of the `calls` view, about.
const SPARE_RECORDS: usize = RECENT_CALLS;

impl Slab {
    fn insert(&mut self, l: Live) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(l);
                i
            }
            None => {
                if self.slots.len() == self.slots.capacity() {
                    // Half again rather than twice as many: the slots of 4,608 calls in flight
                    // (4,096 connections and the evicted ones kept) took 8,192 of about 250
                    // bytes (decision 458); still amortised constant.
                    self.slots.reserve_exact((self.slots.len() / 2).max(16));
                }
                self.slots.push(Some(l));
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// The slot the next [`Slab::insert`] fills.
    fn next_slot(&self) -> u32 {
        match self.free.last() {
            Some(&i) => i,
            None => self.slots.len() as u32,
        }
    }

    #[inline]
    fn get(&self, slot: u32) -> Option<&Live> {
        self.slots.get(slot as usize).and_then(Option::as_ref)
    }

    #[inline]
    fn get_mut(&mut self, slot: u32) -> Option<&mut Live> {
        self.slots.get_mut(slot as usize).and_then(Option::as_mut)
    }

    /// The call `id` names, if its slot still holds it.
    #[inline]
    fn get_id_mut(&mut self, id: CallId) -> Option<&mut Live> {
        self.get_mut(id.slot).filter(|l| l.seq == id.seq)
    }

    /// A folded call's gRPC record, emptied now (what it held is dropped when it was), kept
    /// for the next call's.
    pub(super) fn recycle(&mut self, g: Option<Box<crate::grpc::CallGrpc>>) {
        if let Some(mut g) = g {
            if self.spare.len() < SPARE_RECORDS {
                *g = crate::grpc::CallGrpc::default();
                self.spare.push(g);
            }
        }
    }

    /// The record in `slot`, taken out: the slot is free for the next call.
    fn take(&mut self, slot: u32) -> Option<Live> {
        let l = self.slots.get_mut(slot as usize)?.take()?;
        self.free.push(slot);
        Some(l)
    }
}

impl crate::grpc::Recs for Slab {
    #[inline]
    fn grpc_mut(&mut self, id: CallId) -> Option<&mut crate::grpc::CallGrpc> {
        let l = self
            .slots
            .get_mut(id.slot as usize)
            .and_then(Option::as_mut)
            .filter(|l| l.seq == id.seq)?;
        let spare = &mut self.spare;
        Some(
            l.grpc
                .get_or_insert_with(|| spare.pop().unwrap_or_default()),
        )
    }

    #[inline]
    fn grpc_if_any(&mut self, id: CallId) -> Option<&mut crate::grpc::CallGrpc> {
        self.get_id_mut(id).and_then(|l| l.grpc.as_deref_mut())
    }

    #[inline]
    fn plain(&mut self, id: CallId) -> Option<&mut crate::grpc::Plain> {
        self.get_id_mut(id).map(|l| &mut l.plain)
    }
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
    /// The calls' streams in this round (a set: every DATA frame asks whether its stream is
    /// in, and a round may hold up to `MAX_ROUND_CALLS`).
    streams: crate::FastSet<u32>,
}

/// A direction's BDP candidate: the first DATA it received while no round was open, which the
/// BDP PING it sends next names (grpc-go's bdpEstimator.add sends it on that DATA: http2_client.go
/// and http2_server.go handleData). A PING that comes more than [`RECENT_NS`] after that DATA
/// is not its answer: a peer without BDP PINGs would otherwise hold its connection's first
/// call pinned until the connection closes (decision 472).
#[derive(Clone, Copy, Debug)]
struct Candidate {
    stream: u32,
    call: Option<CallId>,
    /// When the DATA came.
    ts: Nanos,
}

impl Candidate {
    /// Past its time at `now`: no PING names it any more.
    fn stale(&self, now: Nanos) -> bool {
        lapsed(self.ts, now)
    }
}

/// A candidacy that began at `ts` has run out at `now` ([`RECENT_NS`] later).
fn lapsed(ts: Nanos, now: Nanos) -> bool {
    now.saturating_sub(ts) > RECENT_NS
}

#[derive(Debug, Default)]
struct DirState {
    open_writes: VecDeque<OpenWrite>,
    /// The BDP round this direction has open.
    round: Option<Round>,
    /// The first DATA received by this direction while no round was open, for at most
    /// [`RECENT_NS`] (decision 472).
    candidate: Option<Candidate>,
    /// The latest DATA received by this direction while no round was open (hyper's BDP PING
    /// names it), for at most [`RECENT_NS`]; followed once this direction sent such a PING
    /// (`on_latest`: its first PING follows its first DATA, which `candidate` names).
    latest: Option<Candidate>,
    on_latest: bool,
    /// Other streams whose DATA arrived after the candidate's, before the PING (at most
    /// `MAX_ROUND_CALLS`): they are in the round the PING opens.
    waiting: crate::FastSet<u32>,
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
#[derive(Debug)]
struct ConnState {
    dirs: Dirs<DirState>,
    /// This connection's calls in flight: their slot by stream id (decision 269), how many, and
    /// the slot of the first of their list, linked through [`Live::links`] (decision 234); a
    /// close ends them without a scan of every connection's calls.
    active: IdTable<u32>,
    in_flight: u32,
    head: u32,
    /// By direction; folded by side when the connection closes.
    whole: Dirs<Acc>,
    phases: Phased<Dirs<Acc>>,
}

impl Default for ConnState {
    fn default() -> Self {
        ConnState {
            dirs: Dirs::default(),
            active: IdTable::default(),
            in_flight: 0,
            head: NO_SLOT,
            whole: Dirs::default(),
            phases: Phased::default(),
        }
    }
}

/// The open connections' states by connection id (decision 236): a map to a slot, and the
/// last connection looked up remembered, so that the several looks at one connection while a
/// frame is counted (its write, its call, the receiver's BDP round, the call's end) hash once.
/// Freed slots are reused: as many slots as connections were ever open at once.
#[derive(Debug, Default)]
struct Conns {
    ix: FastMap<u32, u32>,
    slots: Vec<Option<Box<ConnState>>>,
    free: Vec<u32>,
    /// The last (connection id, slot) looked up.
    last: Option<(u32, u32)>,
}

impl Conns {
    #[inline(always)]
    fn slot_of(&self, id: u32) -> Option<u32> {
        match self.last {
            Some((i, s)) if i == id => Some(s),
            _ => self.ix.get(&id).copied(),
        }
    }

    #[inline(always)]
    fn get(&self, id: &u32) -> Option<&ConnState> {
        let s = self.slot_of(*id)?;
        self.slots.get(s as usize)?.as_deref()
    }

    #[inline]
    fn get_mut(&mut self, id: &u32) -> Option<&mut ConnState> {
        let s = self.slot_of(*id)?;
        self.last = Some((*id, s));
        self.slots.get_mut(s as usize)?.as_deref_mut()
    }

    /// The state of connection `id`, made when new. The connection looked up last, as the
    /// frames of one write are, without a call (decision 463).
    #[inline(always)]
    fn entry_or_default(&mut self, id: u32) -> &mut ConnState {
        match self.last {
            Some((i, s)) if i == id && matches!(self.slots.get(s as usize), Some(Some(_))) => {
                match self.slots[s as usize].as_deref_mut() {
                    Some(st) => st,
                    None => unreachable!("checked above"),
                }
            }
            _ => self.entry_slow(id),
        }
    }

    /// [`Conns::entry_or_default`] of a connection other than the last.
    #[inline(never)]
    fn entry_slow(&mut self, id: u32) -> &mut ConnState {
        let s = match self.slot_of(id) {
            Some(s) => s,
            None => self.insert(id),
        };
        self.last = Some((id, s));
        self.slots[s as usize].get_or_insert_with(Box::default)
    }

    #[cold]
    fn insert(&mut self, id: u32) -> u32 {
        let s = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(None);
                (self.slots.len() - 1) as u32
            }
        };
        self.ix.insert(id, s);
        s
    }

    fn remove(&mut self, id: &u32) -> Option<Box<ConnState>> {
        let s = self.ix.remove(id)?;
        if self.last.is_some_and(|(i, _)| i == *id) {
            self.last = None;
        }
        self.free.push(s);
        self.slots.get_mut(s as usize)?.take()
    }

    fn ids(&self) -> Vec<u32> {
        self.ix.keys().copied().collect()
    }
}

/// One method's calls within a scope.
#[derive(Clone, Debug, Default)]
struct MethodAgg {
    calls: u64,
    /// The earliest start of the calls folded here (a phase's methods are in this order, and
    /// merge in it: decision 413).
    first: Nanos,
    status: BTreeMap<StatusKey, u64>,
    frames: [[u64; 4]; 2],
    writes: [u64; 2],
    latency: LatencyHist,
}

/// The calls of a scope, folded.
#[derive(Clone, Debug, Default)]
struct CallAgg {
    calls: u64,
    opened: Sides<u64>,
    latency: LatencyHist,
    first_byte: LatencyHist,
    inflight_sum: u64,
    max_inflight: u16,
    reset: u64,
    unfinished: u64,
    methods: BTreeMap<u32, MethodAgg>,
}

/// Everything folded for one scope (the whole capture or a phase).
#[derive(Clone, Debug, Default)]
struct Scope {
    sides: Sides<Acc>,
    calls: CallAgg,
    rtt: LatencyHist,
    rtt_by_label: BTreeMap<u8, LatencyHist>,
    /// RST_STREAM frames by sender and [`rst_slot`] of their code.
    resets: Sides<[u64; RST_CODES]>,
}

#[derive(Clone, Debug)]
struct GoAwayRec {
    ts: Nanos,
    /// The phase it came in.
    phase: Option<u64>,
    conn: u32,
    side: Side,
    last_stream_id: u32,
    code: ErrorCode,
    debug: String,
}

/// The analysis observer. See the module docs.
#[derive(Debug, Default)]
pub struct Analysis {
    splitter: Splitter,
    phased: bool,
    /// Boxed: slots are reserved ahead, and a state is several hundred bytes.
    conns: Conns,
    /// Calls in flight and recently ended.
    calls: Slab,
    next_seq: u64,
    /// In-flight calls over all connections (each connection's [`ConnState::active`] holds
    /// theirs), at most [`MAX_ACTIVE_CALLS`].
    active_len: usize,
    /// Ended calls (their slot) waiting to be folded, in the order they ended, with their end
    /// time.
    recent: VecDeque<(u32, Nanos)>,
    /// The last calls that ended (END_STREAM or RST_STREAM), most recent last: frames that
    /// still arrive on their stream (trailers after a RST_STREAM, a RST after the end) count
    /// in the call while it is not folded.
    ended: VecDeque<((u32, u32), CallId)>,
    /// Ended calls that are still a direction's BDP candidate (its next BDP PING will name
    /// them, if it comes within [`RECENT_NS`] of their DATA): folded when the PING comes, when
    /// that time is past (`pin_sweep`), or when the connection closes. At most two per open
    /// connection. Their slots.
    pinned: Vec<u32>,
    /// When the first pinned call's candidacy runs out: [`Analysis::advance`] folds it then.
    pin_sweep: Option<Nanos>,
    /// When the pinned calls were last swept.
    swept: Nanos,
    whole: Scope,
    phases: Phased<Scope>,
    /// Folded calls kept for [`Analysis::drain_finished`] (only when asked for).
    keep_finished: bool,
    /// Only the per-call records ([`Analysis::calls_only`]): no totals, histograms or write
    /// accounting.
    calls_only: bool,
    finished: Vec<Finished>,
    /// `:path` values, indexed by [`CallRec::method`].
    pub(crate) methods: Vec<String>,
    /// The `:method` of each [`CallRec::method`] (calls are grouped by both).
    pub(crate) http_methods: Vec<String>,
    /// When each [`CallRec::method`] was first seen (the latest frame time then): merged
    /// reports order their methods by it (issue 39).
    method_first: Vec<Nanos>,
    /// The key of the last method looked up, built in place.
    method_key: Vec<u8>,
    method_ids: FastMap<Vec<u8>, u32>,
    /// The last `:path` looked up in `method_ids` and its id (calls of one method in a row
    /// skip the hash).
    last_method: (Vec<u8>, Option<u32>),
    goaways: Vec<GoAwayRec>,
    pool: Vec<Vec<u32>>,
    /// Emptied round sets, for the next round.
    round_pool: Vec<crate::FastSet<u32>>,
    limits: AnalysisLimits,
    /// The latest time seen (calls cut short by a close end then).
    now: Nanos,
    /// Flow-control windows and stalls (docs/ledger.md, "Flow control").
    pub flow: crate::flow::Flow,
    /// gRPC messages per call (docs/ledger.md, "gRPC messages").
    pub grpc: crate::grpc::Grpc,
    /// PING round trips not yet drained ([`Analysis::keep_rtts`]): the side that sent the
    /// PING and the round trip, at most [`MAX_KEPT_RTTS`].
    rtts: Option<Vec<(Side, Nanos)>>,
    /// Round trips not kept because [`MAX_KEPT_RTTS`] were waiting.
    rtts_dropped: u64,
    /// GOAWAY frames with ENHANCE_YOUR_CALM by sending side, listed or not.
    calm_goaways: Sides<u64>,
    /// GOAWAY and RST_STREAM frames by sending side and error code ([`rst_slot`]), listed or
    /// not (the metrics' `h2ledger_goaways_total` and `h2ledger_rst_streams_total`).
    codes: ErrorCodes,
}

/// GOAWAY and RST_STREAM frames by sending side and error code (a [`RST_CODES`] array: RFC
/// 9113's codes 0x0 to 0xd, then every other code).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ErrorCodes {
    /// GOAWAY frames.
    pub goaway: Sides<[u64; RST_CODES]>,
    /// RST_STREAM frames.
    pub rst_stream: Sides<[u64; RST_CODES]>,
}

/// PING round trips kept for [`Analysis::drain_rtts`] between two drains; more are counted
/// ([`Analysis::rtts_dropped`]), not kept.
pub const MAX_KEPT_RTTS: usize = 4096;

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

    /// Keep each PING round trip, with the side that sent the PING, for
    /// [`Analysis::drain_rtts`] (the metrics' `h2ledger_ping_rtt_seconds{side}`). The side is
    /// the one known when the ACK came.
    pub fn keep_rtts(mut self) -> Self {
        self.rtts = Some(Vec::new());
        self
    }

    /// Hands each PING round trip measured since the last drain to `f` (side of the PING's
    /// sender, nanoseconds). Needs [`Analysis::keep_rtts`].
    pub fn drain_rtts(&mut self, mut f: impl FnMut(Side, Nanos)) {
        if let Some(v) = &mut self.rtts {
            for (side, rtt) in v.drain(..) {
                f(side, rtt);
            }
        }
    }

    /// Round trips that [`Analysis::drain_rtts`] never handed out: more than
    /// [`MAX_KEPT_RTTS`] were waiting.
    pub fn rtts_dropped(&self) -> u64 {
        self.rtts_dropped
    }

    /// GOAWAY frames with error ENHANCE_YOUR_CALM so far (grpc-go's answer to too many
    /// PINGs: its keepalive policy's strikes ran out), by the side that sent them (the side
    /// known then); the report's `too_many_pings` counts the listed ones.
    pub fn enhance_your_calm(&self) -> Sides<u64> {
        self.calm_goaways
    }

    /// GOAWAY and RST_STREAM frames so far by sending side and error code.
    pub fn error_codes(&self) -> ErrorCodes {
        self.codes
    }

    /// Flow control of the whole run so far (the report's `flow_control`), for metrics.
    pub fn flow_totals(&self) -> crate::flow::FlowReport {
        self.flow.report(None)
    }

    /// gRPC calls not followed so far (the report's `grpc.untracked_calls`).
    pub fn grpc_untracked_calls(&self) -> u64 {
        self.grpc.untracked_calls
    }

    /// The limits hit so far (the report's `limits`).
    pub fn limits(&self) -> &AnalysisLimits {
        &self.limits
    }

    /// Only what each call's record needs (`h2ledger calls`): calls are kept for
    /// [`Analysis::drain_finished`], and the totals, histograms and per-write accounting the
    /// report is made of are skipped (the report of such an analysis is not meant to be read).
    pub fn calls_only(mut self) -> Self {
        self.keep_finished = true;
        self.calls_only = true;
        self.flow.calls_only();
        self
    }

    /// The time of the capture's first packet (phase offsets and `--every` count from it).
    pub fn set_origin(&mut self, t: Nanos) {
        self.splitter.set_origin(t);
        // The flow-control window series of `--plot` counts from it too.
        if let Some(s) = &mut self.flow.series {
            s.origin.get_or_insert(t);
        }
    }

    /// The phase router of a run cut into phases (`None` without phases): the one splitter every
    /// per-phase count of the run (tallies, analysis, flow control, gRPC) is routed by.
    pub fn splitter(&self) -> Option<&Splitter> {
        self.phased.then_some(&self.splitter)
    }

    /// The phases that hold something, in time order.
    pub fn phase_indexes(&self) -> Vec<u64> {
        self.phases.indexes().collect()
    }

    fn conn(&mut self, id: ConnId) -> &mut ConnState {
        self.conns.entry_or_default(id.0)
    }

    /// Puts `l` in a slot, as the call in flight on stream `sid`, and at the head of connection
    /// `conn`'s calls in flight, its `inflight` set to the number of that connection's other
    /// calls in flight (saturated); returns the slot.
    fn insert_in_flight(&mut self, conn: ConnId, sid: u32, mut l: Live) -> u32 {
        let slot = self.calls.next_slot();
        let c = self.conn(conn);
        l.rec.inflight = c.in_flight.min(u32::from(u16::MAX)) as u16;
        c.in_flight += 1;
        let had = c.active.len();
        c.active.insert(sid, slot);
        let added = c.active.len() - had;
        let next = std::mem::replace(&mut c.head, slot);
        self.active_len += added;
        if let Some(n) = self.calls.get_mut(next) {
            n.links[0] = slot;
        }
        l.links = [NO_SLOT, next];
        let s = self.calls.insert(l);
        debug_assert_eq!(s, slot);
        s
    }

    /// The slot of the call in flight on stream `sid` of connection `conn`.
    #[inline(always)]
    fn active_slot(&self, conn: u32, sid: u32) -> Option<u32> {
        self.conns.get(&conn)?.active.get(sid).copied()
    }

    /// The call in flight on `key` (connection, stream) is over: its slot, out of the table.
    #[inline]
    fn take_active(&mut self, key: (u32, u32)) -> Option<u32> {
        let c = self.conns.get_mut(&key.0)?;
        let slot = c.active.remove(key.1)?;
        // Bounded by the calls in flight now, not by the most a connection ever had.
        c.active.shrink();
        self.active_len -= 1;
        Some(slot)
    }

    /// Every call in flight, as (connection, stream), in no order.
    fn active_keys(&self) -> Vec<(u32, u32)> {
        let mut v = Vec::with_capacity(self.active_len);
        for id in self.conns.ids() {
            if let Some(c) = self.conns.get(&id) {
                v.extend(c.active.keys().map(|sid| (id, sid)));
            }
        }
        v
    }

    /// Call `slot` of connection `conn` is no longer in flight: out of its connection's list.
    fn unlink(&mut self, conn: u32, slot: u32) {
        let Some(l) = self.calls.get_mut(slot) else {
            return;
        };
        let [prev, next] = std::mem::replace(&mut l.links, [NO_SLOT; 2]);
        if let Some(n) = self.calls.get_mut(next) {
            n.links[0] = prev;
        }
        match self.calls.get_mut(prev) {
            Some(p) => p.links[1] = next,
            None => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.head = next;
                }
            }
        }
        if let Some(c) = self.conns.get_mut(&conn) {
            c.in_flight -= 1;
        }
    }

    /// The stream ids of connection `conn`'s calls in flight.
    fn in_flight_streams(&self, conn: u32) -> Vec<u32> {
        let mut v = Vec::new();
        let mut at = self.conns.get(&conn).map_or(NO_SLOT, |c| c.head);
        while let Some(l) = self.calls.get(at) {
            v.push(l.rec.stream);
            at = l.links[1];
        }
        v
    }

    /// The phase of time `t`: the run's one phase router (`None` without phases). The first
    /// time seen is the origin of offsets and `--every`.
    pub fn route(&mut self, t: Nanos) -> Option<u64> {
        self.origin(t);
        self.phase(t)
    }

    fn origin(&mut self, t: Nanos) {
        if self.splitter.origin().is_none() {
            self.splitter.set_origin(t);
        }
    }

    fn phase(&self, t: Nanos) -> Option<u64> {
        self.phased.then(|| self.splitter.phase_of(t))
    }

    /// Applies `f` to the counters of `(conn, dir)` for the whole capture and for the phase of `t`.
    fn acc(&mut self, conn: u32, dir: Dir, t: Nanos, f: impl Fn(&mut Acc)) {
        let phase = self.phase(t);
        let c = self.conns.entry_or_default(conn);
        f(&mut c.whole[dir]);
        if let Some(p) = phase {
            match c.phases.get_mut(p) {
                Some(a) => f(&mut a[dir]),
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

    /// Time reached `now` (each frame's time, or, when a live capture has gone quiet, the clock
    /// the packets are stamped with): the calls that ended more than a second before `now` are
    /// folded, so that [`Analysis::drain_finished`] hands them out instead of holding them
    /// until more traffic comes.
    pub fn advance(&mut self, now: Nanos) {
        if self
            .recent
            .front()
            .is_some_and(|(_, end)| end.saturating_add(RECENT_NS) < now)
            || self.pin_sweep.is_some_and(|t| t < now)
        {
            self.fold_recent(now, false);
        }
    }

    /// The latest write or frame time seen (0 before any): what the connections still open
    /// at the end of the input close at (their phase, their calls' ends).
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// The run's clock reached `t` without a write or frame here: a part of a run of several
    /// sessions (`replay -j N`, `replay A B`, `sniff --workers N`) ends as the whole run does,
    /// at the latest write or frame over every part (decision 451). Earlier times do nothing.
    pub fn reach(&mut self, t: Nanos) {
        self.now = self.now.max(t);
    }

    /// Closes what is still open at the end of the input: writes waiting for frames, BDP rounds
    /// waiting for their ACK (counted as unacknowledged), calls (counted as unfinished). Call it
    /// before [`Analysis::report`].
    pub fn flush(&mut self) {
        let mut ids: Vec<u32> = self.conns.ids();
        ids.sort_unstable();
        for id in ids {
            self.close_pending(id);
        }
        let mut live: Vec<(u32, u32)> = self.active_keys();
        live.sort_unstable();
        for key in live {
            self.end_call(key, None);
        }
        let phase = self.phase(self.now);
        self.flow.flush(phase);
        self.grpc.flush(|| phase, &mut self.calls);
        self.fold_recent(Nanos::MAX, true);
    }

    /// What the gRPC tracker recorded of call `seq` (numbered from 0 in the order the calls
    /// opened) while the call is in flight or not yet folded.
    pub fn grpc_call(&self, seq: u64) -> Option<&crate::grpc::CallGrpc> {
        self.calls
            .slots
            .iter()
            .flatten()
            .find(|l| l.seq == seq)
            .and_then(|l| l.grpc.as_deref())
    }

    /// The gRPC record of call `seq`, taken out (tests of the calls view's hand-over).
    #[cfg(test)]
    pub(crate) fn take_grpc_call(&mut self, seq: u64) -> Option<crate::grpc::CallGrpc> {
        self.calls
            .slots
            .iter_mut()
            .flatten()
            .find(|l| l.seq == seq)
            .and_then(|l| l.grpc.take())
            .map(|g| *g)
    }

    /// Whether DATA payloads of this stream are wanted (a gRPC call being cut into messages).
    pub(crate) fn wants_data(&self, conn: ConnId, stream: StreamId) -> bool {
        self.grpc.wants_data(conn, stream.0)
    }
}

fn parse_u16(v: &[u8]) -> Option<u16> {
    // Nearly every status is 1 to 4 ASCII digits: the same number without the text steps.
    if (1..=4).contains(&v.len()) && v.iter().all(u8::is_ascii_digit) {
        return Some(v.iter().fold(0, |n, d| n * 10 + u16::from(d - b'0')));
    }
    std::str::from_utf8(v).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One unary gRPC call on `sid`: the request and its DATA, the response, its DATA and
    /// trailers, each write 1 ms after the last.
    fn call(c: &mut crate::testkit::Conn, sid: u32) {
        use crate::testkit::{data, request, response, trailers};
        c.client(&[request(sid, "/s.S/M", true), data(sid, true, 5)].concat());
        c.server(
            &[
                response(sid, false, &[("content-type", "application/grpc")]),
                data(sid, false, 7),
            ]
            .concat(),
        );
        c.server(&trailers(sid, &[("grpc-status", "0")]));
    }

    /// The streams of the calls `calls` hands out now, in order.
    fn drained(c: &mut crate::testkit::Conn) -> Vec<u32> {
        let mut v = Vec::new();
        c.ledger.observer.drain_finished(|r| v.push(r.rec.stream));
        v
    }

    /// A peer without BDP PINGs: the connection's first call, the first DATA either side
    /// received, is folded a second after it ended like every other call, not held as the
    /// next round's opener until the connection closes (decision 472).
    #[test]
    fn pinned_call_is_folded_within_a_second() {
        let mut c = crate::testkit::Conn::started(&[]);
        for sid in [1, 3, 5] {
            call(&mut c, sid);
        }
        c.t += 2 * RECENT_NS;
        call(&mut c, 7);
        assert_eq!(drained(&mut c), vec![1, 3, 5]);
        c.t += 2 * RECENT_NS;
        c.ledger.observer.advance(c.t);
        assert_eq!(drained(&mut c), vec![7]);
    }

    /// A BDP PING names the DATA that made its sender send it: grpc-go's the first DATA
    /// received while none was outstanding, hyper's (`h2-user`) the latest, after its ping
    /// delay (from its second PING on: its first follows its first DATA); a PING more than a
    /// second after the DATA names none (decision 472).
    #[test]
    fn bdp_ping_names_the_data_its_sender_acts_on() {
        use crate::testkit::{data, fr, request};
        let opened = |payload: [u8; 8], gap: Nanos| {
            let mut c = crate::testkit::Conn::started(&[]);
            for sid in [1, 3, 5] {
                c.client(&request(sid, "/s.S/M", true));
            }
            // A first round: the server's PING on stream 1's DATA, and the client's ACK.
            c.client(&data(1, false, 5));
            c.server(&fr(6, 0, 0, &payload));
            c.client(&fr(6, 1, 0, &payload));
            c.client(&data(3, false, 5));
            c.t += gap;
            c.client(&data(5, false, 5));
            c.server(&fr(6, 0, 0, &payload));
            c.client(&fr(6, 1, 0, &payload));
            for sid in [1, 3, 5] {
                c.client(&data(sid, true, 0));
                c.server(&[crate::testkit::response(sid, true, &[])].concat());
            }
            c.close();
            let mut v = Vec::new();
            c.ledger
                .observer
                .drain_finished(|r| v.push((r.rec.stream, r.rec.opened_round(Side::Server))));
            v.sort_unstable();
            v
        };
        let grpc_go = h2_frame_parser::ping::GRPC_GO_BDP;
        let hyper = [0x3b, 0x7c, 0xdb, 0x7a, 0x0b, 0x87, 0x16, 0xb4];
        assert_eq!(opened(grpc_go, 0), vec![(1, true), (3, true), (5, false)]);
        assert_eq!(opened(hyper, 0), vec![(1, true), (3, false), (5, true)]);
        assert_eq!(
            opened(grpc_go, 2 * RECENT_NS),
            vec![(1, true), (3, false), (5, true)]
        );
        assert_eq!(
            opened(hyper, 2 * RECENT_NS),
            vec![(1, true), (3, false), (5, true)]
        );
    }

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

    /// The digits-only fast path gives what the text parse gives, on every string of up to
    /// five bytes over digits, signs, spaces and a letter (and the fast path is taken).
    #[test]
    fn status_parse_fast_path_agrees() {
        let slow = |v: &[u8]| -> Option<u16> { std::str::from_utf8(v).ok()?.trim().parse().ok() };
        let alphabet = b"0159+- \ta";
        let mut n = 0;
        for len in 0..=5u32 {
            for k in 0..alphabet.len().pow(len) {
                let mut v = Vec::new();
                let mut x = k;
                for _ in 0..len {
                    v.push(alphabet[x % alphabet.len()]);
                    x /= alphabet.len();
                }
                assert_eq!(parse_u16(&v), slow(&v), "{:?}", String::from_utf8_lossy(&v));
                n += 1;
            }
        }
        assert!(n > 60_000);
        assert_eq!(parse_u16(b"9999"), Some(9999));
        assert_eq!(parse_u16(b"65535"), Some(65535));
        assert_eq!(parse_u16(b"65536"), None);
        assert_eq!(parse_u16(b" 200"), Some(200));
    }

    /// A histogram's keys come in the order every JSON object has always been published in:
    /// byte order of the keys (the reports went through a sorted map until the types declared
    /// the order themselves), so `"10"` comes after `"1"`.
    #[test]
    fn hist_keys_are_in_the_published_order() {
        let h = Hist(vec![1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 5]);
        let s = serde_json::to_string(&h).unwrap();
        assert_eq!(
            s,
            r#"{"0":1,"1":0,"10":5,"2":2,"3":0,"4":0,"5":0,"6":0,"7":0,"8":0,"9":0}"#
        );
    }
}
