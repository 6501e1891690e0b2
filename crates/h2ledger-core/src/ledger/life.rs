//! A stream's life (RFC 9113 §5.1), derived once per connection: the ledger's one table of open
//! streams keeps each as a [`StreamLife`], and every frame of a stream carries the step it made
//! ([`StreamStep`], on [`FrameEvent::stream`]). Closed streams leave the table; a reset one is
//! remembered among the connection's last few resets, by the header blocks it saw, for the
//! frames that cross its RST_STREAM.

use h2_frame_parser::ErrorCode;
use h2ledger_tcp::Dir;

use crate::model::StreamStep;

/// Which directions sent a header block on a stream (bit `1 << Dir::index()`): a direction's
/// first block is a HEADERS row, its later ones TRAILERS. And [`Blocks::FORGOTTEN`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Blocks(u8);

impl Blocks {
    /// The stream was closed before the model met it again (a header block on a stream whose
    /// id is below one its peer already opened, and that the table no longer holds: reset
    /// more than [`super::MAX_RECENT_RESETS`] resets ago, or ended). It is followed for its
    /// header blocks only; its steps are [`StreamStep::Untracked`].
    const FORGOTTEN: u8 = 4;

    fn forgotten(self) -> bool {
        self.0 & Blocks::FORGOTTEN != 0
    }

    pub(super) fn has(self, d: Dir) -> bool {
        self.0 & (1 << d.index()) != 0
    }

    pub(super) fn with(self, d: Dir) -> Blocks {
        Blocks(self.0 | 1 << d.index())
    }
}

/// An open stream of the ledger's table: one enum, its data in its variants (as hyperium/h2's
/// `proto/streams/state.rs` keeps a stream's `Inner` state). Two bytes, as the `u8` of bits it
/// replaced: the table's slot stays 10 bytes (the size test below).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StreamLife {
    /// Both halves open.
    Open { blocks: Blocks },
    /// Direction `ended` closed its half with END_STREAM; the other's is open.
    HalfClosed { ended: Dir, blocks: Blocks },
}

impl StreamLife {
    /// A stream whose first header block `d` sent (with END_STREAM: `end`).
    pub(super) fn opened(d: Dir, end: bool) -> (StreamLife, StreamStep) {
        let blocks = Blocks::default().with(d);
        if end {
            (
                StreamLife::HalfClosed { ended: d, blocks },
                StreamStep::HalfClosed,
            )
        } else {
            (StreamLife::Open { blocks }, StreamStep::Opened)
        }
    }

    /// A header block from `d` on a stream closed and forgotten ([`Blocks::FORGOTTEN`]).
    pub(super) fn forgotten(d: Dir, end: bool) -> StreamLife {
        let blocks = Blocks(Blocks::FORGOTTEN).with(d);
        if end {
            StreamLife::HalfClosed { ended: d, blocks }
        } else {
            StreamLife::Open { blocks }
        }
    }

    pub(super) fn blocks(self) -> Blocks {
        match self {
            StreamLife::Open { blocks } | StreamLife::HalfClosed { blocks, .. } => blocks,
        }
    }

    /// A header block from `d` (with END_STREAM: `end`): whether `d` had sent one before, and
    /// the stream after it (`None`: over, it leaves the table) with the step.
    pub(super) fn block(self, d: Dir, end: bool) -> (bool, Option<StreamLife>, StreamStep) {
        let seen = self.blocks().has(d);
        let life = match self {
            StreamLife::Open { blocks } => StreamLife::Open {
                blocks: blocks.with(d),
            },
            StreamLife::HalfClosed { ended, blocks } => StreamLife::HalfClosed {
                ended,
                blocks: blocks.with(d),
            },
        };
        if end {
            let (life, step) = life.end(d);
            (seen, life, step)
        } else if self.blocks().forgotten() {
            (seen, Some(life), StreamStep::Untracked)
        } else {
            (seen, Some(life), StreamStep::None)
        }
    }

    /// END_STREAM from `d`: the stream after it (`None`: both halves closed) and the step. A
    /// second END_STREAM of the same half changes nothing.
    pub(super) fn end(self, d: Dir) -> (Option<StreamLife>, StreamStep) {
        let (life, step) = match self {
            StreamLife::Open { blocks } => (
                Some(StreamLife::HalfClosed { ended: d, blocks }),
                StreamStep::HalfClosed,
            ),
            StreamLife::HalfClosed { ended, .. } if ended == d => (Some(self), StreamStep::None),
            StreamLife::HalfClosed { .. } => (None, StreamStep::Ended),
        };
        if self.blocks().forgotten() {
            (life, StreamStep::Untracked)
        } else {
            (life, step)
        }
    }
}

/// RST_STREAM from `d` with `code` (`None`: unreadable) on a stream whose header blocks were
/// `blocks` (none when the stream was not followed): the step it makes.
pub(super) fn reset(d: Dir, code: Option<ErrorCode>, blocks: Blocks) -> StreamStep {
    if code == Some(ErrorCode::REFUSED_STREAM) && !blocks.has(d) {
        StreamStep::Refused
    } else {
        StreamStep::Reset { code }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_two_bytes_in_the_table() {
        // The ledger's table keeps `Option<V>` beside an 8-byte key: 2 bytes as `Option<u8>`.
        assert_eq!(std::mem::size_of::<Option<StreamLife>>(), 2);
    }

    #[test]
    fn a_call_opens_half_closes_and_ends() {
        let (c, s) = (Dir::Fwd, Dir::Rev);
        // A POST: HEADERS, then DATA with END_STREAM; the response, then its trailers.
        let (life, step) = StreamLife::opened(c, false);
        assert_eq!(step, StreamStep::Opened);
        let (life, step) = life.end(c);
        assert_eq!(step, StreamStep::HalfClosed);
        let life = life.expect("half closed");
        let (seen, life, step) = life.block(s, false);
        assert!(!seen);
        assert_eq!(step, StreamStep::None);
        let life = life.expect("open still");
        let (again, step) = life.end(c);
        assert_eq!((again, step), (Some(life), StreamStep::None));
        let (seen, life, step) = life.block(s, true);
        assert!(seen, "the server's second block is its trailers");
        assert_eq!((life, step), (None, StreamStep::Ended));
    }

    #[test]
    fn a_get_is_half_closed_at_once() {
        let (life, step) = StreamLife::opened(Dir::Rev, true);
        assert_eq!(step, StreamStep::HalfClosed);
        assert!(life.blocks().has(Dir::Rev) && !life.blocks().has(Dir::Fwd));
        assert_eq!(life.end(Dir::Fwd), (None, StreamStep::Ended));
    }

    #[test]
    fn a_stream_met_again_after_it_was_forgotten_makes_no_step() {
        let (c, s) = (Dir::Fwd, Dir::Rev);
        let life = StreamLife::forgotten(s, false);
        let (seen, life, step) = life.block(s, false);
        assert!(seen, "its second block is trailers still");
        assert_eq!(step, StreamStep::Untracked);
        let (life, step) = life.expect("followed").end(s);
        assert_eq!(step, StreamStep::Untracked);
        assert_eq!(
            life.expect("followed").end(c),
            (None, StreamStep::Untracked)
        );
    }

    #[test]
    fn refused_is_a_reset_before_any_block_of_its_sender() {
        let b = Blocks::default().with(Dir::Fwd);
        let refused = Some(ErrorCode::REFUSED_STREAM);
        assert_eq!(reset(Dir::Rev, refused, b), StreamStep::Refused);
        assert_eq!(
            reset(Dir::Rev, refused, b.with(Dir::Rev)),
            StreamStep::Reset { code: refused }
        );
        assert_eq!(
            reset(Dir::Fwd, Some(ErrorCode::CANCEL), b),
            StreamStep::Reset {
                code: Some(ErrorCode::CANCEL)
            }
        );
        assert_eq!(reset(Dir::Rev, None, b), StreamStep::Reset { code: None });
    }
}
