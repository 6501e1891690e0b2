//! Analysis beyond the frame ledger: calls (streams), what each TCP write carried, PING round
//! trips and BDP rounds, concurrency and latency from the wire, optionally per phase.
//!
//! [`Analysis`] is an [`Observer`]; attach it next to a [`crate::Tally`] only when its output is
//! wanted (it keeps one [`CallRec`] of 64 bytes per call, one 24-byte sample per PING round
//! trip, and a few counters per connection, side and phase). docs/article.md defines every
//! term (call, write, round, in flight, latency) with the capture it was checked on.
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

pub mod phase;
pub mod stats;
pub mod timeline;

use std::collections::{BTreeMap, HashMap, VecDeque};

use h2_frame_parser::{ping, ErrorCode, Frame};
use h2ledger_tcp::{ConnId, ConnMeta, Dir, Nanos, Write};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use crate::ledger::{ConnSummary, FrameEvent, Observer, NO_WRITE};
use crate::model::{FrameClass, Side};

pub use phase::{Cut, Splitter};
pub use stats::{nearest_rank, Percentiles, PERCENTILES};
pub use timeline::Timeline;

/// Calls tracked at once (in flight); calls beyond are not recorded.
pub const MAX_ACTIVE_CALLS: usize = 1 << 20;
/// Distinct `:path` values kept; later ones are counted under `(other)`.
pub const MAX_METHODS: usize = 4096;
/// Writes per direction whose frames may still arrive (while the ledger looks for a frame
/// boundary it holds writes back); older ones are closed.
const MAX_OPEN_WRITES: usize = 4096;
/// PINGs per direction waiting for their ACK.
const MAX_OUTSTANDING_PINGS: usize = 64;
/// Distinct calls remembered per BDP round.
const MAX_ROUND_CALLS: usize = 4096;
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
}

#[derive(Clone, Copy, Debug)]
struct Active {
    idx: u32,
    last_write: [u64; 2],
    ending: bool,
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
    candidate: Option<(u32, Option<u32>)>,
}

/// Counters of one direction of one connection within one scope (whole capture or a phase).
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

fn bump(h: &mut Vec<u64>, i: usize) {
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

#[derive(Debug, Default)]
struct ConnState {
    dirs: [DirState; 2],
    active: u32,
    whole: [Acc; 2],
    phases: Vec<[Acc; 2]>,
}

#[derive(Clone, Copy, Debug)]
struct Rtt {
    ping_ts: Nanos,
    rtt: i64,
    conn: u32,
    dir: u8,
    label: u8,
}

#[derive(Clone, Debug)]
struct GoAwayRec {
    ts: Nanos,
    conn: u32,
    dir: Dir,
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

fn other(d: usize) -> usize {
    1 - d
}

/// The analysis observer. See the module docs.
#[derive(Debug, Default)]
pub struct Analysis {
    splitter: Splitter,
    phased: bool,
    conns: Vec<ConnState>,
    calls: Vec<CallRec>,
    active: HashMap<(u32, u32), Active>,
    /// `:path` values, indexed by [`CallRec::method`].
    pub methods: Vec<String>,
    method_ids: HashMap<Vec<u8>, u32>,
    rtts: Vec<Rtt>,
    goaways: Vec<GoAwayRec>,
    pool: Vec<Vec<u32>>,
    /// Calls not recorded because [`MAX_ACTIVE_CALLS`] were in flight.
    pub untracked_calls: u64,
    /// Flow-control windows and stalls (issue 11).
    pub flow: crate::flow::Flow,
    /// gRPC messages and server time per call (issue 11).
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

    /// The time of the capture's first packet (phase offsets and `--every` count from it).
    pub fn set_origin(&mut self, t: Nanos) {
        self.splitter.set_origin(t);
    }

    pub fn splitter(&self) -> &Splitter {
        &self.splitter
    }

    /// Every call recorded, in order of their request HEADERS.
    pub fn call_records(&self) -> &[CallRec] {
        &self.calls
    }

    fn conn(&mut self, id: ConnId) -> &mut ConnState {
        let i = id.0 as usize;
        if self.conns.len() <= i {
            self.conns.resize_with(i + 1, Default::default);
        }
        &mut self.conns[i]
    }

    fn phase(&self, t: Nanos) -> Option<usize> {
        self.phased.then(|| self.splitter.phase_of(t))
    }

    /// Applies `f` to the counters of `(conn, dir)` for the whole capture and for the phase of `t`.
    fn acc(&mut self, conn: u32, d: usize, t: Nanos, f: impl Fn(&mut Acc)) {
        let phase = self.phase(t);
        let c = self.conn(ConnId(conn));
        f(&mut c.whole[d]);
        if let Some(p) = phase {
            if c.phases.len() <= p {
                c.phases.resize_with(p + 1, Default::default);
            }
            f(&mut c.phases[p][d]);
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
    }

    /// Closes what is still open at the end of the input: writes waiting for frames, BDP rounds
    /// waiting for their ACK (counted as unacknowledged).
    pub fn flush(&mut self) {
        self.flow.flush();
        self.grpc.flush(|| None);
        for ci in 0..self.conns.len() {
            for d in 0..2 {
                while let Some(w) = self.conns[ci].dirs[d].open_writes.pop_front() {
                    self.close_write(ci as u32, d, w);
                }
                if let Some(r) = self.conns[ci].dirs[d].round.take() {
                    self.close_round(ci as u32, d, r, false);
                }
            }
        }
    }

    fn method_id(&mut self, path: &[u8]) -> u32 {
        if let Some(&i) = self.method_ids.get(path) {
            return i;
        }
        if self.methods.len() >= MAX_METHODS {
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

    fn end_call(&mut self, key: (u32, u32)) {
        if self.active.remove(&key).is_some() {
            let c = self.conn(ConnId(key.0));
            c.active = c.active.saturating_sub(1);
        }
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
            if self.active.len() >= MAX_ACTIVE_CALLS || self.calls.len() >= u32::MAX as usize {
                self.untracked_calls += 1;
                return;
            }
            let method = match ev.headers.and_then(|h| h.get(b":path")) {
                Some(p) => self.method_id(p),
                None => self.method_id_str("(unknown)"),
            };
            let c = self.conn(ev.conn);
            let inflight = c.active.min(u32::from(u16::MAX)) as u16;
            c.active += 1;
            let idx = self.calls.len() as u32;
            self.calls.push(CallRec {
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
                flags: if ev.dir == Dir::Rev { F_REQ_REV } else { 0 },
            });
            self.active.insert(
                key,
                Active {
                    idx,
                    last_write: [NO_WRITE; 2],
                    ending: false,
                },
            );
        }
        let Some(a) = self.active.get_mut(&key) else {
            return;
        };
        let call = &mut self.calls[a.idx as usize];
        let rel = usize::from(ev.dir != call.req_dir());
        let kind = match ev.class {
            FrameClass::Headers => 0,
            FrameClass::Data => 1,
            FrameClass::Trailers => 2,
            _ => 3,
        };
        call.frames[rel][kind] = call.frames[rel][kind].saturating_add(1);
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
            self.end_call(key);
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
                if let Some((s, idx)) = cand {
                    streams.push(s);
                    if let Some(i) = idx {
                        let call = &mut self.calls[i as usize];
                        call.flags |= if ev.dir == call.req_dir() {
                            F_OPENED_CLIENT_ROUND
                        } else {
                            F_OPENED_SERVER_ROUND
                        };
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
                self.rtts.push(Rtt {
                    ping_ts: ts,
                    rtt: ev.ts - ts,
                    conn,
                    dir: p as u8,
                    label,
                });
                self.acc(conn, p, ts, |a| a.pings_acked += 1);
                if let Some(mut r) = round {
                    let streams = std::mem::take(&mut r.streams);
                    let n = streams.len();
                    r.streams = Vec::new();
                    self.acc(conn, p, r.ts, |a| {
                        a.rounds += 1;
                        a.rounds_acked += 1;
                        a.round_calls += n as u64;
                        bump(&mut a.calls_per_round, n);
                    });
                    let mut s = streams;
                    s.clear();
                    self.pool.push(s);
                }
            }
            None => self.acc(conn, d, ev.ts, |a| a.acks_unmatched += 1),
        }
    }

    /// The report for the whole capture (`phase` None) or one phase, over the HTTP/2
    /// connections among `conns`.
    pub fn report(&self, conns: &[ConnSummary], phase: Option<usize>) -> AnalysisReport {
        let mut r = AnalysisReport::default();
        let client_dir: HashMap<u32, Dir> = conns
            .iter()
            .filter(|c| c.http2)
            .map(|c| (c.id.0, c.client_dir))
            .collect();
        let in_scope = |t: Nanos| phase.is_none_or(|p| self.splitter.phase_of(t) == p);
        // Sides.
        let mut accs = [Acc::default(), Acc::default()];
        for (id, cd) in &client_dir {
            let Some(c) = self.conns.get(*id as usize) else {
                continue;
            };
            let scoped = match phase {
                None => Some(&c.whole),
                Some(p) => c.phases.get(p),
            };
            if let Some(s) = scoped {
                let ci = di(*cd);
                accs[0].merge(&s[ci]);
                accs[1].merge(&s[other(ci)]);
            }
        }
        // Calls.
        let calls: Vec<&CallRec> = self
            .calls
            .iter()
            .filter(|c| client_dir.get(&c.conn) == Some(&c.req_dir()) && in_scope(c.start))
            .collect();
        let n_calls = calls.len() as u64;
        for (i, side) in Side::ALL.into_iter().enumerate() {
            let a = &accs[i];
            let opened = calls.iter().filter(|c| c.opened_round(side)).count() as u64;
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
        // Latency.
        let mut call_lat: Vec<i64> = calls
            .iter()
            .filter(|c| c.end >= 0 && !c.reset())
            .map(|c| c.end)
            .collect();
        let mut first: Vec<i64> = calls
            .iter()
            .filter(|c| c.first_byte >= 0)
            .map(|c| c.first_byte)
            .collect();
        let mut rtts: Vec<i64> = Vec::new();
        let mut by_label: BTreeMap<&'static str, Vec<i64>> = BTreeMap::new();
        for x in &self.rtts {
            if client_dir.contains_key(&x.conn) && in_scope(x.ping_ts) {
                rtts.push(x.rtt);
                let label = ping::KNOWN_PINGS
                    .get(x.label as usize)
                    .map(|k| k.label)
                    .unwrap_or("other");
                by_label.entry(label).or_default().push(x.rtt);
                let _ = x.dir;
            }
        }
        r.latency_us = Latency {
            call: Percentiles::of_nanos(&mut call_lat),
            first_byte: Percentiles::of_nanos(&mut first),
            ping_rtt: Percentiles::of_nanos(&mut rtts),
            ping_rtt_by_label: by_label
                .into_iter()
                .map(|(k, mut v)| (k, Percentiles::of_nanos(&mut v)))
                .collect(),
        };
        // Concurrency.
        r.concurrency = Concurrency {
            calls: n_calls,
            mean_in_flight: ratio(calls.iter().map(|c| u64::from(c.inflight)).sum(), n_calls),
            max_in_flight: calls.iter().map(|c| c.inflight).max().unwrap_or(0),
            reset: calls.iter().filter(|c| c.reset()).count() as u64,
            unfinished: calls.iter().filter(|c| c.end < 0 && !c.reset()).count() as u64,
        };
        // Methods.
        let mut by_method: BTreeMap<u32, Vec<&CallRec>> = BTreeMap::new();
        for c in &calls {
            by_method.entry(c.method).or_default().push(c);
        }
        for (m, cs) in by_method {
            let n = cs.len() as u64;
            let mut status = BTreeMap::new();
            for c in &cs {
                *status.entry(status_name(c)).or_insert(0u64) += 1;
            }
            let side = |rel: usize| {
                let mut frames = [0u64; 4];
                let mut writes = 0u64;
                for c in &cs {
                    for (k, f) in frames.iter_mut().enumerate() {
                        *f += u64::from(c.frames[rel][k]);
                    }
                    writes += u64::from(c.writes[rel]);
                }
                MethodSide {
                    frames: CALL_KINDS.iter().copied().zip(frames).collect(),
                    frames_per_call: ratio(frames.iter().sum(), n),
                    writes,
                    writes_per_call: ratio(writes, n),
                }
            };
            let mut lat: Vec<i64> = cs
                .iter()
                .filter(|c| c.end >= 0 && !c.reset())
                .map(|c| c.end)
                .collect();
            r.methods.push(MethodReport {
                method: self.methods.get(m as usize).cloned().unwrap_or_default(),
                calls: n,
                status,
                client: side(0),
                server: side(1),
                latency_us: Percentiles::of_nanos(&mut lat),
            });
        }
        // Flow control and gRPC (issue 11).
        r.flow_control = self.flow.report(phase);
        r.grpc = self.grpc.report(
            phase,
            self.calls(conns)
                .filter(|v| in_scope(v.rec.start))
                .map(|v| (v.idx, v)),
        );
        // GOAWAY.
        for g in &self.goaways {
            let Some(cd) = client_dir.get(&g.conn) else {
                continue;
            };
            if !in_scope(g.ts) {
                continue;
            }
            let calm = g.code == ErrorCode::ENHANCE_YOUR_CALM;
            r.too_many_pings += u64::from(calm);
            r.goaways.push(GoAwayReport {
                time: g.ts as f64 / 1e9,
                conn: g.conn,
                side: if g.dir == *cd { "client" } else { "server" },
                last_stream_id: g.last_stream_id,
                error: g.code.to_string(),
                debug: g.debug.clone(),
                too_many_pings: calm,
            });
        }
        r
    }

    /// The calls of the HTTP/2 connections among `conns`, in order of their request HEADERS.
    pub fn calls<'a>(&'a self, conns: &[ConnSummary]) -> impl Iterator<Item = CallView<'a>> + 'a {
        let client_dir: HashMap<u32, Dir> = conns
            .iter()
            .filter(|c| c.http2)
            .map(|c| (c.id.0, c.client_dir))
            .collect();
        self.calls
            .iter()
            .enumerate()
            .filter(move |(_, c)| client_dir.get(&c.conn) == Some(&c.req_dir()))
            .map(move |(idx, c)| CallView {
                rec: c,
                method: self
                    .methods
                    .get(c.method as usize)
                    .map(String::as_str)
                    .unwrap_or(""),
                idx,
                flow: self.flow.call(idx),
                grpc: self.grpc.call(idx),
            })
    }
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

fn parse_u16(v: &[u8]) -> Option<u16> {
    std::str::from_utf8(v).ok()?.trim().parse().ok()
}

fn status_name(c: &CallRec) -> String {
    if c.reset() {
        "RST_STREAM".to_string()
    } else if c.grpc_status != NO_STATUS {
        format!("grpc-status {}", c.grpc_status)
    } else if c.http_status != 0 {
        format!(":status {}", c.http_status)
    } else {
        "none".to_string()
    }
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
        self.conn(meta.id);
        self.flow.open(meta);
    }

    fn gap(&mut self, conn: ConnId, dir: Dir, ts: Nanos, framing_lost: bool) {
        let phase = self.phase(ts);
        self.flow.gap(conn, framing_lost, phase);
        self.grpc.gap(conn, dir, framing_lost);
    }

    fn close(&mut self, conn: ConnId, ts: Nanos) {
        let phase = self.phase(ts);
        self.flow.close(conn);
        self.grpc.close(conn, phase);
    }

    fn write(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        if self.splitter.origin().is_none() {
            self.splitter.set_origin(w.ts);
        }
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
        let call_before = self.active.get(&(ev.conn.0, sid)).map(|a| a.idx);
        if sid != 0 {
            self.on_call_frame(ev);
        }
        let call = call_before.or_else(|| self.active.get(&(ev.conn.0, sid)).map(|a| a.idx));
        let phase = self.phase(ev.ts);
        self.flow.frame(ev, phase, call);
        self.grpc.frame(ev, phase, call);
        match (ev.class, ev.frame) {
            (FrameClass::Data, _) if sid != 0 => {
                // DATA received by the other direction: BDP round bookkeeping of the receiver.
                let idx = self.active.get(&(ev.conn.0, sid)).map(|a| a.idx);
                let ds = &mut self.conn(ev.conn).dirs[other(d)];
                match ds.round.as_mut() {
                    Some(r) => {
                        if r.streams.len() < MAX_ROUND_CALLS && !r.streams.contains(&sid) {
                            r.streams.push(sid);
                        }
                    }
                    None => {
                        if ds.candidate.is_none() {
                            ds.candidate = Some((sid, idx));
                        }
                    }
                }
            }
            (FrameClass::Ping | FrameClass::PingAck, Some(Frame::Ping(p))) => {
                self.on_ping(ev, p.payload, ev.class == FrameClass::PingAck);
            }
            (FrameClass::GoAway, Some(Frame::GoAway(g))) => {
                let debug = escape_bytes(&g.debug[..g.debug.len().min(256)]);
                self.goaways.push(GoAwayRec {
                    ts: ev.ts,
                    conn: ev.conn.0,
                    dir: ev.dir,
                    last_stream_id: g.last_stream_id,
                    code: g.code,
                    debug,
                });
            }
            _ => {}
        }
    }
}

/// One call, with its method name.
#[derive(Clone, Copy, Debug)]
pub struct CallView<'a> {
    pub rec: &'a CallRec,
    pub method: &'a str,
    /// Index of the call among [`Analysis::call_records`].
    pub idx: usize,
    pub flow: crate::flow::CallFlow,
    pub grpc: Option<&'a crate::grpc::CallGrpc>,
}

impl CallView<'_> {
    /// `grpc-status N`, `:status N`, `RST_STREAM` or `none`.
    pub fn status(&self) -> String {
        status_name(self.rec)
    }
}

/// A histogram indexed by a small count, serialized as `{"0": n, "1": n, ...}` in numeric order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hist(pub Vec<u64>);

impl Hist {
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
}

impl Serialize for Hist {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (i, n) in self.0.iter().enumerate() {
            m.serialize_entry(&i.to_string(), n)?;
        }
        m.end()
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct FramesPerWrite {
    /// Over the writes in which at least one frame ends.
    pub mean: Option<f64>,
    pub histogram: Hist,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct BytesPerWrite {
    pub mean: Option<f64>,
    pub max: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct PingSide {
    /// PINGs (not ACKs) this side sent.
    pub sent: u64,
    /// Of those, answered by an ACK with the same payload.
    pub acked: u64,
    pub unanswered: u64,
    /// ACKs this side sent that answer no PING seen in the capture.
    pub acks_unmatched: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct RoundSide {
    /// BDP rounds this side opened (one per BDP PING it sent).
    pub rounds: u64,
    pub acked: u64,
    pub calls_per_round: Option<f64>,
    pub calls_per_round_histogram: Hist,
    /// Calls whose DATA made this side send a BDP PING.
    pub calls_opening: u64,
    pub share_of_calls_opening: Option<f64>,
}

/// The analysis of one side.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SideAnalysis {
    pub writes_by_calls: Hist,
    pub writes_without_frame_end: u64,
    pub control_only_writes: u64,
    pub frames_per_write: FramesPerWrite,
    pub bytes_per_write: BytesPerWrite,
    pub pings: PingSide,
    pub rounds: RoundSide,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct SidesAnalysis {
    pub client: SideAnalysis,
    pub server: SideAnalysis,
}

impl SidesAnalysis {
    pub fn get(&self, s: Side) -> &SideAnalysis {
        match s {
            Side::Client => &self.client,
            Side::Server => &self.server,
        }
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Latency {
    /// Request HEADERS to the response's END_STREAM.
    pub call: Percentiles,
    /// Request HEADERS to the first response frame.
    pub first_byte: Percentiles,
    /// PING to its ACK, every label.
    pub ping_rtt: Percentiles,
    pub ping_rtt_by_label: BTreeMap<&'static str, Percentiles>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Concurrency {
    pub calls: u64,
    /// Other calls in flight on the connection when a call starts.
    pub mean_in_flight: Option<f64>,
    pub max_in_flight: u16,
    pub reset: u64,
    pub unfinished: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct MethodSide {
    pub frames: BTreeMap<&'static str, u64>,
    pub frames_per_call: Option<f64>,
    pub writes: u64,
    pub writes_per_call: Option<f64>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct MethodReport {
    pub method: String,
    pub calls: u64,
    pub status: BTreeMap<String, u64>,
    pub client: MethodSide,
    pub server: MethodSide,
    pub latency_us: Percentiles,
}

#[derive(Clone, Debug, Serialize)]
pub struct GoAwayReport {
    pub time: f64,
    pub conn: u32,
    pub side: &'static str,
    pub last_stream_id: u32,
    pub error: String,
    pub debug: String,
    /// ENHANCE_YOUR_CALM: the peer judged our PINGs (or other frames) abusive; grpc-go sends it
    /// with debug data `too_many_pings`.
    pub too_many_pings: bool,
}

/// Everything [`Analysis`] reports for one scope.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AnalysisReport {
    pub sides: SidesAnalysis,
    pub latency_us: Latency,
    pub concurrency: Concurrency,
    pub methods: Vec<MethodReport>,
    pub goaways: Vec<GoAwayReport>,
    /// GOAWAY frames with ENHANCE_YOUR_CALM.
    pub too_many_pings: u64,
    pub flow_control: crate::flow::FlowReport,
    pub grpc: crate::grpc::GrpcReport,
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
