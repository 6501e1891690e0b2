//! Flow-control windows and stalls, per connection and sending side, from the frames alone.
//!
//! The definitions (docs/ledger.md, "Flow control", is the contract), for a sending side S and
//! its peer R:
//! - S's **connection window** starts at 65,535, loses the length field of every DATA frame S
//!   sends (padding included, RFC 9113 §6.9.1) and gains every WINDOW_UPDATE increment R sends
//!   on stream 0.
//! - S's **stream window** on s starts at R's SETTINGS_INITIAL_WINDOW_SIZE in force (65,535
//!   until R sends one; a new value takes effect at S's SETTINGS ACK for it and shifts every open
//!   stream by the difference, RFC 9113 §6.9.2), loses S's DATA on s, gains R's increments on s.
//! - **Available** = the smaller of the two. A **stall** is a DATA frame from S without
//!   END_STREAM after which S's available window on s is <= 0; it ends at the first later frame
//!   after which that window is > 0 again (R's WINDOW_UPDATE on s or 0, S's SETTINGS ACK that
//!   applies a larger initial window). Stalls never seen ending are `unresolved` and not timed.
//!
//! Stream windows are kept relative to the initial window (`window = initial + adj`), so a
//! SETTINGS change costs nothing per stream; the open streams and the stalled ones are ordered
//! by `adj`, so the largest window and the stalls a change ends are found in O(log n). Memory:
//! one entry per open stream (at most [`MAX_FLOW_STREAMS`] in all, beyond which streams are
//! counted as untracked), freed when the stream ends, and the connection's state freed at close.
//!
//! A connection whose start the capture lacks (no SYN), whose HTTP/2 starts after other bytes
//! (an HTTP/1.1 Upgrade carries the client's SETTINGS in a header; a CONNECT tunnel), or that
//! loses framing in a gap, has unknown windows from then on: it counts in
//! `unknown_connections` and nothing is guessed.

use crate::phase::Phased;
use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, VecDeque};

use crate::FastMap;

use h2_frame_parser::{Frame, SettingId};
use h2ledger_tcp::{ConnId, ConnMeta, Dir, Dirs, Nanos};
use serde::Serialize;

use crate::ledger::FrameEvent;
use crate::model::{FrameClass, Side, Sides};
use crate::stats::LogHist;

/// The initial connection and stream window (RFC 9113 §6.9.2).
const DEFAULT_WINDOW: i64 = 65_535;
/// Streams tracked at once over every connection.
pub const MAX_FLOW_STREAMS: usize = 1 << 20;
/// SETTINGS of one side waiting for the other's ACK; more means the windows are unknown.
const MAX_PENDING_SETTINGS: usize = 16;

/// Which window was <= 0 when a stall began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Stream,
    Connection,
    Both,
}

#[derive(Clone, Copy, Debug)]
struct Stall {
    start: Nanos,
    phase: Option<u64>,
}

#[derive(Debug)]
struct StreamFlow {
    /// Per sending direction: increments received minus DATA sent.
    adj: Dirs<i64>,
    stall: Dirs<Option<Stall>>,
    ended: Dirs<bool>,
    call: Option<u64>,
    /// DATA bytes sent by each direction (for the plot's busiest stream).
    sent: Dirs<u64>,
}

#[derive(Debug)]
struct SideFlow {
    conn_window: i64,
    initial: i64,
    /// The peer's SETTINGS waiting for this side's ACK: their INITIAL_WINDOW_SIZE, if any.
    pending: VecDeque<Option<u32>>,
    /// Open streams, by `adj` of this side.
    open: BTreeSet<(i64, u32)>,
    /// Streams with a stall of this side, by `adj`.
    stalled: BTreeSet<(i64, u32)>,
}

impl SideFlow {
    fn new() -> Self {
        SideFlow {
            conn_window: DEFAULT_WINDOW,
            initial: DEFAULT_WINDOW,
            pending: VecDeque::new(),
            open: BTreeSet::new(),
            stalled: BTreeSet::new(),
        }
    }
}

#[derive(Debug)]
struct ConnFlow {
    known: bool,
    /// Counted in `unknown_connections` already.
    counted: bool,
    seen_frame: bool,
    /// The side of each direction, as the ledger told it.
    side: Dirs<Side>,
    sides: Dirs<SideFlow>,
    streams: FastMap<u32, StreamFlow>,
    /// The highest stream id seen open, by parity: lower ids not in `streams` are closed.
    max_id: [u32; 2],
    /// Per sending direction: the stream that carried the most DATA so far, and how much.
    busiest: Dirs<Option<(u32, u64)>>,
}

/// Counters of one side within one scope (the whole capture or a phase).
#[derive(Clone, Debug, Default)]
pub struct FlowAcc {
    pub stalls: u64,
    pub unresolved: u64,
    pub by_limit: [u64; 3],
    /// Durations of the stalls that ended, nanoseconds.
    pub stalled: LogHist,
    pub max_stream: i64,
    pub max_conn: i64,
}

impl FlowAcc {
    pub fn merge(&mut self, o: &FlowAcc) {
        self.stalls += o.stalls;
        self.unresolved += o.unresolved;
        for i in 0..3 {
            self.by_limit[i] += o.by_limit[i];
        }
        self.stalled.merge(&o.stalled);
        self.max_stream = self.max_stream.max(o.max_stream);
        self.max_conn = self.max_conn.max(o.max_conn);
    }
}

#[derive(Clone, Debug, Default)]
struct Scope {
    sides: Sides<FlowAcc>,
    unknown: u64,
    untracked_streams: u64,
}

/// Per call: stalls and time stalled, by side (0 client, 1 server).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallFlow {
    pub stalls: [u32; 2],
    /// Nanoseconds, over the stalls that ended.
    pub stalled_ns: [i64; 2],
}

/// Windows over time for `--plot`, per side of one connection (the first whose windows are
/// known to carry a stream frame), in fixed time buckets from `origin`: the connection window
/// and the available window on the busiest stream (the one that carried the most DATA of that
/// side so far, while it is open; otherwise the stream of the bucket's last DATA or stream
/// WINDOW_UPDATE), both
/// as left by the bucket's last frame that changed them (`None`: unchanged, carry the previous
/// value), and the stalls that began in the bucket. 40 bytes per side and bucket.
#[derive(Clone, Debug, Default)]
pub struct WindowSeries {
    pub bucket: Nanos,
    pub origin: Option<Nanos>,
    pub conn: Option<u32>,
    /// `points[b][side]`.
    pub points: Vec<[WindowPoint; 2]>,
    /// Samples beyond the last bucket kept.
    pub refused: u64,
}

/// (connection window, stream window, stalls begun) of one side in one bucket.
pub type WindowPoint = (Option<i64>, Option<i64>, u32);

impl WindowSeries {
    /// The bucket of `ts`; `None` beyond [`crate::phase::MAX_BUCKETS`] buckets from
    /// the origin (a clock jump costs nothing: those points are not drawn, `refused` counts them).
    fn at(&mut self, ts: Nanos) -> Option<&mut [WindowPoint; 2]> {
        let o = *self.origin.get_or_insert(ts);
        let b = crate::phase::bucket(ts, o, self.bucket) as usize;
        if b >= crate::phase::MAX_BUCKETS {
            self.refused += 1;
            return None;
        }
        if self.points.len() <= b {
            self.points.resize(b + 1, [(None, None, 0); 2]);
        }
        Some(&mut self.points[b])
    }
}

/// The flow-control tracker. [`crate::Analysis`] feeds it every frame.
#[derive(Debug, Default)]
pub struct Flow {
    /// Set by [`Flow::record_series`] (for `--plot`).
    pub series: Option<WindowSeries>,
    conns: FastMap<u32, ConnFlow>,
    streams: usize,
    whole: Scope,
    phases: Phased<Scope>,
    /// Per call in flight or not yet folded (by the analysis' call sequence number); taken by
    /// [`Flow::take_call`] when the analysis folds the call.
    calls: FastMap<u64, CallFlow>,
    /// Skip the per-side ordered set of open streams, kept only for the largest stream window
    /// of the totals ([`Flow::calls_only`]).
    no_max_window: bool,
}

fn scope_mut<'a>(
    whole: &'a mut Scope,
    phases: &'a mut Phased<Scope>,
    p: Option<u64>,
) -> [Option<&'a mut Scope>; 2] {
    let ph = p.and_then(|p| phases.get_mut(p));
    [Some(whole), ph]
}

/// Opens `sid` on `c` if it is new: not stream 0, not a closed id, and not beyond
/// [`MAX_FLOW_STREAMS`] (counted in `untracked_streams`). Tracked streams are those in `c.streams`.
fn open_in(
    c: &mut ConnFlow,
    streams: &mut usize,
    whole: &mut Scope,
    phases: &mut Phased<Scope>,
    no_max_window: bool,
    sid: u32,
    phase: Option<u64>,
) {
    if sid == 0 {
        return;
    }
    let slot = match c.streams.entry(sid) {
        Entry::Occupied(_) => return,
        Entry::Vacant(v) => v,
    };
    let par = (sid & 1) as usize;
    if sid <= c.max_id[par] {
        return; // closed
    }
    c.max_id[par] = sid;
    if *streams >= MAX_FLOW_STREAMS {
        for s in scope_mut(whole, phases, phase).into_iter().flatten() {
            s.untracked_streams += 1;
        }
        return;
    }
    *streams += 1;
    slot.insert(StreamFlow {
        adj: Dirs::default(),
        stall: Dirs::default(),
        ended: Dirs::default(),
        call: None,
        sent: Dirs::default(),
    });
    let mut init = Sides::<i64>::default();
    for d in Dir::ALL {
        let sf = &mut c.sides[d];
        if !no_max_window {
            sf.open.insert((0, sid));
        }
        init[c.side[d]] = sf.initial;
    }
    for s in scope_mut(whole, phases, phase).into_iter().flatten() {
        for side in Side::ALL {
            let a = &mut s.sides[side];
            a.max_stream = a.max_stream.max(init[side]);
        }
    }
}

/// Moves the window of stream `sid` of sending direction `d` by `delta` (DATA sent: down; a
/// WINDOW_UPDATE: up), with the side's ordered sets keyed by it; the new `adj`.
fn shift(
    sf: &mut SideFlow,
    st: &mut StreamFlow,
    d: Dir,
    sid: u32,
    delta: i64,
    no_max_window: bool,
) -> i64 {
    let old = st.adj[d];
    st.adj[d] += delta;
    let new = st.adj[d];
    if !no_max_window {
        sf.open.remove(&(old, sid));
        sf.open.insert((new, sid));
    }
    if st.stall[d].is_some() {
        sf.stalled.remove(&(old, sid));
        sf.stalled.insert((new, sid));
    }
    new
}

/// Drops stream `sid` of `c`; its open stalls are unresolved.
fn free_in(
    c: &mut ConnFlow,
    sid: u32,
    streams: &mut usize,
    whole: &mut Scope,
    phases: &mut Phased<Scope>,
    no_max_window: bool,
) {
    let Some(st) = c.streams.remove(&sid) else {
        return;
    };
    *streams -= 1;
    for d in Dir::ALL {
        let sf = &mut c.sides[d];
        if !no_max_window {
            sf.open.remove(&(st.adj[d], sid));
        }
        if let Some(stall) = st.stall[d] {
            sf.stalled.remove(&(st.adj[d], sid));
            let side = c.side[d];
            for x in scope_mut(whole, phases, stall.phase).into_iter().flatten() {
                x.sides[side].unresolved += 1;
            }
        }
    }
}

/// Records the windows of sending direction `d` of connection `conn` (`c`) after a frame at
/// `ts`, when a series is kept.
fn sample_in(
    series: &mut Option<WindowSeries>,
    conn: u32,
    c: &ConnFlow,
    d: Dir,
    sid: Option<u32>,
    ts: Nanos,
    stall: bool,
) {
    let Some(series) = series.as_mut() else {
        return;
    };
    if series.conn.is_none() && sid.is_some() {
        series.conn = Some(conn);
    }
    if series.conn != Some(conn) {
        return;
    }
    let side = c.side[d];
    let sf = &c.sides[d];
    // The busiest stream's window while it is open, else the frame's stream.
    let sid = c.busiest[d]
        .map(|b| b.0)
        .filter(|s| c.streams.contains_key(s))
        .or(sid);
    let stream = sid
        .and_then(|s| c.streams.get(&s))
        .map(|st| (sf.initial + st.adj[d]).min(sf.conn_window));
    let Some(p) = series.at(ts).map(|p| &mut p[side.index()]) else {
        return;
    };
    p.0 = Some(sf.conn_window);
    if stream.is_some() {
        p.1 = stream;
    }
    p.2 += u32::from(stall);
}

impl Flow {
    pub fn new() -> Self {
        Flow::default()
    }

    /// Only the per-call records (stalls and stalled time) are read: the largest stream window
    /// (`max_stream` of the totals) is not kept, which saves four ordered-set operations per
    /// stream. Stall detection and resolution do not depend on it.
    pub fn calls_only(&mut self) {
        self.no_max_window = true;
    }

    /// Also keep a [`WindowSeries`] with buckets of `bucket` from `origin` (the first packet).
    pub fn record_series(&mut self, bucket: Nanos, origin: Option<Nanos>) {
        self.series = Some(WindowSeries {
            bucket,
            origin,
            ..WindowSeries::default()
        });
    }

    /// Records the windows of sending direction `d` of `conn` after a frame at `ts`.
    fn sample(&mut self, conn: u32, d: Dir, sid: Option<u32>, ts: Nanos, stall: bool) {
        if self.series.is_none() {
            return;
        }
        if let Some(c) = self.conns.get(&conn) {
            sample_in(&mut self.series, conn, c, d, sid, ts, stall);
        }
    }

    /// The per-call record of call `seq` (the analysis' call sequence number), removed: the
    /// call is being folded.
    pub fn take_call(&mut self, seq: u64) -> CallFlow {
        self.calls.remove(&seq).unwrap_or_default()
    }

    /// The per-call record of call `seq` while it is not folded.
    pub fn call(&self, seq: u64) -> CallFlow {
        self.calls.get(&seq).copied().unwrap_or_default()
    }

    pub fn open(&mut self, meta: &ConnMeta) {
        let known = meta.syn_sender.is_some();
        self.conns.insert(
            meta.id.0,
            ConnFlow {
                known,
                counted: false,
                seen_frame: false,
                side: Dirs {
                    fwd: Side::Client,
                    rev: Side::Server,
                },
                sides: Dirs::from_fn(|_| SideFlow::new()),
                streams: FastMap::default(),
                max_id: [0; 2],
                busiest: Dirs::default(),
            },
        );
    }

    fn acc(&mut self, phase: Option<u64>, f: impl Fn(&mut Scope)) {
        for s in scope_mut(&mut self.whole, &mut self.phases, phase)
            .into_iter()
            .flatten()
        {
            f(s);
        }
    }

    /// One frame; `phase` is the phase of `ev.ts`, `call` the call index of the frame's stream.
    pub fn frame(&mut self, ev: &FrameEvent<'_>, phase: Option<u64>, call: Option<u64>) {
        let Some(c) = self.conns.get_mut(&ev.conn.0) else {
            return;
        };
        let d = ev.dir;
        c.side[d] = ev.side;
        c.side[d.other()] = ev.side.other();
        if ev.late_start && c.known {
            self.make_unknown(ev.conn.0, phase);
            return;
        }
        if !c.known {
            if !c.counted {
                c.counted = true;
                self.acc(phase, |s| s.unknown += 1);
            }
            return;
        }
        if !c.seen_frame {
            c.seen_frame = true;
            self.acc(phase, |s| {
                for a in s.sides.iter_mut() {
                    a.max_conn = a.max_conn.max(DEFAULT_WINDOW);
                }
            });
        }
        let sid = ev.head.stream_id.0;
        match ev.class {
            FrameClass::Data | FrameClass::Headers | FrameClass::Trailers => {
                self.stream_frame(ev, phase, call)
            }
            FrameClass::RstStream => self.free_stream(ev.conn.0, sid),
            FrameClass::WindowUpdate => {
                if let Some(Frame::WindowUpdate(w)) = ev.frame {
                    self.on_window_update(ev, d.other(), w.increment, phase);
                }
                // A WINDOW_UPDATE that did not load (increment 0, bad length) changes nothing:
                // the peer treats it as an error.
            }
            FrameClass::Settings => match ev.frame {
                Some(Frame::Settings(s)) => {
                    let v = s.get(SettingId::INITIAL_WINDOW_SIZE);
                    let Some(c) = self.conns.get_mut(&ev.conn.0) else {
                        return;
                    };
                    let q = &mut c.sides[d.other()].pending;
                    if q.len() >= MAX_PENDING_SETTINGS {
                        self.make_unknown(ev.conn.0, phase);
                    } else {
                        q.push_back(v);
                    }
                }
                _ => self.make_unknown(ev.conn.0, phase),
            },
            FrameClass::SettingsAck => self.on_settings_ack(ev, d, phase),
            _ => {}
        }
    }

    /// HEADERS, TRAILERS and DATA, with one lookup of the connection and of the stream: the
    /// stream opened (HEADERS, DATA) and given its call, DATA charged to the windows (a stall
    /// begins when one is exhausted), the sending half ended on END_STREAM.
    fn stream_frame(&mut self, ev: &FrameEvent<'_>, phase: Option<u64>, call: Option<u64>) {
        let conn = ev.conn.0;
        let d = ev.dir;
        let sid = ev.head.stream_id.0;
        let data = ev.class == FrameClass::Data;
        let Flow {
            series,
            conns,
            streams,
            whole,
            phases,
            calls,
            no_max_window,
        } = self;
        let Some(c) = conns.get_mut(&conn) else {
            return;
        };
        if data || ev.class == FrameClass::Headers {
            open_in(c, streams, whole, phases, *no_max_window, sid, phase);
        }
        let len = i64::from(ev.head.length);
        if data {
            c.sides[d].conn_window -= len;
        }
        // Not in the map: stream 0, closed, or beyond MAX_FLOW_STREAMS (untracked).
        let Some(st) = c.streams.get_mut(&sid) else {
            return;
        };
        if call.is_some() {
            st.call = call;
        }
        let end = ev.head.flags.is_end_stream();
        let mut started = false;
        if data {
            let side = c.side[d];
            let sf = &mut c.sides[d];
            st.sent[d] += len as u64;
            if c.busiest[d].is_none_or(|(b, n)| b == sid || st.sent[d] > n) {
                c.busiest[d] = Some((sid, st.sent[d]));
            }
            let new = shift(sf, st, d, sid, -len, *no_max_window);
            let stream_w = sf.initial + new;
            let conn_w = sf.conn_window;
            if !end && st.stall[d].is_none() && stream_w.min(conn_w) <= 0 {
                let limit = match (stream_w <= 0, conn_w <= 0) {
                    (true, true) => Limit::Both,
                    (true, false) => Limit::Stream,
                    _ => Limit::Connection,
                };
                st.stall[d] = Some(Stall {
                    start: ev.ts,
                    phase,
                });
                sf.stalled.insert((new, sid));
                started = true;
                if let Some(i) = st.call {
                    let cf = calls.entry(i).or_default();
                    cf.stalls[side.index()] = cf.stalls[side.index()].saturating_add(1);
                }
                for s in scope_mut(whole, phases, phase).into_iter().flatten() {
                    let a = &mut s.sides[side];
                    a.stalls += 1;
                    a.by_limit[limit as usize] += 1;
                }
            }
        }
        let mut done = false;
        if end {
            st.ended[d] = true;
            done = st.ended.fwd && st.ended.rev;
        }
        if data {
            sample_in(series, conn, c, d, Some(sid), ev.ts, started);
        }
        if done {
            free_in(c, sid, streams, whole, phases, *no_max_window);
        }
    }

    fn on_window_update(&mut self, ev: &FrameEvent<'_>, s: Dir, inc: u32, phase: Option<u64>) {
        let conn = ev.conn.0;
        let sid = ev.head.stream_id.0;
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let side = c.side[s];
        let sf = &mut c.sides[s];
        let inc = i64::from(inc);
        if sid == 0 {
            sf.conn_window += inc;
            let w = sf.conn_window;
            self.acc(phase, |x| {
                let a = &mut x.sides[side];
                a.max_conn = a.max_conn.max(w);
            });
            self.resolve(conn, s, ev.ts);
            self.sample(conn, s, None, ev.ts, false);
            return;
        }
        let Some(st) = c.streams.get_mut(&sid) else {
            return;
        };
        let new = shift(sf, st, s, sid, inc, self.no_max_window);
        let w = sf.initial + new;
        self.acc(phase, |x| {
            let a = &mut x.sides[side];
            a.max_stream = a.max_stream.max(w);
        });
        self.resolve(conn, s, ev.ts);
        self.sample(conn, s, Some(sid), ev.ts, false);
    }

    fn on_settings_ack(&mut self, ev: &FrameEvent<'_>, d: Dir, phase: Option<u64>) {
        let conn = ev.conn.0;
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let side = c.side[d];
        let sf = &mut c.sides[d];
        let Some(Some(v)) = sf.pending.pop_front() else {
            return;
        };
        let v = i64::from(v);
        let delta = v - sf.initial;
        sf.initial = v;
        if delta <= 0 {
            return;
        }
        if let Some(&(adj, _)) = sf.open.last() {
            let w = v + adj;
            self.acc(phase, |x| {
                let a = &mut x.sides[side];
                a.max_stream = a.max_stream.max(w);
            });
        }
        self.resolve(conn, d, ev.ts);
    }

    /// Ends the stalls of sending direction `s` whose available window is > 0 again.
    fn resolve(&mut self, conn: u32, s: Dir, ts: Nanos) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let side = c.side[s];
        let sf = &mut c.sides[s];
        if sf.conn_window <= 0 {
            return;
        }
        // window = initial + adj > 0  <=>  adj > -initial
        let from = (-sf.initial).saturating_add(1);
        let done: Vec<(i64, u32)> = sf.stalled.range((from, 0)..).copied().collect();
        for key in done {
            sf.stalled.remove(&key);
            let Some(st) = c.streams.get_mut(&key.1) else {
                continue;
            };
            let Some(stall) = st.stall[s].take() else {
                continue;
            };
            let dur = (ts - stall.start).max(0);
            if let Some(c) = st.call.and_then(|i| self.calls.get_mut(&i)) {
                c.stalled_ns[side.index()] += dur;
            }
            for x in scope_mut(&mut self.whole, &mut self.phases, stall.phase)
                .into_iter()
                .flatten()
            {
                x.sides[side].stalled.add(dur as u64);
            }
        }
    }

    /// Drops a stream; its open stalls are unresolved.
    fn free_stream(&mut self, conn: u32, sid: u32) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let nm = self.no_max_window;
        free_in(
            c,
            sid,
            &mut self.streams,
            &mut self.whole,
            &mut self.phases,
            nm,
        );
    }

    fn drop_streams(&mut self, conn: u32) {
        let ids: Vec<u32> = match self.conns.get(&conn) {
            Some(c) => c.streams.keys().copied().collect(),
            None => return,
        };
        for sid in ids {
            self.free_stream(conn, sid);
        }
    }

    /// The windows of `conn` can no longer be followed (lost frames, unreadable SETTINGS).
    fn make_unknown(&mut self, conn: u32, phase: Option<u64>) {
        self.drop_streams(conn);
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        if !c.known {
            return;
        }
        c.known = false;
        c.sides = Dirs::from_fn(|_| SideFlow::new());
        if !c.counted {
            c.counted = true;
            self.acc(phase, |s| s.unknown += 1);
        }
    }

    /// Bytes lost: when frames may be missing, the windows are unknown from here on.
    pub fn gap(&mut self, conn: ConnId, framing_lost: bool, phase: Option<u64>) {
        if framing_lost {
            self.make_unknown(conn.0, phase);
        }
    }

    /// The connection ended: stalls still open are unresolved; its state is dropped.
    pub fn close(&mut self, conn: ConnId) {
        self.drop_streams(conn.0);
        self.conns.remove(&conn.0);
    }

    /// End of input: every connection still open is closed.
    pub fn flush(&mut self) {
        let ids: Vec<u32> = self.conns.keys().copied().collect();
        for id in ids {
            self.close(ConnId(id));
        }
    }

    /// The report for the whole capture (`phase` None) or one phase.
    pub fn report(&self, phase: Option<u64>) -> FlowReport {
        let empty = Scope::default();
        let s = match phase {
            None => &self.whole,
            Some(p) => self.phases.get(p).unwrap_or(&empty),
        };
        FlowReport {
            sides: Sides {
                client: FlowSide::of(&s.sides.client),
                server: FlowSide::of(&s.sides.server),
            },
            unknown_connections: s.unknown,
            untracked_streams: s.untracked_streams,
        }
    }
}

/// `flow_control.client` / `.server` of the analysis.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FlowSide {
    pub by_limit: ByLimit,
    pub max_window: MaxWindow,
    pub stalled_us: StalledUs,
    pub stalls: u64,
    pub unresolved: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ByLimit {
    pub both: u64,
    pub connection: u64,
    pub stream: u64,
}

/// Time stalled, microseconds, over the stalls that ended (p50/p99 per [`crate::stats::LogHist`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StalledUs {
    pub max: Option<f64>,
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub total: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MaxWindow {
    pub connection: i64,
    pub stream: i64,
}

impl FlowSide {
    fn of(a: &FlowAcc) -> FlowSide {
        let us = |ns: u64| ns as f64 / 1000.0;
        let h = &a.stalled;
        FlowSide {
            stalls: a.stalls,
            unresolved: a.unresolved,
            by_limit: ByLimit {
                stream: a.by_limit[Limit::Stream as usize],
                connection: a.by_limit[Limit::Connection as usize],
                both: a.by_limit[Limit::Both as usize],
            },
            stalled_us: StalledUs {
                total: us(h.sum),
                p50: h.percentile(50).map(us),
                p99: h.percentile(99).map(us),
                max: (h.count > 0).then(|| us(h.max)),
            },
            max_window: MaxWindow {
                stream: a.max_stream,
                connection: a.max_conn,
            },
        }
    }
}

/// `flow_control` of the analysis.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FlowReport {
    /// Per side, as the keys `client` and `server`.
    #[serde(flatten)]
    pub sides: Sides<FlowSide>,
    pub unknown_connections: u64,
    /// Streams not followed because [`MAX_FLOW_STREAMS`] were open.
    pub untracked_streams: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    const IWS: u16 = 4;

    fn flow(c: &Conn) -> FlowReport {
        c.ledger.observer.flow.report(None)
    }

    /// 65,535 bytes of DATA in frames of at most 16,384.
    fn fill(c: &mut Conn, stream: u32, mut n: usize) {
        while n > 0 {
            let k = n.min(16_384);
            c.client(&data(stream, false, k));
            n -= k;
        }
    }

    #[test]
    fn stream_limited_stall_ends_at_window_update() {
        let mut c = Conn::started(&[]);
        c.server(&wu(0, 1 << 20)); // the connection window is not the limit
        c.client(&request(1, "/a", false));
        fill(&mut c, 1, 65_535);
        let t0 = c.t;
        c.server(&wu(1, 32_768));
        let r = flow(&c);
        assert_eq!(r.sides.client.stalls, 1);
        assert_eq!(r.sides.client.by_limit.stream, 1);
        assert_eq!(r.sides.client.stalled_us.total, (c.t - t0) as f64 / 1000.0);
        assert_eq!(r.sides.client.max_window.connection, 65_535 + (1 << 20));
        assert_eq!(r.sides.client.max_window.stream, 65_535);
        assert_eq!(r.sides.server.stalls, 0);
        assert_eq!(r.unknown_connections, 0);
        let call = c.ledger.observer.flow.call(0);
        assert_eq!(call.stalls, [1, 0]);
        assert_eq!(call.stalled_ns[0], c.t - t0);
    }

    #[test]
    fn both_windows_then_connection_only() {
        let mut c = Conn::started(&[]);
        c.client(&request(1, "/a", false));
        fill(&mut c, 1, 65_535);
        // Stream window opens, the connection's does not: still stalled.
        c.server(&wu(1, 100_000));
        assert_eq!(flow(&c).sides.client.stalled_us.p50, None);
        c.server(&wu(0, 10));
        let r = flow(&c);
        assert_eq!(
            (r.sides.client.stalls, r.sides.client.by_limit.both),
            (1, 1)
        );
        assert_eq!(r.sides.client.stalled_us.total, 2000.0);
        assert_eq!(r.sides.client.max_window.stream, 100_000);
        // A second stream is limited by the connection only.
        c.client(&request(3, "/a", false));
        c.client(&data(3, false, 10));
        let r = flow(&c);
        assert_eq!(
            (r.sides.client.stalls, r.sides.client.by_limit.connection),
            (2, 1)
        );
        c.close();
        let r = flow(&c);
        assert_eq!(r.sides.client.unresolved, 1);
        assert_eq!(r.sides.client.stalled_us.max, Some(2000.0));
    }

    #[test]
    fn settings_ack_shifts_open_streams_and_ends_stalls() {
        let mut c = Conn::started(&[]);
        c.server(&wu(0, 1 << 20));
        c.client(&request(1, "/a", false));
        fill(&mut c, 1, 65_535);
        // A larger initial window from the server ends the stall at the client's ACK, not at
        // the SETTINGS.
        c.server(&settings(&[(IWS, 100_000)]));
        assert_eq!(flow(&c).sides.client.stalled_us.p99, None);
        c.client(&settings_ack());
        let r = flow(&c);
        assert_eq!(r.sides.client.stalled_us.total, 2000.0);
        assert_eq!(r.sides.client.max_window.stream, 65_535);
        // New streams open at 100,000; a smaller value shifts them down.
        c.client(&request(3, "/a", false));
        assert_eq!(flow(&c).sides.client.max_window.stream, 100_000);
        c.server(&settings(&[(IWS, 10)]));
        c.client(&settings_ack());
        c.client(&data(3, false, 10));
        let r = flow(&c);
        assert_eq!(
            (r.sides.client.stalls, r.sides.client.by_limit.stream),
            (2, 2)
        );
    }

    #[test]
    fn end_stream_and_padding() {
        let mut c = Conn::started(&[(IWS, 19)]);
        c.client(&request(1, "/a", false));
        // DATA with END_STREAM never stalls; padding counts against the window.
        c.client(&fr(
            0,
            0x8,
            1,
            &[9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        ));
        let r = flow(&c);
        assert_eq!(
            (r.sides.client.stalls, r.sides.client.by_limit.stream),
            (1, 1)
        );
        c.client(&request(3, "/a", false));
        c.client(&data(3, true, 19));
        assert_eq!(flow(&c).sides.client.stalls, 1);
        // A stall on a stream that is reset never ends: unresolved.
        c.client(&fr(3, 0, 1, &[0, 0, 0, 8]));
        let r = flow(&c);
        assert_eq!((r.sides.client.stalls, r.sides.client.unresolved), (1, 1));
        assert_eq!(r.sides.client.stalled_us.max, None);
    }

    #[test]
    fn server_side_and_window_updates_after_close_ignored() {
        let mut c = Conn::started(&[]);
        c.client(&[settings(&[(IWS, 1000)])].concat());
        c.server(&settings_ack());
        c.client(&request(1, "/a", false));
        c.client(&data(1, true, 5));
        c.server(&response(1, false, &[]));
        c.server(&data(1, false, 1000));
        c.client(&wu(1, 500));
        c.server(&data(1, true, 0));
        c.client(&wu(1, 500)); // a stream already closed: ignored
        let r = flow(&c);
        assert_eq!(
            (r.sides.server.stalls, r.sides.server.by_limit.stream),
            (1, 1)
        );
        assert_eq!(r.sides.server.stalled_us.total, 1000.0);
        assert_eq!(r.sides.server.max_window.stream, 1000);
        assert_eq!(r.sides.client.stalls, 0);
        assert_eq!(c.ledger.observer.flow.call(0).stalls, [0, 1]);
        assert!(c.ledger.observer.flow.conns[&0].streams.is_empty());
    }

    #[test]
    fn unknown_without_the_start_and_after_lost_framing() {
        let mut c = Conn::new(false);
        let mut p = PREFACE.to_vec();
        p.extend(settings(&[]));
        c.client(&p);
        c.client(&request(1, "/a", false));
        c.client(&data(1, false, 16_384));
        assert_eq!(flow(&c).unknown_connections, 1);
        assert_eq!(flow(&c).sides.client.stalls, 0);

        let mut c = Conn::started(&[]);
        c.client(&request(1, "/a", false));
        fill(&mut c, 1, 65_535);
        c.gap(Dir::Fwd, 100);
        let r = flow(&c);
        assert_eq!(
            (
                r.unknown_connections,
                r.sides.client.stalls,
                r.sides.client.unresolved
            ),
            (1, 1, 1)
        );
    }

    #[test]
    fn hostile_settings() {
        // Many stalled streams and SETTINGS flipping the initial window: each change costs
        // O(log n) per stall it ends, not a walk over every stream.
        let mut c = Conn::started(&[(IWS, 1)]);
        c.server(&wu(0, 1 << 30));
        let mut reqs = Vec::new();
        for s in (1..4000).step_by(2) {
            reqs.extend(request(s, "/a", false));
            reqs.extend(data(s, false, 1));
        }
        c.client(&reqs);
        assert_eq!(flow(&c).sides.client.stalls, 2000);
        for i in 0..200 {
            c.server(&settings(&[(IWS, if i % 2 == 0 { 0 } else { 1 })]));
            c.client(&settings_ack());
        }
        let r = flow(&c);
        assert_eq!(r.sides.client.stalls, 2000);
        assert_eq!(
            r.sides.client.stalled_us.p50, None,
            "a window of 0 ends no stall"
        );
        c.server(&settings(&[(IWS, 2)]));
        c.client(&settings_ack());
        assert_eq!(flow(&c).sides.client.stalled_us.p50, Some(402_000.0));
        // SETTINGS never ACKed beyond the bound: the windows are unknown, not guessed.
        for _ in 0..=MAX_PENDING_SETTINGS {
            c.server(&settings(&[]));
        }
        assert_eq!(flow(&c).unknown_connections, 1);
    }

    #[test]
    fn memory_follows_open_streams() {
        let mut c = Conn::started(&[]);
        for s in (1..2000).step_by(2) {
            c.client(&request(s, "/a", false));
            c.client(&data(s, true, 1));
            c.server(&response(s, true, &[]));
        }
        let f = &c.ledger.observer.flow;
        assert_eq!((f.streams, f.conns[&0].streams.len()), (0, 0));
        assert!(f.conns[&0].sides.iter().all(|(_, s)| s.open.is_empty()));
        c.close();
        assert!(c.ledger.observer.flow.conns.is_empty());
    }
}
