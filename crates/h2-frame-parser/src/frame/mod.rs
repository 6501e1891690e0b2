//! HTTP/2 frames (RFC 9113 §4 and §6), one file per frame type.
//!
//! # Contract
//!
//! The outer envelope ([`raw_frame`], [`Head::parse`]) uses nom streaming parsers:
//! `Err(nom::Err::Incomplete(_))` means "wait for more reassembled bytes", never an error, and
//! no other error is ever returned. Inside the length-bounded payload, [`Frame::load`] parses
//! with complete parsers and reports a violated RFC rule as a [`FrameError`].
//!
//! No function in this module panics on any input, and once a frame is loaded every field is
//! either a plain value or a sub-slice whose bounds were checked by `load`, so no accessor can
//! panic. Everything borrows from the caller's buffer; nothing is copied.

use core::fmt;

use nom::bytes::streaming::take;
use nom::IResult;

mod continuation;
mod data;
mod error_code;
mod goaway;
mod head;
mod headers;
mod ping;
mod priority;
mod push_promise;
mod rst_stream;
mod settings;
mod stream_id;
mod window_update;

pub use continuation::Continuation;
pub use data::Data;
pub use error_code::ErrorCode;
pub use goaway::GoAway;
pub use head::{Flags, Head, Kind, HEAD_LEN, PREFACE};
pub use headers::Headers;
pub use ping::Ping;
pub use priority::{Priority, PrioritySpec};
pub use push_promise::PushPromise;
pub use rst_stream::RstStream;
pub use settings::{SettingId, Settings, SettingsIter};
pub use stream_id::StreamId;
pub use window_update::WindowUpdate;

/// A frame header and its payload, exactly `head.length` octets, borrowed from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawFrame<'a> {
    /// The frame header.
    pub head: Head,
    /// The payload, `head.length` octets.
    pub payload: &'a [u8],
}

/// Streaming parser for one frame: header plus `length` payload octets.
///
/// `Err(Incomplete(n))` says how many more octets are needed. The length is not checked
/// against SETTINGS_MAX_FRAME_SIZE here; use [`Head::plausible`] for that.
pub fn raw_frame(input: &[u8]) -> IResult<&[u8], RawFrame<'_>> {
    let (rest, head) = Head::parse(input)?;
    let (rest, payload) = take(head.length)(rest)?;
    Ok((rest, RawFrame { head, payload }))
}

/// A payload that breaks a rule of RFC 9113. The frame is still countable from its [`Head`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// The payload length is wrong for the frame type (FRAME_SIZE_ERROR in the RFC).
    BadFrameSize {
        /// The frame type.
        kind: Kind,
        /// The payload length it had.
        length: usize,
    },
    /// The stream identifier is zero where the type needs a stream, or non-zero where the type
    /// belongs to the connection.
    InvalidStreamId {
        /// The frame type.
        kind: Kind,
        /// The stream identifier it had.
        stream_id: StreamId,
    },
    /// Pad Length is greater than or equal to the payload length.
    TooMuchPadding {
        /// The frame type.
        kind: Kind,
        /// The Pad Length field.
        pad_len: u8,
        /// The payload length.
        length: usize,
    },
    /// A stream declared a dependency on itself.
    SelfDependency {
        /// The stream.
        stream_id: StreamId,
    },
    /// A WINDOW_UPDATE with a flow-control window increment of 0.
    ZeroWindowIncrement {
        /// The stream (0: the connection).
        stream_id: StreamId,
    },
    /// A SETTINGS parameter outside the range RFC 9113 §6.5.2 allows.
    InvalidSettingValue {
        /// The parameter.
        id: SettingId,
        /// Its value.
        value: u32,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FrameError::BadFrameSize { kind, length } => {
                write!(f, "{kind} frame with invalid payload length {length}")
            }
            FrameError::InvalidStreamId { kind, stream_id } => {
                write!(f, "{kind} frame on invalid stream {stream_id}")
            }
            FrameError::TooMuchPadding {
                kind,
                pad_len,
                length,
            } => write!(
                f,
                "{kind} frame pad length {pad_len} not less than payload length {length}"
            ),
            FrameError::SelfDependency { stream_id } => {
                write!(f, "stream {stream_id} depends on itself")
            }
            FrameError::ZeroWindowIncrement { stream_id } => {
                write!(f, "WINDOW_UPDATE with increment 0 on stream {stream_id}")
            }
            FrameError::InvalidSettingValue { id, value } => {
                write!(f, "setting {id} has invalid value {value}")
            }
        }
    }
}

impl std::error::Error for FrameError {}

/// A loaded frame. Unknown types are passed through untouched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    /// DATA.
    Data(Data<'a>),
    /// HEADERS.
    Headers(Headers<'a>),
    /// PRIORITY.
    Priority(Priority),
    /// RST_STREAM.
    RstStream(RstStream),
    /// SETTINGS.
    Settings(Settings<'a>),
    /// PUSH_PROMISE.
    PushPromise(PushPromise<'a>),
    /// PING.
    Ping(Ping),
    /// GOAWAY.
    GoAway(GoAway<'a>),
    /// WINDOW_UPDATE.
    WindowUpdate(WindowUpdate),
    /// CONTINUATION.
    Continuation(Continuation<'a>),
    /// A type RFC 9113 does not define, as read.
    Unknown(RawFrame<'a>),
}

impl<'a> Frame<'a> {
    /// Validates the payload against RFC 9113 for its type. Uses `raw.payload.len()` as the
    /// length (equal to `raw.head.length` for frames from [`raw_frame`]).
    pub fn load(raw: RawFrame<'a>) -> Result<Frame<'a>, FrameError> {
        let RawFrame { head, payload } = raw;
        Ok(match head.kind {
            Kind::Data => Frame::Data(Data::load(head, payload)?),
            Kind::Headers => Frame::Headers(Headers::load(head, payload)?),
            Kind::Priority => Frame::Priority(Priority::load(head, payload)?),
            Kind::RstStream => Frame::RstStream(RstStream::load(head, payload)?),
            Kind::Settings => Frame::Settings(Settings::load(head, payload)?),
            Kind::PushPromise => Frame::PushPromise(PushPromise::load(head, payload)?),
            Kind::Ping => Frame::Ping(Ping::load(head, payload)?),
            Kind::GoAway => Frame::GoAway(GoAway::load(head, payload)?),
            Kind::WindowUpdate => Frame::WindowUpdate(WindowUpdate::load(head, payload)?),
            Kind::Continuation => Frame::Continuation(Continuation::load(head, payload)?),
            Kind::Unknown(_) => Frame::Unknown(raw),
        })
    }

    /// The frame's type.
    pub fn kind(&self) -> Kind {
        match self {
            Frame::Data(_) => Kind::Data,
            Frame::Headers(_) => Kind::Headers,
            Frame::Priority(_) => Kind::Priority,
            Frame::RstStream(_) => Kind::RstStream,
            Frame::Settings(_) => Kind::Settings,
            Frame::PushPromise(_) => Kind::PushPromise,
            Frame::Ping(_) => Kind::Ping,
            Frame::GoAway(_) => Kind::GoAway,
            Frame::WindowUpdate(_) => Kind::WindowUpdate,
            Frame::Continuation(_) => Kind::Continuation,
            Frame::Unknown(raw) => raw.head.kind,
        }
    }
}

/// Complete-parser error inside a bounded payload: the payload was too short.
type Inner<'a> = nom::error::Error<&'a [u8]>;

fn too_short(head: &Head, payload: &[u8]) -> FrameError {
    FrameError::BadFrameSize {
        kind: head.kind,
        length: payload.len(),
    }
}

/// Splits off Pad Length and padding when PADDED is set; returns the remaining content and the
/// pad length.
fn strip_padding<'a>(head: &Head, payload: &'a [u8]) -> Result<(&'a [u8], Option<u8>), FrameError> {
    if !head.flags.is_padded() {
        return Ok((payload, None));
    }
    let (rest, pad_len) = nom::number::complete::be_u8::<_, Inner<'a>>(payload)
        .map_err(|_| too_short(head, payload))?;
    // "If the length of the padding is the length of the frame payload or greater, the
    // recipient MUST treat this as a connection error (Section 5.4.1) of type
    // PROTOCOL_ERROR." (RFC 9113 §6.1, §6.2, §6.6)
    if usize::from(pad_len) >= payload.len() {
        return Err(FrameError::TooMuchPadding {
            kind: head.kind,
            pad_len,
            length: payload.len(),
        });
    }
    let content_len = rest.len() - usize::from(pad_len);
    Ok((rest.get(..content_len).unwrap_or_default(), Some(pad_len)))
}

fn require_stream(head: &Head) -> Result<(), FrameError> {
    if head.stream_id.is_zero() {
        Err(FrameError::InvalidStreamId {
            kind: head.kind,
            stream_id: StreamId::ZERO,
        })
    } else {
        Ok(())
    }
}

fn require_connection(head: &Head) -> Result<(), FrameError> {
    if !head.stream_id.is_zero() {
        Err(FrameError::InvalidStreamId {
            kind: head.kind,
            stream_id: head.stream_id,
        })
    } else {
        Ok(())
    }
}

/// Builds frame bytes from a header description and payload octets, for tests:
/// `frame_bytes!(Kind::Data, flags 0x1, stream 1; b"hello")`.
#[cfg(test)]
macro_rules! frame_bytes {
    ($kind:expr, flags $flags:expr, stream $sid:expr; $($payload:expr),* $(,)?) => {{
        let mut payload: Vec<u8> = Vec::new();
        $( payload.extend_from_slice(&$payload[..]); )*
        let len = payload.len() as u32;
        let mut out = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8,
            $crate::frame::Kind::as_u8($kind), $flags];
        out.extend_from_slice(&(($sid) as u32).to_be_bytes());
        out.extend_from_slice(&payload);
        out
    }};
}
#[cfg(test)]
pub(crate) use frame_bytes;

/// Parses one complete frame from test bytes and loads it.
#[cfg(test)]
pub(crate) fn load_one(bytes: &[u8]) -> Result<Frame<'_>, FrameError> {
    let (rest, raw) = raw_frame(bytes).expect("complete frame");
    assert!(rest.is_empty(), "trailing bytes");
    Frame::load(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_fields() {
        let bytes = [0x00, 0x01, 0x02, 0x01, 0x25, 0x80, 0x00, 0x00, 0x03];
        let (rest, head) = Head::parse(&bytes).unwrap();
        assert!(rest.is_empty());
        assert_eq!(head.length, 0x102);
        assert_eq!(head.kind, Kind::Headers);
        assert!(head.flags.is_end_stream() && head.flags.is_end_headers());
        assert!(head.flags.is_priority() && !head.flags.is_padded());
        assert_eq!(head.stream_id, StreamId(3));
        assert!(head.reserved_bit);
    }

    #[test]
    fn streaming_incomplete() {
        let bytes = frame_bytes!(Kind::Ping, flags 0, stream 0; [7u8; 8]);
        for cut in 0..bytes.len() {
            match raw_frame(&bytes[..cut]) {
                Err(nom::Err::Incomplete(nom::Needed::Size(n))) => {
                    let want = if cut < HEAD_LEN {
                        HEAD_LEN - cut
                    } else {
                        bytes.len() - cut
                    };
                    assert_eq!(n.get(), want, "cut at {cut}");
                }
                other => panic!("cut at {cut}: {other:?}"),
            }
        }
        assert!(raw_frame(&bytes).is_ok());
    }

    #[test]
    fn many_frames_in_one_buffer() {
        let mut buf = Vec::new();
        buf.extend(frame_bytes!(Kind::Settings, flags 0, stream 0; [0, 3, 0, 0, 0, 100]));
        buf.extend(frame_bytes!(Kind::Settings, flags 1, stream 0; []));
        buf.extend(frame_bytes!(Kind::Headers, flags 0x4, stream 1; [0x82]));
        buf.extend(frame_bytes!(Kind::Data, flags 0x1, stream 1; *b"hi"));
        buf.extend(frame_bytes!(Kind::Unknown(0xfa), flags 0xff, stream 9; [1, 2, 3]));
        buf.extend(frame_bytes!(Kind::WindowUpdate, flags 0, stream 0; [0, 0, 0x10, 0]));
        buf.extend_from_slice(&[0, 0]); // start of a frame still in flight
        let mut input = &buf[..];
        let mut kinds = Vec::new();
        loop {
            match raw_frame(input) {
                Ok((rest, raw)) => {
                    kinds.push(Frame::load(raw).unwrap().kind());
                    input = rest;
                }
                Err(nom::Err::Incomplete(_)) => break,
                Err(e) => panic!("{e:?}"),
            }
        }
        assert_eq!(
            kinds,
            [
                Kind::Settings,
                Kind::Settings,
                Kind::Headers,
                Kind::Data,
                Kind::Unknown(0xfa),
                Kind::WindowUpdate
            ]
        );
        assert_eq!(input, &[0, 0]);
    }

    #[test]
    fn unknown_type_is_data_not_error() {
        let bytes = frame_bytes!(Kind::Unknown(0x10), flags 0, stream 0; [0, 1, 2]);
        match load_one(&bytes).unwrap() {
            Frame::Unknown(raw) => {
                assert_eq!(raw.head.kind, Kind::Unknown(0x10));
                assert_eq!(raw.head.kind.name(), "UNKNOWN");
                assert_eq!(raw.payload, &[0, 1, 2]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(Kind::from_u8(0x10).as_u8(), 0x10);
    }

    #[test]
    fn kind_round_trip() {
        for b in 0..=255u8 {
            assert_eq!(Kind::from_u8(b).as_u8(), b);
        }
        assert_eq!(Kind::GoAway.name(), "GOAWAY");
        assert_eq!(Kind::Unknown(0xab).to_string(), "UNKNOWN(0xab)");
    }

    fn head(kind: Kind, length: u32, flags: u8, stream_id: u32) -> Head {
        Head {
            length,
            kind,
            flags: Flags(flags),
            stream_id: StreamId(stream_id),
            reserved_bit: false,
        }
    }

    #[test]
    fn plausible_rules() {
        let max = 16_384;
        assert!(head(Kind::Settings, 18, 0, 0).plausible(max));
        assert!(head(Kind::Settings, 0, 1, 0).plausible(max));
        assert!(!head(Kind::Settings, 6, 1, 0).plausible(max));
        assert!(!head(Kind::Settings, 7, 0, 0).plausible(max));
        assert!(!head(Kind::Settings, 6, 0, 1).plausible(max));
        assert!(head(Kind::Ping, 8, 1, 0).plausible(max));
        assert!(!head(Kind::Ping, 9, 0, 0).plausible(max));
        assert!(!head(Kind::Ping, 8, 0, 3).plausible(max));
        assert!(head(Kind::GoAway, 8, 0, 0).plausible(max));
        assert!(!head(Kind::GoAway, 8, 0, 1).plausible(max));
        assert!(head(Kind::WindowUpdate, 4, 0, 0).plausible(max));
        assert!(head(Kind::WindowUpdate, 4, 0, 5).plausible(max));
        assert!(!head(Kind::WindowUpdate, 5, 0, 5).plausible(max));
        assert!(head(Kind::RstStream, 4, 0, 1).plausible(max));
        assert!(!head(Kind::RstStream, 4, 0, 0).plausible(max));
        assert!(head(Kind::Priority, 5, 0, 1).plausible(max));
        assert!(!head(Kind::Priority, 4, 0, 1).plausible(max));
        assert!(head(Kind::Data, 100, 0x9, 1).plausible(max));
        assert!(
            !head(Kind::Data, 100, 0x4, 1).plausible(max),
            "END_HEADERS undefined on DATA"
        );
        assert!(!head(Kind::Data, 100, 0, 0).plausible(max));
        assert!(head(Kind::Headers, 100, 0x2d, 1).plausible(max));
        assert!(!head(Kind::Headers, 100, 0x2, 1).plausible(max));
        assert!(head(Kind::PushPromise, 10, 0xc, 1).plausible(max));
        assert!(!head(Kind::PushPromise, 10, 0x1, 1).plausible(max));
        assert!(head(Kind::Continuation, 10, 0x4, 1).plausible(max));
        assert!(!head(Kind::Continuation, 10, 0x4, 0).plausible(max));
        assert!(!head(Kind::Unknown(0x10), 0, 0, 0).plausible(max));
        assert!(!head(Kind::Data, max + 1, 0, 1).plausible(max));
        assert!(head(Kind::Data, max + 1, 0, 1).plausible(max + 1));
        let mut reserved = head(Kind::Data, 1, 0, 1);
        reserved.reserved_bit = true;
        assert!(!reserved.plausible(max));
    }
}
