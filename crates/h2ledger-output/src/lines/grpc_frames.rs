//! `frames --messages`: each gRPC stream's DATA cut into messages (h2ledger-proto's
//! [`Assembler`]), so that the DATA frame that completes a message shows it.
//!
//! Memory: per open gRPC stream its `:path`, two `grpc-encoding` values and two assemblers,
//! each holding at most the message in progress up to `--max-message-bytes`; at most
//! [`MAX_STREAMS`] streams at once (later ones are not followed, and counted in a warning);
//! a stream is dropped when both directions end, on RST_STREAM, and with its connection.

use std::collections::HashMap;

use h2_frame_parser::Frame;
use h2ledger_core::{FrameClass, FrameEvent, StreamId};
use h2ledger_proto::{Assembler, Direction};
use h2ledger_tcp::{ConnId, Dir};

use super::messages::{Decoded, Messages};

/// gRPC streams followed at once.
pub const MAX_STREAMS: usize = h2ledger_core::MAX_OPEN_STREAMS;

/// The messages a DATA frame completes, and the `grpc-encoding` of its direction.
#[derive(Debug, Default)]
pub struct FrameMsgs {
    /// The messages, decoded, in wire order.
    pub msgs: Vec<Decoded>,
    /// The direction's `grpc-encoding`, when there are messages.
    pub encoding: Option<Box<str>>,
}

struct Stream {
    path: Box<str>,
    /// The direction of the request.
    req: Dir,
    encoding: [Option<Box<str>>; 2],
    asm: [Assembler; 2],
    ended: [bool; 2],
}

/// The gRPC streams of every connection, cut into messages.
pub struct FrameMessages {
    dec: Messages,
    conns: HashMap<u32, HashMap<u32, Stream>>,
    open: usize,
}

impl FrameMessages {
    /// Streams followed with the decoder `dec`.
    pub fn new(dec: Messages) -> Self {
        FrameMessages {
            dec,
            conns: HashMap::new(),
            open: 0,
        }
    }

    /// The decoder (its warnings).
    pub fn decoder(&self) -> &Messages {
        &self.dec
    }

    /// Whether this stream's DATA payloads are wanted.
    pub fn wants_data(&self, conn: ConnId, stream: StreamId) -> bool {
        self.conns
            .get(&conn.0)
            .is_some_and(|c| c.contains_key(&stream.0))
    }

    /// One frame; with `print`, the messages it completes, decoded (without, they are only
    /// cut, so that later frames are cut right).
    pub fn frame(&mut self, ev: &FrameEvent<'_>, print: bool) -> FrameMsgs {
        let mut out = FrameMsgs::default();
        let sid = ev.head.stream_id.0;
        if sid == 0 {
            return out;
        }
        let conn = ev.conn.0;
        let tracked = self.conns.get(&conn).is_some_and(|c| c.contains_key(&sid));
        if !tracked {
            // A request's HEADERS opens a gRPC stream.
            let Some(h) = ev.headers.filter(|_| ev.class == FrameClass::Headers) else {
                return out;
            };
            let request = h.iter().next().is_some_and(|f| f.name != b":status");
            let grpc = h
                .get(b"content-type")
                .is_some_and(|v| v.starts_with(b"application/grpc"));
            if !request || !grpc {
                return out;
            }
            if self.open >= MAX_STREAMS {
                self.dec.untracked_stream(MAX_STREAMS);
                return out;
            }
            let max = self.dec.limits().max_message_bytes;
            let text = |v: &[u8]| Box::<str>::from(String::from_utf8_lossy(v));
            self.conns.entry(conn).or_default().insert(
                sid,
                Stream {
                    path: h.get(b":path").map(text).unwrap_or_default(),
                    req: ev.dir,
                    encoding: [h.get(b"grpc-encoding").map(text), None],
                    asm: [Assembler::new(max), Assembler::new(max)],
                    ended: [false; 2],
                },
            );
            self.open += 1;
        }
        let Some(streams) = self.conns.get_mut(&conn) else {
            return out;
        };
        let Some(st) = streams.get_mut(&sid) else {
            return out;
        };
        let rel = usize::from(ev.dir != st.req);
        if rel == 1 {
            if let Some(e) = ev.headers.and_then(|h| h.get(b"grpc-encoding")) {
                st.encoding[1] = Some(String::from_utf8_lossy(e).into());
            }
        }
        match (ev.class, ev.frame) {
            (FrameClass::Data, Some(Frame::Data(d))) => {
                let dir = if rel == 0 {
                    Direction::Request
                } else {
                    Direction::Response
                };
                let (dec, path, enc) = (&self.dec, &st.path, st.encoding[rel].as_deref());
                st.asm[rel].feed(d.data, |env| {
                    if print {
                        out.msgs.push(dec.one(path, dir, &env, enc, || {
                            format!(
                                "conn {conn} stream {sid} {path} {}",
                                if rel == 0 { "request" } else { "response" }
                            )
                        }));
                    }
                });
            }
            // A DATA frame without its payload: the capture lacks bytes of it.
            (FrameClass::Data, _) => {
                st.asm[rel].lose();
            }
            _ => {}
        }
        if !out.msgs.is_empty() {
            out.encoding = st.encoding[rel].clone();
        }
        let header_kind = matches!(ev.class, FrameClass::Headers | FrameClass::Trailers);
        let mut end = ev.class == FrameClass::RstStream;
        if ev.head.flags.is_end_stream() && (header_kind || ev.class == FrameClass::Data) {
            st.ended[rel] = true;
            st.asm[rel].end();
            end |= st.ended == [true; 2];
        }
        if end {
            streams.remove(&sid);
            self.open -= 1;
        }
        out
    }

    /// Bytes of `dir` were lost; with `framing_lost`, every stream there loses the message in
    /// progress and is no longer cut.
    pub fn gap(&mut self, conn: ConnId, dir: Dir, framing_lost: bool) {
        if !framing_lost {
            return;
        }
        if let Some(streams) = self.conns.get_mut(&conn.0) {
            for st in streams.values_mut() {
                let rel = usize::from(dir != st.req);
                st.asm[rel].lose();
            }
        }
    }

    /// The connection is over: its streams are dropped.
    pub fn close(&mut self, conn: ConnId) {
        if let Some(streams) = self.conns.remove(&conn.0) {
            self.open -= streams.len();
        }
    }
}

/// A message's line in the `frames` table: the frame's time, connection, side and stream,
/// `+MESSAGE`, then the message ([`super::messages::table_line`]), cut to [`super::WIDTH`]
/// unless `wide`.
pub fn table_line(
    ev: &FrameEvent<'_>,
    stamp: &str,
    d: &Decoded,
    msgs: &FrameMsgs,
    wide: bool,
    style: crate::Style,
) -> String {
    // The frame lines' tag (frames.rs, `frame_lines`), then the class column.
    let prefix = format!(
        "{stamp} c{} {:<6} stream={:<5} {:<13} ",
        ev.conn.0,
        ev.side.name(),
        ev.head.stream_id,
        "+MESSAGE",
    );
    super::messages::table_line(
        &prefix,
        d,
        msgs.encoding.as_deref(),
        (!wide).then_some(super::WIDTH),
        style,
    )
}
