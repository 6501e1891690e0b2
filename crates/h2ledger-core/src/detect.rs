//! Finding HTTP/2 frame boundaries in a byte stream whose beginning we may not have.
//!
//! Detection and resynchronisation use the same proofs (docs/decisions.md, "frame-boundary
//! proof"): several consecutive frame headers that are each [`Head::plausible`] and chain (each
//! starts where the previous frame ends), or a shorter chain held at both ends by evidence the
//! capture gives (a segment start, a segment end followed by a gap, the end of the connection).
//!
//! Every offset is followed at most a constant number of times (each time a few headers), and
//! the preface and HTTP/1.1 searches resume where they stopped: the work is linear in the bytes.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use h2_frame_parser::{Head, HEAD_LEN, PREFACE};

/// Frame headers in a row that prove a frame boundary.
const CHAIN_PROOF: usize = 3;

/// The largest frame length accepted while looking for a boundary when no SETTINGS told us
/// more (RFC 9113 §4.2: 2^24-1 is the protocol's limit).
pub(crate) const MAX_FRAME_LEN: u32 = (1 << 24) - 1;

/// The outcome of following frame headers from one offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Chain {
    /// `n` plausible headers in a row, the last frame ending exactly at the end of the input.
    Exact(usize),
    /// `n` plausible headers, then the input ran out inside a header or a payload.
    Short(usize),
    /// `n` plausible headers, then an implausible one: this offset is not a boundary.
    Broken(usize),
}

impl Chain {
    fn heads(self) -> usize {
        match self {
            Chain::Exact(n) | Chain::Short(n) | Chain::Broken(n) => n,
        }
    }
}

fn head_at(buf: &[u8], at: usize) -> Option<Head> {
    let bytes = buf.get(at..at.checked_add(HEAD_LEN)?)?;
    Head::parse(bytes).ok().map(|(_, h)| h)
}

/// Follows the chain of frame headers starting at `at`, stopping after `limit` headers.
pub(crate) fn chain(buf: &[u8], at: usize, limit: usize, max_frame: u32) -> Chain {
    follow(buf, at, limit, max_frame).0
}

/// [`chain`], plus the buffer length at which following again can tell more, and whether a
/// `Short` chain ran out inside a payload (its last header was read whole).
fn follow(buf: &[u8], mut at: usize, limit: usize, max_frame: u32) -> (Chain, usize, bool) {
    let mut n = 0;
    let mut prev: Option<Head> = None;
    while n < limit {
        if at == buf.len() {
            return (Chain::Exact(n), at + HEAD_LEN, false);
        }
        let Some(head) = head_at(buf, at) else {
            return (Chain::Short(n), at + HEAD_LEN, false);
        };
        let payload = &buf[(at + HEAD_LEN).min(buf.len())..];
        let payload = &payload[..payload.len().min(head.length as usize)];
        if !head.plausible(max_frame) || !consistent(&head, payload, prev.as_ref()) {
            return (Chain::Broken(n), usize::MAX, false);
        }
        prev = Some(head);
        n += 1;
        at += HEAD_LEN + head.length as usize;
        if at > buf.len() {
            return (Chain::Short(n), at, true);
        }
    }
    if at == buf.len() {
        (Chain::Exact(n), at + HEAD_LEN, false)
    } else {
        (Chain::Short(n), usize::MAX, false)
    }
}

/// Whether a plausible head agrees with its payload (what of it is in the buffer) and with the
/// frame before it in the chain: what every conforming peer's frames hold and bytes of other
/// protocols seldom do (decision 286); and no frame of a pushed (even) stream nor an empty DATA
/// that does not end its stream, which conforming peers may send but seldom do. RFC 9113: a header block's CONTINUATIONs follow it on
/// its stream with nothing between (§6.10); Pad Length is less than the payload (§6.1, §6.2,
/// §6.6); a HEADERS with PRIORITY and a PUSH_PROMISE are long enough for their fields (§6.2,
/// §6.6), a stream depends on another stream (§5.3.1), a promised stream id is even (§5.1.1);
/// a WINDOW_UPDATE's increment is not 0 (§6.9); SETTINGS values are within their ranges
/// (§6.5.2); error codes are those of §7 (a peer may send others, but a proof needs no rare
/// case); GOAWAY carries at least its last stream id and code (§6.8).
fn consistent(head: &Head, payload: &[u8], prev: Option<&Head>) -> bool {
    use h2_frame_parser::Kind;
    let f = head.flags;
    let open_block = prev.filter(|p| {
        matches!(
            p.kind,
            Kind::Headers | Kind::PushPromise | Kind::Continuation
        ) && !p.flags.is_end_headers()
    });
    match (open_block, head.kind) {
        (Some(p), Kind::Continuation) if p.stream_id == head.stream_id => {}
        (Some(_), _) => return false,
        (None, Kind::Continuation) if prev.is_some() => return false,
        _ => {}
    }
    let len = head.length as usize;
    // Streams a client opens are odd (§5.1.1): frames of an even stream are a server's pushes,
    // which browsers no longer take and few servers send; and an empty DATA frame that does
    // not end its stream carries nothing (Envoy counts them as an abuse). Real traffic proves
    // its boundaries with the frames around them; runs of zeros in other protocols' bytes
    // make exactly these.
    let stream_frame = matches!(
        head.kind,
        Kind::Data | Kind::Headers | Kind::Continuation | Kind::RstStream
    );
    if stream_frame && head.stream_id.0.is_multiple_of(2) {
        return false;
    }
    if head.kind == Kind::Data && len == 0 && !f.is_end_stream() {
        return false;
    }
    let u32_at = |i: usize| {
        payload
            .get(i..i + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let pad = usize::from(
        matches!(head.kind, Kind::Data | Kind::Headers | Kind::PushPromise) && f.is_padded(),
    );
    if pad == 1 {
        if len == 0 {
            return false;
        }
        if let Some(&p) = payload.first() {
            let fields = match head.kind {
                Kind::Headers if f.is_priority() => 5,
                Kind::PushPromise => 4,
                _ => 0,
            };
            if usize::from(p) + 1 + fields > len {
                return false;
            }
        }
    }
    match head.kind {
        Kind::Headers if f.is_priority() => {
            len >= pad + 5 && u32_at(pad).is_none_or(|d| d & 0x7fff_ffff != head.stream_id.0)
        }
        Kind::Priority => u32_at(0).is_none_or(|d| d & 0x7fff_ffff != head.stream_id.0),
        Kind::PushPromise => {
            len >= pad + 4
                && u32_at(pad).is_none_or(|p| {
                    let id = p & 0x7fff_ffff;
                    id != 0 && id.is_multiple_of(2)
                })
        }
        Kind::RstStream => u32_at(0).is_none_or(|c| c <= 0xd),
        Kind::GoAway => len >= 8 && u32_at(4).is_none_or(|c| c <= 0xd),
        Kind::WindowUpdate => u32_at(0).is_none_or(|i| i != 0 && i & 0x8000_0000 == 0),
        Kind::Settings => payload.chunks_exact(6).all(|e| {
            let v = u32::from_be_bytes([e[2], e[3], e[4], e[5]]);
            match u16::from_be_bytes([e[0], e[1]]) {
                0x2 | 0x8 | 0x9 => v <= 1,
                0x4 => v <= 0x7fff_ffff,
                0x5 => (1 << 14..1 << 24).contains(&v),
                _ => true,
            }
        }),
        _ => true,
    }
}

/// What [`Scanner::scan`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// The client connection preface ends at this offset (frames follow it).
    Preface(usize),
    /// An HTTP/1.1 response (`101 Switching Protocols` of an h2c upgrade, or a proxy's answer
    /// to CONNECT) at the start of the stream ends at this offset, and a frame starts there.
    Http1 { end: usize, upgrade: bool },
    /// A proven frame boundary at this offset.
    Frames(usize),
    /// A stream held from its first byte that cannot be HTTP/2: it starts with none of the
    /// client preface, an HTTP/1.x request or response, or a frame head.
    NotHttp2,
    /// Not yet: more bytes may decide.
    Wait,
}

/// Most undecided offsets remembered while scanning; beyond that, new ones are not followed
/// (reported through [`Scanner::candidates_full`]).
pub(crate) const MAX_CANDIDATES: usize = 4096;
/// Segment starts remembered (for the segment-aligned proofs).
const MAX_SEGMENT_STARTS: usize = 4096;
/// The longest HTTP/1.1 response head looked for before frames.
const MAX_HTTP1_HEAD: usize = 64 * 1024;

/// Incremental search for the first frame boundary in a growing buffer. Each offset is looked
/// at when its bytes arrive; offsets whose chain of headers runs past the end of the buffer stay
/// candidates, and are looked at again only once the buffer reaches the point where their chain
/// stopped. Offsets proven not to be boundaries are never looked at again.
#[derive(Debug, Default)]
pub(crate) struct Scanner {
    /// Offsets below this one have been looked at.
    next: usize,
    /// Undecided offsets, keyed by the buffer length at which to follow them again, with
    /// whether a segment starts there.
    candidates: BinaryHeap<Reverse<(usize, usize, bool)>>,
    /// A candidate whose chain ended exactly at a buffer length: (offset, length).
    exact: Option<(usize, usize)>,
    /// A candidate starting at a segment start whose chain's last frame runs past the end of
    /// the buffer after at least one whole frame: (offset, length).
    past_end: Option<(usize, usize)>,
    /// Offsets where a segment (a `data` chunk) began, ascending.
    segment_starts: VecDeque<usize>,
    /// The preface search resumes here.
    preface_from: usize,
    /// The HTTP/1.1 head search: `Some(from)` while the stream may start with one.
    http1_from: Option<usize>,
    http1_done: bool,
    /// A candidate or segment start was not remembered because the list was full.
    pub(crate) candidates_full: bool,
    /// Bytes and offsets looked at so far (for the linear-time test).
    pub(crate) steps: u64,
}

impl Scanner {
    /// Notes that a segment's bytes begin at `at` in the buffer.
    pub(crate) fn segment_start(&mut self, at: usize) {
        if self.segment_starts.back().is_some_and(|&b| b >= at) {
            return;
        }
        // Offsets below `next` were looked at already: their starts are not needed any more.
        while self.segment_starts.front().is_some_and(|&s| s < self.next) {
            self.segment_starts.pop_front();
        }
        if self.segment_starts.len() < MAX_SEGMENT_STARTS {
            self.segment_starts.push_back(at);
        } else {
            self.candidates_full = true;
        }
    }

    /// Whether a segment starts at `at`, an offset not looked at before (segment starts below
    /// the scan position are forgotten; candidates keep their own flag).
    fn is_segment_start(&mut self, at: usize) -> bool {
        while self.segment_starts.front().is_some_and(|&s| s < at) {
            self.segment_starts.pop_front();
        }
        self.segment_starts.front() == Some(&at)
    }

    /// `at_start`: the buffer holds the stream from its first byte (the TCP handshake was seen),
    /// so a boundary at offset 0 needs less proof: RFC 9113 §3.4 makes the first frame of
    /// either side a SETTINGS frame.
    /// `closing`: no more bytes will come before a gap or the end of the connection; accept a
    /// shorter proof that ends there.
    pub(crate) fn scan(
        &mut self,
        buf: &[u8],
        at_start: bool,
        closing: bool,
        max_frame: u32,
    ) -> Found {
        if let Some(found) = self.preface(buf, at_start) {
            return found;
        }
        // An HTTP/1.1 answer before frames: at the stream's start (upgrade or CONNECT), or, on a
        // capture without the handshake, a `101 Switching Protocols` at the first captured byte.
        if at_start || !self.http1_done {
            if let Some(found) = self.http1(buf, max_frame) {
                match found {
                    Found::Http1 { upgrade: false, .. } if !at_start => {}
                    f => return f,
                }
            }
        }
        if at_start && self.next == 0 {
            if let Some(h) = head_at(buf, 0) {
                // Flags a SETTINGS does not define are ignored by its receiver (RFC 9113 §4.1),
                // here too: tshark counts such a server's frames (decision 469).
                if h.kind == h2_frame_parser::Kind::Settings
                    && !h.flags.is_ack()
                    && h.stream_id.0 == 0
                    && !h.reserved_bit
                    && h.length.is_multiple_of(6)
                    && h.length <= max_frame
                {
                    return Found::Frames(0);
                }
            }
        }
        if at_start {
            // A stream held from its start is HTTP/2 by the client preface (RFC 9113 §3.4),
            // an HTTP/1.1 Upgrade or CONNECT before it (RFC 9113 §3.2, RFC 9110 §9.3.6), or the
            // server's SETTINGS (§3.4), each found above; or, once the other side proved HTTP/2,
            // by a frame at its first byte (the ledger checks that). Never by a run of
            // plausible heads further in: other protocols' bytes give those by chance.
            return if could_start_http2(buf, max_frame) {
                Found::Wait
            } else {
                Found::NotHttp2
            };
        }
        let len = buf.len();
        let mut best: Option<usize> = None;
        // Old candidates whose chain can now be followed further.
        let mut again = Vec::new();
        while let Some(&Reverse((need, at, seg))) = self.candidates.peek() {
            if need > len {
                break;
            }
            self.candidates.pop();
            again.push((at, seg));
        }
        for (at, seg) in again {
            if let Some(p) = self.look(buf, at, seg, max_frame) {
                best = Some(best.map_or(p, |b| b.min(p)));
            }
        }
        // Then the new bytes.
        if best.is_none() && len >= HEAD_LEN {
            let last = len - HEAD_LEN;
            while self.next <= last {
                let at = self.next;
                self.next += 1;
                self.steps += 1;
                // Most offsets of foreign bytes fail on the type, the length or the reserved
                // bit: reject those without parsing.
                let b = &buf[at..at + HEAD_LEN];
                if b[3] > 9
                    || u32::from_be_bytes([0, b[0], b[1], b[2]]) > max_frame
                    || b[5] & 0x80 != 0
                {
                    continue;
                }
                let seg = self.is_segment_start(at);
                if let Some(p) = self.look(buf, at, seg, max_frame) {
                    best = Some(p);
                    break;
                }
            }
        }
        if best.is_none() && closing {
            best = [self.exact, self.past_end]
                .into_iter()
                .flatten()
                .filter(|&(_, l)| l == len)
                .map(|(a, _)| a)
                .min();
        }
        match best {
            Some(at) => Found::Frames(self.earliest_into(buf, at, max_frame)),
            None => Found::Wait,
        }
    }

    /// Follows the chain at `at`: `Some(at)` when that proves a boundary; otherwise keeps `at`
    /// as a candidate unless it is broken.
    fn look(&mut self, buf: &[u8], at: usize, seg: bool, max_frame: u32) -> Option<usize> {
        let len = buf.len();
        let (c, need, in_payload) = follow(buf, at, CHAIN_PROOF, max_frame);
        self.steps += c.heads() as u64 + 1;
        match c {
            Chain::Broken(_) => return None,
            _ if c.heads() >= CHAIN_PROOF => return Some(at),
            Chain::Exact(n) if n >= 1 => {
                // A chain from a segment start to a segment end.
                if seg {
                    return Some(at);
                }
                self.exact = Some(earlier(self.exact, at, len));
            }
            Chain::Short(n) if n >= 2 && in_payload && seg => {
                self.past_end = Some(earlier(self.past_end, at, len));
            }
            _ => {}
        }
        if self.candidates.len() < MAX_CANDIDATES {
            self.candidates.push(Reverse((need, at, seg)));
        } else {
            self.candidates_full = true;
        }
        None
    }

    /// A chain from an earlier candidate that lands exactly on the proven boundary `at` is one
    /// more link of it: the earliest such candidate is the boundary.
    fn earliest_into(&self, buf: &[u8], at: usize, max_frame: u32) -> usize {
        let head = &buf[..at];
        self.candidates
            .iter()
            .map(|r| r.0 .1)
            .filter(|&c| {
                c < at
                    && matches!(chain(head, c, CHAIN_PROOF, max_frame), Chain::Exact(n) if n >= 1)
            })
            .min()
            .unwrap_or(at)
    }

    /// An h2c upgrade or prior-knowledge client: the preface, at the start or after an
    /// HTTP/1.1 Upgrade or CONNECT request. The search resumes where the last one stopped.
    fn preface(&mut self, buf: &[u8], at_start: bool) -> Option<Found> {
        if at_start && buf.len() < PREFACE.len() && PREFACE.starts_with(buf) {
            return Some(Found::Wait);
        }
        let from = self.preface_from.min(buf.len());
        self.steps += (buf.len() - from) as u64;
        let found = find(&buf[from..], PREFACE).map(|i| Found::Preface(from + i + PREFACE.len()));
        self.preface_from = buf.len().saturating_sub(PREFACE.len() - 1);
        found
    }

    /// A stream that starts with an HTTP/1.1 response head followed by a frame.
    fn http1(&mut self, buf: &[u8], max_frame: u32) -> Option<Found> {
        const HTTP1: &[u8] = b"HTTP/1.";
        if self.http1_done {
            return None;
        }
        let n = buf.len().min(HTTP1.len());
        if buf[..n] != HTTP1[..n] {
            self.http1_done = true;
            return None;
        }
        if n < HTTP1.len() {
            return Some(Found::Wait);
        }
        let from = self.http1_from.unwrap_or(0).min(buf.len());
        let window = &buf[..buf.len().min(MAX_HTTP1_HEAD)];
        self.steps += window.len().saturating_sub(from) as u64;
        let end = match find(&window[from.min(window.len())..], b"\r\n\r\n") {
            Some(i) => from + i + 4,
            None => {
                if buf.len() >= MAX_HTTP1_HEAD {
                    self.http1_done = true;
                    return None;
                }
                self.http1_from = Some(buf.len().saturating_sub(3));
                return None;
            }
        };
        let Some(h) = head_at(buf, end) else {
            self.http1_from = Some(end - 4);
            return None;
        };
        self.http1_done = true;
        if !h.plausible(max_frame) {
            return None;
        }
        let upgrade = buf.get(8..13) == Some(b" 101 ");
        Some(Found::Http1 { end, upgrade })
    }
}

/// Whether a stream whose first bytes are `buf` may still turn out to be HTTP/2: they are a
/// prefix of the client preface, of an HTTP/1.x request line (a method of upper-case letters,
/// then a space) or response (`HTTP/1.`), or a plausible frame head (a server's first frame,
/// proven once the client's preface is seen).
fn could_start_http2(buf: &[u8], max_frame: u32) -> bool {
    const HTTP1: &[u8] = b"HTTP/1.";
    /// The longest method looked for (RFC 9110 methods are at most 7 letters; WebDAV's
    /// longest, `VERSION-CONTROL`, has a hyphen; extension methods are rare and short).
    const MAX_METHOD: usize = 24;
    let n = buf.len();
    if PREFACE.starts_with(&buf[..n.min(PREFACE.len())])
        || HTTP1.starts_with(&buf[..n.min(HTTP1.len())])
    {
        return true;
    }
    let method = buf
        .iter()
        .take(MAX_METHOD + 1)
        .position(|&b| !(b.is_ascii_uppercase() || b == b'-' || b == b'_'));
    let request = match method {
        None => n <= MAX_METHOD,
        Some(i) => i > 0 && buf[i] == b' ',
    };
    if request {
        return true;
    }
    match head_at(buf, 0) {
        Some(h) => h.plausible(max_frame),
        // A head in the making: its length and type, once there, must fit.
        None => {
            !(n >= 3 && u32::from_be_bytes([0, buf[0], buf[1], buf[2]]) > max_frame
                || n >= 4 && buf[3] > 9)
        }
    }
}

/// The earliest offset recorded for buffer length `len` (an older length no longer counts).
fn earlier(old: Option<(usize, usize)>, at: usize, len: usize) -> (usize, usize) {
    match old {
        Some((a, l)) if l == len => (a.min(at), len),
        _ => (at, len),
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if hay.len() < needle.len() {
        return None;
    }
    let first = needle[0];
    let mut i = 0;
    while i + needle.len() <= hay.len() {
        match hay[i..hay.len() - needle.len() + 1]
            .iter()
            .position(|&b| b == first)
        {
            None => return None,
            Some(p) => {
                i += p;
                if &hay[i..i + needle.len()] == needle {
                    return Some(i);
                }
                i += 1;
            }
        }
    }
    None
}
#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut v = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        v.extend_from_slice(&stream.to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    /// Feeds `buf` in `seg`-byte segments; returns the scanner's steps per byte.
    fn steps_per_byte(buf: &[u8], seg: usize, at_start: bool) -> f64 {
        let mut s = Scanner::default();
        let mut have = 0;
        while have < buf.len() {
            s.segment_start(have);
            have = (have + seg).min(buf.len());
            let found = s.scan(&buf[..have], at_start, false, 16384);
            // From its start, bytes no HTTP/2 stream begins with are refused at once.
            if at_start && found == Found::NotHttp2 {
                break;
            }
            assert_eq!(found, Found::Wait);
        }
        s.steps as f64 / buf.len() as f64
    }

    #[test]
    fn detection_is_linear_on_garbage() {
        // 1 MiB of `P` (the preface's first byte) in 4-byte segments: the preface search used
        // to rescan the whole buffer on every segment (137 s in the issue).
        // Linear: each byte is searched again only while it may still start the preface (23
        // bytes back) and looked at once as an offset; quadratic was ~2^19 steps per byte.
        let p = vec![b'P'; 1 << 20];
        assert!(steps_per_byte(&p, 4, false) < 16.0);
        assert!(steps_per_byte(&p, 4, true) < 16.0);
        // HTTP/1.1 text whose head never ends, at the start of a stream.
        let mut h = b"HTTP/1.1 200 OK\r\n".to_vec();
        h.resize(1 << 20, b'a');
        assert!(steps_per_byte(&h, 4, true) < 16.0);
        // Random bytes (a fixed LCG): some offsets look like heads and stay candidates.
        let mut x = 1u64;
        let v: Vec<u8> = (0..1 << 20)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 56) as u8
            })
            .collect();
        assert!(steps_per_byte(&v, 4, false) < 16.0);
        assert!(steps_per_byte(&v, 1448, false) < 16.0);
    }

    #[test]
    fn segment_that_is_exactly_a_frame_is_a_boundary() {
        let mut s = Scanner::default();
        s.segment_start(0);
        let buf = frame(0, 0, 3, &[7; 20]);
        assert_eq!(s.scan(&buf, false, false, 16384), Found::Frames(0));
    }

    #[test]
    fn whole_frame_then_a_frame_past_the_end_at_close() {
        let mut buf = frame(1, 4, 1, &[0x88]);
        let mut data = frame(0, 0, 1, &[0; 100]);
        data.truncate(40);
        buf.extend(data);
        let mut s = Scanner::default();
        s.segment_start(0);
        assert_eq!(s.scan(&buf, false, false, 16384), Found::Wait);
        assert_eq!(s.scan(&buf, false, true, 16384), Found::Frames(0));
        // Not from an offset where no segment starts.
        let mut off = vec![1, 2, 3];
        off.extend(&buf);
        let mut s = Scanner::default();
        s.segment_start(0);
        assert_eq!(s.scan(&off, false, true, 16384), Found::Wait);
    }

    #[test]
    fn http1_upgrade_answer_then_frames() {
        let mut buf = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n".to_vec();
        let end = buf.len();
        let mut s = Scanner::default();
        assert_eq!(s.scan(&buf, true, false, 16384), Found::Wait);
        buf.extend(frame(4, 0, 0, &[]));
        assert_eq!(
            s.scan(&buf, true, false, 16384),
            Found::Http1 { end, upgrade: true }
        );
    }

    #[test]
    fn preface_found_after_upgrade_request() {
        let mut buf = b"GET / HTTP/1.1\r\nUpgrade: h2c\r\n\r\n".to_vec();
        buf.extend_from_slice(PREFACE);
        let n = buf.len();
        assert_eq!(
            Scanner::default().scan(&buf, true, false, 16384),
            Found::Preface(n)
        );
    }

    #[test]
    fn mid_frame_start_needs_three_chained_heads() {
        let mut buf = vec![0xAB; 5]; // tail of a frame we never saw the start of
        buf.extend(frame(0, 0, 1, &[1; 20]));
        buf.extend(frame(8, 0, 0, &[0, 0, 1, 0]));
        let mut s = Scanner::default();
        assert_eq!(s.scan(&buf, false, false, 16384), Found::Wait);
        buf.extend(frame(6, 0, 0, &[7; 8]));
        assert_eq!(s.scan(&buf, false, false, 16384), Found::Frames(5));
    }

    #[test]
    fn garbage_is_never_a_boundary() {
        let buf: Vec<u8> = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".repeat(50);
        assert_eq!(
            Scanner::default().scan(&buf, true, true, 16384),
            Found::Wait
        );
    }

    /// From its start a stream is HTTP/2 by the preface, an HTTP/1.1 prelude or a SETTINGS
    /// frame first, never by plausible heads further in; bytes that start none of those are
    /// refused at once.
    #[test]
    fn a_stream_held_from_its_start_is_never_guessed() {
        // Three chained plausible heads after 5 bytes: proof mid-stream, nothing at the start.
        let mut buf = vec![0xAB; 5];
        buf.extend(frame(0, 0, 1, &[1; 20]));
        buf.extend(frame(8, 0, 0, &[0, 0, 1, 0]));
        buf.extend(frame(6, 0, 0, &[7; 8]));
        assert_eq!(
            Scanner::default().scan(&buf, false, false, 16384),
            Found::Frames(5)
        );
        assert_eq!(
            Scanner::default().scan(&buf, true, true, 16384),
            Found::NotHttp2
        );
        // What real programs send first (PostgreSQL's SSLRequest then startup, Redis, SSH, a TLS
        // ClientHello, MongoDB's OP_MSG header, SMB2 over NetBIOS).
        for first in [
            &b"\x00\x00\x00\x08\x04\xd2\x16\x2f\x00\x00\x00\x54\x00\x03"[..],
            b"*1\r\n$4\r\nPING\r\n",
            b"SSH-2.0-OpenSSH_9.2p1\r\n",
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
            b"\x3d\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\xdd\x07\x00\x00",
            b"\x00\x00\x00\x66\xfeSMB\x40\x00",
        ] {
            assert_eq!(
                Scanner::default().scan(first, true, false, 16384),
                Found::NotHttp2,
                "{first:?}"
            );
        }
        // Still possible: a preface or request line in the making, a frame head.
        for first in [
            &b"PRI * HT"[..],
            b"GET",
            b"OPTIONS * HTTP/1.1\r\n",
            b"HTTP/1",
        ] {
            assert_eq!(
                Scanner::default().scan(first, true, false, 16384),
                Found::Wait,
                "{first:?}"
            );
        }
        assert_eq!(
            Scanner::default().scan(&frame(8, 0, 1, &[0, 0, 1, 0]), true, false, 16384),
            Found::Wait
        );
    }

    #[test]
    fn server_first_settings_is_enough_at_start() {
        let buf = frame(4, 0, 0, &[0, 3, 0, 0, 0, 100]);
        assert_eq!(
            Scanner::default().scan(&buf, true, false, 16384),
            Found::Frames(0)
        );
        // Flags a SETTINGS does not define are ignored (RFC 9113 §4.1): still the server's
        // first frame (decision 469); an ACK first is not.
        let buf = frame(4, 0xfe, 0, &[0, 3, 0, 0, 0, 100]);
        assert_eq!(
            Scanner::default().scan(&buf, true, false, 16384),
            Found::Frames(0)
        );
        assert_ne!(
            Scanner::default().scan(&frame(4, 0xff, 0, &[]), true, false, 16384),
            Found::Frames(0)
        );
    }

    #[test]
    fn closing_accepts_a_short_exact_chain() {
        let mut buf = vec![1, 2, 3];
        buf.extend(frame(6, 1, 0, &[7; 8]));
        assert_eq!(
            Scanner::default().scan(&buf, false, false, 16384),
            Found::Wait
        );
        assert_eq!(
            Scanner::default().scan(&buf, false, true, 16384),
            Found::Frames(3)
        );
    }
}
