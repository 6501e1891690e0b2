//! The ledger: turns reassembled TCP byte streams into HTTP/2 frames and hands each frame,
//! classified and attributed to a side and a write, to an [`Observer`].
//!
//! ## A direction's phase (decision 437)
//!
//! Each direction of a connection is in one `Phase`, a state with its data in its variants
//! (after hyperium/h2's `streams/state.rs`), changed only by `Phase`'s methods:
//!
//! ```text
//!  Unframed(origin, Detect) ---------- first proven boundary ---------> Framed(began, Frames)
//!   | origin FirstByte --gap--> AfterGap     (began decided here)          |        ^
//!   |                                                 gap outside a frame, |        | boundary
//!   | not HTTP/2 (decision 282),                          impossible head  v        | again
//!   | no boundary in 1 MiB                                        Framed(began, Resync)
//!   v                                                                      | no boundary in 1 MiB
//!  Unframed(origin, Dead)                                         Framed(began, Dead)
//! ```
//!
//! `origin` says what of the direction is held before its first boundary: `FirstByte` (the
//! SYN was seen and nothing lost: the stricter proofs of decision 282 apply), `AfterGap` (a
//! gap took bytes before the boundary), `Joined` (met mid-connection). `began` is decided
//! once, at the first boundary, and kept through resyncs: `OnTime` (the preface, or the
//! first byte held from the start), `Late` (after an HTTP/1.1 Upgrade or CONNECT, or bytes
//! before the preface: `FrameEvent::late_start`), `MidStream` (anything else: the HPACK
//! decoder starts mid-stream, `FrameEvent::mid_stream`). A direction is "mid-stream" when
//! `Joined` and not yet framed or when its frames began `MidStream`. A folded connection's
//! return (`DirFold`) starts as `Unframed(FirstByte, Detect)`, `Framed(OnTime or Late,
//! Frames)`, `Unframed(Joined, Dead)` or `Unframed(Joined, Detect)`.
//!
//! Beside it, a direction holds at most one header block awaiting its CONTINUATIONs
//! (`Option<OpenBlock>`: its stream, whether a PUSH_PROMISE began it, whether it outgrew
//! `MAX_HEADER_BLOCK`, what its opening frame was: `FrameEvent::opened` on the frame that
//! ends it, decision 454), and the set of warnings it says only once (`Said`: `detect-cap`,
//! `settings-cap`, `hpack-cap`; decision 438).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::net::SocketAddr;

use h2_frame_parser::hpack::Decoder;
use h2_frame_parser::{
    check_data, raw_frame, Frame, FrameError, Head, Kind, RawFrame, SettingId, StreamId, HEAD_LEN,
    PREFACE,
};
use h2ledger_tcp::{CloseKind, ConnId, ConnMeta, Dir, Dirs, Nanos, Sink, Write};

use crate::detect::{Found, Scanner};
use crate::headers::HeaderList;
use crate::model::{FrameClass, PingBook, PingFact, Side, StreamStep};

/// Bytes kept while looking for the first frame boundary of a direction before giving up on it.
const MAX_DETECT_BYTES: usize = 1 << 20;
/// The largest header block (HEADERS or PUSH_PROMISE plus CONTINUATIONs) that is decoded.
const MAX_HEADER_BLOCK: usize = 1 << 20;
/// The largest HPACK dynamic table kept per direction, whatever SETTINGS_HEADER_TABLE_SIZE
/// allowed (browsers use 65 536, most servers 4 096). Past it, see docs/ledger.md ("HPACK").
const MAX_HPACK_TABLE: u32 = 64 * 1024;
/// GOAWAY debug data kept per frame.
const MAX_GOAWAY_DEBUG: u32 = 1024;
/// Open streams followed per connection (their life, [`StreamStep`], and HEADERS vs TRAILERS)
/// before new ones are no longer followed.
pub const MAX_STREAMS: usize = crate::model::MAX_OPEN_STREAMS;
/// Warnings kept as text; later ones are only counted.
pub const MAX_WARNINGS: usize = 200;
/// Default SETTINGS_MAX_FRAME_SIZE (RFC 9113 §6.5.2).
const DEFAULT_MAX_FRAME: u32 = 16_384;
/// SETTINGS frames waiting for their ACK, per direction. Beyond that, a new one is merged
/// into the last one waiting (each value the larger of the two, so no legal frame or table
/// update is refused) and `settings-cap` is reported.
pub const MAX_PENDING_SETTINGS: usize = 64;

/// [`FrameEvent::write`] of a frame whose end was lost in a capture gap: no write carried it.
pub const NO_WRITE: u64 = u64::MAX;

mod block;
mod fold;
mod framing;
mod life;
mod observer;
mod sink;
mod start;
mod summary;

use block::*;
use life::{Blocks, StreamLife};
pub use observer::{BlockOpen, BlockSize, FrameEvent, HeaderNeed, Observer};
pub use summary::{ClientBy, ConnSummary, Prelude, Warnings};

/// Where a direction stands in finding and following its frames, and how it got there: one
/// state, changed only by [`Phase`]'s methods (the module doc draws the machine). Before its
/// first proven boundary a direction is [`Phase::Unframed`] (held from its [`Origin`]); after,
/// [`Phase::Framed`] for good (its frames [`Began`] one way, decided then).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// No frame boundary proven yet.
    Unframed(Origin, Seek),
    /// A boundary was proven once.
    Framed(Began, Framing),
}

/// What of a direction is held, before its first frame boundary is proven.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    /// From its first byte: the connection's start was seen and nothing of it was lost.
    FirstByte,
    /// From the connection's start, but a gap took bytes before the first boundary.
    AfterGap,
    /// From somewhere inside: the capture (or a folded connection's return) joined it
    /// mid-connection.
    Joined,
}

/// An unframed direction's search for its first boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seek {
    /// Looking for the first frame boundary (or the preface).
    Detect,
    /// Not HTTP/2 (its start was no HTTP/2 stream's, or no boundary within
    /// [`MAX_DETECT_BYTES`]): nothing more of it is looked at.
    Dead,
}

/// How a direction's frames began: decided once, when its first boundary is proven.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Began {
    /// Where HTTP/2 itself starts: the preface (or the stream's first byte) with nothing
    /// before it.
    OnTime,
    /// After bytes that were not HTTP/2 frames: an HTTP/1.1 Upgrade or CONNECT, or bytes
    /// before the preface ([`FrameEvent::late_start`]).
    Late,
    /// Mid-stream: the first frame proven is not where the stream began (HPACK starts
    /// unknown; [`FrameEvent::mid_stream`]). A late start too.
    MidStream,
}

/// A framed direction's framing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    /// Framed: `head_have` bytes of the next head, or inside `cur`'s payload.
    Frames,
    /// After a gap (or an impossible head) that left us outside any known frame: looking for
    /// a boundary again.
    Resync,
    /// No boundary again within [`MAX_DETECT_BYTES`]: nothing more of it is looked at.
    Dead,
}

/// What [`Phase::frames`] learns where a direction's first boundary is proven.
struct Boundary {
    /// The client preface ends there.
    preface: bool,
    /// An HTTP/1.1 exchange (an Upgrade answered 101, or a CONNECT) came before it.
    http1: bool,
    /// Bytes skipped before the boundary (the preface counted).
    skip: usize,
    /// Bytes before it that were not HTTP/2 (the preface not counted).
    before: usize,
}

impl Phase {
    /// A new direction: held from its first byte, or joined mid-connection.
    fn new(at_start: bool) -> Phase {
        let origin = if at_start {
            Origin::FirstByte
        } else {
            Origin::Joined
        };
        Phase::Unframed(origin, Seek::Detect)
    }

    /// Held from its first byte, nothing proven yet.
    fn at_start(self) -> bool {
        self == Phase::Unframed(Origin::FirstByte, Seek::Detect)
    }

    /// Framed now: bytes are read as frames.
    fn framed(self) -> bool {
        matches!(self, Phase::Framed(_, Framing::Frames))
    }

    /// Looking for a boundary (the first one, or again after losing one).
    fn detecting(self) -> bool {
        matches!(
            self,
            Phase::Unframed(_, Seek::Detect) | Phase::Framed(_, Framing::Resync)
        )
    }

    /// Looking for a boundary again after losing one.
    fn resyncing(self) -> bool {
        matches!(self, Phase::Framed(_, Framing::Resync))
    }

    /// Met mid-stream: joined mid-connection and not yet framed, or framed from mid-stream.
    fn mid_stream(self) -> bool {
        matches!(
            self,
            Phase::Unframed(Origin::Joined, _) | Phase::Framed(Began::MidStream, _)
        )
    }

    /// Framed once, and its frames began mid-stream.
    fn began_mid_stream(self) -> bool {
        matches!(self, Phase::Framed(Began::MidStream, _))
    }

    /// Framed once, and its frames began late (mid-stream included).
    fn began_late(self) -> bool {
        matches!(self, Phase::Framed(Began::Late | Began::MidStream, _))
    }

    /// A gap before the first boundary: what is held no longer starts at the first byte.
    fn gap(&mut self) {
        if let Phase::Unframed(o @ Origin::FirstByte, Seek::Detect) = self {
            *o = Origin::AfterGap;
        }
    }

    /// A boundary is proven: framed. The first one decides how the frames began; returns
    /// whether that was now and mid-stream (HPACK then starts unknown).
    fn frames(&mut self, at: Boundary) -> bool {
        let (began, first) = match *self {
            Phase::Unframed(origin, _) => {
                // Mid-stream unless the frames start exactly where the stream did. The
                // preface and an upgrade's 101 are where HTTP/2 itself starts.
                let b =
                    if !(at.preface || at.http1 || (origin == Origin::FirstByte && at.skip == 0)) {
                        Began::MidStream
                    } else if at.http1 || at.before > 0 {
                        Began::Late
                    } else {
                        Began::OnTime
                    };
                (b, true)
            }
            Phase::Framed(b, _) => (b, false),
        };
        *self = Phase::Framed(began, Framing::Frames);
        first && began == Began::MidStream
    }

    /// Framing is lost: look for a boundary again.
    fn resync(&mut self) {
        if let Phase::Framed(_, f) = self {
            *f = Framing::Resync;
        }
    }

    /// Not HTTP/2: nothing more of it is looked at.
    fn die(&mut self) {
        match self {
            Phase::Unframed(_, s) => *s = Seek::Dead,
            Phase::Framed(_, f) => *f = Framing::Dead,
        }
    }
}

/// A header block (HEADERS or PUSH_PROMISE without END_HEADERS) awaiting its CONTINUATIONs;
/// its fragments so far are in [`DirState::block`].
#[derive(Clone, Copy, Debug)]
struct OpenBlock {
    stream: StreamId,
    /// Past [`MAX_HEADER_BLOCK`]: its fragments are no longer kept and it is not decoded.
    overflow: bool,
    /// Its opening frame could not be read (said then, HPACK state reset): its CONTINUATIONs
    /// are still its own, and the last one still ends it, undecoded (decision 454).
    lost: bool,
    /// What its opening frame was ([`BlockOpen`]), told on the frame that ends the block; a
    /// PUSH_PROMISE (class `PushPromise`) carries a request from the server, so its block says
    /// nothing of who is the client.
    opener: BlockOpen,
}

/// A cap hit on a direction: its warning is said at most once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Cap {
    /// `detect-cap`: the boundary scanner's candidates overflowed.
    Detect = 1,
    /// `settings-cap`: more than [`MAX_PENDING_SETTINGS`] SETTINGS awaiting their ACK.
    Settings = 2,
    /// `hpack-cap`: the HPACK table hit [`MAX_HPACK_TABLE`] (also latched when a capped
    /// decoder is dropped, so a later one never reports it).
    Hpack = 4,
}

/// The set of [`Cap`] warnings already said.
#[derive(Clone, Copy, Debug, Default)]
struct Said(u8);

impl Said {
    /// Marks `w` said; true if it was not yet.
    fn first(&mut self, w: Cap) -> bool {
        let new = self.0 & w as u8 == 0;
        self.0 |= w as u8;
        new
    }
}

struct Payload {
    head: Head,
    remaining: u32,
    keep: u32,
    lossy: bool,
    /// DATA whose payload spans writes and was not kept for its padding: the observer was
    /// asked at its head whether to keep it ([`Observer::data_head`]; [`FrameEvent::spanned`]).
    spanned: bool,
}

struct DirState {
    phase: Phase,
    /// Made at the first bytes looked at for a frame boundary, dropped once framed: 152
    /// bytes that a framed direction (most of them) does not hold (decision 458).
    scan: Option<Box<Scanner>>,
    pending: Vec<u8>,
    pending_writes: Vec<(usize, Write)>,
    head_buf: [u8; HEAD_LEN],
    head_have: usize,
    cur: Option<Payload>,
    carry: Vec<u8>,
    /// The fragments of `open` so far (kept, cleared, between blocks).
    block: Vec<u8>,
    open: Option<OpenBlock>,
    hpack: Decoder,
    headers: HeaderList,
    summary: BlockSummary,
    /// The last block decoded, when decoding it again would change nothing (`headers` and
    /// `summary` are its output).
    memo: BlockMemo,
    settings_sent: VecDeque<(Option<u32>, Option<u32>)>,
    max_frame: u32,
    said: Said,
    /// The write whose bytes came last, and how many of them: a gap that makes up the rest
    /// of it is that write's snaplen-cut tail (its bytes were carried by that write).
    tail_of: Option<(Write, u64)>,
    /// This direction's PINGs awaiting an ACK.
    pings: PingBook,
}

impl DirState {
    fn new(at_start: bool) -> Self {
        DirState {
            phase: Phase::new(at_start),
            scan: None,
            pending: Vec::new(),
            pending_writes: Vec::new(),
            head_buf: [0; HEAD_LEN],
            head_have: 0,
            cur: None,
            carry: Vec::new(),
            block: Vec::new(),
            open: None,
            hpack: bounded_decoder(),
            headers: HeaderList::default(),
            summary: BlockSummary::default(),
            memo: BlockMemo::default(),
            settings_sent: VecDeque::new(),
            max_frame: DEFAULT_MAX_FRAME,
            said: Said::default(),
            tail_of: None,
            pings: PingBook::default(),
        }
    }

    /// The frame-size bound used to prove boundaries: what SETTINGS allowed, or, on a stream
    /// whose SETTINGS we never saw, the default (larger frames then break the chain and the
    /// next boundary is used).
    /// The boundary scanner, made when first needed.
    fn scanner(&mut self) -> &mut Scanner {
        self.scan.get_or_insert_with(Box::default)
    }

    fn scan_limit(&self) -> u32 {
        self.max_frame.max(DEFAULT_MAX_FRAME)
    }

    /// Not HTTP/2: nothing more of this direction is looked at, and its buffers go.
    fn die(&mut self) {
        self.phase.die();
        self.pending = Vec::new();
        self.pending_writes = Vec::new();
        self.scan = None;
    }

    /// Framing is lost: look for a proven frame boundary again; HPACK state is gone too.
    fn lose_framing(&mut self) {
        self.cur = None;
        self.head_have = 0;
        self.phase.resync();
        self.scan = None;
        self.pending.clear();
        self.pending_writes.clear();
        self.lose_hpack_sync();
    }

    /// A new HPACK decoder: what was remembered of the old one's last block goes.
    fn set_decoder(&mut self, d: Decoder) {
        self.hpack = d;
        self.memo.forget();
    }

    fn lose_hpack_sync(&mut self) {
        // The SETTINGS we saw still bound the peer; the table stays capped either way.
        let limit = (!self.hpack.is_mid_stream()).then(|| self.hpack.max_size_limit());
        let was_capped = self.hpack.capped();
        self.set_decoder(mid_stream_decoder());
        if let Some(l) = limit {
            self.hpack.set_max_size_limit(l.max(MAX_HPACK_TABLE));
        }
        if was_capped {
            self.said.first(Cap::Hpack);
        }
        self.open = None;
        self.block.clear();
    }
}

fn bounded_decoder() -> Decoder {
    let mut d = Decoder::new();
    d.set_cap(MAX_HPACK_TABLE);
    d
}

fn mid_stream_decoder() -> Decoder {
    let mut d = Decoder::new_mid_stream();
    // We never saw the SETTINGS that bound this table: accept the size updates a real peer
    // sends rather than fail on them; the table itself never exceeds MAX_HPACK_TABLE.
    d.set_max_size_limit(MAX_HPACK_TABLE);
    d.set_cap(MAX_HPACK_TABLE);
    d
}

struct Conn {
    meta: ConnMeta,
    /// The evicted connection this one goes on with, after its state was folded, and whether
    /// that one was counted as HTTP/2 ([`ConnSummary::continues`]).
    continues: Option<(ConnId, bool)>,
    /// The time of the last packet with new bytes, for a connection evicted and never back.
    last_ts: Option<Nanos>,
    http2: bool,
    client: Option<(Dir, ClientBy)>,
    dirs: Dirs<DirState>,
    streams: StreamMap,
    streams_full: bool,
    /// Header blocks on streams not tracked because of [`MAX_STREAMS`].
    streams_untracked: u64,
    streams_reported: bool,
    prelude: Option<Prelude>,
    /// A `101 Switching Protocols` was seen; its request was handed to the observer.
    upgrade_seen: bool,
    /// The upgraded request, until the 101 is seen: its direction, method, target, write.
    /// Boxed: 80 bytes that a connection without an Upgrade (nearly all) need not hold
    /// (decision 458).
    upgrade_req: Option<Box<UpgradeReq>>,
    upgraded_call: bool,
    /// HEADERS on odd streams seen from each direction while the client was unknown.
    odd_streams: Dirs<u64>,
    /// The last streams reset (RST_STREAM) and their header blocks, at most
    /// [`MAX_RECENT_RESETS`]: a HEADERS crossing the RST is still the stream's trailers.
    recent_resets: VecDeque<(u32, Blocks)>,
    /// The highest stream id opened here, of each parity (even, odd): a header block on a
    /// lower id the table does not hold is on a stream closed and forgotten.
    top_opened: [u32; 2],
    /// When the reassembler closed it.
    ended: Option<Nanos>,
}

/// An upgraded request, until its 101: its direction, method, target and write.
type UpgradeReq = (Dir, Vec<u8>, Vec<u8>, Write);

/// Reset streams remembered per connection (see [`Conn`]'s `recent_resets`).
pub(crate) const MAX_RECENT_RESETS: usize = 16;

/// The open streams' lives ([`StreamLife`]: which halves are closed, which directions sent a
/// header block), by stream id: the table of the flow tracker and the findings, whose lookup
/// is cheaper than `std`'s map (seeded the same way, decisions 246, 262; never iterated).
type StreamMap = crate::table::IdTable<StreamLife>;

/// Stream ids are 31-bit integers: one multiplication spreads them, and taking the product's
/// high half as the low bits (which pick the bucket) makes every bit of the id count. For ids
/// we give out (connection ids), whose maps are iterated: the fixed multiplier keeps their
/// order the same from run to run. Ids the wire chooses go to an [`IdTable`](crate::table::IdTable),
/// seeded per process, instead.
#[derive(Default, Clone, Copy)]
pub(crate) struct StreamIdHasher(u64);

impl Hasher for StreamIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u32(u32::from(b) ^ (self.0 as u32));
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = (u64::from(n) ^ self.0)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(32);
    }
}

impl Conn {
    fn summary(&self) -> ConnSummary {
        let (client_dir, client_by) = self.client();
        let (client, server) = self.addrs(client_dir);
        ConnSummary {
            id: self.meta.id,
            http2: self.http2,
            client,
            server,
            client_dir,
            client_by,
            mid_stream: self.dirs.iter().any(|(_, d)| d.phase.began_mid_stream()),
            start: self.meta.start,
            prelude: self.prelude,
            upgraded_call: self.upgraded_call,
            continues: self.continues.map(|c| c.0),
            continued_counted: self.continues.is_some_and(|c| c.1),
            end: self.ended,
        }
    }

    fn addrs(&self, d: Dir) -> (SocketAddr, SocketAddr) {
        match d {
            Dir::Fwd => (self.meta.first_src, self.meta.first_dst),
            Dir::Rev => (self.meta.first_dst, self.meta.first_src),
        }
    }

    fn client(&self) -> (Dir, ClientBy) {
        if let Some(c) = self.client {
            return c;
        }
        if self.odd_streams.fwd != self.odd_streams.rev {
            let d = if self.odd_streams.fwd > self.odd_streams.rev {
                Dir::Fwd
            } else {
                Dir::Rev
            };
            return (d, ClientBy::OddStreams);
        }
        // The client's port is the ephemeral one: the higher, usually.
        let d = if self.meta.first_dst.port() > self.meta.first_src.port() {
            Dir::Rev
        } else {
            Dir::Fwd
        };
        (d, ClientBy::EphemeralPort)
    }

    #[inline]
    fn side(&self, d: Dir) -> Side {
        if self.client().0 == d {
            Side::Client
        } else {
            Side::Server
        }
    }

    fn set_client(&mut self, d: Dir, by: ClientBy) {
        if self.client.is_none() {
            self.client = Some((d, by));
        }
    }
}

/// The ledger over every connection of a capture. Feed it through [`Sink`] (usually from an
/// [`h2ledger_tcp::Reassembler`]); read the summary with [`Ledger::connections`].
pub struct Ledger<O> {
    conns: Conns,
    /// Open connection ids that continue an evicted connection, to the original's id.
    aliases: HashMap<u32, ConnId, BuildHasherDefault<StreamIdHasher>>,
    /// Evicted connections whose state is kept in case they come back, by the id the
    /// reassembler evicted, to the original's id (at most [`MAX_EVICTED_KEPT`]).
    kept: FifoMap<ConnId>,
    /// Evicted connections whose state was folded for good, by the id the reassembler
    /// evicted: what a return needs to go on as the same connection (at most
    /// [`h2ledger_tcp::DEFAULT_MAX_EVICTED`], as many as the reassembler remembers).
    folded: fold::FoldedMap,
    /// The observer every event goes to.
    pub observer: O,
    /// The run's warnings (the ledger's, and those the caller adds).
    pub warnings: Warnings,
    /// The first packet of every TCP connection, by id (at most [`MAX_NUMBERED`]; `None`
    /// beyond): what a merge of several runs numbers connections by ([`Ledger::unlisted_first`]).
    starts: Option<Vec<Nanos>>,
}

/// TCP connections (HTTP/2 or not) whose first packet the ledger keeps, so that a merge of
/// several runs (`replay -j N`, `replay A B`, `merge`) numbers connections as one run of them
/// all would, other protocols' connections included (decision 447): 8 bytes each, 128 KiB
/// at most. A run of more says `unlisted_first: null`, and a merge numbers its connections
/// by the listed ones only (a lower bound; docs/scale.md).
pub const MAX_NUMBERED: usize = 16_384;

/// Evicted connections whose state is kept, in case the reassembler sees them again and they
/// resume; beyond, the oldest is closed for good (folded into the totals, `evicted-folded`)
/// and a return of it goes on as a continuation ([`Folded`]).
const MAX_EVICTED_KEPT: usize = 512;

/// What the ledger remembers of an evicted connection whose state it folded, for its return:
/// whether it was counted as HTTP/2, its client, and where each direction stood.
#[derive(Clone, Copy, Debug)]
struct Folded {
    root: ConnId,
    http2: bool,
    client: Option<(Dir, ClientBy)>,
    dirs: [DirFold; 2],
}

/// Where a folded direction stood: what its return can go on from exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DirFold {
    /// Held from its start and nothing proven yet (most often: nothing sent): it starts
    /// afresh, as if never evicted, still held to the proofs of a stream's start (decision
    /// 282), so that what another protocol sends after its return is not taken for HTTP/2 met
    /// mid-stream. Bytes it had sent and that were still undecided are dropped.
    Fresh,
    /// Framed, between two frames, no header block pending, at most one SETTINGS awaiting its
    /// ACK (kept) and an empty HPACK table of the default size: nothing of its state is lost,
    /// it goes on framed.
    Framed {
        max_frame: u32,
        /// [`Began::OnTime`] or [`Began::Late`].
        began: Began,
        settings: Option<(Option<u32>, Option<u32>)>,
    },
    /// Given up as not HTTP/2 (it started as no HTTP/2 stream does, or showed no boundary):
    /// its return stays so.
    Dead,
    /// Anything else: its return is joined mid-stream (framing proven again, HPACK lost).
    Lost,
}

impl DirFold {
    fn of(ds: &DirState) -> DirFold {
        match ds.phase {
            Phase::Unframed(Origin::FirstByte, Seek::Detect) => DirFold::Fresh,
            Phase::Framed(began @ (Began::OnTime | Began::Late), Framing::Frames)
                if ds.head_have == 0
                    && ds.cur.is_none()
                    && ds.open.is_none()
                    && ds.settings_sent.len() <= 1
                    && !ds.hpack.is_mid_stream()
                    && !ds.hpack.capped()
                    && ds.hpack.table_len() == 0
                    && ds.hpack.max_size() == DEFAULT_HPACK_TABLE
                    && ds.hpack.max_size_limit() as usize == DEFAULT_HPACK_TABLE =>
            {
                DirFold::Framed {
                    max_frame: ds.max_frame,
                    began,
                    settings: ds.settings_sent.front().copied(),
                }
            }
            Phase::Unframed(_, Seek::Dead) | Phase::Framed(_, Framing::Dead) => DirFold::Dead,
            _ => DirFold::Lost,
        }
    }

    /// The state a return starts this direction with.
    fn state(self) -> DirState {
        match self {
            DirFold::Fresh => DirState::new(true),
            DirFold::Lost => DirState::new(false),
            DirFold::Dead => {
                let mut ds = DirState::new(false);
                ds.die();
                ds
            }
            DirFold::Framed {
                max_frame,
                began,
                settings,
            } => {
                let mut ds = DirState::new(true);
                ds.phase = Phase::Framed(began, Framing::Frames);
                ds.max_frame = max_frame;
                ds.settings_sent.extend(settings);
                ds
            }
        }
    }
}

/// SETTINGS_HEADER_TABLE_SIZE's initial value (RFC 9113 §6.5.2).
const DEFAULT_HPACK_TABLE: usize = 4096;

/// A map with a cap: inserting beyond it forgets the oldest entry (returned to the caller).
/// The order keeps stale entries of keys removed since; they are skipped, and dropped when
/// they outnumber the live ones.
struct FifoMap<V> {
    map: HashMap<u32, V, BuildHasherDefault<StreamIdHasher>>,
    order: VecDeque<u32>,
    cap: usize,
}

impl<V> FifoMap<V> {
    fn new(cap: usize) -> Self {
        FifoMap {
            map: HashMap::default(),
            order: VecDeque::new(),
            cap: cap.max(1),
        }
    }

    /// Inserts `k`; returns the oldest entry when the map was full.
    fn insert(&mut self, k: u32, v: V) -> Option<(u32, V)> {
        let mut out = None;
        if !self.map.contains_key(&k) && self.map.len() >= self.cap {
            while let Some(old) = self.order.pop_front() {
                if let Some(v) = self.map.remove(&old) {
                    out = Some((old, v));
                    break;
                }
            }
        }
        self.map.insert(k, v);
        if h2ledger_tcp::stale_to_drop(self.order.len(), self.order.capacity(), self.map.len()) {
            let map = &self.map;
            self.order.retain(|k| map.contains_key(k));
        }
        self.order.push_back(k);
        out
    }

    fn remove(&mut self, k: u32) -> Option<V> {
        self.map.remove(&k)
    }

    fn drain(&mut self) -> Vec<(u32, V)> {
        self.order.clear();
        self.map.drain().collect()
    }
}

/// The open connections, by [`ConnId`]. A connection is freed when it closes (its observers
/// fold it into their totals), so memory follows what is open, not what has passed. Boxed: a
/// map of 900-byte values would reserve that much for every empty bucket too.
#[derive(Default)]
struct Conns(HashMap<u32, Box<Conn>, BuildHasherDefault<StreamIdHasher>>);

impl Conns {
    fn get(&self, i: usize) -> Option<&Conn> {
        self.0.get(&(i as u32)).map(|c| &**c)
    }
    fn get_mut(&mut self, i: usize) -> Option<&mut Conn> {
        self.0.get_mut(&(i as u32)).map(|c| &mut **c)
    }
}

impl std::ops::Index<usize> for Conns {
    type Output = Conn;
    fn index(&self, i: usize) -> &Conn {
        self.get(i).expect("open connection")
    }
}

impl std::ops::IndexMut<usize> for Conns {
    fn index_mut(&mut self, i: usize) -> &mut Conn {
        self.get_mut(i).expect("open connection")
    }
}

impl<O: Observer> Ledger<O> {
    /// A ledger with no connection yet, handing every event to `observer`.
    pub fn new(observer: O) -> Self {
        Ledger {
            conns: Conns::default(),
            aliases: HashMap::default(),
            kept: FifoMap::new(MAX_EVICTED_KEPT),
            folded: fold::FoldedMap::new(h2ledger_tcp::DEFAULT_MAX_EVICTED),
            observer,
            warnings: Warnings::default(),
            starts: Some(Vec::new()),
        }
    }

    /// The end of the input, after the reassembler closed what it had open: the evicted
    /// connections kept in case they came back end as the capture does.
    pub fn finish(&mut self) {
        let mut kept: Vec<ConnId> = self.kept.drain().into_iter().map(|(_, r)| r).collect();
        kept.sort_unstable();
        for id in kept {
            let ts = self.conns.get(id.0 as usize).and_then(|c| c.last_ts);
            self.end(id, ts.unwrap_or(0));
        }
        let mut left: Vec<u32> = self.conns.0.keys().copied().collect();
        left.sort_unstable();
        for id in left {
            self.finalize(ConnId(id));
        }
        self.folded.clear();
        self.aliases.clear();
    }

    /// The connections still open (evicted ones kept in case they return included), in order
    /// of their ids. Closed ones were handed to [`Observer::close`] and are gone.
    pub fn connections(&self) -> Vec<ConnSummary> {
        let mut v: Vec<ConnSummary> = self.conns.0.values().map(|c| c.summary()).collect();
        v.sort_unstable_by_key(|c| c.id.0);
        v
    }

    /// The first packets of the TCP connections not in `listed` (connection ids, in
    /// increasing order), in the order of their ids: other protocols' connections, and HTTP/2
    /// ones beyond the report's list. `None` when the run had more than [`MAX_NUMBERED`]
    /// connections (decision 447).
    pub fn unlisted_first(&self, listed: &[u32]) -> Option<Vec<Nanos>> {
        let starts = self.starts.as_ref()?;
        let mut at = listed.iter().peekable();
        let mut v = Vec::new();
        for (id, &t) in starts.iter().enumerate() {
            while at.next_if(|&&k| (k as usize) < id).is_some() {}
            if at.next_if(|&&k| k as usize == id).is_none() {
                v.push(t);
            }
        }
        Some(v)
    }

    /// Keeps connection `meta`'s first packet for [`Ledger::unlisted_first`].
    fn number(&mut self, meta: &ConnMeta) {
        if let Some(s) = self.starts.as_mut() {
            if s.len() < MAX_NUMBERED && meta.id.0 as usize == s.len() {
                s.push(meta.start);
            } else {
                self.starts = None;
            }
        }
    }

    fn conn_mut(&mut self, id: ConnId) -> Option<&mut Conn> {
        self.conns.get_mut(id.0 as usize)
    }
}

fn new_conn(meta: ConnMeta) -> Conn {
    // A return of an evicted connection the ledger knows nothing of: what came before is lost.
    let at_start = meta.syn_sender.is_some() && meta.resumes.is_none();
    let client = meta.syn_sender.map(|d| (d, ClientBy::Syn));
    Conn {
        meta,
        continues: None,
        last_ts: None,
        http2: false,
        client,
        dirs: Dirs::from_fn(|_| DirState::new(at_start)),
        streams: StreamMap::default(),
        streams_full: false,
        streams_untracked: 0,
        streams_reported: false,
        prelude: None,
        upgrade_seen: false,
        upgrade_req: None,
        upgraded_call: false,
        odd_streams: Dirs::default(),
        recent_resets: VecDeque::new(),
        top_opened: [0; 2],
        ended: None,
    }
}

#[cfg(test)]
mod size_tests {
    /// What is kept of each folded connection (up to `DEFAULT_MAX_EVICTED` of them) stays
    /// small: docs/ledger.md ("Bounds") gives its size.
    #[test]
    fn a_folded_connection_is_small() {
        let n = std::mem::size_of::<super::Folded>();
        eprintln!("Folded: {n} bytes");
        assert!(n <= 56, "{n}");
    }

    /// Each direction of each open connection holds one.
    #[test]
    fn a_direction_state_is_small() {
        let n = std::mem::size_of::<super::DirState>();
        eprintln!("DirState: {n} bytes");
        // 712 bytes when its phase was ten booleans, and after (h58, decision 437); 720 with
        // the opener of a header block in progress (decision 454).
        assert!(n <= 720, "{n}");
    }
}

#[cfg(test)]
mod phase_tests {
    use super::{Began, Boundary, Framing, Origin, Phase, Seek};

    fn began(p: Phase) -> Option<Began> {
        match p {
            Phase::Framed(b, _) => Some(b),
            Phase::Unframed(..) => None,
        }
    }

    fn at(preface: bool, http1: bool, skip: usize) -> Boundary {
        let before = if preface {
            skip.saturating_sub(24)
        } else {
            skip
        };
        Boundary {
            preface,
            http1,
            skip,
            before,
        }
    }

    #[test]
    fn the_first_boundary_decides_how_frames_began() {
        // Held from the first byte, a frame at offset 0: on time.
        let mut p = Phase::new(true);
        assert!(p.at_start() && !p.mid_stream());
        assert!(!p.frames(at(false, false, 0)));
        assert_eq!(p, Phase::Framed(Began::OnTime, Framing::Frames));
        // The same after a gap before it: mid-stream (HPACK unknown), said once.
        let mut p = Phase::new(true);
        p.gap();
        assert_eq!(p, Phase::Unframed(Origin::AfterGap, Seek::Detect));
        assert!(!p.at_start() && !p.mid_stream());
        assert!(p.frames(at(false, false, 0)));
        assert!(p.began_mid_stream() && p.began_late());
        // Joined mid-connection: mid-stream before and after, unless a preface shows.
        let mut p = Phase::new(false);
        assert!(p.mid_stream() && began(p).is_none() && !p.began_late());
        assert!(p.frames(at(false, false, 7)));
        let mut p = Phase::new(false);
        assert!(!p.frames(at(true, false, 24)));
        assert_eq!(began(p), Some(Began::OnTime));
        // Bytes before the preface, or an HTTP/1.1 exchange: late, not mid-stream.
        let mut p = Phase::new(true);
        assert!(!p.frames(at(true, false, 30)));
        assert!(p.began_late() && !p.mid_stream());
        let mut p = Phase::new(true);
        assert!(!p.frames(at(false, true, 120)));
        assert_eq!(began(p), Some(Began::Late));
    }

    #[test]
    fn how_frames_began_survives_resync_and_death() {
        let mut p = Phase::new(false);
        assert!(p.frames(at(false, false, 3)));
        p.resync();
        assert!(p.resyncing() && p.detecting() && !p.framed());
        // A boundary again: framed as it began, HPACK not reset a second time.
        assert!(!p.frames(at(false, false, 9)));
        assert_eq!(p, Phase::Framed(Began::MidStream, Framing::Frames));
        p.resync();
        p.die();
        assert_eq!(p, Phase::Framed(Began::MidStream, Framing::Dead));
        assert!(p.mid_stream() && p.began_mid_stream() && !p.detecting());
        // A gap after the first boundary changes nothing of it.
        p.gap();
        assert_eq!(p, Phase::Framed(Began::MidStream, Framing::Dead));
        // Dead before any boundary: still what it was held from.
        let mut p = Phase::new(false);
        p.die();
        assert_eq!(p, Phase::Unframed(Origin::Joined, Seek::Dead));
        assert!(p.mid_stream() && began(p).is_none() && !p.detecting() && !p.framed());
        // Resync before any boundary is no state: nothing changes.
        let mut p = Phase::new(true);
        p.resync();
        assert!(p.at_start());
    }
}
