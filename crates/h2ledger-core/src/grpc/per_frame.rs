//! The messages each DATA frame completes (`frames --messages`), from the one tracker: a
//! [`Grpc`] run alone, without the analysis' calls, that keeps each open gRPC stream's
//! `:path`, its `grpc-encoding` values and the message in progress in each direction (its
//! first `max_message_bytes` bytes), and lists after every frame the messages that frame
//! completed (decision 440).
//!
//! The stream's life, its cut, its losses and its cap are the tracker's: a stream opens on a
//! gRPC request's HEADERS, ends with the ledger's [`crate::StreamStep`] or RST_STREAM, and at
//! most [`MAX_GRPC_STREAMS`] are followed at once (later ones counted in
//! [`PerFrame::untracked`]).

use super::*;

/// A stream's state for [`PerFrame`]: what its messages are printed with, and each
/// direction's message in progress.
#[derive(Debug)]
pub(super) struct StreamBytes {
    pub(super) path: Arc<str>,
    /// `grpc-encoding` of the request and of the response, as sent (not UTF-8 replaced).
    pub(super) encoding: [Option<Arc<str>>; 2],
    /// The first `max_message_bytes` bytes of each direction's message in progress.
    pub(super) buf: [Vec<u8>; 2],
}

impl StreamBytes {
    pub(super) fn new(h: Option<&crate::HeaderList>) -> Box<Self> {
        let text = |v: &[u8]| Arc::<str>::from(String::from_utf8_lossy(v));
        Box::new(StreamBytes {
            path: h
                .and_then(|h| h.known(crate::Known::Path))
                .map(text)
                .unwrap_or_else(|| Arc::from("")),
            encoding: [
                h.and_then(|h| h.known(crate::Known::GrpcEncoding))
                    .map(text),
                None,
            ],
            buf: [Vec::new(), Vec::new()],
        })
    }

    /// A response header block's `grpc-encoding`, as sent.
    pub(super) fn response_encoding(&mut self, v: &[u8]) {
        self.encoding[1] = Some(Arc::from(String::from_utf8_lossy(v)));
    }
}

#[derive(Clone, Copy, Debug)]
struct Msg {
    flag: u8,
    wire_len: u32,
    start: usize,
    end: usize,
}

/// The messages the last frame completed, with their bytes (the tracker's scratch, cleared at
/// every frame).
#[derive(Debug, Default)]
pub(super) struct Completed {
    pub(super) max: usize,
    path: Option<Arc<str>>,
    encoding: Option<Arc<str>>,
    rel: usize,
    msgs: Vec<Msg>,
    data: Vec<u8>,
}

impl Completed {
    pub(super) fn new(max: usize) -> Self {
        Completed {
            max,
            ..Completed::default()
        }
    }

    pub(super) fn clear(&mut self) {
        self.path = None;
        self.encoding = None;
        self.msgs.clear();
        self.data.clear();
        if self.data.capacity() > 1 << 20 {
            // One frame of big messages does not keep its buffer for the next.
            self.data = Vec::new();
        }
    }

    /// The [`CutEvents`] of a DATA frame of stream `sb`'s direction `rel`: each message
    /// completed is listed here and counted in `count`.
    pub(super) fn events<'a>(
        &'a mut self,
        sb: &'a mut StreamBytes,
        rel: usize,
        count: &'a mut Vec<(u32, bool)>,
    ) -> Bytes<'a> {
        self.path = Some(sb.path.clone());
        self.encoding = sb.encoding[rel].clone();
        self.rel = rel;
        Bytes {
            out: self,
            buf: &mut sb.buf[rel],
            count,
        }
    }
}

/// See [`Completed::events`].
pub(super) struct Bytes<'a> {
    out: &'a mut Completed,
    buf: &'a mut Vec<u8>,
    count: &'a mut Vec<(u32, bool)>,
}

impl CutEvents<'_> for Bytes<'_> {
    fn head(&mut self, _flag: u8, _len: u32) {
        self.buf.clear();
    }

    fn body(&mut self, b: &[u8]) {
        let room = self.out.max.saturating_sub(self.buf.len()).min(b.len());
        self.buf.extend_from_slice(&b[..room]);
    }

    fn done(&mut self, len: u32, flag: u8) {
        let start = self.out.data.len();
        if start == 0 {
            // The frame's first message: its buffer is moved, not copied (a big message).
            std::mem::swap(&mut self.out.data, self.buf);
        } else {
            self.out.data.extend_from_slice(self.buf);
        }
        self.out.msgs.push(Msg {
            flag,
            wire_len: len,
            start,
            end: self.out.data.len(),
        });
        self.buf.clear();
        if self.buf.capacity() > 64 << 10 {
            // A big message's buffer is not kept for the next small one.
            *self.buf = Vec::new();
        }
        self.count.push((len, flag != 0));
    }
}

/// No call records: [`PerFrame`] runs the tracker without the analysis.
struct NoRecs;

impl Recs for NoRecs {
    fn grpc_mut(&mut self, _id: CallId) -> Option<&mut CallGrpc> {
        None
    }
    fn grpc_if_any(&mut self, _id: CallId) -> Option<&mut CallGrpc> {
        None
    }
    fn plain(&mut self, _id: CallId) -> Option<&mut super::Plain> {
        None
    }
}

/// One message a frame completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameMsg<'a> {
    /// The Compressed-Flag byte.
    pub flag: u8,
    /// Its first `max_message_bytes` bytes (all of them unless `cut`).
    pub bytes: &'a [u8],
    /// The Message-Length field.
    pub wire_len: u32,
    /// Longer than `max_message_bytes`: `bytes` is its beginning.
    pub cut: bool,
}

/// The messages one frame completed ([`PerFrame::frame`]).
#[derive(Debug)]
pub struct FrameCut<'a> {
    c: &'a Completed,
}

impl<'a> FrameCut<'a> {
    /// The messages, in wire order (none for most frames).
    pub fn messages(&self) -> impl Iterator<Item = FrameMsg<'a>> + 'a {
        let c = self.c;
        c.msgs.iter().map(move |m| FrameMsg {
            flag: m.flag,
            bytes: &c.data[m.start..m.end],
            wire_len: m.wire_len,
            cut: m.wire_len as usize > c.max,
        })
    }

    /// No message completed.
    pub fn is_empty(&self) -> bool {
        self.c.msgs.is_empty()
    }

    /// The stream's `:path`, as sent (bytes that are not UTF-8 replaced).
    pub fn path(&self) -> &'a str {
        self.c.path.as_deref().unwrap_or("")
    }

    /// The `grpc-encoding` of the frame's direction, as sent.
    pub fn encoding(&self) -> Option<&'a str> {
        self.c.encoding.as_deref()
    }

    /// The messages are the response's (the frame was sent by the side that did not send the
    /// request).
    pub fn response(&self) -> bool {
        self.c.rel == 1
    }
}

/// The gRPC tracker alone, listing the messages each frame completes (see the module docs).
#[derive(Debug)]
pub struct PerFrame {
    grpc: Grpc,
}

impl PerFrame {
    /// A tracker keeping at most `max_message_bytes` of each message.
    pub fn new(max_message_bytes: usize) -> Self {
        let mut grpc = Grpc::default();
        grpc.per_frame = Some(Completed::new(max_message_bytes));
        PerFrame { grpc }
    }

    /// One frame, every frame of the capture in order; [`PerFrame::last`] lists the messages
    /// it completed.
    pub fn frame(&mut self, ev: &FrameEvent<'_>) {
        // Only a gRPC request's HEADERS opens a stream: no other stream is held or counted.
        let call = ev
            .headers
            .filter(|h| {
                ev.class == FrameClass::Headers
                    && h.iter().next().is_some_and(|f| f.name != b":status")
                    && h.known(crate::Known::ContentType)
                        .is_some_and(|v| v.starts_with(b"application/grpc"))
            })
            .map(|_| CallId { slot: 0, seq: 0 });
        self.grpc.frame(ev, None, call, false, &mut NoRecs);
    }

    /// The messages the last frame completed.
    pub fn last(&self) -> FrameCut<'_> {
        FrameCut {
            c: self.grpc.per_frame.as_ref().expect("made with per_frame"),
        }
    }

    /// Whether this stream's DATA payloads are wanted.
    pub fn wants_data(&self, conn: ConnId, stream: crate::StreamId) -> bool {
        self.grpc.wants_data(conn, stream.0)
    }

    /// Bytes of `dir` were lost; with `framing_lost`, every stream there loses the message in
    /// progress and is no longer cut.
    pub fn gap(&mut self, conn: ConnId, dir: Dir, framing_lost: bool) {
        self.grpc.gap(conn, dir, framing_lost);
    }

    /// The connection is over: its streams are dropped.
    pub fn close(&mut self, conn: ConnId) {
        self.grpc.close(conn, None, &mut NoRecs);
    }

    /// gRPC streams not followed because [`MAX_GRPC_STREAMS`] were open.
    pub fn untracked(&self) -> u64 {
        self.grpc.untracked_calls
    }
}
