//! `frames --messages`: the gRPC messages each DATA frame completes, from the core's one
//! gRPC tracker ([`PerFrame`]: its streams, its cut, its ends and its cap), decoded here.
//!
//! Memory: the tracker's (per open gRPC stream its `:path`, two `grpc-encoding` values and
//! the message in progress in each direction, up to `--max-message-bytes`; at most
//! [`MAX_STREAMS`] streams at once, later ones not followed and counted in a warning).

use h2ledger_core::grpc::PerFrame;
use h2ledger_core::{FrameEvent, StreamId};
use h2ledger_proto::{Direction, Envelope};
use h2ledger_tcp::{ConnId, Dir};

use super::messages::{Decoded, Messages};

/// gRPC streams followed at once: the core tracker's cap.
pub const MAX_STREAMS: usize = h2ledger_core::grpc::MAX_GRPC_STREAMS;

/// The messages a DATA frame completes, and the `grpc-encoding` of its direction.
#[derive(Debug, Default)]
pub struct FrameMsgs {
    /// The messages, decoded, in wire order.
    pub msgs: Vec<Decoded>,
    /// The direction's `grpc-encoding`, when there are messages.
    pub encoding: Option<Box<str>>,
}

/// The gRPC streams of every connection, cut into messages by the core's tracker.
pub struct FrameMessages {
    dec: Messages,
    grpc: PerFrame,
}

impl FrameMessages {
    /// Streams followed with the decoder `dec`.
    pub fn new(dec: Messages) -> Self {
        let max = dec.limits().max_message_bytes;
        FrameMessages {
            dec,
            grpc: PerFrame::new(max),
        }
    }

    /// The decoder (its warnings).
    pub fn decoder(&self) -> &Messages {
        &self.dec
    }

    /// Whether this stream's DATA payloads are wanted.
    pub fn wants_data(&self, conn: ConnId, stream: StreamId) -> bool {
        self.grpc.wants_data(conn, stream)
    }

    /// One frame; with `print`, the messages it completes, decoded (without, they are only
    /// cut, so that later frames are cut right).
    pub fn frame(&mut self, ev: &FrameEvent<'_>, print: bool) -> FrameMsgs {
        let mut out = FrameMsgs::default();
        let untracked = self.grpc.untracked();
        self.grpc.frame(ev);
        if self.grpc.untracked() > untracked {
            self.dec.untracked_stream(MAX_STREAMS);
        }
        let cut = self.grpc.last();
        if !print || cut.is_empty() {
            return out;
        }
        let (conn, sid, path) = (ev.conn.0, ev.head.stream_id.0, cut.path());
        let (dir, side) = if cut.response() {
            (Direction::Response, "response")
        } else {
            (Direction::Request, "request")
        };
        for m in cut.messages() {
            let env = Envelope {
                flag: m.flag,
                bytes: m.bytes,
                wire_len: m.wire_len,
                cut: m.cut,
            };
            out.msgs
                .push(self.dec.one(path, dir, &env, cut.encoding(), || {
                    format!("conn {conn} stream {sid} {path} {side}")
                }));
        }
        out.encoding = cut.encoding().map(Box::from);
        out
    }

    /// Bytes of `dir` were lost; with `framing_lost`, every stream there loses the message in
    /// progress and is no longer cut.
    pub fn gap(&mut self, conn: ConnId, dir: Dir, framing_lost: bool) {
        self.grpc.gap(conn, dir, framing_lost);
    }

    /// The connection is over: its streams are dropped.
    pub fn close(&mut self, conn: ConnId) {
        self.grpc.close(conn);
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
