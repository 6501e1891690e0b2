//! The analysis on a thread of its own, beside the ledger's (decision 261).
//!
//! The ledger's thread records each event for it into a [`Batch`]: the fixed fields, the
//! frame's borrowed bytes copied into one arena ([`h2_frame_parser::Frame::bytes`]), the decoded header list
//! copied into a list kept by the batch. Full batches go over a bounded channel
//! ([`BATCHES_AHEAD`]) to the far thread, which hands each event, in order, to the analysis
//! exactly as [`crate::Obs`] does inline, and sends the emptied batch
//! back to be refilled. At the end of the input [`Relay::finish`] ships the last batch and
//! takes the analysis back. The findings stay on the ledger's thread, so that the two threads
//! share the work, with the run's one flow tracker, which the analysis takes at the end (its
//! own is off meanwhile: decision 406).
//!
//! One question goes the other way: whether the analysis wants a DATA frame's payload, which
//! its state answers at that frame. The ledger's thread cannot ask it, so with the analysis
//! far every DATA payload is kept and sent (once a header block with a gRPC content-type was
//! seen: before, the answer is no for every stream; decision 408), and the far thread asks at
//! the same point of the event order: [`Observer::wants_data`] at the frame, and for a
//! payload that spanned writes the answer at its head too ([`Observer::data_head`], recorded
//! as an event). The frame reaches the analysis with its payload exactly when it would have
//! inline.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::net::SocketAddr;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::thread::JoinHandle;

use h2_frame_parser::{Head, Kind, Packed};
use h2ledger_core::ledger::{BlockOpen, BlockSize};
use h2ledger_core::{
    Analysis, ConnSummary, FrameClass, FrameEvent, HeaderList, PingFact, Side, StreamId, StreamStep,
};
use h2ledger_tcp::{ConnId, ConnMeta, Dir, Nanos, Write};

/// Batches on their way to the far thread at most: with [`BATCH_EVENTS`] and
/// [`BATCH_BYTES`], what the ledger's thread may run ahead is bounded.
const BATCHES_AHEAD: usize = 4;
/// A batch is sent when it holds this many events...
const BATCH_EVENTS: usize = 2048;
/// ...or this many bytes of frames and header lists.
const BATCH_BYTES: usize = 256 * 1024;

/// One event for the analysis.
pub(crate) enum Ev {
    /// The first packet's time.
    Origin(Nanos),
    Open(Box<ConnMeta>),
    Write(ConnId, Dir, Write),
    Frame(Rec),
    /// [`Observer::data_head`] was asked for a DATA frame of this direction and stream.
    DataHead(ConnId, Dir, StreamId),
    Gap(ConnId, Dir, Nanos, bool),
    Close(Box<ConnSummary>),
    /// An upgraded request: its method and target in the arena.
    Upgraded(Box<Upgraded>),
    /// No packet until this wall-clock time.
    Advance(Nanos),
    /// The run's clock reached this time ([`Analysis::reach`]: a part of several sessions).
    Reach(Nanos),
}

/// An upgraded request's connection, direction, write, and its method and target (start and
/// length in the arena).
pub(crate) type Upgraded = (ConnId, Dir, Write, (usize, usize), (usize, usize));

/// A [`FrameEvent`] without borrows, small: it is written on one core and read on the other.
/// The addresses come from the connection's [`Ev::Open`].
pub(crate) struct Rec {
    ts: Nanos,
    write: u64,
    /// [`BlockSize::list`] (with `block_encoded`), when [`HAS_BLOCK`] is set. A PING frame has
    /// no header block: for one, [`FrameEvent::ping`] instead, packed by [`pack_ping`].
    block_list: u64,
    block_encoded: u32,
    conn: ConnId,
    /// The frame's bytes in the arena.
    start: u32,
    len: u32,
    /// The header list's index among the batch's lists; [`NO_LIST`] for none.
    list: u32,
    head: Head,
    /// The frame but its head and bytes (`start..start + len` of the arena).
    frame: Packed,
    dir: Dir,
    side: Side,
    class: FrameClass,
    /// `HAS_BLOCK`, `LATE_START`, `MID_STREAM`, `SPANNED`, `PING_ACKED`, and in the top
    /// three bits [`FrameEvent::stream`] ([`pack_step`]).
    bits: u8,
    /// [`FrameEvent::padding`]: at most 256 (the Pad Length octet and 255 octets).
    padding: u16,
    /// [`FrameEvent::opened`] ([`pack_opened`]).
    opened: u8,
}

const NO_LIST: u32 = u32::MAX;
const HAS_BLOCK: u8 = 1;
const LATE_START: u8 = 2;
const MID_STREAM: u8 = 4;
const SPANNED: u8 = 8;
/// A PING ACK the connection model matched: `block_list` holds the PING's time.
const PING_ACKED: u8 = 16;

/// [`FrameEvent::ping`] in a [`Rec`]'s `block_list` (and the [`PING_ACKED`] bit): a PING's
/// `owed`, an ACK's `sent` time; an unmatched ACK has neither.
fn pack_ping(p: PingFact) -> (u64, u8) {
    match p {
        PingFact::Sent { owed } => (owed, 0),
        PingFact::Acked { sent } => (sent as u64, PING_ACKED),
        PingFact::None | PingFact::Unmatched => (0, 0),
    }
}

/// Where [`FrameEvent::stream`] sits in a [`Rec`]'s `bits`: its top three.
const STEP_SHIFT: u8 = 5;

/// [`FrameEvent::stream`] in a [`Rec`]: its kind in the top three bits of `bits`, a reset's
/// code in `block_list` (which a RST_STREAM, with neither header block nor PING, leaves
/// free). The record keeps its size (decision 425).
fn pack_step(s: StreamStep) -> (u8, Option<u64>) {
    let (k, code) = match s {
        StreamStep::None => (0, None),
        StreamStep::Opened => (1, None),
        StreamStep::HalfClosed => (2, None),
        StreamStep::Ended => (3, None),
        StreamStep::Reset { code: None } => (4, None),
        StreamStep::Reset { code: Some(c) } => (5, Some(u64::from(c.0))),
        StreamStep::Refused => (6, None),
        StreamStep::Untracked => (7, None),
    };
    (k << STEP_SHIFT, code)
}

/// [`pack_step`] undone.
fn unpack_step(bits: u8, list: u64) -> StreamStep {
    match bits >> STEP_SHIFT {
        1 => StreamStep::Opened,
        2 => StreamStep::HalfClosed,
        3 => StreamStep::Ended,
        4 => StreamStep::Reset { code: None },
        5 => StreamStep::Reset {
            code: Some(h2_frame_parser::ErrorCode(list as u32)),
        },
        6 => StreamStep::Refused,
        7 => StreamStep::Untracked,
        _ => StreamStep::None,
    }
}

/// [`FrameEvent::opened`] in a [`Rec`] byte: 1 when there is one, its class in the next two
/// bits, its `ends_half` in the next, its step's kind ([`pack_step`]; an opening HEADERS makes
/// no reset, so no code) in the top three.
fn pack_opened(o: Option<BlockOpen>) -> u8 {
    let Some(o) = o else {
        return 0;
    };
    let class = match o.class {
        FrameClass::Trailers => 2,
        FrameClass::PushPromise => 4,
        _ => 0,
    };
    1 | class | if o.ends_half { 8 } else { 0 } | pack_step(o.stream).0
}

/// [`pack_opened`] undone.
fn unpack_opened(b: u8) -> Option<BlockOpen> {
    (b & 1 != 0).then(|| BlockOpen {
        class: match b & 6 {
            2 => FrameClass::Trailers,
            4 => FrameClass::PushPromise,
            _ => FrameClass::Headers,
        },
        ends_half: b & 8 != 0,
        stream: unpack_step(b & !((1 << STEP_SHIFT) - 1), 0),
    })
}

/// [`pack_ping`] undone.
fn unpack_ping(class: FrameClass, list: u64, bits: u8) -> PingFact {
    match class {
        FrameClass::Ping => PingFact::Sent { owed: list },
        FrameClass::PingAck if bits & PING_ACKED != 0 => PingFact::Acked { sent: list as i64 },
        FrameClass::PingAck => PingFact::Unmatched,
        _ => PingFact::None,
    }
}

/// Events in order, the bytes their frames borrow, and their header lists.
#[derive(Default)]
struct Batch {
    evs: Vec<Ev>,
    bytes: Vec<u8>,
    /// Header lists; the first `lists_used` belong to this batch (the rest are kept for reuse).
    lists: Vec<HeaderList>,
    lists_used: usize,
    /// The lists of this batch by [`HeaderList::stamp`] (direct-mapped, `RECENT` slots): a
    /// list the ledger has not changed since it was kept is kept once (decision 407).
    recent: [(u64, u32); RECENT],
    /// Bytes of the arena and of the lists used.
    held: usize,
}

/// Slots of [`Batch::recent`]: both directions of a few connections at a time.
const RECENT: usize = 16;

impl Batch {
    fn clear(&mut self) {
        self.evs.clear();
        self.bytes.clear();
        self.lists_used = 0;
        self.recent = [(0, 0); RECENT];
        self.held = 0;
        // A batch that held a large frame does not keep its size.
        if self.bytes.capacity() > 4 * BATCH_BYTES {
            self.bytes.shrink_to(BATCH_BYTES);
        }
    }

    fn full(&self) -> bool {
        self.evs.len() >= BATCH_EVENTS || self.held >= BATCH_BYTES
    }

    fn keep(&mut self, b: &[u8]) -> (usize, usize) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(b);
        self.held += b.len();
        (start, b.len())
    }

    fn keep_list(&mut self, h: &HeaderList) -> u32 {
        let stamp = h.stamp();
        let slot = (stamp % RECENT as u64) as usize;
        if stamp != 0 && self.recent[slot].0 == stamp {
            return self.recent[slot].1;
        }
        let i = self.lists_used as u32;
        self.recent[slot] = (stamp, i);
        match self.lists.get_mut(i as usize) {
            Some(l) => l.copy_from(h),
            None => self.lists.push(h.clone()),
        }
        self.lists_used += 1;
        self.held += h.held();
        i
    }

    fn bytes(&self, (start, len): (usize, usize)) -> &[u8] {
        &self.bytes[start..start + len]
    }
}

/// The ledger's end: records events, ships batches, and takes the analysis back at the end.
pub(crate) struct Relay {
    /// `RefCell`: [`Observer::data_head`] takes `&self` and records an event.
    batch: RefCell<Batch>,
    /// The far analysis' flow tracker is on (no findings here keep the run's one): it reads
    /// SETTINGS and WINDOW_UPDATE frames, so their bodies are sent ([`Relay::frame`]).
    flow_far: bool,
    full: Option<SyncSender<Batch>>,
    empty: Receiver<Batch>,
    worker: JoinHandle<Option<Far>>,
}

/// The far thread's end: what the events are for.
struct Far {
    analysis: Analysis,
    /// The answer of `wants_data` at the head of the DATA frame in progress, by connection
    /// and direction (one frame at a time per direction); dropped with its connection.
    heads: HashMap<(u32, Dir), bool, BuildHasherDefault<ConnHasher>>,
    /// Each open connection's first source and destination (its frames' addresses, as the
    /// ledger gives them: [`FrameEvent::src`]).
    addrs: HashMap<u32, (SocketAddr, SocketAddr), BuildHasherDefault<ConnHasher>>,
    /// The connection of the last frame and its `addrs` entry: the frames of a write are one
    /// connection's (decision 463).
    last: Option<(u32, (SocketAddr, SocketAddr))>,
}

/// Connection ids are ours (counted from 0), not chosen by a peer: a multiply spreads them.
#[derive(Default)]
struct ConnHasher(u64);

impl Hasher for ConnHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// The addresses of a connection never opened (none: every connection is opened first).
const NO_ADDRS: (SocketAddr, SocketAddr) = (
    SocketAddr::V4(std::net::SocketAddrV4::new(
        std::net::Ipv4Addr::UNSPECIFIED,
        0,
    )),
    SocketAddr::V4(std::net::SocketAddrV4::new(
        std::net::Ipv4Addr::UNSPECIFIED,
        0,
    )),
);

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay")
            .field("thread", &self.worker.thread().name())
            .finish_non_exhaustive()
    }
}

impl Relay {
    /// The far thread, running `analysis`, whose flow tracker is on when `flow_far`;
    /// `analysis` back if the thread cannot start (then it runs here; once per run, so the
    /// large error is not worth a box).
    #[allow(clippy::result_large_err)]
    pub(crate) fn start(analysis: Analysis, flow_far: bool) -> Result<Relay, Analysis> {
        let (full_tx, full_rx) = sync_channel::<Batch>(BATCHES_AHEAD);
        let (empty_tx, empty_rx) = channel::<Batch>();
        // A fixed pool: the batch being filled, those on their way, and one being read. The
        // ledger's thread waits for an emptied one, so memory stays warm and bounded.
        for _ in 0..BATCHES_AHEAD {
            let _ = empty_tx.send(Batch::default());
        }
        // The analysis goes over once the thread runs, so that it is not lost if it cannot.
        let (start_tx, start_rx) = sync_channel::<Analysis>(1);
        let spawned = std::thread::Builder::new()
            .name("analysis".into())
            .spawn(move || {
                let far = Far {
                    analysis: start_rx.recv().ok()?,
                    heads: HashMap::default(),
                    addrs: HashMap::default(),
                    last: None,
                };
                Some(far.run(&full_rx, &empty_tx))
            });
        let worker = match spawned {
            Ok(w) => w,
            Err(_) => return Err(analysis),
        };
        if let Err(e) = start_tx.send(analysis) {
            return Err(e.0);
        }
        Ok(Relay {
            batch: RefCell::new(Batch::default()),
            flow_far,
            full: Some(full_tx),
            empty: empty_rx,
            worker,
        })
    }

    pub(crate) fn push(&mut self, ev: Ev) {
        let b = self.batch.get_mut();
        b.evs.push(ev);
        if b.full() {
            self.ship();
        }
    }

    /// The batch to the far thread, and an emptied one (or a new one) in its place.
    fn ship(&mut self) {
        let next = self.empty.recv().unwrap_or_default();
        let b = std::mem::replace(self.batch.get_mut(), next);
        if let Some(tx) = &self.full {
            if tx.send(b).is_err() {
                // The far thread ended early: it panicked, said at `finish`.
                self.full = None;
            }
        }
        self.batch.get_mut().clear();
    }

    /// Every DATA payload is kept: whether the analysis wants it is answered on its thread,
    /// which is told where the head was.
    pub(crate) fn data_head(&self, conn: ConnId, dir: Dir, stream: StreamId) -> bool {
        self.batch
            .borrow_mut()
            .evs
            .push(Ev::DataHead(conn, dir, stream));
        true
    }

    pub(crate) fn frame(&mut self, ev: &FrameEvent<'_>) {
        // The analysis reads the body of a DATA (its gRPC messages), PING, RST_STREAM and
        // GOAWAY frame, and its flow tracker, when on, of a SETTINGS and WINDOW_UPDATE; a
        // header block's frames are read as their fields ([`FrameEvent::headers`]) and facts,
        // a PRIORITY not at all: those bodies are not copied (decision 465).
        let body = match ev.head.kind {
            Kind::Headers | Kind::Continuation | Kind::PushPromise | Kind::Priority => false,
            Kind::Settings | Kind::WindowUpdate => self.flow_far,
            _ => true,
        };
        let b = self.batch.get_mut();
        let (frame, (start, len)) = match ev.frame {
            Some(f) if body => (f.pack(), b.keep(f.bytes())),
            _ => (Packed::NONE, (0, 0)),
        };
        let list = ev.headers.map_or(NO_LIST, |h| b.keep_list(h));
        let block = ev.block.unwrap_or_default();
        let flag = |on: bool, bit: u8| if on { bit } else { 0 };
        let (ping, ping_bits) = pack_ping(ev.ping);
        let (step_bits, code) = pack_step(ev.stream);
        let rec = Rec {
            ts: ev.ts,
            write: ev.write,
            block_list: match (ev.block, code) {
                (Some(_), _) => block.list,
                (None, Some(code)) => code,
                (None, None) => ping,
            },
            block_encoded: block.encoded,
            conn: ev.conn,
            // A batch is sent past BATCH_BYTES, and one frame is at most 16 MiB.
            start: start as u32,
            len: len as u32,
            list,
            head: ev.head,
            frame,
            dir: ev.dir,
            side: ev.side,
            class: ev.class,
            bits: flag(ev.block.is_some(), HAS_BLOCK)
                | flag(ev.late_start, LATE_START)
                | flag(ev.mid_stream, MID_STREAM)
                | flag(ev.spanned, SPANNED)
                | ping_bits
                | step_bits,
            padding: ev.padding as u16,
            opened: pack_opened(ev.opened),
        };
        self.push(Ev::Frame(rec));
    }

    pub(crate) fn upgraded_request(
        &mut self,
        conn: ConnId,
        dir: Dir,
        w: &Write,
        m: &[u8],
        t: &[u8],
    ) {
        let b = self.batch.get_mut();
        let (m, t) = (b.keep(m), b.keep(t));
        self.push(Ev::Upgraded(Box::new((conn, dir, *w, m, t))));
    }

    /// Every event sent and handled: the analysis back.
    pub(crate) fn finish(mut self) -> Analysis {
        if !self.batch.get_mut().evs.is_empty() {
            self.ship();
        }
        self.full = None;
        match self.worker.join() {
            Ok(Some(far)) => far.analysis,
            // The thread received the analysis before `start` returned: `None` cannot be.
            Ok(None) => unreachable!("the analysis thread ran without the analysis"),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

impl Far {
    fn run(mut self, full: &Receiver<Batch>, empty: &Sender<Batch>) -> Far {
        for mut batch in full.iter() {
            let evs = std::mem::take(&mut batch.evs);
            for ev in &evs {
                self.event(ev, &batch);
            }
            batch.evs = evs;
            batch.clear();
            // The ledger's thread may be gone (it finished): the batch is dropped.
            let _ = empty.send(batch);
        }
        self
    }

    fn event(&mut self, ev: &Ev, b: &Batch) {
        use h2ledger_core::Observer as _;
        let a = &mut self.analysis;
        match *ev {
            Ev::Origin(t) => a.set_origin(t),
            Ev::Open(ref meta) => {
                self.addrs
                    .insert(meta.id.0, (meta.first_src, meta.first_dst));
                if self.last.is_some_and(|(c, _)| c == meta.id.0) {
                    self.last = None;
                }
                a.open(meta);
            }
            Ev::Write(conn, dir, w) => a.write_in(conn, dir, &w),
            Ev::Frame(ref rec) => self.frame(rec, b),
            Ev::DataHead(conn, dir, stream) => {
                let wants = a.wants_data(conn, stream);
                self.heads.insert((conn.0, dir), wants);
            }
            Ev::Gap(conn, dir, ts, lost) => a.gap(conn, dir, ts, lost),
            Ev::Close(ref s) => {
                a.close(s);
                self.addrs.remove(&s.id.0);
                if self.last.is_some_and(|(c, _)| c == s.id.0) {
                    self.last = None;
                }
                for dir in [Dir::Fwd, Dir::Rev] {
                    self.heads.remove(&(s.id.0, dir));
                }
            }
            Ev::Upgraded(ref u) => {
                let (conn, dir, w, m, t) = **u;
                a.upgraded_request(conn, dir, &w, b.bytes(m), b.bytes(t));
            }
            Ev::Advance(now) => a.advance(now),
            Ev::Reach(t) => a.reach(t),
        }
    }

    fn frame(&mut self, r: &Rec, b: &Batch) {
        let bytes = b.bytes((r.start as usize, r.len as usize));
        let mut frame = r.frame.unpack(&r.head, bytes);
        let spanned = r.bits & SPANNED != 0;
        let head = if spanned {
            self.heads.remove(&(r.conn.0, r.dir))
        } else {
            None
        };
        if r.head.kind == Kind::Data && frame.is_some() {
            // Kept for us: delivered only if the analysis wants it now, and wanted it at the
            // head of a payload that spanned writes (as the ledger would have asked inline).
            let wants =
                h2ledger_core::Observer::wants_data(&self.analysis, r.conn, r.head.stream_id);
            if !(wants && head.unwrap_or(!spanned)) {
                frame = None;
            }
        }
        let (first_src, first_dst) = match self.last {
            Some((c, a)) if c == r.conn.0 => a,
            _ => {
                let a = self.addrs.get(&r.conn.0).copied().unwrap_or(NO_ADDRS);
                self.last = Some((r.conn.0, a));
                a
            }
        };
        let (src, dst) = match r.dir {
            Dir::Fwd => (first_src, first_dst),
            Dir::Rev => (first_dst, first_src),
        };
        let ev = FrameEvent {
            conn: r.conn,
            dir: r.dir,
            side: r.side,
            ts: r.ts,
            write: r.write,
            head: r.head,
            class: r.class,
            frame: frame.as_ref(),
            headers: (r.list != NO_LIST).then(|| &b.lists[r.list as usize]),
            block: (r.bits & HAS_BLOCK != 0).then_some(BlockSize {
                encoded: r.block_encoded,
                list: r.block_list,
            }),
            src,
            dst,
            late_start: r.bits & LATE_START != 0,
            mid_stream: r.bits & MID_STREAM != 0,
            spanned,
            padding: u32::from(r.padding),
            ping: if r.bits & HAS_BLOCK != 0 {
                PingFact::None
            } else {
                unpack_ping(r.class, r.block_list, r.bits)
            },
            stream: unpack_step(r.bits, r.block_list),
            opened: unpack_opened(r.opened),
        };
        self.analysis.frame_in(&ev, None);
    }
}

#[cfg(test)]
mod tests {
    use h2ledger_core::{Ledger, Observer, StreamStep};
    use h2ledger_tcp::{CloseKind, ConnId, ConnMeta, Dir, Sink, Write};

    use crate::{Obs, Wanted};

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len();
        let mut v = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        v.extend_from_slice(&stream.to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    /// A gRPC request on stream `s`: POST, content-type application/grpc, path /p.S/M.
    fn grpc_request(s: u32) -> Vec<u8> {
        let mut block = vec![0x83, 0x86, 0x44, 6];
        block.extend_from_slice(b"/p.S/M");
        block.extend_from_slice(&[0x5f, 16]);
        block.extend_from_slice(b"application/grpc");
        frame(1, 4, s, &block)
    }

    /// The analysis report and the ledger's warnings of `writes` (direction, bytes) on one
    /// connection, with the analysis here or on its own thread.
    fn run(threads: bool, writes: &[(Dir, Vec<u8>)]) -> String {
        run_with(
            Wanted {
                analysis: true,
                threads,
                ..Wanted::default()
            },
            writes,
        )
    }

    /// [`run`] of what `w` asks for.
    fn run_with(w: Wanted, writes: &[(Dir, Vec<u8>)]) -> String {
        let obs = Obs::new(&w);
        assert_eq!(obs.far.is_some(), w.threads);
        let mut l = Ledger::new(obs);
        l.open(&ConnMeta {
            id: ConnId(0),
            first_src: "127.0.0.1:50000".parse().unwrap(),
            first_dst: "127.0.0.1:8080".parse().unwrap(),
            syn_sender: Some(Dir::Fwd),
            start: 0,
            resumes: None,
        });
        let mut n = [0u64; 2];
        for (i, (dir, bytes)) in writes.iter().enumerate() {
            let k = usize::from(*dir == Dir::Rev);
            let w = Write {
                index: n[k],
                ts: 1_000_000 * (i as i64 + 1),
                len: bytes.len() as u32,
            };
            n[k] += 1;
            l.write(ConnId(0), *dir, &w);
            l.data(ConnId(0), *dir, &w, bytes);
        }
        l.close(ConnId(0), 1_000_000_000, CloseKind::Fin(Dir::Fwd));
        l.observer.gather();
        let conns = l.connections();
        let a = l.observer.analysis.as_ref().expect("the analysis");
        let report = serde_json::to_string(&a.report(&conns, None)).unwrap();
        format!("{report}\n{:?}", l.warnings.messages)
    }

    /// A DATA payload that spans writes reaches the analysis only if it was wanted at its
    /// head too: here the response's DATA starts before the request that makes the stream
    /// gRPC is seen (capture order), so inline it is not kept, and the far thread must not
    /// deliver the copy it got (decision 261). Then the ordinary case, kept at both ends.
    #[test]
    fn the_far_analysis_sees_what_the_near_one_sees() {
        let mut client = h2_frame_parser::PREFACE.to_vec();
        client.extend(frame(4, 0, 0, &[]));
        let server = frame(4, 0, 0, &[]);
        // One gRPC message of 5 bytes in a 10-byte DATA payload, its head and 3 bytes first.
        let message = [0, 0, 0, 0, 5, 1, 2, 3, 4, 5];
        let data = frame(0, 0, 1, &message);
        let (head, tail) = data.split_at(9 + 3);
        let mut response_headers = frame(1, 4, 1, &[0x88]);
        response_headers.extend_from_slice(head);
        let early = vec![
            (Dir::Fwd, client.clone()),
            (Dir::Rev, server.clone()),
            (Dir::Rev, response_headers.clone()),
            (Dir::Fwd, grpc_request(1)),
            (Dir::Rev, tail.to_vec()),
        ];
        let mut request = grpc_request(1);
        request.extend(frame(0, 1, 1, &[0, 0, 0, 0, 1, 9]));
        let ordinary = vec![
            (Dir::Fwd, client),
            (Dir::Rev, server),
            (Dir::Fwd, request),
            (Dir::Rev, response_headers),
            (Dir::Rev, tail.to_vec()),
        ];
        for writes in [early, ordinary] {
            let near = run(false, &writes);
            assert_eq!(run(true, &writes), near);
        }
    }

    /// Many connections and frames: the far thread gets every event in order, in many
    /// batches, and the same report comes back.
    #[test]
    fn many_batches_give_the_same_report() {
        let mut writes = Vec::new();
        let mut client = h2_frame_parser::PREFACE.to_vec();
        client.extend(frame(4, 0, 0, &[]));
        writes.push((Dir::Fwd, client));
        writes.push((Dir::Rev, frame(4, 0, 0, &[])));
        for i in 0..3_000u32 {
            let s = 2 * i + 1;
            let mut req = grpc_request(s);
            req.extend(frame(0, 1, s, &[0, 0, 0, 0, 2, 8, 1]));
            writes.push((Dir::Fwd, req));
            let mut resp = frame(1, 4, s, &[0x88]);
            resp.extend(frame(0, 0, s, &[0, 0, 0, 0, 1, 7]));
            let trailer = [&[0x00, 11][..], b"grpc-status", &[1], b"0"].concat();
            resp.extend(frame(1, 5, s, &trailer));
            writes.push((Dir::Rev, resp));
        }
        let near = run(false, &writes);
        assert!(near.contains("\"calls\""), "{near}");
        assert_eq!(run(true, &writes), near);
    }

    /// With the analysis far, its flow-control report comes from the findings' tracker, the
    /// run's one (decision 406): a response that uses up the client's 65,535-byte windows
    /// stalls once, and the client's WINDOW_UPDATEs end it; the same report as inline.
    #[test]
    fn the_far_analysis_takes_the_one_flow_tracker() {
        let mut client = h2_frame_parser::PREFACE.to_vec();
        client.extend(frame(4, 0, 0, &[]));
        client.extend(grpc_request(1));
        let mut server = frame(4, 0, 0, &[]);
        server.extend(frame(1, 4, 1, &[0x88]));
        for len in [16_384usize, 16_384, 16_384, 16_383] {
            server.extend(frame(0, 0, 1, &vec![0; len]));
        }
        let mut update = frame(8, 0, 0, &1000u32.to_be_bytes());
        update.extend(frame(8, 0, 1, &1000u32.to_be_bytes()));
        let mut end = frame(0, 1, 1, &[0; 10]);
        end.extend(frame(1, 5, 1, &[0x00, 11]));
        let writes = vec![
            (Dir::Fwd, client),
            (Dir::Rev, server),
            (Dir::Fwd, update),
            (Dir::Rev, end),
        ];
        let near = run(false, &writes);
        let stalls = "\"server\":{\"by_limit\":{\"both\":1";
        assert!(near.contains(stalls), "{near}");
        assert_eq!(run(true, &writes), near);
        // Without findings the far analysis keeps its own tracker, which reads the SETTINGS
        // and WINDOW_UPDATE bodies the relay then sends (decision 465).
        let alone = |threads| Wanted {
            analysis: true,
            threads,
            findings: None,
            ..Wanted::default()
        };
        let near = run_with(alone(false), &writes);
        assert!(near.contains(stalls), "{near}");
        assert_eq!(run_with(alone(true), &writes), near);
    }

    #[test]
    fn an_unused_relay_ends_cleanly() {
        let mut obs = Obs::new(&Wanted {
            analysis: true,
            threads: true,
            ..Wanted::default()
        });
        // No header block with a gRPC content-type yet: no DATA payload is sent (decision 408).
        assert!(!obs.wants_data(ConnId(0), h2ledger_core::StreamId(1)));
        obs.gather();
        assert!(obs.analysis.is_some());
    }

    #[test]
    fn a_step_crosses_to_the_far_thread_whole() {
        use h2_frame_parser::ErrorCode;
        let all = [
            StreamStep::None,
            StreamStep::Opened,
            StreamStep::HalfClosed,
            StreamStep::Ended,
            StreamStep::Reset { code: None },
            StreamStep::Reset {
                code: Some(ErrorCode::CANCEL),
            },
            StreamStep::Reset {
                code: Some(ErrorCode(0xdead_beef)),
            },
            StreamStep::Refused,
            StreamStep::Untracked,
        ];
        for s in all {
            let (bits, code) = super::pack_step(s);
            // The other flags keep their bits.
            assert_eq!(bits & (super::PING_ACKED * 2 - 1), 0, "{s:?}");
            let back = super::unpack_step(bits | super::HAS_BLOCK, code.unwrap_or(7));
            assert_eq!(back, s);
        }
    }

    /// A header block's opener (decision 454) crosses whole: every class, step an opening
    /// HEADERS makes, and `ends_half`.
    #[test]
    fn a_block_opener_crosses_to_the_far_thread_whole() {
        use h2ledger_core::ledger::BlockOpen;
        use h2ledger_core::FrameClass;
        assert_eq!(super::unpack_opened(super::pack_opened(None)), None);
        for class in [
            FrameClass::Headers,
            FrameClass::Trailers,
            FrameClass::PushPromise,
        ] {
            for stream in [
                StreamStep::None,
                StreamStep::Opened,
                StreamStep::HalfClosed,
                StreamStep::Ended,
                StreamStep::Untracked,
            ] {
                for ends_half in [false, true] {
                    let o = Some(BlockOpen {
                        class,
                        stream,
                        ends_half,
                    });
                    assert_eq!(super::unpack_opened(super::pack_opened(o)), o);
                }
            }
        }
    }
}
