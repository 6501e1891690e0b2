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
    /// [`StreamStep`](crate::StreamStep)).
    pub stream: crate::StreamStep,
}

impl FrameEvent<'_> {
    /// Whether this frame ends its sender's half of the stream (RFC 9113 §5.1), the one answer
    /// for the consumers that ask (decision 448): its step is [`StreamStep::HalfClosed`] or
    /// [`StreamStep::Ended`]; or, on a stream the model does not hold open
    /// ([`StreamStep::Untracked`]: closed already, a block crossing a RST_STREAM, closed and
    /// forgotten, beyond [`MAX_STREAMS`], opened before the capture), a DATA or HEADERS frame
    /// with END_STREAM: its sender closed its half as it saw the stream, which the step cannot
    /// say for a stream no longer followed. Never a CONTINUATION (END_STREAM is not defined on
    /// it, §6.10), nor a second END_STREAM of a half the model holds closed (step
    /// [`StreamStep::None`]: its sender may send nothing more there, §5.1 "half-closed
    /// (local)").
    #[inline]
    pub fn ends_half(&self) -> bool {
        match self.stream {
            StreamStep::HalfClosed | StreamStep::Ended => true,
            StreamStep::Untracked => {
                matches!(self.head.kind, Kind::Data | Kind::Headers)
                    && self.head.flags.is_end_stream()
            }
            _ => false,
        }
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
