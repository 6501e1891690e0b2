//! The per-connection and per-stream state of the tracker, and the scopes it counts into.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, VecDeque};

use h2ledger_tcp::{Dir, Dirs, Nanos};

use super::{FlowEvent, DEFAULT_WINDOW, MAX_FLOW_STREAMS};
use crate::model::{Side, Sides};
use crate::phase::Phased;
use crate::phase::MAX_PHASES;
use crate::stats::LogHist;
use crate::FastMap;

/// Which window was <= 0 when a stall began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// The stream window only.
    Stream,
    /// The connection window only.
    Connection,
    /// Both windows.
    Both,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Stall {
    pub(super) start: Nanos,
    pub(super) phase: Option<u64>,
}

#[derive(Debug)]
pub(super) struct StreamFlow {
    /// Per sending direction: increments received minus DATA sent.
    pub(super) adj: Dirs<i64>,
    pub(super) stall: Dirs<Option<Stall>>,
    pub(super) ended: Dirs<bool>,
    pub(super) call: Option<u64>,
    /// DATA bytes sent by each direction (for the plot's busiest stream).
    pub(super) sent: Dirs<u64>,
    /// Each direction stalled on this stream at least once (for [`super::FlowEvent::Done`]).
    pub(super) stalled_once: Dirs<bool>,
}

#[derive(Debug)]
pub(super) struct SideFlow {
    pub(super) conn_window: i64,
    pub(super) initial: i64,
    /// The peer's SETTINGS waiting for this side's ACK: their INITIAL_WINDOW_SIZE, if any.
    pub(super) pending: VecDeque<Option<u32>>,
    /// Open streams, by `adj` of this side.
    pub(super) open: BTreeSet<(i64, u32)>,
    /// Streams with a stall of this side, by `adj`.
    pub(super) stalled: BTreeSet<(i64, u32)>,
}

impl SideFlow {
    pub(super) fn new() -> Self {
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
pub(super) struct ConnFlow {
    pub(super) known: bool,
    /// Counted in `unknown_connections` already.
    pub(super) counted: bool,
    pub(super) seen_frame: bool,
    /// The last phase this connection's windows were folded into (its first frame there):
    /// a window not changed in a phase still has its value there.
    pub(super) folded: Option<u64>,
    /// The side of each direction, as the ledger told it.
    pub(super) side: Dirs<Side>,
    pub(super) sides: Dirs<SideFlow>,
    pub(super) streams: FastMap<u32, StreamFlow>,
    /// The highest stream id seen open, by parity: lower ids not in `streams` are closed.
    pub(super) max_id: [u32; 2],
    /// Per sending direction: the stream that carried the most DATA so far, and how much.
    pub(super) busiest: Dirs<Option<(u32, u64)>>,
}

/// Counters of one side within one scope (the whole capture or a phase).
#[derive(Clone, Debug, Default)]
pub struct FlowAcc {
    pub(crate) stalls: u64,
    pub(crate) unresolved: u64,
    pub(crate) by_limit: [u64; 3],
    /// Durations of the stalls that ended, nanoseconds.
    pub(crate) stalled: LogHist,
    pub(crate) max_stream: i64,
    pub(crate) max_conn: i64,
}

impl FlowAcc {
    /// Adds `o`'s counts (the largest windows: the larger of the two).
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
pub(super) struct Scope {
    pub(super) sides: Sides<FlowAcc>,
    pub(super) unknown: u64,
    pub(super) untracked_streams: u64,
}

pub(super) fn scope_mut<'a>(
    whole: &'a mut Scope,
    phases: &'a mut Phased<Scope>,
    p: Option<u64>,
) -> [Option<&'a mut Scope>; 2] {
    let ph = p.and_then(|p| phases.get_mut(p));
    [Some(whole), ph]
}

/// Folds the windows of `c` as they are now into the largest windows of phase `upto` and of
/// the phases since the last one they were folded into: `c` sent no frame in those, so its
/// windows had these values there. More than [`MAX_PHASES`] phases back (a clock jump), only
/// `upto`.
pub(super) fn carry(c: &mut ConnFlow, phases: &mut Phased<Scope>, upto: u64) {
    if !c.known || !c.seen_frame {
        return;
    }
    let from = match c.folded {
        Some(p) if p >= upto => return,
        Some(p) if upto - p <= MAX_PHASES as u64 => p + 1,
        _ => upto,
    };
    c.folded = Some(upto);
    for i in from..=upto {
        let Some(x) = phases.get_mut(i) else {
            continue;
        };
        for (d, sf) in c.sides.iter() {
            let a = &mut x.sides[c.side[d]];
            a.max_conn = a.max_conn.max(sf.conn_window);
            if let Some(&(adj, _)) = sf.open.last() {
                a.max_stream = a.max_stream.max(sf.initial + adj);
            }
        }
    }
}

/// Opens `sid` on `c` if it is new: not stream 0, not a closed id, and not beyond
/// [`MAX_FLOW_STREAMS`] (counted in `untracked_streams`). Tracked streams are those in `c.streams`.
pub(super) fn open_in(
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
        stalled_once: Dirs::default(),
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
pub(super) fn shift(
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
#[allow(clippy::too_many_arguments)]
pub(super) fn free_in(
    c: &mut ConnFlow,
    conn: u32,
    sid: u32,
    streams: &mut usize,
    whole: &mut Scope,
    phases: &mut Phased<Scope>,
    no_max_window: bool,
    events: &mut Option<Vec<FlowEvent>>,
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
        let side = c.side[d];
        if let Some(stall) = st.stall[d] {
            sf.stalled.remove(&(st.adj[d], sid));
            for x in scope_mut(whole, phases, stall.phase).into_iter().flatten() {
                x.sides[side].unresolved += 1;
            }
            if let Some(ev) = events.as_mut() {
                ev.push(FlowEvent::Unresolved {
                    conn,
                    side,
                    stream: sid,
                    start: stall.start,
                });
            }
        }
        if st.stalled_once[d] {
            if let Some(ev) = events.as_mut() {
                ev.push(FlowEvent::Done {
                    conn,
                    side,
                    stream: sid,
                    sent: st.sent[d],
                });
            }
        }
    }
}
