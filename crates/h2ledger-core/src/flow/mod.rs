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
//! - **Available** = the smaller of the two. A **stall** is a DATA frame from S that leaves S's
//!   half of s open (the ledger's step, decision 433) after which S's available window on s is
//!   <= 0; it ends at the first later frame after which that window is > 0 again (R's
//!   WINDOW_UPDATE on s or 0, S's SETTINGS ACK that applies a larger initial window). Stalls
//!   never seen ending (the stream ended or reset first) are `unresolved` and not timed.
//!
//! Stream windows are kept relative to the initial window (`window = initial + adj`), so a
//! SETTINGS change costs nothing per stream; the stalled streams are ordered by `adj`, so the
//! stalls a change ends are found in O(log n), and the largest window comes from a lazily updated
//! heap of the open streams' `adj` (pushed to when a stream opens or its window grows, never on
//! DATA: decision 210), amortized O(log n) per frame. Memory: per open stream one entry, and at
//! most two per side in the heaps plus 64 per side (at most [`MAX_FLOW_STREAMS`] in all, beyond
//! which streams are counted as untracked), freed when the stream ends, and the connection's
//! state freed at close.
//!
//! A connection whose start the capture lacks (no SYN), whose HTTP/2 starts after other bytes
//! (an HTTP/1.1 Upgrade carries the client's SETTINGS in a header; a CONNECT tunnel), or that
//! loses framing in a gap, has unknown windows from then on: it counts in
//! `unknown_connections` and nothing is guessed.

use crate::phase::Phased;

use crate::FastMap;

use h2_frame_parser::{Frame, SettingId};
use h2ledger_tcp::{ConnId, ConnMeta, Dir, Dirs, Nanos};

use crate::ledger::FrameEvent;
use crate::model::{FrameClass, Side, Sides, StreamStep};

/// The initial connection and stream window (RFC 9113 §6.9.2).
const DEFAULT_WINDOW: i64 = 65_535;
/// Streams tracked at once over every connection.
pub const MAX_FLOW_STREAMS: usize = crate::model::MAX_OPEN_STREAMS;
/// SETTINGS of one side waiting for the other's ACK; more means the windows are unknown.
const MAX_PENDING_SETTINGS: usize = 16;

mod frames;
mod report;
mod series;
mod state;

use crate::table::IdTable;
pub use report::{ByLimit, FlowReport, FlowSide, MaxWindow, StalledUs};
use series::sample_in;
pub use series::{WindowPoint, WindowSeries, MAX_STALL_MARKS, MAX_WINDOW_SAMPLES};
use state::*;
pub use state::{FlowAcc, Limit};

/// Per call: stalls and time stalled, by side (0 client, 1 server).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallFlow {
    /// Stalls of each side's DATA on the call's stream, ended or not.
    pub stalls: [u32; 2],
    /// Nanoseconds, over the stalls that ended.
    pub stalled_ns: [i64; 2],
}

/// What a watcher ([`Flow::watch`]) is told of stalls as they happen (the findings engine's
/// `flow-stall` and `zero-window`). `side` is the sending side that waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowEvent {
    /// A DATA frame without END_STREAM left the sender's available window <= 0 (a stall
    /// begins, limited by `limit`).
    Stall {
        /// The connection (`ConnId`).
        conn: u32,
        /// The sending side.
        side: Side,
        /// The stream.
        stream: u32,
        /// When the stall began.
        ts: Nanos,
        /// The window that ran out.
        limit: Limit,
        /// The receiver's initial stream window in force.
        initial: i64,
    },
    /// A stall ended (the window is > 0 again) at `end`.
    Resolved {
        /// The connection (`ConnId`).
        conn: u32,
        /// The sending side.
        side: Side,
        /// The stream.
        stream: u32,
        /// When the stall began.
        start: Nanos,
        /// When the window opened.
        end: Nanos,
    },
    /// A stall the capture never sees end: its stream was reset, or the connection closed.
    Unresolved {
        /// The connection (`ConnId`).
        conn: u32,
        /// The sending side.
        side: Side,
        /// The stream.
        stream: u32,
        /// When the stall began.
        start: Nanos,
    },
    /// A stream on which `side` stalled at least once ended, after `sent` DATA bytes from
    /// that side: a stream window of that size would not have stalled it.
    Done {
        /// The connection (`ConnId`).
        conn: u32,
        /// The sending side.
        side: Side,
        /// The stream.
        stream: u32,
        /// DATA bytes that side sent on the stream.
        sent: u64,
    },
}

/// The flow-control tracker. [`crate::Analysis`] feeds it every frame.
#[derive(Debug, Default)]
pub struct Flow {
    /// Set by [`Flow::record_series`] (for `--plot`).
    pub series: Option<WindowSeries>,
    /// Boxed: a slot of the table is a pointer, however large a connection's state.
    conns: IdTable<Box<ConnFlow>>,
    streams: usize,
    whole: Scope,
    phases: Phased<Scope>,
    /// Per call in flight or not yet folded (by the analysis' call sequence number); taken by
    /// [`Flow::take_call`] when the analysis folds the call.
    calls: FastMap<u64, CallFlow>,
    /// Skip the per-side heap of open streams, kept only for the largest stream window of the
    /// totals ([`Flow::calls_only`]).
    no_max_window: bool,
    /// Stall events for a watcher ([`Flow::watch`]), drained by [`Flow::drain_events`].
    events: Option<Vec<FlowEvent>>,
    /// Another tracker follows the same frames and takes this one's place at the end
    /// ([`Flow::elsewhere`]): this one ignores every event.
    off: bool,
}

impl Flow {
    /// An empty tracker (the same as `Flow::default()`).
    pub fn new() -> Self {
        Flow::default()
    }

    /// Only the per-call records (stalls and stalled time) are read: the largest stream window
    /// (`max_stream` of the totals) is not kept, which saves two heap pushes per stream. Stall detection and resolution do not depend on it.
    pub(crate) fn calls_only(&mut self) {
        self.no_max_window = true;
    }

    /// Whether another tracker follows the windows instead of this one (`true`: every event
    /// is ignored, until the other takes this one's place). With the analysis on its own
    /// thread, the findings' tracker on the ledger's thread is the run's one tracker, handed
    /// to the analysis at the end (decision 406).
    pub fn elsewhere(&mut self, yes: bool) {
        self.off = yes;
    }

    /// Keep [`FlowEvent`]s for [`Flow::drain_events`] (the findings engine reads them after
    /// each frame, so at most a frame's worth are held).
    pub fn watch(&mut self) {
        self.events.get_or_insert_with(Vec::new);
    }

    /// Whether stall events wait for [`Flow::drain_events`].
    #[inline]
    pub(crate) fn has_events(&self) -> bool {
        self.events.as_ref().is_some_and(|e| !e.is_empty())
    }

    /// Hands the stall events since the last call to `f`.
    #[inline]
    pub fn drain_events(&mut self, mut f: impl FnMut(FlowEvent)) {
        if let Some(ev) = self.events.as_mut().filter(|e| !e.is_empty()) {
            for e in ev.drain(..) {
                f(e);
            }
        }
    }

    /// The available window (the smaller of the stream's and the connection's) of sending
    /// direction `d` on stream `sid` of `conn`: `None` when the windows are unknown or the
    /// stream is not tracked (closed, or not opened yet).
    pub fn available(&self, conn: u32, d: Dir, sid: u32) -> Option<i64> {
        let c = self.conns.get(conn)?;
        if !c.known {
            return None;
        }
        let st = c.streams.get(sid)?;
        let sf = &c.sides[d];
        Some((sf.initial + st.adj[d]).min(sf.conn_window))
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
        if let Some(c) = self.conns.get(conn) {
            sample_in(&mut self.series, conn, c, d, sid, ts, stall);
        }
    }

    /// The per-call record of call `seq` (the analysis' call sequence number), removed: the
    /// call is being folded.
    pub(crate) fn take_call(&mut self, seq: u64) -> CallFlow {
        if self.calls.is_empty() {
            // No call stalled, or the tracker is off (decision 463): no hash to compute.
            return CallFlow::default();
        }
        self.calls.remove(&seq).unwrap_or_default()
    }

    /// The per-call record of call `seq` while it is not folded.
    pub fn call(&self, seq: u64) -> CallFlow {
        self.calls.get(&seq).copied().unwrap_or_default()
    }

    pub(crate) fn open(&mut self, meta: &ConnMeta) {
        if self.off {
            return;
        }
        let known = meta.syn_sender.is_some();
        self.conns.insert(
            meta.id.0,
            Box::new(ConnFlow {
                known,
                counted: false,
                seen_frame: false,
                folded: None,
                side: Dirs {
                    fwd: Side::Client,
                    rev: Side::Server,
                },
                sides: Dirs::from_fn(|_| SideFlow::new()),
                streams: IdTable::default(),
                max_id: [0; 2],
                busiest: Dirs::default(),
            }),
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
}

impl Flow {
    /// Bytes lost: when frames may be missing, the windows are unknown from here on.
    pub(crate) fn gap(&mut self, conn: ConnId, framing_lost: bool, phase: Option<u64>) {
        if framing_lost && !self.off {
            self.make_unknown(conn.0, phase);
        }
    }

    /// The connection ended (in `phase`): its windows count in the phases since its last frame
    /// up to this one; stalls still open are unresolved; its state is dropped.
    pub(crate) fn close(&mut self, conn: ConnId, phase: Option<u64>) {
        if let (Some(p), Some(c)) = (phase, self.conns.get_mut(conn.0)) {
            carry(c, &mut self.phases, p);
        }
        self.drop_streams(conn.0);
        self.conns.remove(conn.0);
    }

    /// End of input (in `phase`): every connection still open is closed.
    pub(crate) fn flush(&mut self, phase: Option<u64>) {
        let mut ids: Vec<u32> = self.conns.keys().collect();
        ids.sort_unstable();
        for id in ids {
            self.close(ConnId(id), phase);
        }
    }

    /// The stall histograms (nanoseconds) per side of the whole capture (`phase` None) or one
    /// phase, as data: what a report carries for `flow_control.*.stalled_us` to merge (issue 39).
    pub(crate) fn stalled_data(&self, phase: Option<u64>) -> Sides<crate::stats::LogBuckets> {
        let empty = Scope::default();
        let s = match phase {
            None => &self.whole,
            Some(p) => self.phases.get(p).unwrap_or(&empty),
        };
        Sides::from_fn(|side| s.sides[side].stalled.data())
    }

    /// The report for the whole capture (`phase` None) or one phase.
    pub(crate) fn report(&self, phase: Option<u64>) -> FlowReport {
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

#[cfg(test)]
mod tests;
