//! What the ledger feeds: each frame as a [`FrameEvent`], to an [`Observer`].

use super::*;

/// One frame, as the ledger saw it.
pub struct FrameEvent<'a> {
    /// The connection.
    pub conn: ConnId,
    /// The TCP direction that carried the frame.
    pub dir: Dir,
    /// The side that sent the frame, as known when it was seen (see docs/ledger.md).
    pub side: Side,
    /// Time of the write that carried the frame's last byte.
    pub ts: Nanos,
    /// Index (per connection and direction) of the write that carried the frame's last byte;
    /// [`NO_WRITE`] when that byte was lost in a gap (the frame is counted from its head).
    pub write: u64,
    /// The frame's 9-byte header.
    pub head: Head,
    /// The ledger row it counts in (HEADERS vs TRAILERS, PING vs PING_ACK, ...).
    pub class: FrameClass,
    /// The decoded frame; `None` for frames that did not load (or were cut by a gap) and for
    /// DATA unless an observer asked for that stream's payload ([`Observer::wants_data`]): then
    /// `Frame::Data` with the payload, padding removed, and the Pad Length.
    pub frame: Option<&'a Frame<'a>>,
    /// On the frame that completes a header block: the decoded fields.
    pub headers: Option<&'a HeaderList>,
    /// On the frame that completes a header block that was decoded: its sizes.
    pub block: Option<BlockSize>,
    /// The sender's address.
    pub src: SocketAddr,
    /// The receiver's address.
    pub dst: SocketAddr,
    /// The frames of some direction of this connection did not start at the first byte of its
    /// TCP stream: the capture started mid-connection, or other bytes came first (an HTTP/1.1
    /// Upgrade or CONNECT). Gaps later on are told by [`Observer::gap`].
    pub late_start: bool,
    /// The capture lacks the start of some direction of this connection (no SYN, or framing
    /// found mid-stream): its HPACK references and windows may predate the capture.
    pub mid_stream: bool,
    /// DATA without PADDED whose payload spanned writes: [`Observer::data_head`] was asked at
    /// its head whether to keep the payload (an answer of no leaves [`FrameEvent::frame`]
    /// `None` even if [`Observer::wants_data`] says yes at its end).
    pub spanned: bool,
    /// DATA with PADDED whose whole payload was seen: its Pad Length octet and padding, so
    /// that the data it carries (`head.length - padding` octets) is known whether or not
    /// [`FrameEvent::frame`] was loaded; 0 otherwise.
    pub padding: u32,
    /// A PING or PING ACK: the connection model's match of it (the one PING matcher; see
    /// [`PingFact`](crate::PingFact)).
    pub ping: crate::PingFact,
    /// The step this frame made in its stream's life, as the connection model follows it (the
    /// one place a stream's opening, END_STREAM and reset are derived; see
    /// [`StreamStep`](crate::StreamStep)). A header block's step is on its opening HEADERS,
    /// where the model takes it; a reader of whole blocks reads [`FrameEvent::block_step`].
    pub stream: crate::StreamStep,
    /// On the frame that ends a header block (a HEADERS or PUSH_PROMISE with END_HEADERS, or
    /// the CONTINUATION with END_HEADERS that ends one), decoded or not: what the frame that
    /// opened the block was (itself, for a block in one frame). `None` on every other frame,
    /// a HEADERS without END_HEADERS included (decision 454).
    pub opened: Option<BlockOpen>,
}

/// The frame that opened a header block, as the ledger classified it, told on the frame that
/// ends the block ([`FrameEvent::opened`]): a block split over CONTINUATION frames is one block
/// to every reader (RFC 9113 §4.3, §6.10), read where its fields are (decision 454).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockOpen {
    /// The opening frame's ledger row: [`FrameClass::Headers`], [`FrameClass::Trailers`] or
    /// [`FrameClass::PushPromise`].
    pub class: FrameClass,
    /// The step the opening frame made in its stream's life ([`FrameEvent::stream`] there).
    pub stream: crate::StreamStep,
    /// The block ends its sender's half of the stream: END_STREAM on its opening HEADERS,
    /// which takes effect with the block (RFC 9113 §8.1), by the rule of
    /// [`FrameEvent::ends_half`].
    pub ends_half: bool,
}

impl FrameEvent<'_> {
    /// Whether this frame ends its sender's half of the stream (RFC 9113 §5.1), the one answer
    /// for the consumers that ask (decision 448): its step is [`StreamStep::HalfClosed`] or
    /// [`StreamStep::Ended`]; or, on a stream the model does not hold open
    /// ([`StreamStep::Untracked`]: closed already, a block crossing a RST_STREAM, closed and
    /// forgotten, beyond [`MAX_STREAMS`], opened before the capture), a DATA or HEADERS frame
    /// with END_STREAM: its sender closed its half as it saw the stream, which the step cannot
    /// say for a stream no longer followed. Not a second END_STREAM of a half the model holds
    /// closed (step [`StreamStep::None`]: its sender may send nothing more there, §5.1
    /// "half-closed (local)"). A header block ends the half where the block ends (§8.1: the
    /// END_STREAM of a HEADERS followed by CONTINUATION takes effect with the block; END_STREAM
    /// is not defined on a CONTINUATION, §6.10): the answer for a HEADERS is on the frame that
    /// ends its block, [`BlockOpen::ends_half`], and false on a HEADERS without END_HEADERS
    /// (decision 454).
    #[inline]
    pub fn ends_half(&self) -> bool {
        match self.head.kind {
            Kind::Headers | Kind::PushPromise | Kind::Continuation => {
                self.opened.is_some_and(|b| b.ends_half)
            }
            _ => ends_half(self.stream, &self.head),
        }
    }

    /// The ledger row of the frame that opened the header block this frame ends
    /// ([`BlockOpen::class`]); `None` on a frame that ends no header block. A reader of a
    /// block's fields matches this, not [`FrameEvent::class`], which stays the frame's own row
    /// (a CONTINUATION is counted as one).
    #[inline]
    pub fn block_class(&self) -> Option<FrameClass> {
        self.opened.map(|b| b.class)
    }

    /// The step in its stream's life as a reader of whole header blocks takes it: on a frame
    /// of a header block (HEADERS, PUSH_PROMISE, CONTINUATION) the opening frame's step where
    /// the block ends and [`StreamStep::None`] before; on any other frame its own
    /// [`FrameEvent::stream`] (decision 454).
    #[inline]
    pub fn block_step(&self) -> StreamStep {
        match self.head.kind {
            Kind::Headers | Kind::PushPromise | Kind::Continuation => {
                self.opened.map_or(StreamStep::None, |b| b.stream)
            }
            _ => self.stream,
        }
    }
}

/// [`FrameEvent::ends_half`] of one frame alone, by its step and head: the step
/// [`StreamStep::HalfClosed`] or [`StreamStep::Ended`], or END_STREAM on a DATA or HEADERS of a
/// stream not followed ([`StreamStep::Untracked`]). The ledger gives a HEADERS' answer to the
/// frame that ends its block ([`BlockOpen::ends_half`]).
#[inline]
pub(super) fn ends_half(stream: StreamStep, head: &Head) -> bool {
    match stream {
        StreamStep::HalfClosed | StreamStep::Ended => true,
        StreamStep::Untracked => {
            matches!(head.kind, Kind::Data | Kind::Headers) && head.flags.is_end_stream()
        }
        _ => false,
    }
}

/// A decoded header block's sizes: what a header block costs on the wire and what it expands to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockSize {
    /// Bytes of the block (HEADERS or PUSH_PROMISE fragment and its CONTINUATIONs, padding and
    /// priority fields excluded).
    pub encoded: u32,
    /// The header list size (RFC 9113 §6.5.2): every field's name and value length plus 32.
    pub list: u64,
}

/// Which decoded header fields an observer reads. Decoding always runs (the HPACK table must
/// follow the peer); copying fields out costs time, so an observer asks only for what it reads.
#[derive(Clone, Copy, Debug)]
pub enum HeaderNeed {
    /// No field.
    None,
    /// A block's first field (it tells a request from a response), and the fields whose
    /// name the function accepts; [`crate::HeaderList::get`] of another name is a bug.
    Some(fn(&[u8]) -> bool),
    /// Every field.
    All,
}

impl HeaderNeed {
    /// What two observers need together (two different name filters: every field).
    pub fn and(self, other: HeaderNeed) -> HeaderNeed {
        match (self, other) {
            (HeaderNeed::None, x) | (x, HeaderNeed::None) => x,
            (HeaderNeed::Some(a), HeaderNeed::Some(b)) if std::ptr::fn_addr_eq(a, b) => self,
            _ => HeaderNeed::All,
        }
    }
}

/// What the ledger feeds. Every method has an empty default.
pub trait Observer {
    /// Which fields of [`FrameEvent::headers`] are wanted (see [`HeaderNeed`]).
    fn header_need(&self) -> HeaderNeed {
        HeaderNeed::All
    }
    /// Whether the payload of DATA frames on this stream is wanted (asked at each DATA frame's
    /// head and end). Frames split across writes are then copied, up to the frame size limit.
    fn wants_data(&self, _conn: ConnId, _stream: StreamId) -> bool {
        false
    }
    /// [`Observer::wants_data`] asked at the head of a DATA frame of `dir` (without PADDED)
    /// whose payload is still to come: whether to keep the payload as it arrives. Only an
    /// observer that answers on another thread needs the direction (decision 261).
    fn data_head(&self, conn: ConnId, _dir: Dir, stream: StreamId) -> bool {
        self.wants_data(conn, stream)
    }
    /// Bytes of `dir` were lost; `framing_lost`: frames may be missing entirely from here on
    /// (otherwise the gap fell inside one frame, which arrives without its payload).
    fn gap(&mut self, _conn: ConnId, _dir: Dir, _ts: Nanos, _framing_lost: bool) {}
    /// A new TCP connection (HTTP/2 or not yet known).
    fn open(&mut self, _meta: &ConnMeta) {}
    /// A write (TCP segment with new payload) of `dir`, before the frames that end in it.
    fn write(&mut self, _conn: ConnId, _dir: Dir, _w: &Write) {}
    /// A frame, once its last byte was seen (or its head, when a gap swallowed the rest).
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
    fn header_need(&self) -> HeaderNeed {
        HeaderNeed::None
    }
}

impl<A: Observer, B: Observer> Observer for (A, B) {
    fn header_need(&self) -> HeaderNeed {
        self.0.header_need().and(self.1.header_need())
    }
    fn wants_data(&self, conn: ConnId, stream: StreamId) -> bool {
        self.0.wants_data(conn, stream) || self.1.wants_data(conn, stream)
    }
    fn data_head(&self, conn: ConnId, dir: Dir, stream: StreamId) -> bool {
        // Both are asked, as at the frame's end.
        let a = self.0.data_head(conn, dir, stream);
        self.1.data_head(conn, dir, stream) || a
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
    fn header_need(&self) -> HeaderNeed {
        (**self).header_need()
    }
    fn wants_data(&self, conn: ConnId, stream: StreamId) -> bool {
        (**self).wants_data(conn, stream)
    }
    fn data_head(&self, conn: ConnId, dir: Dir, stream: StreamId) -> bool {
        (**self).data_head(conn, dir, stream)
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

impl<O: Observer> Observer for Vec<O> {
    fn header_need(&self) -> HeaderNeed {
        self.iter()
            .fold(HeaderNeed::None, |n, o| n.and(o.header_need()))
    }
    fn wants_data(&self, conn: ConnId, stream: StreamId) -> bool {
        self.iter().any(|o| o.wants_data(conn, stream))
    }
    fn data_head(&self, conn: ConnId, dir: Dir, stream: StreamId) -> bool {
        // Every one is asked (one may record the question), as at the frame's end.
        let mut any = false;
        for o in self {
            any |= o.data_head(conn, dir, stream);
        }
        any
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

#[cfg(test)]
mod tests {
    use super::{BlockOpen, FrameEvent, Observer};
    use crate::ledger::Ledger;
    use crate::model::{FrameClass, StreamStep};
    use crate::testkit::{fr, lit, settings, settings_ack, PREFACE};
    use h2_frame_parser::Kind;
    use h2ledger_tcp::{ConnId, Dir, Sink, Write};

    /// What a frame of a stream told: its kind, row, block opener, `ends_half`, `block_step`,
    /// and whether fields came with it.
    type Told = (Kind, FrameClass, Option<BlockOpen>, bool, StreamStep, bool);

    #[derive(Default)]
    struct Seen(Vec<Told>);

    impl Observer for Seen {
        fn frame(&mut self, ev: &FrameEvent<'_>) {
            if ev.head.stream_id.0 != 0 {
                let e = (ev.ends_half(), ev.block_step(), ev.headers.is_some());
                self.0
                    .push((ev.head.kind, ev.class, ev.opened, e.0, e.1, e.2));
            }
        }
    }

    /// Decision 454: a header block's facts are on the frame that ends it. A response whose
    /// HEADERS carries END_STREAM and whose CONTINUATION ends the block: the HEADERS is counted
    /// as HEADERS and tells nothing of the block; the CONTINUATION, counted as CONTINUATION,
    /// carries the fields, the opener's row and step, and ends the server's half. A block whose
    /// HEADERS could not be read (PADDED with a pad longer than the frame) still ends at its
    /// CONTINUATION, undecoded, with no "without a header block" warning.
    #[test]
    fn a_block_is_told_where_it_ends() {
        let mut l = Ledger::new(Seen::default());
        l.open(&crate::testkit::meta(Some(Dir::Fwd)));
        let mut i = [0u64; 2];
        let mut send = |l: &mut Ledger<Seen>, dir: Dir, b: &[u8]| {
            let d = usize::from(dir == Dir::Rev);
            let w = Write {
                index: i[d],
                ts: 1_000 + i[d] as i64,
                len: b.len() as u32,
            };
            i[d] += 1;
            l.write(ConnId(0), dir, &w);
            l.data(ConnId(0), dir, &w, b);
        };
        send(&mut l, Dir::Fwd, &[PREFACE, &settings(&[])].concat());
        send(&mut l, Dir::Rev, &[settings(&[]), settings_ack()].concat());
        send(&mut l, Dir::Fwd, &settings_ack());
        let get = |s: u32| fr(1, 5, s, &[0x82, 0x86, 0x84]); // GET / (END_STREAM, END_HEADERS)
        send(&mut l, Dir::Fwd, &get(1));
        send(&mut l, Dir::Rev, &fr(1, 1, 1, &[0x88]));
        send(&mut l, Dir::Rev, &fr(9, 4, 1, &lit("grpc-status", "0")));
        send(&mut l, Dir::Fwd, &get(3));
        send(&mut l, Dir::Rev, &fr(1, 1 | 8, 3, &[10, 0x88]));
        send(&mut l, Dir::Rev, &fr(9, 4, 3, &[0x88]));
        let open = |class, stream| {
            Some(BlockOpen {
                class,
                stream,
                ends_half: true,
            })
        };
        let (h, k) = (FrameClass::Headers, FrameClass::Continuation);
        let (half, ended, none) = (StreamStep::HalfClosed, StreamStep::Ended, StreamStep::None);
        assert_eq!(
            l.observer.0,
            vec![
                (Kind::Headers, h, open(h, half), true, half, true),
                (Kind::Headers, h, None, false, none, false),
                (Kind::Continuation, k, open(h, ended), true, ended, true),
                (Kind::Headers, h, open(h, half), true, half, true),
                (Kind::Headers, h, None, false, none, false),
                (Kind::Continuation, k, open(h, ended), true, ended, false),
            ]
        );
        let w = &l.warnings.counts;
        assert_eq!(w.get("malformed-frame"), Some(&1), "{w:?}");
        assert_eq!(w.get("header-block"), None, "{w:?}");
    }
}
