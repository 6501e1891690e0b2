//! The ledger: turns reassembled TCP byte streams into HTTP/2 frames and hands each frame,
//! classified and attributed to a side and a write, to an [`Observer`].

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::net::SocketAddr;

use h2_frame_parser::hpack::Decoder;
use h2_frame_parser::{raw_frame, Frame, Head, Kind, RawFrame, SettingId, HEAD_LEN, PREFACE};
use h2ledger_tcp::{CloseKind, ConnId, ConnMeta, Dir, Nanos, Sink, Write};

use crate::detect::{Found, Scanner};
use crate::headers::HeaderList;
use crate::model::{FrameClass, Side};

/// Bytes kept while looking for the first frame boundary of a direction before giving up on it.
pub const MAX_DETECT_BYTES: usize = 1 << 20;
/// The largest header block (HEADERS or PUSH_PROMISE plus CONTINUATIONs) that is decoded.
pub const MAX_HEADER_BLOCK: usize = 1 << 20;
/// The largest HPACK dynamic table kept per direction, whatever SETTINGS_HEADER_TABLE_SIZE
/// allowed (browsers use 65 536, most servers 4 096). Past it, see docs/ledger.md ("HPACK").
pub const MAX_HPACK_TABLE: u32 = 64 * 1024;
/// GOAWAY debug data kept per frame.
const MAX_GOAWAY_DEBUG: u32 = 1024;
/// Streams tracked per connection (for HEADERS vs TRAILERS) before new ones are no longer tracked.
pub const MAX_STREAMS: usize = 1 << 20;
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

/// One frame, as the ledger saw it.
pub struct FrameEvent<'a> {
    pub conn: ConnId,
    pub dir: Dir,
    /// The side that sent the frame, as known when it was seen (see docs/ledger.md).
    pub side: Side,
    /// Time of the write that carried the frame's last byte.
    pub ts: Nanos,
    /// Index (per connection and direction) of the write that carried the frame's last byte;
    /// [`NO_WRITE`] when that byte was lost in a gap (the frame is counted from its head).
    pub write: u64,
    pub head: Head,
    pub class: FrameClass,
    /// The decoded frame; `None` for frames that did not load (or were cut by a gap) and for
    /// DATA unless an observer asked for that stream's payload ([`Observer::wants_data`]): then
    /// `Frame::Data` with the payload, padding removed, and the Pad Length.
    pub frame: Option<&'a Frame<'a>>,
    /// On the frame that completes a header block: the decoded fields.
    pub headers: Option<&'a HeaderList>,
    pub src: SocketAddr,
    pub dst: SocketAddr,
    /// The frames of some direction of this connection did not start at the first byte of its
    /// TCP stream: the capture started mid-connection, or other bytes came first (an HTTP/1.1
    /// Upgrade or CONNECT). Gaps later on are told by [`Observer::gap`].
    pub late_start: bool,
}

/// What the ledger feeds. Every method has an empty default.
pub trait Observer {
    /// Whether [`FrameEvent::headers`] is wanted. Decoding always runs (the HPACK table must
    /// follow the peer); copying the fields out costs time, so observers that never read them
    /// say no.
    fn wants_headers(&self) -> bool {
        true
    }
    /// Whether the payload of DATA frames on this stream is wanted (asked at each DATA frame's
    /// head and end). Frames split across writes are then copied, up to the frame size limit.
    fn wants_data(&self, _conn: ConnId, _stream: u32) -> bool {
        false
    }
    /// Bytes of `dir` were lost; `framing_lost`: frames may be missing entirely from here on
    /// (otherwise the gap fell inside one frame, which arrives without its payload).
    fn gap(&mut self, _conn: ConnId, _dir: Dir, _ts: Nanos, _framing_lost: bool) {}
    fn open(&mut self, _meta: &ConnMeta) {}
    fn write(&mut self, _conn: ConnId, _dir: Dir, _w: &Write) {}
    fn frame(&mut self, _ev: &FrameEvent<'_>) {}
    /// The connection is over (nothing more will come for it): fold what is kept per
    /// connection into totals and free it. `summary` is final.
    fn close(&mut self, _summary: &ConnSummary) {}
    /// An HTTP/1.1 request upgraded to HTTP/2 (`Upgrade: h2c` answered by `101`): it is
    /// stream 1's request (RFC 7540 §3.2), sent in `w` by direction `dir`, before any frame of
    /// its response. `method` and `target` come from its request line.
    fn upgraded_request(
        &mut self,
        _conn: ConnId,
        _dir: Dir,
        _w: &Write,
        _method: &[u8],
        _target: &[u8],
    ) {
    }
    /// A TLS record of this direction was complete in write `w` ([`Sink::tls_record`]).
    fn tls_record(&mut self, _conn: ConnId, _dir: Dir, _w: &Write) {}
}

impl Observer for () {
    fn wants_headers(&self) -> bool {
        false
    }
}

impl<A: Observer, B: Observer> Observer for (A, B) {
    fn wants_headers(&self) -> bool {
        self.0.wants_headers() || self.1.wants_headers()
    }
    fn wants_data(&self, conn: ConnId, stream: u32) -> bool {
        self.0.wants_data(conn, stream) || self.1.wants_data(conn, stream)
    }
    fn gap(&mut self, conn: ConnId, dir: Dir, ts: Nanos, framing_lost: bool) {
        self.0.gap(conn, dir, ts, framing_lost);
        self.1.gap(conn, dir, ts, framing_lost);
    }
    fn open(&mut self, meta: &ConnMeta) {
        self.0.open(meta);
        self.1.open(meta);
    }
    fn write(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        self.0.write(conn, dir, w);
        self.1.write(conn, dir, w);
    }
    fn frame(&mut self, ev: &FrameEvent<'_>) {
        self.0.frame(ev);
        self.1.frame(ev);
    }
    fn upgraded_request(
        &mut self,
        conn: ConnId,
        dir: Dir,
        w: &Write,
        method: &[u8],
        target: &[u8],
    ) {
        self.0.upgraded_request(conn, dir, w, method, target);
        self.1.upgraded_request(conn, dir, w, method, target);
    }
    fn close(&mut self, summary: &ConnSummary) {
        self.0.close(summary);
        self.1.close(summary);
    }
    fn tls_record(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        self.0.tls_record(conn, dir, w);
        self.1.tls_record(conn, dir, w);
    }
}

impl<O: Observer + ?Sized> Observer for &mut O {
    fn wants_headers(&self) -> bool {
        (**self).wants_headers()
    }
    fn wants_data(&self, conn: ConnId, stream: u32) -> bool {
        (**self).wants_data(conn, stream)
    }
    fn gap(&mut self, conn: ConnId, dir: Dir, ts: Nanos, framing_lost: bool) {
        (**self).gap(conn, dir, ts, framing_lost)
    }
    fn open(&mut self, meta: &ConnMeta) {
        (**self).open(meta)
    }
    fn write(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        (**self).write(conn, dir, w)
    }
    fn frame(&mut self, ev: &FrameEvent<'_>) {
        (**self).frame(ev)
    }
    fn upgraded_request(
        &mut self,
        conn: ConnId,
        dir: Dir,
        w: &Write,
        method: &[u8],
        target: &[u8],
    ) {
        (**self).upgraded_request(conn, dir, w, method, target)
    }
    fn close(&mut self, summary: &ConnSummary) {
        (**self).close(summary)
    }
    fn tls_record(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        (**self).tls_record(conn, dir, w)
    }
}

/// How the client of a connection was identified, strongest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientBy {
    Syn,
    Preface,
    /// A request (`:method`) or response (`:status`) header block.
    PseudoHeaders,
    OddStreams,
    EphemeralPort,
}

impl ClientBy {
    pub fn name(self) -> &'static str {
        match self {
            ClientBy::Syn => "syn",
            ClientBy::Preface => "preface",
            ClientBy::PseudoHeaders => "pseudo-headers",
            ClientBy::OddStreams => "odd-streams",
            ClientBy::EphemeralPort => "ephemeral-port",
        }
    }
}

/// What the ledger knows of a connection once the input is done.
#[derive(Clone, Debug)]
pub struct ConnSummary {
    pub id: ConnId,
    pub http2: bool,
    pub client: SocketAddr,
    pub server: SocketAddr,
    pub client_dir: Dir,
    pub client_by: ClientBy,
    /// The capture did not hold the start of at least one direction.
    pub mid_stream: bool,
    pub start: Nanos,
    /// HTTP/2 began after HTTP/1.1 on this connection (an h2c upgrade or a CONNECT tunnel).
    pub prelude: Option<Prelude>,
    /// The HTTP/1.1 request of an h2c upgrade was seen: stream 1 is its call.
    pub upgraded_call: bool,
}

/// What came before HTTP/2 on a connection seen from its start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prelude {
    /// `Upgrade: h2c` request, `101 Switching Protocols`, then the preface (RFC 7540 §3.2).
    Upgrade,
    /// `CONNECT` to a proxy, its `2xx` answer, then HTTP/2 inside the tunnel.
    Connect,
}

impl Prelude {
    pub fn name(self) -> &'static str {
        match self {
            Prelude::Upgrade => "h2c-upgrade",
            Prelude::Connect => "connect-tunnel",
        }
    }
}

/// Warnings: the first [`MAX_WARNINGS`] as text, all counted by kind.
#[derive(Debug, Default)]
pub struct Warnings {
    pub messages: Vec<String>,
    pub counts: BTreeMap<&'static str, u64>,
}

impl Warnings {
    pub fn add(&mut self, kind: &'static str, msg: impl FnOnce() -> String) {
        *self.counts.entry(kind).or_default() += 1;
        if self.messages.len() < MAX_WARNINGS {
            self.messages.push(msg());
        } else if self.messages.len() == MAX_WARNINGS {
            self.messages
                .push("further warnings are only counted (see \"anomalies\")".to_string());
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Looking for the first frame boundary (or the preface).
    Detect,
    /// Framed: `head_have` bytes of the next head, or inside `cur`'s payload.
    Frames,
    /// After a gap that left us outside any known frame: looking for a boundary again.
    Resync,
    /// Not HTTP/2 (no boundary found within [`MAX_DETECT_BYTES`]).
    Dead,
}

struct Payload {
    head: Head,
    remaining: u32,
    keep: u32,
    lossy: bool,
}

struct DirState {
    mode: Mode,
    at_start: bool,
    scan: Scanner,
    pending: Vec<u8>,
    pending_writes: Vec<(usize, Write)>,
    head_buf: [u8; HEAD_LEN],
    head_have: usize,
    cur: Option<Payload>,
    carry: Vec<u8>,
    block: Vec<u8>,
    block_stream: Option<u32>,
    block_push: bool,
    block_overflow: bool,
    hpack: Decoder,
    headers: HeaderList,
    summary: BlockSummary,
    settings_sent: VecDeque<(Option<u32>, Option<u32>)>,
    max_frame: u32,
    mid_stream: bool,
    /// The first frame of this direction came after bytes that were not HTTP/2 frames (an
    /// HTTP/1.1 Upgrade or CONNECT before the preface, or a mid-stream start).
    late_start: bool,
    synced: bool,
    candidates_reported: bool,
    settings_reported: bool,
    hpack_cap_reported: bool,
    /// The write whose bytes came last, and how many of them: a gap that makes up the rest
    /// of it is that write's snaplen-cut tail (its bytes were carried by that write).
    tail_of: Option<(Write, u64)>,
}

impl DirState {
    fn new(at_start: bool) -> Self {
        DirState {
            mode: Mode::Detect,
            at_start,
            scan: Scanner::default(),
            pending: Vec::new(),
            pending_writes: Vec::new(),
            head_buf: [0; HEAD_LEN],
            head_have: 0,
            cur: None,
            carry: Vec::new(),
            block: Vec::new(),
            block_stream: None,
            block_push: false,
            block_overflow: false,
            hpack: bounded_decoder(),
            headers: HeaderList::default(),
            summary: BlockSummary::default(),
            settings_sent: VecDeque::new(),
            max_frame: DEFAULT_MAX_FRAME,
            mid_stream: !at_start,
            late_start: false,
            synced: false,
            candidates_reported: false,
            settings_reported: false,
            hpack_cap_reported: false,
            tail_of: None,
        }
    }

    /// The frame-size bound used to prove boundaries: what SETTINGS allowed, or, on a stream
    /// whose SETTINGS we never saw, the default (larger frames then break the chain and the
    /// next boundary is used).
    fn scan_limit(&self) -> u32 {
        self.max_frame.max(DEFAULT_MAX_FRAME)
    }

    /// Framing is lost: look for a proven frame boundary again; HPACK state is gone too.
    fn lose_framing(&mut self) {
        self.cur = None;
        self.head_have = 0;
        self.mode = Mode::Resync;
        self.scan = Scanner::default();
        self.pending.clear();
        self.pending_writes.clear();
        self.at_start = false;
        self.lose_hpack_sync();
    }

    fn lose_hpack_sync(&mut self) {
        // The SETTINGS we saw still bound the peer; the table stays capped either way.
        let limit = (!self.hpack.is_mid_stream()).then(|| self.hpack.max_size_limit());
        let was_capped = self.hpack.capped();
        self.hpack = mid_stream_decoder();
        if let Some(l) = limit {
            self.hpack.set_max_size_limit(l.max(MAX_HPACK_TABLE));
        }
        self.hpack_cap_reported |= was_capped;
        self.block_stream = None;
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
    http2: bool,
    client: Option<(Dir, ClientBy)>,
    dirs: [DirState; 2],
    streams: StreamMap,
    streams_full: bool,
    /// Header blocks on streams not tracked because of [`MAX_STREAMS`].
    streams_untracked: u64,
    streams_reported: bool,
    prelude: Option<Prelude>,
    /// A `101 Switching Protocols` was seen; its request was handed to the observer.
    upgrade_seen: bool,
    /// The upgraded request, until the 101 is seen: its direction, method, target, write.
    upgrade_req: Option<(Dir, Vec<u8>, Vec<u8>, Write)>,
    upgraded_call: bool,
    /// HEADERS on odd streams seen from each direction while the client was unknown.
    odd_streams: [u64; 2],
}

/// Per-stream bits (header block seen, END_STREAM seen, per direction), by stream id.
type StreamMap = HashMap<u32, u8, BuildHasherDefault<StreamIdHasher>>;

/// Stream ids are 31-bit integers: one multiplication spreads them, and taking the product's
/// high half as the low bits (which pick the bucket) makes every bit of the id count. SipHash's
/// protection against chosen keys buys little here: the map is bounded by [`MAX_STREAMS`].
#[derive(Default, Clone, Copy)]
struct StreamIdHasher(u64);

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

fn di(d: Dir) -> usize {
    match d {
        Dir::Fwd => 0,
        Dir::Rev => 1,
    }
}

fn dir_of(i: usize) -> Dir {
    if i == 0 {
        Dir::Fwd
    } else {
        Dir::Rev
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
            mid_stream: self.dirs.iter().any(|d| d.synced && d.mid_stream),
            start: self.meta.start,
            prelude: self.prelude,
            upgraded_call: self.upgraded_call,
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
        if self.odd_streams[0] != self.odd_streams[1] {
            let d = if self.odd_streams[0] > self.odd_streams[1] {
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
    /// Connection ids that continue an evicted connection, to the original's id.
    aliases: HashMap<u32, ConnId, BuildHasherDefault<StreamIdHasher>>,
    /// Evicted connections kept in case they come back, oldest first (at most
    /// [`MAX_EVICTED_KEPT`]; stale entries, of connections resumed since, are skipped).
    evicted: VecDeque<ConnId>,
    evicted_now: HashMap<u32, (), BuildHasherDefault<StreamIdHasher>>,
    pub observer: O,
    pub warnings: Warnings,
}

/// Evicted connections whose state is kept, in case the reassembler sees them again and they
/// resume; beyond, the oldest is closed for good (folded into the totals) and a return of it
/// counts as a new, mid-stream connection.
pub const MAX_EVICTED_KEPT: usize = 2048;

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
    pub fn new(observer: O) -> Self {
        Ledger {
            conns: Conns::default(),
            aliases: HashMap::default(),
            evicted: VecDeque::new(),
            evicted_now: HashMap::default(),
            observer,
            warnings: Warnings::default(),
        }
    }

    /// The end of the input, after the reassembler closed what it had open: the evicted
    /// connections kept in case they came back are closed for good (folded) too.
    pub fn finish(&mut self) {
        let mut left: Vec<u32> = self.conns.0.keys().copied().collect();
        left.sort_unstable();
        for id in left {
            self.finalize(ConnId(id));
        }
        self.evicted.clear();
        self.aliases.clear();
    }

    /// The connections still open (evicted ones kept in case they return included), in order
    /// of their ids. Closed ones were handed to [`Observer::close`] and are gone.
    pub fn connections(&self) -> Vec<ConnSummary> {
        let mut v: Vec<ConnSummary> = self.conns.0.values().map(|c| c.summary()).collect();
        v.sort_unstable_by_key(|c| c.id.0);
        v
    }

    fn conn_mut(&mut self, id: ConnId) -> Option<&mut Conn> {
        self.conns.get_mut(id.0 as usize)
    }

    fn detect(&mut self, id: ConnId, dir: Dir, w: &Write, bytes: &[u8], closing: bool) {
        let Some(c) = self.conns.get_mut(id.0 as usize) else {
            return;
        };
        let d = di(dir);
        let ds = &mut c.dirs[d];
        if !bytes.is_empty() {
            ds.scan.segment_start(ds.pending.len());
            ds.pending.extend_from_slice(bytes);
            ds.pending_writes.push((ds.pending.len(), *w));
        }
        let limit = ds.scan_limit();
        // The other direction already proved HTTP/2 and we hold this one from its first byte:
        // that byte starts a frame (a server that skipped its SETTINGS still frames; the
        // client preface is never a plausible head).
        let first_is_frame = ds.at_start
            && c.http2
            && ds.pending.len() >= HEAD_LEN
            && Head::parse(&ds.pending).is_ok_and(|(_, h)| h.plausible(limit));
        let found = if first_is_frame {
            Found::Frames(0)
        } else {
            ds.scan.scan(&ds.pending, ds.at_start, closing, limit)
        };
        if ds.scan.candidates_full && !ds.candidates_reported {
            ds.candidates_reported = true;
            let (src, dst) = c.addrs(dir);
            self.warnings.add("detect-cap", || {
                format!(
                    "connection {} {src} -> {dst}: more than {} undecided frame-boundary candidates; later offsets are not followed",
                    id.0,
                    crate::detect::MAX_CANDIDATES
                )
            });
        }
        let ds = &mut c.dirs[d];
        let mut http1 = None;
        let (skip, preface) = match found {
            Found::Wait => {
                if ds.pending.len() > MAX_DETECT_BYTES {
                    let resync = ds.mode == Mode::Resync;
                    ds.mode = Mode::Dead;
                    ds.pending = Vec::new();
                    ds.pending_writes = Vec::new();
                    let (src, dst) = c.addrs(dir);
                    self.warnings.add("no-http2-boundary", || {
                        format!(
                            "connection {} {src} -> {dst}: no HTTP/2 frame boundary in the first {} bytes{}; this direction is not counted further",
                            id.0,
                            MAX_DETECT_BYTES,
                            if resync { " after a gap" } else { "" }
                        )
                    });
                }
                return;
            }
            Found::Preface(at) => {
                if at > PREFACE.len() {
                    let connect = ds.pending.starts_with(b"CONNECT ");
                    if c.prelude.is_none() {
                        c.prelude = Some(if connect {
                            Prelude::Connect
                        } else {
                            Prelude::Upgrade
                        });
                    }
                    if !connect && c.upgrade_req.is_none() {
                        if let (Some((m, t)), Some(&(_, rw))) =
                            (request_line(&ds.pending), ds.pending_writes.first())
                        {
                            c.upgrade_req = Some((dir, m.to_vec(), t.to_vec(), rw));
                        }
                    }
                }
                (at, true)
            }
            Found::Http1 { end, upgrade } => {
                http1 = Some(upgrade);
                (end, false)
            }
            Found::Frames(at) => (at, false),
        };
        let was_resync = ds.mode == Mode::Resync;
        let pending = std::mem::take(&mut ds.pending);
        let writes = std::mem::take(&mut ds.pending_writes);
        ds.mode = Mode::Frames;
        ds.head_have = 0;
        ds.cur = None;
        ds.scan = Scanner::default();
        if !ds.synced {
            ds.synced = true;
            // Mid-stream unless the frames start exactly where the stream did.
            // The preface and an upgrade's 101 are where HTTP/2 itself starts.
            ds.mid_stream = !(preface || http1.is_some() || (ds.at_start && skip == 0));
            // The preface ends at `skip`: anything before it (or an HTTP/1.1 prelude) was not
            // HTTP/2.
            let before = if preface {
                skip.saturating_sub(h2_frame_parser::PREFACE.len())
            } else {
                skip
            };
            ds.late_start = ds.mid_stream || http1.is_some() || before > 0;
            if ds.mid_stream {
                ds.hpack = mid_stream_decoder();
            }
        }
        let mid_stream = ds.mid_stream;
        if preface {
            c.set_client(dir, ClientBy::Preface);
        }
        if !c.http2 {
            c.http2 = true;
        }
        if let Some(upgrade) = http1 {
            if upgrade {
                c.prelude = Some(Prelude::Upgrade);
            } else if c.prelude.is_none() {
                c.prelude = Some(Prelude::Connect);
            }
        } else if skip > 0 && !preface {
            let (src, dst) = c.addrs(dir);
            let what = if was_resync {
                "after a gap, resynchronised"
            } else if mid_stream {
                "capture starts mid-frame, skipped"
            } else {
                "skipped"
            };
            self.warnings.add("skipped-bytes", || {
                format!(
                    "connection {} {src} -> {dst}: {what} {skip} bytes before the first proven frame boundary",
                    id.0
                )
            });
        } else if mid_stream && !was_resync {
            let (src, dst) = c.addrs(dir);
            self.warnings.add("mid-stream", || {
                format!(
                    "connection {} {src} -> {dst}: capture starts mid-connection; HPACK references to entries never seen decode as placeholders",
                    id.0
                )
            });
        }
        if http1 == Some(true) && !c.upgrade_seen {
            c.upgrade_seen = true;
            // The request may still be buffered in the other direction (when the 101 and the
            // server's first frame came before the client's preface).
            let other = &c.dirs[1 - d];
            if c.upgrade_req.is_none() {
                if let (Some((m, t)), Some(&(_, rw))) =
                    (request_line(&other.pending), other.pending_writes.first())
                {
                    c.upgrade_req = Some((dir_of(1 - d), m.to_vec(), t.to_vec(), rw));
                }
            }
        }
        if c.upgrade_seen && !c.upgraded_call {
            if let Some((rd, m, t, rw)) = c.upgrade_req.take() {
                c.upgraded_call = true;
                self.observer.upgraded_request(id, rd, &rw, &m, &t);
            }
        }
        // Replay the buffered bytes, each chunk with the write that carried it.
        let mut start = 0;
        for (end, w) in &writes {
            if *end > skip {
                let from = start.max(skip);
                self.frames(id, dir, w, &pending[from..*end]);
            }
            start = *end;
        }
        if let Some(c) = self.conns.get_mut(id.0 as usize) {
            let ds = &mut c.dirs[d];
            if ds.pending.is_empty() {
                // Keep the allocation for a later resync.
                let mut p = pending;
                p.clear();
                ds.pending = p;
                let mut pw = writes;
                pw.clear();
                ds.pending_writes = pw;
            }
        }
    }

    /// Framing: split `bytes` into frames, completing the one in progress first.
    fn frames(&mut self, id: ConnId, dir: Dir, w: &Write, mut bytes: &[u8]) {
        let d = di(dir);
        while !bytes.is_empty() {
            let Some(c) = self.conns.get_mut(id.0 as usize) else {
                return;
            };
            let ds = &mut c.dirs[d];
            if ds.mode != Mode::Frames {
                // A malformed head sent us back to resync: the rest goes to detection.
                self.detect(id, dir, w, bytes, false);
                return;
            }
            if let Some(p) = ds.cur.as_mut() {
                let n = (p.remaining as usize).min(bytes.len());
                let consumed_before = p.head.length - p.remaining;
                if consumed_before < p.keep {
                    let want = (p.keep - consumed_before) as usize;
                    ds.carry.extend_from_slice(&bytes[..n.min(want)]);
                }
                p.remaining -= n as u32;
                bytes = &bytes[n..];
                if p.remaining == 0 {
                    let p = ds.cur.take().expect("checked above");
                    let carry = std::mem::take(&mut ds.carry);
                    let complete = !p.lossy && carry.len() as u32 == p.head.length;
                    self.frame(id, dir, w, p.head, &carry, complete);
                    if let Some(c) = self.conns.get_mut(id.0 as usize) {
                        let mut carry = carry;
                        carry.clear();
                        // A large DATA payload kept for an observer: do not hold its size.
                        carry.shrink_to(MAX_HEADER_BLOCK);
                        c.dirs[d].carry = carry;
                    }
                }
                continue;
            }
            // A frame head: straight from the input when we have all of it.
            let head = if ds.head_have == 0 && bytes.len() >= HEAD_LEN {
                match raw_frame(bytes) {
                    Ok((rest, raw)) => {
                        // The whole frame is here: no copy at all.
                        let consumed = bytes.len() - rest.len();
                        let head = raw.head;
                        if !self.sane(id, dir, &head) {
                            continue;
                        }
                        self.frame(id, dir, w, head, raw.payload, true);
                        bytes = &bytes[consumed..];
                        continue;
                    }
                    Err(_) => match Head::parse(bytes) {
                        Ok((_, h)) => {
                            bytes = &bytes[HEAD_LEN..];
                            h
                        }
                        Err(_) => return,
                    },
                }
            } else {
                let n = (HEAD_LEN - ds.head_have).min(bytes.len());
                ds.head_buf[ds.head_have..ds.head_have + n].copy_from_slice(&bytes[..n]);
                ds.head_have += n;
                bytes = &bytes[n..];
                if ds.head_have < HEAD_LEN {
                    return;
                }
                ds.head_have = 0;
                match Head::parse(&ds.head_buf) {
                    Ok((_, h)) => h,
                    Err(_) => return,
                }
            };
            if !self.sane(id, dir, &head) {
                continue;
            }
            if head.length == 0 {
                self.frame(id, dir, w, head, &[], true);
                continue;
            }
            let keep = if head.kind == Kind::Data && self.observer.wants_data(id, head.stream_id) {
                head.length
            } else {
                keep_len(&head)
            };
            let ds = &mut self.conns[id.0 as usize].dirs[d];
            ds.carry.clear();
            ds.cur = Some(Payload {
                head,
                remaining: head.length,
                keep,
                lossy: false,
            });
        }
    }

    /// A head that no implementation would send (reserved bit, a length beyond anything
    /// allowed) means we lost framing: count it and look for a boundary again.
    fn sane(&mut self, id: ConnId, dir: Dir, head: &Head) -> bool {
        let c = &mut self.conns[id.0 as usize];
        let ds = &mut c.dirs[di(dir)];
        let limit = if ds.mid_stream {
            crate::detect::MAX_FRAME_LEN
        } else {
            ds.max_frame
        };
        if head.length <= limit {
            return true;
        }
        if head.plausible(crate::detect::MAX_FRAME_LEN) {
            // Framing is intact (the boundary was proven and every length followed): a frame
            // above the peer's SETTINGS_MAX_FRAME_SIZE is on the wire; count it and say so.
            let (src, dst) = c.addrs(dir);
            let (len, kind, stream) = (head.length, head.kind.name(), head.stream_id);
            self.warnings.add("malformed-frame", || {
                format!(
                    "connection {} {src} -> {dst}: {kind} frame on stream {stream} of {len} bytes, above the allowed maximum {limit} (RFC 9113 §4.2): counted, framing kept",
                    id.0
                )
            });
            return true;
        }
        ds.lose_framing();
        let (src, dst) = c.addrs(dir);
        let len = head.length;
        self.warnings.add("bad-frame-head", || {
            format!(
                "connection {} {src} -> {dst}: frame header with length {len} above the allowed maximum {limit}: framing lost, resynchronising",
                id.0
            )
        });
        false
    }

    fn frame(
        &mut self,
        id: ConnId,
        dir: Dir,
        w: &Write,
        head: Head,
        payload: &[u8],
        complete: bool,
    ) {
        let d = di(dir);
        let keep = self.observer.wants_headers();
        let c = &mut self.conns[id.0 as usize];
        let (src, dst) = c.addrs(dir);
        let load = head.kind != Kind::Data || self.observer.wants_data(id, head.stream_id);
        let loaded = if complete && load {
            match Frame::load(RawFrame { head, payload }) {
                Ok(f) => Some(f),
                Err(e) => {
                    self.warnings.add("malformed-frame", || {
                        format!(
                            "connection {} {src} -> {dst}: malformed {} frame on stream {}: {e}",
                            id.0,
                            head.kind.name(),
                            head.stream_id
                        )
                    });
                    None
                }
            }
        } else if head.kind == Kind::GoAway && payload.len() >= 8 {
            // GOAWAY whose debug data was cut at MAX_GOAWAY_DEBUG: load what we kept.
            let mut h = head;
            h.length = payload.len() as u32;
            Frame::load(RawFrame { head: h, payload }).ok()
        } else {
            None
        };
        // Settings: remember ours until the peer ACKs; apply the peer's on our ACK.
        match &loaded {
            Some(Frame::Settings(s)) if !s.is_ack() => {
                let mut table = None;
                let mut frame_size = None;
                for (id, v) in s.iter() {
                    if id == SettingId::HEADER_TABLE_SIZE {
                        table = Some(v);
                    } else if id == SettingId::MAX_FRAME_SIZE {
                        frame_size = Some(v);
                    }
                }
                let ds = &mut c.dirs[d];
                let q = &mut ds.settings_sent;
                if q.len() < MAX_PENDING_SETTINGS {
                    q.push_back((table, frame_size));
                } else if let Some(last) = q.back_mut() {
                    let max = |a: Option<u32>, b: Option<u32>| match (a, b) {
                        (Some(x), Some(y)) => Some(x.max(y)),
                        (x, y) => x.or(y),
                    };
                    *last = (max(last.0, table), max(last.1, frame_size));
                    if !ds.settings_reported {
                        ds.settings_reported = true;
                        self.warnings.add("settings-cap", || {
                            format!(
                                "connection {} {src} -> {dst}: more than {MAX_PENDING_SETTINGS} SETTINGS frames awaiting ACK; later ones are merged into the last (largest values applied at its ACK)",
                                id.0
                            )
                        });
                    }
                }
            }
            Some(Frame::Settings(_)) => {
                if let Some((table, frame_size)) = c.dirs[1 - d].settings_sent.pop_front() {
                    let ds = &mut c.dirs[d];
                    if let Some(t) = table {
                        if !ds.mid_stream {
                            ds.hpack.set_max_size_limit(t);
                        }
                    }
                    if let Some(f) = frame_size {
                        ds.max_frame = f.clamp(DEFAULT_MAX_FRAME, crate::detect::MAX_FRAME_LEN);
                    }
                }
            }
            _ => {}
        }
        // Header blocks.
        let ds = &mut c.dirs[d];
        let mut decoded = false;
        let fragment = match &loaded {
            Some(Frame::Headers(h)) => Some((h.fragment, true)),
            Some(Frame::PushPromise(p)) => Some((p.fragment, true)),
            Some(Frame::Continuation(k)) => Some((k.fragment, false)),
            _ => None,
        };
        let header_kind = matches!(
            head.kind,
            Kind::Headers | Kind::PushPromise | Kind::Continuation
        );
        if header_kind {
            let end = head.flags.is_end_headers();
            match fragment {
                Some((frag, true)) => {
                    if ds.block_stream.is_some() {
                        self.warnings.add("header-block", || {
                            format!(
                                "connection {} {src} -> {dst}: {} on stream {} while a header block on stream {} awaits CONTINUATION",
                                id.0, head.kind.name(), head.stream_id, ds.block_stream.unwrap_or(0)
                            )
                        });
                    }
                    ds.block_stream = None;
                    ds.block_push = head.kind == Kind::PushPromise;
                    if end {
                        decoded = decode_block(ds, frag, keep, &mut self.warnings, id, src, dst);
                    } else {
                        ds.block.clear();
                        ds.block_overflow = false;
                        ds.block.extend_from_slice(frag);
                        ds.block_stream = Some(head.stream_id);
                    }
                }
                Some((frag, false)) => {
                    if ds.block_stream == Some(head.stream_id) {
                        if ds.block.len() + frag.len() > MAX_HEADER_BLOCK {
                            ds.block_overflow = true;
                        } else {
                            ds.block.extend_from_slice(frag);
                        }
                        if end {
                            ds.block_stream = None;
                            if ds.block_overflow {
                                ds.lose_hpack_sync();
                                self.warnings.add("header-block", || {
                                    format!("connection {} {src} -> {dst}: header block on stream {} larger than {MAX_HEADER_BLOCK} bytes: not decoded, HPACK state lost", id.0, head.stream_id)
                                });
                            } else {
                                let block = std::mem::take(&mut ds.block);
                                decoded = decode_block(
                                    ds,
                                    &block,
                                    keep,
                                    &mut self.warnings,
                                    id,
                                    src,
                                    dst,
                                );
                                ds.block = block;
                            }
                        }
                    } else {
                        self.warnings.add("header-block", || {
                            format!("connection {} {src} -> {dst}: CONTINUATION on stream {} without a header block in progress", id.0, head.stream_id)
                        });
                    }
                }
                None => {
                    // The frame did not load (or was cut by a gap): its fragment is lost.
                    ds.lose_hpack_sync();
                    self.warnings.add("hpack-sync", || {
                        format!("connection {} {src} -> {dst}: {} frame on stream {} could not be read; HPACK state reset (later references may show placeholders)", id.0, head.kind.name(), head.stream_id)
                    });
                }
            }
        }
        let pseudo = if decoded && head.kind == Kind::Headers {
            let sum = c.dirs[d].summary;
            if sum.pseudo {
                BlockKind::Pseudo
            } else if sum.unseen {
                BlockKind::Unknown
            } else {
                BlockKind::NoPseudo
            }
        } else {
            BlockKind::Unknown
        };
        let class = classify(c, d, &head, loaded.as_ref(), pseudo);
        if c.streams_full && !c.streams_reported {
            c.streams_reported = true;
            self.warnings.add("streams-cap", || {
                format!(
                    "connection {} {src} -> {dst}: more than {MAX_STREAMS} open streams tracked; HEADERS vs TRAILERS on further streams is read from the header block (pseudo-header fields), or END_STREAM when unreadable",
                    id.0
                )
            });
        }
        if c.client.is_none() && header_kind {
            // Who asks and who answers: requests carry :method, responses :status (RFC 9113
            // §8.3); PUSH_PROMISE carries a request from the server, so it is left out.
            let ds = &c.dirs[d];
            if decoded && !ds.block_push {
                if ds.summary.request {
                    c.set_client(dir, ClientBy::PseudoHeaders);
                } else if ds.summary.response {
                    c.set_client(dir_of(1 - d), ClientBy::PseudoHeaders);
                }
            }
        }
        if c.client.is_none() && class == FrameClass::Headers && head.stream_id % 2 == 1 {
            // No readable pseudo-header: the client opens odd-numbered streams (RFC 9113
            // §5.1.1). Weaker, as a response on an odd stream looks the same.
            c.odd_streams[d] += 1;
        }
        let side = c.side(dir);
        let late_start = c.dirs.iter().any(|x| x.synced && x.late_start);
        let ds = &c.dirs[d];
        let ev = FrameEvent {
            conn: id,
            dir,
            side,
            ts: w.ts,
            write: w.index,
            head,
            class,
            frame: loaded.as_ref(),
            headers: (decoded && keep).then_some(&ds.headers),
            src,
            dst,
            late_start,
        };
        self.observer.frame(&ev);
    }
}

/// `METHOD SP target SP HTTP/1.x` at the start of `buf`, when its line is complete.
fn request_line(buf: &[u8]) -> Option<(&[u8], &[u8])> {
    let end = buf.windows(2).take(8192).position(|w| w == b"\r\n")?;
    let mut parts = buf[..end].split(|&b| b == b' ');
    let (m, t, v) = (parts.next()?, parts.next()?, parts.next()?);
    (parts.next().is_none() && v.starts_with(b"HTTP/1.") && !m.is_empty()).then_some((m, t))
}

/// What the ledger itself needs of a header block, gathered while decoding it.
#[derive(Clone, Copy, Debug, Default)]
struct BlockSummary {
    /// The first field is `:method` (a request) or `:status` (a response).
    request: bool,
    response: bool,
    /// Some field we can read is a pseudo-header; some field is a placeholder.
    pseudo: bool,
    unseen: bool,
}

/// Decodes a header block, keeping the fields in `ds.headers` only when an observer wants them.
fn decode_block(
    ds: &mut DirState,
    block: &[u8],
    keep: bool,
    warnings: &mut Warnings,
    id: ConnId,
    src: SocketAddr,
    dst: SocketAddr,
) -> bool {
    ds.headers.clear();
    let headers = &mut ds.headers;
    let mut sum = BlockSummary::default();
    let mut first = true;
    let result = ds.hpack.decode(block, |h| {
        let unseen = h.name_unseen || h.value_unseen;
        if first {
            first = false;
            sum.request = !h.name_unseen && h.name == b":method";
            sum.response = !h.name_unseen && h.name == b":status";
        }
        sum.pseudo |= !unseen && h.name.starts_with(b":");
        sum.unseen |= unseen;
        if keep {
            headers.push(&h);
        }
    });
    ds.summary = sum;
    if ds.hpack.capped() && !ds.hpack_cap_reported {
        ds.hpack_cap_reported = true;
        let size = ds.hpack.max_size_limit();
        warnings.add("hpack-cap", || {
            format!("connection {} {src} -> {dst}: HPACK table size update above the {MAX_HPACK_TABLE}-byte cap (limit {size}); the table is kept at the cap, references to entries beyond it decode as placeholders", id.0)
        });
    }
    match result {
        Ok(()) => true,
        Err(e) => {
            ds.lose_hpack_sync();
            warnings.add("hpack-error", || {
                format!("connection {} {src} -> {dst}: HPACK error: {e}; decoder reset (later references may show placeholders)", id.0)
            });
            false
        }
    }
}

/// Payload bytes worth keeping: all of a control frame or header block, none of DATA.
fn keep_len(head: &Head) -> u32 {
    match head.kind {
        Kind::Data | Kind::Unknown(_) => 0,
        Kind::GoAway => head.length.min(8 + MAX_GOAWAY_DEBUG),
        Kind::Headers | Kind::PushPromise | Kind::Continuation => {
            head.length.min(MAX_HEADER_BLOCK as u32)
        }
        _ => head.length.min(64 * 1024),
    }
}

/// What a decoded header block says about its place on the stream (RFC 9113 §8.1: request and
/// response header blocks start with pseudo-header fields, trailers have none).
#[derive(Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Pseudo,
    NoPseudo,
    Unknown,
}

fn classify(
    c: &mut Conn,
    d: usize,
    head: &Head,
    frame: Option<&Frame<'_>>,
    block: BlockKind,
) -> FrameClass {
    let mid_stream = c.dirs.iter().any(|x| x.mid_stream);
    let bit = 1u8 << d;
    let end_bit = 4u8 << d;
    match head.kind {
        Kind::Data => {
            if head.flags.is_end_stream() {
                end_stream(c, head.stream_id, end_bit);
            }
            FrameClass::Data
        }
        Kind::Headers => {
            let s = head.stream_id;
            let seen = match c.streams.get_mut(&s) {
                Some(bits) => {
                    let seen = *bits & bit != 0;
                    *bits |= bit;
                    seen
                }
                None => {
                    let full = c.streams.len() >= MAX_STREAMS;
                    if !full {
                        c.streams.insert(s, bit);
                    } else {
                        c.streams_full = true;
                        c.streams_untracked += 1;
                    }
                    // A stream we never saw open, on a connection captured mid-way, may have
                    // begun before the capture: its first block here may be trailers. Read the
                    // block itself; without readable fields, trailers are the block that ends
                    // the stream. Streams beyond the cap are read the same way.
                    (mid_stream || full)
                        && match block {
                            BlockKind::Pseudo => false,
                            BlockKind::NoPseudo => true,
                            BlockKind::Unknown => head.flags.is_end_stream(),
                        }
                }
            };
            if head.flags.is_end_stream() {
                end_stream(c, s, end_bit);
            }
            if seen {
                FrameClass::Trailers
            } else {
                FrameClass::Headers
            }
        }
        Kind::Ping => {
            let ack = match frame {
                Some(Frame::Ping(p)) => p.is_ack(),
                _ => head.flags.is_ack(),
            };
            if ack {
                FrameClass::PingAck
            } else {
                FrameClass::Ping
            }
        }
        Kind::Settings => {
            if head.flags.is_ack() {
                FrameClass::SettingsAck
            } else {
                FrameClass::Settings
            }
        }
        Kind::RstStream => {
            c.streams.remove(&head.stream_id);
            FrameClass::RstStream
        }
        Kind::WindowUpdate => FrameClass::WindowUpdate,
        Kind::GoAway => FrameClass::GoAway,
        Kind::Priority => FrameClass::Priority,
        Kind::PushPromise => FrameClass::PushPromise,
        Kind::Continuation => FrameClass::Continuation,
        Kind::Unknown(_) => FrameClass::Unknown,
    }
}

fn end_stream(c: &mut Conn, s: u32, end_bit: u8) {
    if let Some(bits) = c.streams.get_mut(&s) {
        *bits |= end_bit;
        if *bits & 0b1100 == 0b1100 {
            c.streams.remove(&s);
        }
    }
}

impl<O: Observer> Ledger<O> {
    /// The connection `id` stands for: itself, or the evicted one it resumes.
    fn root(&self, id: ConnId) -> ConnId {
        self.aliases.get(&id.0).copied().unwrap_or(id)
    }

    /// The connection is over for good: its observers fold it, and it is freed.
    fn finalize(&mut self, id: ConnId) {
        self.evicted_now.remove(&id.0);
        if let Some(c) = self.conns.0.remove(&id.0) {
            self.observer.close(&c.summary());
        }
    }

    /// The reassembler evicted `id` while it was open: whatever it sends while forgotten is
    /// unknown, so framing is lost (a frame in progress is counted from its head, as at a gap).
    /// If it comes back it is the same connection ([`ConnMeta::resumes`]).
    fn evicted(&mut self, id: ConnId, ts: Nanos) {
        for dir in [Dir::Fwd, Dir::Rev] {
            let Some(c) = self.conns.get(id.0 as usize) else {
                return;
            };
            let ds = &c.dirs[di(dir)];
            match ds.mode {
                Mode::Detect | Mode::Resync if !ds.pending.is_empty() => {
                    let w = ds.pending_writes.last().map(|x| x.1).unwrap_or(Write {
                        index: 0,
                        ts: 0,
                        len: 0,
                    });
                    self.detect(id, dir, &w, &[], true);
                }
                _ => {}
            }
            let c = &mut self.conns[id.0 as usize];
            let ds = &mut c.dirs[di(dir)];
            if ds.mode == Mode::Frames {
                let cut = ds.cur.take().map(|p| p.head);
                ds.lose_framing();
                if let Some(head) = cut {
                    let w = Write {
                        index: NO_WRITE,
                        ts,
                        len: 0,
                    };
                    self.frame(id, dir, &w, head, &[], false);
                    self.conns[id.0 as usize].dirs[di(dir)].carry.clear();
                }
            } else if ds.mode == Mode::Detect {
                ds.at_start = false;
            }
        }
        let c = &self.conns[id.0 as usize];
        if !c.http2 {
            return;
        }
        let (a, b) = (c.meta.first_src, c.meta.first_dst);
        self.warnings.add("evicted", || {
            format!(
                "connection {} {a} <-> {b}: evicted from reassembly (too many connections tracked at once); if it comes back it is counted as the same connection, after a resynchronisation",
                id.0
            )
        });
    }
}

impl<O: Observer> Sink for Ledger<O> {
    fn open(&mut self, meta: &ConnMeta) {
        // An evicted connection back: its bytes go to the original (counted once), if its
        // state is still kept.
        let root = meta.resumes.map(|r| self.root(r));
        if let Some(r) = root.filter(|r| *r != meta.id && self.conns.get(r.0 as usize).is_some()) {
            self.aliases.insert(meta.id.0, r);
            self.evicted_now.remove(&r.0);
            return;
        }
        self.conns
            .0
            .insert(meta.id.0, Box::new(new_conn(meta.clone())));
        self.observer.open(meta);
    }

    fn write(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        let conn = self.root(conn);
        self.observer.write(conn, dir, w);
    }

    fn tls_record(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        let conn = self.root(conn);
        self.observer.tls_record(conn, dir, w);
    }

    fn data(&mut self, conn: ConnId, dir: Dir, w: &Write, bytes: &[u8]) {
        let conn = self.root(conn);
        let Some(c) = self.conn_mut(conn) else {
            return;
        };
        let ds = &mut c.dirs[di(dir)];
        ds.tail_of = match ds.tail_of {
            Some((t, n)) if t.index == w.index => Some((t, n + bytes.len() as u64)),
            _ => Some((*w, bytes.len() as u64)),
        };
        match c.dirs[di(dir)].mode {
            Mode::Dead => {}
            Mode::Detect | Mode::Resync => self.detect(conn, dir, w, bytes, false),
            Mode::Frames => self.frames(conn, dir, w, bytes),
        }
    }

    fn gap(&mut self, conn: ConnId, dir: Dir, ts: Nanos, len: u64) {
        let conn = self.root(conn);
        // A direction still looking for a boundary: a chain that ends exactly at the gap (or
        // whose last frame runs into it) is proven like one at the end of the connection.
        if let Some(c) = self.conns.get(conn.0 as usize) {
            let ds = &c.dirs[di(dir)];
            if matches!(ds.mode, Mode::Detect | Mode::Resync) && !ds.pending.is_empty() {
                if let Some(&(_, w)) = ds.pending_writes.last() {
                    self.detect(conn, dir, &w, &[], true);
                }
            }
        }
        let Some(c) = self.conns.get_mut(conn.0 as usize) else {
            return;
        };
        let (src, dst) = c.addrs(dir);
        let ds = &mut c.dirs[di(dir)];
        // A snaplen-cut tail: the frame bytes in it were carried by that write.
        let tail = match ds.tail_of.take() {
            Some((t, n)) if n > 0 && n + len == u64::from(t.len) => Some(t),
            _ => None,
        };
        let mut cut_short = None;
        let mut ends_here = None;
        let mut framing_lost = true;
        let mut discarded = 0;
        let what = match ds.mode {
            Mode::Dead => return,
            Mode::Frames => {
                match ds.cur.as_mut() {
                    Some(p) if len <= p.remaining as u64 && ds.head_have == 0 => {
                        // The gap falls inside the current frame: framing survives.
                        let consumed = p.head.length - p.remaining;
                        if consumed < p.keep {
                            p.lossy = true;
                        }
                        p.remaining -= len as u32;
                        if p.remaining == 0 {
                            // Its last byte was in the gap: the frame is complete now.
                            ends_here = ds.cur.take();
                        }
                        framing_lost = false;
                        "inside a frame; framing kept"
                    }
                    _ => {
                        // A frame whose head we saw existed on the wire: count it, unread.
                        cut_short = ds.cur.take().map(|p| p.head);
                        ds.lose_framing();
                        "framing lost; resynchronising, HPACK state reset"
                    }
                }
            }
            Mode::Detect | Mode::Resync => {
                discarded = ds.pending.len();
                ds.pending.clear();
                ds.pending_writes.clear();
                ds.scan = Scanner::default();
                ds.at_start = false;
                "before the first frame boundary"
            }
        };
        let lost = Write {
            index: NO_WRITE,
            ts,
            len: 0,
        };
        if let Some(p) = ends_here {
            let w = tail.unwrap_or(lost);
            let ds = &mut self.conns[conn.0 as usize].dirs[di(dir)];
            let carry = std::mem::take(&mut ds.carry);
            self.frame(conn, dir, &w, p.head, &carry, false);
            let mut carry = carry;
            carry.clear();
            self.conns[conn.0 as usize].dirs[di(dir)].carry = carry;
        }
        if let Some(head) = cut_short {
            let w = tail.unwrap_or(lost);
            self.frame(conn, dir, &w, head, &[], false);
            if let Some(c) = self.conns.get_mut(conn.0 as usize) {
                c.dirs[di(dir)].carry.clear();
            }
        }
        self.observer.gap(conn, dir, ts, framing_lost);
        self.warnings.add("gap", || {
            format!(
                "connection {} {src} -> {dst}: {len} bytes missing from the capture ({what}){}",
                conn.0,
                if discarded > 0 {
                    format!("; the {discarded} bytes before it had no proven frame boundary and are not counted")
                } else {
                    String::new()
                }
            )
        });
    }

    fn close(&mut self, id: ConnId, ts: Nanos, kind: CloseKind) {
        let conn = self.root(id);
        self.aliases.remove(&id.0);
        if kind == CloseKind::Evicted {
            if self.conns.get(conn.0 as usize).is_none() {
                return;
            }
            self.evicted(conn, ts);
            self.evicted_now.insert(conn.0, ());
            self.evicted.push_back(conn);
            while self.evicted.len() > MAX_EVICTED_KEPT {
                if let Some(old) = self.evicted.pop_front() {
                    if self.evicted_now.contains_key(&old.0) {
                        self.finalize(old);
                    }
                }
            }
            return;
        }
        // Directions still looking for a boundary get a last, shorter proof.
        for dir in [Dir::Fwd, Dir::Rev] {
            let Some(c) = self.conns.get(conn.0 as usize) else {
                return;
            };
            let ds = &c.dirs[di(dir)];
            if matches!(ds.mode, Mode::Detect | Mode::Resync) && !ds.pending.is_empty() {
                let w = ds.pending_writes.last().map(|x| x.1).unwrap_or(Write {
                    index: 0,
                    ts: 0,
                    len: 0,
                });
                self.detect(conn, dir, &w, &[], true);
            }
            // Still no boundary on an HTTP/2 connection: say what is not counted.
            let Some(c) = self.conns.get(conn.0 as usize) else {
                return;
            };
            let ds = &c.dirs[di(dir)];
            if c.http2 && matches!(ds.mode, Mode::Detect | Mode::Resync) && !ds.pending.is_empty() {
                let n = ds.pending.len();
                let (src, dst) = c.addrs(dir);
                self.warnings.add("no-http2-boundary", || {
                    format!(
                        "connection {} {src} -> {dst}: the last {n} bytes have no proven frame boundary; their frames are not counted",
                        conn.0
                    )
                });
            }
        }
        if let Some(c) = self.conns.get_mut(conn.0 as usize) {
            let unfinished = c
                .dirs
                .iter()
                .enumerate()
                .filter(|(_, d)| d.mode == Mode::Frames && (d.cur.is_some() || d.head_have > 0))
                .map(|(i, _)| i)
                .collect::<Vec<_>>();
            for i in unfinished {
                let (src, dst) = c.addrs(dir_of(i));
                let ds = &mut c.dirs[i];
                ds.cur = None;
                ds.head_have = 0;
                if c.http2 {
                    self.warnings.add("truncated-frame", || {
                        format!(
                            "connection {} {src} -> {dst}: the capture ends inside a frame (not counted)",
                            conn.0
                        )
                    });
                }
            }
            c.streams = StreamMap::default();
        }
        self.finalize(conn);
    }
}

fn new_conn(meta: ConnMeta) -> Conn {
    let at_start = meta.syn_sender.is_some();
    let client = meta.syn_sender.map(|d| (d, ClientBy::Syn));
    Conn {
        meta,
        http2: false,
        client,
        dirs: [DirState::new(at_start), DirState::new(at_start)],
        streams: StreamMap::default(),
        streams_full: false,
        streams_untracked: 0,
        streams_reported: false,
        prelude: None,
        upgrade_seen: false,
        upgrade_req: None,
        upgraded_call: false,
        odd_streams: [0; 2],
    }
}

impl<O: Observer> Observer for Vec<O> {
    fn wants_headers(&self) -> bool {
        self.iter().any(|o| o.wants_headers())
    }
    fn wants_data(&self, conn: ConnId, stream: u32) -> bool {
        self.iter().any(|o| o.wants_data(conn, stream))
    }
    fn gap(&mut self, conn: ConnId, dir: Dir, ts: Nanos, framing_lost: bool) {
        self.iter_mut()
            .for_each(|o| o.gap(conn, dir, ts, framing_lost));
    }
    fn open(&mut self, meta: &ConnMeta) {
        self.iter_mut().for_each(|o| o.open(meta));
    }
    fn write(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        self.iter_mut().for_each(|o| o.write(conn, dir, w));
    }
    fn frame(&mut self, ev: &FrameEvent<'_>) {
        self.iter_mut().for_each(|o| o.frame(ev));
    }
    fn upgraded_request(
        &mut self,
        conn: ConnId,
        dir: Dir,
        w: &Write,
        method: &[u8],
        target: &[u8],
    ) {
        self.iter_mut()
            .for_each(|o| o.upgraded_request(conn, dir, w, method, target));
    }
    fn close(&mut self, summary: &ConnSummary) {
        self.iter_mut().for_each(|o| o.close(summary));
    }
    fn tls_record(&mut self, conn: ConnId, dir: Dir, w: &Write) {
        self.iter_mut().for_each(|o| o.tls_record(conn, dir, w));
    }
}
