//! The per-connection and per-stream state of the tracker, and the scopes it counts into.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

use h2ledger_tcp::{Dir, Dirs, Nanos};

use super::{FlowEvent, DEFAULT_WINDOW, MAX_FLOW_STREAMS};
use crate::model::{Side, Sides};
use crate::phase::Phased;
use crate::phase::MAX_PHASES;
use crate::stats::LogHist;
use crate::table::IdTable;

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

#[derive(Debug, Default)]
pub(super) struct StreamFlow {
    /// Per sending direction: increments received minus DATA sent.
    pub(super) adj: Dirs<i64>,
    /// Per sending direction: a stall is open (its start is in the side's `stalled`, rare
    /// enough not to be carried by every stream).
    pub(super) stall: Dirs<bool>,
    /// Per sending direction: its half is closed (the ledger's `HalfClosed` step).
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
    /// The open streams' `adj` of this side, for the largest of them (the largest stream
    /// window): a max-heap updated lazily ([`max_adj`]). An entry is pushed when a stream opens
    /// and when its `adj` grows; DATA (which only lowers it) and closes push and remove
    /// nothing, so an entry may be stale (stream closed, `adj` changed): stale entries are
    /// dropped or refreshed when they reach the top, and the heap is rebuilt from the open
    /// streams when it holds more than twice as many entries, plus [`HEAP_SLACK`] ([`compact`]).
    /// Ties go to the lowest stream id: a new stream's entry (`adj` 0, the highest id) stays
    /// at the bottom instead of climbing over the stale zeros of closed streams.
    pub(super) top: BinaryHeap<(i64, Reverse<u32>)>,
    /// Streams with a stall of this side, by `adj`, with the stall's start.
    pub(super) stalled: BTreeMap<(i64, u32), Stall>,
}

impl SideFlow {
    pub(super) fn new() -> Self {
        SideFlow {
            conn_window: DEFAULT_WINDOW,
            initial: DEFAULT_WINDOW,
            pending: VecDeque::new(),
            top: BinaryHeap::new(),
            stalled: BTreeMap::new(),
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
    pub(super) streams: IdTable<StreamFlow>,
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

/// `f` on the whole capture's scope, then on phase `p`'s when there is one (as
/// [`scope_mut`], without the array).
#[inline(always)]
pub(super) fn for_scopes(
    whole: &mut Scope,
    phases: &mut Phased<Scope>,
    p: Option<u64>,
    mut f: impl FnMut(&mut Scope),
) {
    f(whole);
    if let Some(x) = p.and_then(|p| phases.get_mut(p)) {
        f(x);
    }
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
    let mut now = [(0, None); 2];
    for (k, d) in Dir::ALL.into_iter().enumerate() {
        let sf = &mut c.sides[d];
        now[k] = (
            sf.conn_window,
            max_adj(sf, &c.streams, d).map(|a| sf.initial + a),
        );
    }
    for i in from..=upto {
        let Some(x) = phases.get_mut(i) else {
            continue;
        };
        for (k, d) in Dir::ALL.into_iter().enumerate() {
            let a = &mut x.sides[c.side[d]];
            let (conn_window, stream_window) = now[k];
            a.max_conn = a.max_conn.max(conn_window);
            if let Some(w) = stream_window {
                a.max_stream = a.max_stream.max(w);
            }
        }
    }
}

/// Opens `sid` on `c` if it is new: not stream 0, not a closed id, followed by the ledger
/// (`followed`: its step opened it) and not beyond [`MAX_FLOW_STREAMS`] (else counted in
/// `untracked_streams`). Tracked streams are those in `c.streams`. Returns its slot in
/// `c.streams` when it opened (the caller knows `sid` is not there).
#[allow(clippy::too_many_arguments)]
pub(super) fn open_in(
    c: &mut ConnFlow,
    streams: &mut usize,
    whole: &mut Scope,
    phases: &mut Phased<Scope>,
    no_max_window: bool,
    sid: u32,
    phase: Option<u64>,
    followed: bool,
) -> Option<usize> {
    if sid == 0 {
        return None;
    }
    let par = (sid & 1) as usize;
    if sid <= c.max_id[par] {
        return None; // closed
    }
    c.max_id[par] = sid;
    if !followed || *streams >= MAX_FLOW_STREAMS {
        for s in scope_mut(whole, phases, phase).into_iter().flatten() {
            s.untracked_streams += 1;
        }
        return None;
    }
    *streams += 1;
    let slot = c.streams.insert(sid, StreamFlow::default());
    let mut init = Sides::<i64>::default();
    for d in Dir::ALL {
        let sf = &mut c.sides[d];
        if !no_max_window {
            sf.top.push((0, Reverse(sid)));
        }
        init[c.side[d]] = sf.initial;
    }
    if !no_max_window {
        for d in Dir::ALL {
            compact(&mut c.sides[d], &c.streams, d);
        }
    }
    for_scopes(whole, phases, phase, |s| {
        for side in Side::ALL {
            let a = &mut s.sides[side];
            a.max_stream = a.max_stream.max(init[side]);
        }
    });
    Some(slot)
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
    // Only a larger `adj` can be a new largest; a smaller one leaves a stale entry behind
    // ([`max_adj`]). The caller compacts the heap ([`compact`]).
    if !no_max_window && delta > 0 {
        sf.top.push((new, Reverse(sid)));
    }
    if st.stall[d] {
        if let Some(stall) = sf.stalled.remove(&(old, sid)) {
            sf.stalled.insert((new, sid), stall);
        }
    }
    new
}

/// Drops stream `sid` of `c`; its open stalls are unresolved (its entries in the sides' heaps
/// go stale: [`max_adj`]).
pub(super) fn free_in(
    c: &mut ConnFlow,
    conn: u32,
    sid: u32,
    streams: &mut usize,
    whole: &mut Scope,
    phases: &mut Phased<Scope>,
    events: &mut Option<Vec<FlowEvent>>,
) {
    if let Some(st) = c.streams.remove(sid) {
        freed(c, conn, sid, &st, streams, whole, phases, events);
    }
}

/// Stream `sid` of `c`, `st`, was taken out of `c.streams`: counted out, and its stalls
/// told. A stream that never stalled (the common case) costs the count only.
#[allow(clippy::too_many_arguments)]
#[inline]
pub(super) fn freed(
    c: &mut ConnFlow,
    conn: u32,
    sid: u32,
    st: &StreamFlow,
    streams: &mut usize,
    whole: &mut Scope,
    phases: &mut Phased<Scope>,
    events: &mut Option<Vec<FlowEvent>>,
) {
    *streams -= 1;
    for d in Dir::ALL {
        compact(&mut c.sides[d], &c.streams, d);
    }
    if st.stalled_once.fwd || st.stalled_once.rev {
        stalls_freed(c, conn, sid, st, whole, phases, events);
    }
}

/// The stalls of a stream that stalled at least once, as it ends: the open ones unresolved,
/// and [`FlowEvent::Done`] for each side that stalled.
#[cold]
fn stalls_freed(
    c: &mut ConnFlow,
    conn: u32,
    sid: u32,
    st: &StreamFlow,
    whole: &mut Scope,
    phases: &mut Phased<Scope>,
    events: &mut Option<Vec<FlowEvent>>,
) {
    for d in Dir::ALL {
        let sf = &mut c.sides[d];
        let side = c.side[d];
        if let Some(stall) = st.stall[d]
            .then(|| sf.stalled.remove(&(st.adj[d], sid)))
            .flatten()
        {
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

/// Entries of a side's heap of open streams beyond twice the open streams before it is rebuilt.
pub(super) const HEAP_SLACK: usize = 64;

/// The largest `adj` of direction `d` over the open streams of a connection (`streams`), or
/// `None` when none is open (or the heap is not kept): pops the stale entries off the top of
/// `sf.top` (closed streams), putting back the current `adj` of a stream still open. Each stale
/// entry is handled once, so the cost is that of the pushes it follows.
pub(super) fn max_adj(sf: &mut SideFlow, streams: &IdTable<StreamFlow>, d: Dir) -> Option<i64> {
    while let Some(&(adj, Reverse(sid))) = sf.top.peek() {
        match streams.get(sid) {
            Some(st) if st.adj[d] == adj => return Some(adj),
            Some(st) => {
                // `adj` went down since this entry was pushed (it never goes up without a push).
                let cur = st.adj[d];
                sf.top.pop();
                sf.top.push((cur, Reverse(sid)));
            }
            None => {
                sf.top.pop();
            }
        }
    }
    None
}

/// Rebuilds `sf.top` from the open streams when it holds more than twice as many entries
/// (plus [`HEAP_SLACK`]); called after every push and close, so its memory follows the open
/// streams, and a rebuild's cost is paid for by the pushes or closes since the last one.
#[inline]
pub(super) fn compact(sf: &mut SideFlow, streams: &IdTable<StreamFlow>, d: Dir) {
    if sf.top.len() > 2 * streams.len() + HEAP_SLACK {
        rebuild(sf, streams, d);
    }
}

#[cold]
fn rebuild(sf: &mut SideFlow, streams: &IdTable<StreamFlow>, d: Dir) {
    let mut v = std::mem::take(&mut sf.top).into_vec();
    v.clear();
    v.extend(streams.iter().map(|(sid, st)| (st.adj[d], Reverse(sid))));
    sf.top = BinaryHeap::from(v);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream() -> StreamFlow {
        StreamFlow {
            adj: Dirs::default(),
            stall: Dirs::default(),
            ended: Dirs::default(),
            call: None,
            sent: Dirs::default(),
            stalled_once: Dirs::default(),
        }
    }

    /// The lazy heap gives the largest `adj` of the open streams, as the ordered set it
    /// replaced did, through opens, DATA, WINDOW_UPDATEs and closes in any order; and its
    /// size follows the open streams.
    #[test]
    fn lazy_heap_is_the_largest_open_adj() {
        let d = Dir::Fwd;
        let mut sf = SideFlow::new();
        let mut streams: IdTable<StreamFlow> = IdTable::default();
        let mut next = 1u32;
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for step in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let ids: Vec<u32> = streams.keys().collect();
            match x % 8 {
                0 | 1 if streams.len() < 300 => {
                    streams.insert(next, stream());
                    sf.top.push((0, Reverse(next)));
                    compact(&mut sf, &streams, d);
                    next += 2;
                }
                2 if !ids.is_empty() => {
                    streams.remove(ids[(x >> 8) as usize % ids.len()]);
                    compact(&mut sf, &streams, d);
                }
                3..=5 if !ids.is_empty() => {
                    let sid = ids[(x >> 8) as usize % ids.len()];
                    let st = streams.get_mut(sid).unwrap();
                    shift(&mut sf, st, d, sid, -((x >> 20) as i64 % 70_000), false);
                }
                6 | 7 if !ids.is_empty() => {
                    let sid = ids[(x >> 8) as usize % ids.len()];
                    let st = streams.get_mut(sid).unwrap();
                    shift(&mut sf, st, d, sid, 1 + (x >> 20) as i64 % 70_000, false);
                    compact(&mut sf, &streams, d);
                }
                _ => {}
            }
            if step % 3 == 0 {
                let want = streams.iter().map(|(_, s)| s.adj[d]).max();
                assert_eq!(max_adj(&mut sf, &streams, d), want, "step {step}");
            }
            assert!(sf.top.len() <= 2 * streams.len() + HEAP_SLACK);
        }
    }
}
