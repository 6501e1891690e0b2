//! TCP reassembly: connections by 4-tuple, two ordered byte streams each.
//!
//! The rules (what is a write, when bytes are declared lost, when a connection closes)
//! are stated once, in the crate README; [`half`] implements one direction.

mod half;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;

// foldhash, seeded at random per process: every packet looks its 4-tuple up, and SipHash of
// two socket addresses was about 2% of a replay (docs/decisions.md, 96).
use foldhash::fast::RandomState;

use self::half::{Bounds, Half, Out};
use crate::seq::SeqNumber;
use crate::{Nanos, TcpSegment};

/// Connection id, in order of first appearance, from 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub u32);

/// A direction of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dir {
    /// From the sender of the first packet seen on the connection.
    Fwd,
    /// Towards the sender of the first packet seen.
    Rev,
}

impl Dir {
    /// The other direction.
    pub fn other(self) -> Dir {
        match self {
            Dir::Fwd => Dir::Rev,
            Dir::Rev => Dir::Fwd,
        }
    }

    /// 0 for [`Dir::Fwd`], 1 for [`Dir::Rev`] (a bit position in per-direction flags).
    pub fn index(self) -> usize {
        match self {
            Dir::Fwd => 0,
            Dir::Rev => 1,
        }
    }

    /// Both directions.
    pub const ALL: [Dir; 2] = [Dir::Fwd, Dir::Rev];
}

/// One value per direction of a connection: `dirs[dir]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Dirs<T> {
    /// From the sender of the first packet seen.
    pub fwd: T,
    /// Towards it.
    pub rev: T,
}

impl<T> Dirs<T> {
    /// Both values, made by `f` for each direction.
    pub fn from_fn(mut f: impl FnMut(Dir) -> T) -> Dirs<T> {
        Dirs {
            fwd: f(Dir::Fwd),
            rev: f(Dir::Rev),
        }
    }
}

impl<T> Dirs<T> {
    /// Each direction with its value.
    pub fn iter(&self) -> impl Iterator<Item = (Dir, &T)> {
        [(Dir::Fwd, &self.fwd), (Dir::Rev, &self.rev)].into_iter()
    }

    /// Both values, `fwd` first.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        [&mut self.fwd, &mut self.rev].into_iter()
    }

    /// The value of direction `d` (as `dirs[d]`).
    pub fn get(&self, d: Dir) -> &T {
        &self[d]
    }

    /// The value of direction `d` (as `&mut dirs[d]`).
    pub fn get_mut(&mut self, d: Dir) -> &mut T {
        &mut self[d]
    }
}

impl<T> std::ops::Index<Dir> for Dirs<T> {
    type Output = T;
    #[inline]
    fn index(&self, d: Dir) -> &T {
        match d {
            Dir::Fwd => &self.fwd,
            Dir::Rev => &self.rev,
        }
    }
}

impl<T> std::ops::IndexMut<Dir> for Dirs<T> {
    #[inline]
    fn index_mut(&mut self, d: Dir) -> &mut T {
        match d {
            Dir::Fwd => &mut self.fwd,
            Dir::Rev => &mut self.rev,
        }
    }
}

/// What is known about a connection when it opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnMeta {
    /// Its id.
    pub id: ConnId,
    /// Source of the first packet seen ([`Dir::Fwd`] sender).
    pub first_src: SocketAddr,
    /// Destination of the first packet seen.
    pub first_dst: SocketAddr,
    /// The side that sent the SYN without ACK, if seen; if only the SYN-ACK was seen, the
    /// other side. At [`Sink::open`] this reflects the first packet only; see
    /// [`Reassembler::meta`] for the value learned later.
    pub syn_sender: Option<Dir>,
    /// Timestamp of the first packet seen.
    pub start: Nanos,
    /// The connection this one continues: it was evicted while open (at `max_connections`)
    /// and its 4-tuple came back without a SYN. It keeps the evicted one's orientation
    /// (`first_src`, `first_dst`, `syn_sender`) and each direction goes on at the sequence
    /// number where it stopped: bytes missed meanwhile are a gap, as on any connection.
    pub resumes: Option<ConnId>,
}

/// A segment that carried new payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Write {
    /// Per connection and direction, from 0, in order of capture.
    pub index: u64,
    /// Capture timestamp of the segment.
    pub ts: Nanos,
    /// Bytes of the segment not seen before in this direction (including bytes cut off by
    /// the snapshot length, which become a gap).
    pub len: u32,
}

/// Why a connection closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseKind {
    /// Both FINs seen; the direction is the one whose FIN came first (the active closer).
    Fin(Dir),
    /// A RST sent in this direction.
    Rst(Dir),
    /// [`Reassembler::finish`] with the connection still open.
    EndOfCapture,
    /// Dropped to make room ([`Config::max_connections`]) while open; if its 4-tuple comes
    /// back without a SYN, the new connection says so in [`ConnMeta::resumes`].
    Evicted,
    /// Superseded by a new SYN on the same 4-tuple before it closed.
    Superseded,
}

/// Receives what reassembly finds. Calls for one connection come in this order: `open`,
/// then `write`/`data`/`gap` per direction, then `close` exactly once.
pub trait Sink {
    /// A new connection.
    fn open(&mut self, meta: &ConnMeta);
    /// A segment with new payload was seen (not a retransmission). Called before any of
    /// its bytes are delivered, even when they are buffered.
    fn write(&mut self, conn: ConnId, dir: Dir, w: &Write);
    /// In-order bytes, tagged with the write that carried them.
    fn data(&mut self, conn: ConnId, dir: Dir, w: &Write, bytes: &[u8]);
    /// `len` bytes at this point of the stream will never be delivered.
    fn gap(&mut self, conn: ConnId, dir: Dir, ts: Nanos, len: u64);
    /// The connection is over; nothing more will be reported for it.
    fn close(&mut self, conn: ConnId, ts: Nanos, kind: CloseKind);
    /// A TLS record of this direction was complete in write `w` (called by a TLS layer
    /// between reassembly and the ledger, such as h2ledger-tls; reassembly never calls it).
    fn tls_record(&mut self, _conn: ConnId, _dir: Dir, _w: &Write) {}
}

/// Memory bounds. See the crate README for what each one costs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Out-of-order bytes buffered per direction, plus 64 bytes per buffered piece.
    pub max_buffered_per_dir: usize,
    /// Holes (missing runs before buffered data) per direction.
    pub max_holes_per_dir: usize,
    /// Connections tracked at once (closed ones included, until evicted). At least 1.
    pub max_connections: usize,
    /// Evicted connections remembered (by a 64-bit fingerprint of their 4-tuple, about 60
    /// bytes each with the map's and the order's share), so that one coming back is the same
    /// connection ([`ConnMeta::resumes`]), continued where each direction stopped; the oldest
    /// is forgotten beyond ([`Stats::evicted_forgotten`]).
    pub max_evicted: usize,
}

/// Evicted connections remembered by default: 131,072 (about 7 MiB when full), so that 100,000
/// concurrent connections tracked 4,096 at a time are each counted once.
pub const DEFAULT_MAX_EVICTED: usize = 1 << 17;

impl Default for Config {
    fn default() -> Config {
        Config {
            max_buffered_per_dir: 4 << 20,
            max_holes_per_dir: 256,
            max_connections: 65536,
            max_evicted: DEFAULT_MAX_EVICTED,
        }
    }
}

/// Counters, all since [`Reassembler::new`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Segments pushed.
    pub packets: u64,
    /// Segments pushed that carry payload (`wire_payload_len > 0`).
    pub tcp_segments: u64,
    /// Payload segments with no new byte (whole duplicates), including payload segments
    /// on a connection already closed by FINs.
    pub retransmissions: u64,
    /// Writes that also carried bytes already seen (partial overlaps).
    pub overlaps: u64,
    /// Writes that had to be buffered (some new byte after a hole).
    pub out_of_order: u64,
    /// `Sink::gap` calls.
    pub gaps: u64,
    /// Bytes reported by `Sink::gap`.
    pub gap_bytes: u64,
    /// Segments cut by the snapshot length (`payload.len() < wire_payload_len`).
    pub truncated: u64,
    /// Holes declared lost because a direction hit `max_buffered_per_dir` or
    /// `max_holes_per_dir`.
    pub bound_hits: u64,
    /// Open connections closed with [`CloseKind::Evicted`] because of `max_connections`.
    pub evicted: u64,
    /// Evicted connections that came back (opened with [`ConnMeta::resumes`]).
    pub resumed: u64,
    /// Evicted connections forgotten (beyond [`Config::max_evicted`]): if one comes back it
    /// is a new connection.
    pub evicted_forgotten: u64,
    /// Payload segments on a connection after its RST: those of the other side within
    /// [`RST_GRACE_NS`] (bytes it wrote before the RST reached it) are delivered, the rest
    /// are ignored ([`Stats::data_after_rst_ignored`]).
    pub data_after_rst: u64,
    /// Of [`Stats::data_after_rst`], those ignored: sent by the side that reset, or after
    /// the grace.
    pub data_after_rst_ignored: u64,
}

/// How long after a RST the other side's bytes are still delivered: what it wrote before the
/// RST reached it arrives within one round trip, far below a second on any path. The
/// connection closes (`Sink::close`, `CloseKind::Rst`, at the RST's time) when that side also
/// ends (FIN or RST) or at the first packet past this grace.
pub const RST_GRACE_NS: Nanos = 1_000_000_000;

/// Largest payload length believed from one segment: far above any IP packet.
const MAX_SEGMENT: usize = 1 << 24;
const NIL: usize = usize::MAX;

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Open,
    /// A RST sent in direction `by` at `at`; the other direction's in-flight bytes are still
    /// delivered until it ends or [`RST_GRACE_NS`] passes.
    Reset {
        by: Dir,
        at: Nanos,
    },
    Closed {
        by_rst: bool,
    },
}

struct Conn {
    meta: ConnMeta,
    key: Key,
    halves: Dirs<Half>,
    state: State,
    first_fin: Option<Dir>,
    /// LRU list neighbours (slab indices): `newer` towards the most recently active.
    newer: usize,
    older: usize,
}

/// What is remembered of a connection evicted while open, to continue it if it comes back:
/// its id, which of its 4-tuple's addresses sent first (its [`Dir::Fwd`]), and where each
/// direction stood ([`Dir::Fwd`] first): 32 bytes, 40 with its key (the flags packed in one
/// word, each direction's point in three; 40 and 48 before, decision 458).
struct Evicted {
    id: ConnId,
    /// Bit 0: the key's first address sent first; bits 1 and 2: the SYN's sender was
    /// [`Dir::Fwd`], [`Dir::Rev`]; bit 3 + d: direction d can resume; bit 5 + d: its ISN is known.
    flags: u32,
    halves: [[u32; 3]; 2],
}

impl Evicted {
    fn new(
        id: ConnId,
        fwd_is_first: bool,
        syn_sender: Option<Dir>,
        halves: [Option<half::ResumePoint>; 2],
    ) -> Evicted {
        let mut flags = u32::from(fwd_is_first);
        flags |= match syn_sender {
            None => 0,
            Some(Dir::Fwd) => 2,
            Some(Dir::Rev) => 4,
        };
        let mut words = [[0; 3]; 2];
        for (d, p) in halves.into_iter().enumerate() {
            if let Some(p) = p {
                let (w, has_isn) = p.to_words();
                words[d] = w;
                flags |= 8 << d;
                if has_isn {
                    flags |= 32 << d;
                }
            }
        }
        Evicted {
            id,
            flags,
            halves: words,
        }
    }

    fn fwd_is_first(&self) -> bool {
        self.flags & 1 != 0
    }

    fn syn_sender(&self) -> Option<Dir> {
        match self.flags & 6 {
            2 => Some(Dir::Fwd),
            4 => Some(Dir::Rev),
            _ => None,
        }
    }

    /// Where direction `d` (0: [`Dir::Fwd`]) stood, if it can resume.
    fn half(&self, d: usize) -> Option<half::ResumePoint> {
        (self.flags & (8 << d) != 0)
            .then(|| half::ResumePoint::from_words(self.halves[d], self.flags & (32 << d) != 0))
    }
}

/// Whether an order of `len` entries (in a buffer of `cap`) of which `live` are live should drop
/// its stale ones before one more is pushed: when they outnumber the live ones (plus 1,024), or
/// when the buffer is full and an eighth or more of it is stale, so that the buffer does not
/// double for entries that are gone (with 100,000 connections evicted and coming back, the
/// order of [`Reassembler`] doubled to 4 MiB for 2 MiB of live entries; decision 458). Each
/// pass frees at least an eighth of the buffer: the pushes pay for it.
pub fn stale_to_drop(len: usize, cap: usize, live: usize) -> bool {
    len > 2 * live + 1024 || (len >= cap && len >= live + live / 8 + 1024)
}

/// An entry of the eviction order: a fingerprint and the id evicted under it, in 12 bytes
/// rather than 16 (a `(u64, ConnId)` is aligned to 8; decision 458).
#[derive(Clone, Copy)]
struct Ordered([u32; 3]);

impl Ordered {
    fn new(fp: u64, id: ConnId) -> Ordered {
        Ordered([fp as u32, (fp >> 32) as u32, id.0])
    }

    fn get(self) -> (u64, ConnId) {
        let [lo, hi, id] = self.0;
        (u64::from(lo) | u64::from(hi) << 32, ConnId(id))
    }
}

/// A 4-tuple, the same for both directions.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Key(SocketAddr, SocketAddr);

/// A 64-bit fingerprint of a 4-tuple, the same in every run (two 4-tuples of one capture
/// share one with a probability of about n^2 / 2^65).
fn fingerprint(k: &Key) -> u64 {
    use std::hash::BuildHasher as _;
    foldhash::quality::FixedState::with_seed(0x6832_6c65_6467_6572).hash_one(k)
}

impl Key {
    fn new(a: SocketAddr, b: SocketAddr) -> Key {
        if a <= b {
            Key(a, b)
        } else {
            Key(b, a)
        }
    }
}

/// Reassembles TCP streams; see the crate docs for the reporting contract.
pub struct Reassembler {
    cfg: Config,
    stats: Stats,
    next_id: u32,
    map: HashMap<Key, usize, RandomState>,
    slab: Vec<Option<Conn>>,
    free: Vec<usize>,
    /// Most and least recently active connections.
    newest: usize,
    oldest: usize,
    /// Connections evicted while open, by the fingerprint of their 4-tuple (at most
    /// `max_evicted`, oldest first forgotten), so that one coming back is known as the same
    /// connection. The order keeps stale entries of connections that came back since.
    evicted: HashMap<u64, Evicted, RandomState>,
    evicted_order: VecDeque<Ordered>,
    /// Connections in [`State::Reset`], by RST time (slot, id): closed past the grace. At
    /// most one entry per tracked connection.
    resets: VecDeque<(Nanos, usize, ConnId)>,
}

impl Reassembler {
    /// A reassembler with these bounds.
    pub fn new(cfg: Config) -> Reassembler {
        Reassembler {
            cfg,
            stats: Stats::default(),
            next_id: 0,
            map: HashMap::default(),
            slab: Vec::new(),
            free: Vec::new(),
            newest: NIL,
            oldest: NIL,
            evicted: HashMap::default(),
            evicted_order: VecDeque::new(),
            resets: VecDeque::new(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> Stats {
        self.stats.clone()
    }

    /// The current metadata of a tracked connection (with `syn_sender` as learned so
    /// far), or `None` once it is no longer tracked.
    pub fn meta(&self, id: ConnId) -> Option<&ConnMeta> {
        self.slab
            .iter()
            .flatten()
            .map(|c| &c.meta)
            .find(|m| m.id == id)
    }

    /// Feeds one segment captured at `ts`.
    pub fn push<S: Sink>(&mut self, ts: Nanos, seg: &TcpSegment<'_>, sink: &mut S) {
        self.stats.packets += 1;
        self.advance(ts, sink);
        let payload = &seg.payload[..seg.payload.len().min(MAX_SEGMENT)];
        let wire = (seg.wire_payload_len as usize)
            .max(payload.len())
            .min(MAX_SEGMENT) as u32;
        if wire > 0 {
            self.stats.tcp_segments += 1;
        }
        if payload.len() < wire as usize {
            self.stats.truncated += 1;
        }

        let key = Key::new(seg.src, seg.dst);
        let mut slot = self.map.get(&key).copied();
        if let Some(i) = slot {
            if self.conn(i).starts_new(seg) {
                self.remove(i, ts, sink, CloseKind::Superseded);
                slot = None;
            }
        }
        let i = match slot {
            Some(i) => i,
            // A RST for a connection never seen: nothing to open or close.
            None if seg.flags.rst => return,
            None => self.open(ts, seg, key, sink),
        };
        self.touch(i);

        let bounds = Bounds {
            max_buffered: self.cfg.max_buffered_per_dir,
            max_holes: self.cfg.max_holes_per_dir,
        };
        let conn = self.slab[i].as_mut().expect("live slot");
        let was_open = conn.state == State::Open;
        conn.segment(ts, seg, payload, wire, bounds, &mut self.stats, sink);
        if let (true, State::Reset { at, .. }) = (was_open, conn.state) {
            let id = conn.meta.id;
            self.resets.push_back((at, i, id));
        }
    }

    /// Time is `now` (a packet's, or the wall clock when no packet comes): connections reset
    /// more than [`RST_GRACE_NS`] ago are closed.
    pub fn advance<S: Sink>(&mut self, now: Nanos, sink: &mut S) {
        while let Some(&(at, i, id)) = self.resets.front() {
            if now.saturating_sub(at) <= RST_GRACE_NS {
                break;
            }
            self.resets.pop_front();
            if let Some(conn) = self.slab.get_mut(i).and_then(Option::as_mut) {
                if conn.meta.id == id {
                    conn.end_reset(now, &mut self.stats, sink);
                }
            }
        }
    }

    /// End of input: flushes every open connection (declaring its holes lost) and closes
    /// it with [`CloseKind::EndOfCapture`], in [`ConnId`] order. Then forgets them all.
    pub fn finish<S: Sink>(&mut self, ts: Nanos, sink: &mut S) {
        let mut open: Vec<(ConnId, usize)> = self
            .slab
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.as_ref().map(|c| (c, i)))
            .filter(|(c, _)| !matches!(c.state, State::Closed { .. }))
            .map(|(c, i)| (c.meta.id, i))
            .collect();
        open.sort_unstable();
        for (_, i) in open {
            let conn = self.slab[i].as_mut().expect("live slot");
            if conn.state == State::Open {
                conn.close(ts, CloseKind::EndOfCapture, &mut self.stats, sink);
            } else {
                conn.end_reset(ts, &mut self.stats, sink);
            }
        }
        self.resets.clear();
        self.map.clear();
        self.slab.clear();
        self.free.clear();
        self.newest = NIL;
        self.oldest = NIL;
    }

    fn conn(&self, i: usize) -> &Conn {
        self.slab[i].as_ref().expect("live slot")
    }

    fn conn_mut(&mut self, i: usize) -> &mut Conn {
        self.slab[i].as_mut().expect("live slot")
    }

    fn open<S: Sink>(&mut self, ts: Nanos, seg: &TcpSegment<'_>, key: Key, sink: &mut S) -> usize {
        // An evicted connection's 4-tuple again: the same connection, unless a SYN starts a
        // new one. It keeps its orientation and continues each direction where it stopped.
        let resumed = match self.evicted.remove(&fingerprint(&key)) {
            Some(r) if !seg.flags.syn => {
                self.stats.resumed += 1;
                Some(r)
            }
            _ => None,
        };
        if self.map.len() >= self.cfg.max_connections.max(1) && self.oldest != NIL {
            let old = self.remove(self.oldest, ts, sink, CloseKind::Evicted);
            if let Some(old) = old {
                self.stats.evicted += 1;
                let fp = fingerprint(&old.key);
                while self.evicted.len() >= self.cfg.max_evicted.max(1) {
                    let Some((oldest, id)) = self.evicted_order.pop_front().map(Ordered::get)
                    else {
                        break;
                    };
                    // An entry of a connection that came back since (and may have been
                    // evicted again, later in the order) is stale.
                    if self.evicted.get(&oldest).map(|r| r.id) == Some(id) {
                        self.evicted.remove(&oldest);
                        self.stats.evicted_forgotten += 1;
                    }
                }
                let old_id = old.meta.id;
                self.evicted.insert(
                    fp,
                    Evicted::new(
                        old_id,
                        old.meta.first_src == old.key.0,
                        old.meta.syn_sender,
                        [old.halves.fwd.resume_point(), old.halves.rev.resume_point()],
                    ),
                );
                if stale_to_drop(
                    self.evicted_order.len(),
                    self.evicted_order.capacity(),
                    self.evicted.len(),
                ) {
                    // Stale entries of connections that came back: drop them.
                    let kept = &self.evicted;
                    self.evicted_order.retain(|o| {
                        let (f, id) = o.get();
                        kept.get(&f).map(|r| r.id) == Some(id)
                    });
                }
                self.evicted_order.push_back(Ordered::new(fp, old_id));
            }
        }
        if let Some(r) = resumed {
            let (first_src, first_dst) = if r.fwd_is_first() {
                (key.0, key.1)
            } else {
                (key.1, key.0)
            };
            let meta = ConnMeta {
                id: ConnId(self.next_id),
                first_src,
                first_dst,
                syn_sender: r.syn_sender(),
                start: ts,
                resumes: Some(r.id),
            };
            let mut halves: Dirs<Half> = Dirs::default();
            for (d, p) in [(Dir::Fwd, r.half(0)), (Dir::Rev, r.half(1))] {
                if let Some(p) = p {
                    halves[d].resume(p);
                }
            }
            return self.insert(meta, key, halves, sink);
        }
        let syn_sender = match (seg.flags.syn, seg.flags.ack) {
            (true, false) => Some(Dir::Fwd),
            (true, true) => Some(Dir::Rev),
            _ => None,
        };
        let meta = ConnMeta {
            id: ConnId(self.next_id),
            first_src: seg.src,
            first_dst: seg.dst,
            syn_sender,
            start: ts,
            resumes: None,
        };
        self.insert(meta, key, Dirs::default(), sink)
    }

    /// Tracks a new connection (its id is the next one) in a free slot, as the newest.
    fn insert<S: Sink>(
        &mut self,
        meta: ConnMeta,
        key: Key,
        halves: Dirs<Half>,
        sink: &mut S,
    ) -> usize {
        self.next_id = self.next_id.wrapping_add(1);
        sink.open(&meta);
        let conn = Conn {
            meta,
            key,
            halves,
            state: State::Open,
            first_fin: None,
            newer: NIL,
            older: NIL,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.slab[i] = Some(conn);
                i
            }
            None => {
                self.slab.push(Some(conn));
                self.slab.len() - 1
            }
        };
        self.map.insert(key, i);
        self.link_newest(i);
        i
    }

    /// Stops tracking slot `i`, closing the connection first if it is still open; returns
    /// it when it was open (closed now with `kind`).
    fn remove<S: Sink>(
        &mut self,
        i: usize,
        ts: Nanos,
        sink: &mut S,
        kind: CloseKind,
    ) -> Option<Conn> {
        self.unlink(i);
        let mut conn = self.slab[i].take().expect("live slot");
        let was_open = conn.state == State::Open;
        match conn.state {
            State::Open => conn.close(ts, kind, &mut self.stats, sink),
            State::Reset { .. } => conn.end_reset(ts, &mut self.stats, sink),
            State::Closed { .. } => {}
        }
        self.map.remove(&conn.key);
        self.free.push(i);
        was_open.then_some(conn)
    }

    fn touch(&mut self, i: usize) {
        if self.newest != i {
            self.unlink(i);
            self.link_newest(i);
        }
    }

    fn link_newest(&mut self, i: usize) {
        let old_newest = self.newest;
        {
            let c = self.conn_mut(i);
            c.newer = NIL;
            c.older = old_newest;
        }
        if old_newest != NIL {
            self.conn_mut(old_newest).newer = i;
        } else {
            self.oldest = i;
        }
        self.newest = i;
    }

    fn unlink(&mut self, i: usize) {
        let (newer, older) = {
            let c = self.conn(i);
            (c.newer, c.older)
        };
        if newer != NIL {
            self.conn_mut(newer).older = older;
        } else {
            self.newest = older;
        }
        if older != NIL {
            self.conn_mut(older).newer = newer;
        } else {
            self.oldest = newer;
        }
        let c = self.conn_mut(i);
        c.newer = NIL;
        c.older = NIL;
    }
}

impl Conn {
    fn dir_of(&self, seg: &TcpSegment<'_>) -> Dir {
        if seg.src == self.meta.first_src && seg.dst == self.meta.first_dst {
            Dir::Fwd
        } else {
            Dir::Rev
        }
    }

    /// A SYN without ACK on a tracked 4-tuple starts a new connection when the old one
    /// is closed, or when that direction already has a stream that did not start with
    /// this same SYN (a retransmitted SYN carries the same ISN).
    fn starts_new(&self, seg: &TcpSegment<'_>) -> bool {
        if !seg.flags.syn || seg.flags.ack {
            return false;
        }
        if self.state != State::Open {
            return true;
        }
        let half = &self.halves[self.dir_of(seg)];
        half.started() && half.isn() != Some(SeqNumber(seg.seq))
    }

    #[allow(clippy::too_many_arguments)]
    fn segment<S: Sink>(
        &mut self,
        ts: Nanos,
        seg: &TcpSegment<'_>,
        payload: &[u8],
        wire: u32,
        bounds: Bounds,
        stats: &mut Stats,
        sink: &mut S,
    ) {
        let dir = self.dir_of(seg);
        match self.state {
            State::Open => {}
            State::Reset { by, .. } => {
                return self.after_reset(ts, seg, dir, by, payload, wire, bounds, stats, sink)
            }
            State::Closed { by_rst } => {
                if wire > 0 {
                    if by_rst {
                        stats.data_after_rst += 1;
                        stats.data_after_rst_ignored += 1;
                    } else {
                        stats.retransmissions += 1;
                    }
                }
                return;
            }
        }
        if seg.flags.rst {
            // Payload on a RST is diagnostic text, not stream data. The resetting side is
            // done; the other side's bytes in flight still come.
            let id = self.meta.id;
            let mut out = Out {
                sink: &mut *sink,
                stats: &mut *stats,
                conn: id,
                dir,
            };
            self.halves[dir].flush(&mut out, ts);
            if wire > 0 {
                self.halves[dir].rst_payload(&mut out, ts, SeqNumber(seg.seq), wire);
            }
            self.state = State::Reset { by: dir, at: ts };
            return;
        }
        if seg.flags.syn && self.meta.syn_sender.is_none() {
            self.meta.syn_sender = Some(if seg.flags.ack { dir.other() } else { dir });
        }
        let seq = SeqNumber(seg.seq);
        let (d, o) = (dir, dir.other());
        if !self.halves[d].started() {
            self.halves[d].start(seq, seg.flags.syn);
        }
        // SYN occupies one sequence number before the data (RFC 9293 §3.4).
        let data_seq = seq + u32::from(seg.flags.syn);
        let id = self.meta.id;
        if seg.flags.ack {
            let mut out = Out {
                sink: &mut *sink,
                stats: &mut *stats,
                conn: id,
                dir: dir.other(),
            };
            self.halves[o].on_ack(&mut out, ts, SeqNumber(seg.ack));
        }
        if wire > 0 {
            let mut out = Out {
                sink: &mut *sink,
                stats: &mut *stats,
                conn: id,
                dir,
            };
            self.halves[d].segment(&mut out, ts, data_seq, payload, wire, bounds);
        }
        if seg.flags.fin {
            self.halves[d].on_fin(data_seq + wire);
            self.first_fin.get_or_insert(dir);
        }
        if let (true, true, Some(first)) = (
            self.halves.fwd.fin_seen(),
            self.halves.rev.fin_seen(),
            self.first_fin,
        ) {
            self.close(ts, CloseKind::Fin(first), stats, sink);
        }
    }

    /// A segment after the RST sent in direction `by`: the other side's bytes are delivered
    /// until it ends too.
    #[allow(clippy::too_many_arguments)]
    fn after_reset<S: Sink>(
        &mut self,
        ts: Nanos,
        seg: &TcpSegment<'_>,
        dir: Dir,
        by: Dir,
        payload: &[u8],
        wire: u32,
        bounds: Bounds,
        stats: &mut Stats,
        sink: &mut S,
    ) {
        if wire > 0 {
            stats.data_after_rst += 1;
        }
        if dir == by || seg.flags.rst || seg.flags.syn {
            if wire > 0 {
                stats.data_after_rst_ignored += 1;
            }
            if dir != by && seg.flags.rst {
                self.end_reset(ts, stats, sink);
            }
            return;
        }
        let seq = SeqNumber(seg.seq);
        if !self.halves[dir].started() {
            self.halves[dir].start(seq, false);
        }
        if wire > 0 {
            let mut out = Out {
                sink: &mut *sink,
                stats: &mut *stats,
                conn: self.meta.id,
                dir,
            };
            self.halves[dir].segment(&mut out, ts, seq, payload, wire, bounds);
        }
        if seg.flags.fin {
            self.halves[dir].on_fin(seq + wire);
            self.end_reset(ts, stats, sink);
        }
    }

    /// Ends a connection in [`State::Reset`]: flushes the other side, then reports the close
    /// at the RST's time.
    fn end_reset<S: Sink>(&mut self, ts: Nanos, stats: &mut Stats, sink: &mut S) {
        if let State::Reset { by, at } = self.state {
            let mut out = Out {
                sink: &mut *sink,
                stats: &mut *stats,
                conn: self.meta.id,
                dir: by.other(),
            };
            self.halves[by.other()].flush(&mut out, ts);
            sink.close(self.meta.id, at, CloseKind::Rst(by));
            self.state = State::Closed { by_rst: true };
        }
    }

    /// Flushes both directions, then reports the close.
    fn close<S: Sink>(&mut self, ts: Nanos, kind: CloseKind, stats: &mut Stats, sink: &mut S) {
        let id = self.meta.id;
        for dir in [Dir::Fwd, Dir::Rev] {
            let mut out = Out {
                sink: &mut *sink,
                stats: &mut *stats,
                conn: id,
                dir,
            };
            self.halves[dir].flush(&mut out, ts);
        }
        sink.close(id, ts, kind);
        self.state = State::Closed {
            by_rst: matches!(kind, CloseKind::Rst(_)),
        };
    }
}
