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
#[inline]
pub fn raw_frame(input: &[u8]) -> IResult<&[u8], RawFrame<'_>> {
    // The common case, a whole frame in `input`, without nom's combinators (the per-frame hot
    // path: it halves the cost of a frame's split). Short input takes the streaming parsers
    // below, which say how many more octets are needed.
    if let Some((octets, rest)) = input.split_first_chunk::<HEAD_LEN>() {
        let head = Head::from_octets(octets);
        if let Some((payload, rest)) = rest.split_at_checked(head.length as usize) {
            return Ok((rest, RawFrame { head, payload }));
        }
    }
    raw_frame_streaming(input)
}

/// [`raw_frame`] by nom's streaming parsers alone: what it does for short input (and did for
/// every input before its fast path).
fn raw_frame_streaming(input: &[u8]) -> IResult<&[u8], RawFrame<'_>> {
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
    #[inline]
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

    /// The one run of payload bytes the frame borrows (DATA's data, a header block fragment,
    /// SETTINGS' parameters, GOAWAY's debug data, an unknown type's payload); empty for the
    /// types that borrow none. With [`Frame::pack`] and [`Packed::unpack`], a frame moves to
    /// other storage.
    pub fn bytes(&self) -> &'a [u8] {
        match self {
            Frame::Data(d) => d.data,
            Frame::Headers(h) => h.fragment,
            Frame::Settings(s) => s.params,
            Frame::PushPromise(p) => p.fragment,
            Frame::GoAway(g) => g.debug,
            Frame::Continuation(c) => c.fragment,
            Frame::Unknown(raw) => raw.payload,
            Frame::Priority(_) | Frame::RstStream(_) | Frame::Ping(_) | Frame::WindowUpdate(_) => {
                &[]
            }
        }
    }
}

/// A frame's fields besides its [`Head`] and its [`Frame::bytes`], in 12 bytes: with those
/// two, [`Packed::unpack`] gives the frame back. For handing frames to another thread in
/// little memory (every type's stream and flags are its head's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packed {
    tag: u8,
    /// Pad Length, plus 0x100 when present.
    pad: u16,
    /// The type's numbers: priority, error code, promised stream, PING data, ...
    x: u64,
}

impl Packed {
    /// No frame (a frame that did not load).
    pub const NONE: Packed = Packed {
        tag: 0,
        pad: 0,
        x: 0,
    };

    /// Whether this is [`Packed::NONE`].
    pub fn is_none(&self) -> bool {
        self.tag == 0
    }

    /// The frame `head` and `bytes` were packed from (`None` for [`Packed::NONE`]).
    pub fn unpack<'b>(self, head: &Head, bytes: &'b [u8]) -> Option<Frame<'b>> {
        let (stream_id, flags) = (head.stream_id, head.flags);
        let pad_len = (self.pad & 0x100 != 0).then_some(self.pad as u8);
        let x = self.x;
        Some(match self.tag {
            1 => Frame::Data(Data {
                stream_id,
                flags,
                data: bytes,
                pad_len,
            }),
            2 => Frame::Headers(Headers {
                stream_id,
                flags,
                priority: unpack_priority(x),
                fragment: bytes,
                pad_len,
            }),
            3 => Frame::Priority(Priority {
                stream_id,
                spec: unpack_priority(x).unwrap_or(PrioritySpec {
                    exclusive: false,
                    dependency: 0,
                    weight: 0,
                }),
            }),
            4 => Frame::RstStream(RstStream {
                stream_id,
                code: ErrorCode(x as u32),
            }),
            5 => Frame::Settings(Settings {
                flags,
                params: bytes,
            }),
            6 => Frame::PushPromise(PushPromise {
                stream_id,
                flags,
                promised_id: x as u32,
                fragment: bytes,
                pad_len,
            }),
            7 => Frame::Ping(Ping {
                flags,
                payload: x.to_be_bytes(),
            }),
            8 => Frame::GoAway(GoAway {
                last_stream_id: (x >> 32) as u32,
                code: ErrorCode(x as u32),
                debug: bytes,
            }),
            9 => Frame::WindowUpdate(WindowUpdate {
                stream_id,
                increment: x as u32,
            }),
            10 => Frame::Continuation(Continuation {
                stream_id,
                flags,
                fragment: bytes,
            }),
            11 => Frame::Unknown(RawFrame {
                head: *head,
                payload: bytes,
            }),
            _ => return None,
        })
    }
}

fn pack_pad(p: Option<u8>) -> u16 {
    p.map_or(0, |p| 0x100 | u16::from(p))
}

fn pack_priority(p: Option<PrioritySpec>) -> u64 {
    p.map_or(0, |p| {
        1 << 48 | u64::from(p.exclusive) << 40 | u64::from(p.weight) << 32 | u64::from(p.dependency)
    })
}

fn unpack_priority(x: u64) -> Option<PrioritySpec> {
    (x >> 48 != 0).then_some(PrioritySpec {
        exclusive: (x >> 40) & 1 != 0,
        weight: (x >> 32) as u8,
        dependency: x as u32,
    })
}

impl Frame<'_> {
    /// Everything of the frame but its head and its bytes ([`Packed::unpack`] with the head it
    /// was loaded with, or one of the same type, stream and flags, gives it back).
    pub fn pack(&self) -> Packed {
        let (tag, pad, x) = match *self {
            Frame::Data(d) => (1, pack_pad(d.pad_len), 0),
            Frame::Headers(h) => (2, pack_pad(h.pad_len), pack_priority(h.priority)),
            Frame::Priority(p) => (3, 0, pack_priority(Some(p.spec))),
            Frame::RstStream(r) => (4, 0, u64::from(r.code.0)),
            Frame::Settings(_) => (5, 0, 0),
            Frame::PushPromise(p) => (6, pack_pad(p.pad_len), u64::from(p.promised_id)),
            Frame::Ping(p) => (7, 0, u64::from_be_bytes(p.payload)),
            Frame::GoAway(g) => (
                8,
                0,
                u64::from(g.last_stream_id) << 32 | u64::from(g.code.0),
            ),
            Frame::WindowUpdate(w) => (9, 0, u64::from(w.increment)),
            Frame::Continuation(_) => (10, 0, 0),
            Frame::Unknown(_) => (11, 0, 0),
        };
        Packed { tag, pad, x }
    }
}

/// What [`Frame::load`] says of a DATA frame, from its head and, when the whole payload is at
/// hand, the payload: the stream must not be 0, and the padding must fit. The same error
/// `load` gives; `Ok` when nothing is wrong or the payload is not at hand (`None`) for a
/// PADDED frame, with the octets of Pad Length and padding found (0 without PADDED or
/// without the payload): the frame carries `head.length` minus that of data.
pub fn check_data(head: &Head, payload: Option<&[u8]>) -> Result<u32, FrameError> {
    require_stream(head)?;
    match payload {
        Some(p) => {
            let (data, _) = strip_padding(head, p)?;
            Ok((p.len() - data.len()) as u32)
        }
        None => Ok(0),
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

    /// Every prefix of two frames (empty, whole, cut in the header, cut in the payload,
    /// followed by more bytes) and every length field: the fast path gives what nom gives,
    /// `Incomplete` and its count included.
    #[test]
    fn raw_frame_fast_path_is_nom() {
        let mut two = frame_bytes!(Kind::Headers, flags 0x5, stream 1; [7u8; 13]);
        two.extend(frame_bytes!(Kind::Data, flags 0x1, stream 1; [9u8; 3]));
        for end in 0..=two.len() {
            assert_eq!(
                raw_frame(&two[..end]),
                raw_frame_streaming(&two[..end]),
                "prefix {end}"
            );
        }
        for len in [0u32, 1, 15, 16, 17, 0xff_ffff] {
            let mut f = vec![
                (len >> 16) as u8,
                (len >> 8) as u8,
                len as u8,
                0,
                0,
                0,
                0,
                0,
                1,
            ];
            f.extend_from_slice(&[0u8; 16]);
            assert_eq!(raw_frame(&f), raw_frame_streaming(&f), "length {len}");
        }
    }

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
    fn check_data_says_what_load_says() {
        let frames = [
            frame_bytes!(Kind::Data, flags 0x1, stream 1; *b"hello"),
            frame_bytes!(Kind::Data, flags 0x1, stream 0; *b"hello"),
            frame_bytes!(Kind::Data, flags 0x8, stream 1; []),
            frame_bytes!(Kind::Data, flags 0x8, stream 1; [0]),
            frame_bytes!(Kind::Data, flags 0x8, stream 1; [1, 2]),
            frame_bytes!(Kind::Data, flags 0x8, stream 1; [2, 2, 3]),
            frame_bytes!(Kind::Data, flags 0x8, stream 0; [9]),
            frame_bytes!(Kind::Data, flags 0, stream 3; []),
        ];
        for bytes in &frames {
            let (_, raw) = raw_frame(bytes).unwrap();
            let load = Frame::load(raw).err();
            assert_eq!(
                check_data(&raw.head, Some(raw.payload)).err(),
                load,
                "{bytes:?}"
            );
            // Without the payload only the stream is checked.
            let head_only = require_stream(&raw.head).err();
            assert_eq!(check_data(&raw.head, None).err(), head_only, "{bytes:?}");
            // The padding it finds is what load leaves out of the data.
            if let (Ok(p), Ok(Frame::Data(d))) =
                (check_data(&raw.head, Some(raw.payload)), Frame::load(raw))
            {
                assert_eq!(p as usize + d.data.len(), raw.payload.len(), "{bytes:?}");
            }
        }
        let (_, raw) = raw_frame(&frames[3]).unwrap();
        assert_eq!(check_data(&raw.head, Some(raw.payload)), Ok(1));
        let (_, raw) = raw_frame(&frames[4]).unwrap();
        assert_eq!(check_data(&raw.head, None), Ok(0));
    }

    #[test]
    fn a_frame_moves_to_a_copy_of_its_bytes() {
        let frames = [
            frame_bytes!(Kind::Data, flags 0x9, stream 1; [2], *b"hi", [0, 0]),
            frame_bytes!(Kind::Headers, flags 0x24, stream 3; [0x80, 0, 0, 1, 7, 0x82, 0x86]),
            frame_bytes!(Kind::Priority, flags 0, stream 5; [0, 0, 0, 3, 15]),
            frame_bytes!(Kind::RstStream, flags 0, stream 5; [0, 0, 0, 8]),
            frame_bytes!(Kind::Settings, flags 0, stream 0; [0, 3, 0, 0, 0, 100, 0, 4, 0, 1, 0, 0]),
            frame_bytes!(Kind::PushPromise, flags 0x4, stream 1; [0, 0, 0, 2, 0x82]),
            frame_bytes!(Kind::Ping, flags 1, stream 0; [2, 4, 16, 16, 9, 14, 7, 7]),
            frame_bytes!(Kind::GoAway, flags 0, stream 0; [0, 0, 0, 1, 0, 0, 0, 11], *b"calm"),
            frame_bytes!(Kind::WindowUpdate, flags 0, stream 0; [0, 0, 0x10, 0]),
            frame_bytes!(Kind::Continuation, flags 0x4, stream 1; [0x84]),
            frame_bytes!(Kind::Unknown(0xfa), flags 0xff, stream 9; [1, 2, 3]),
        ];
        let empty = load_one(&frames[6]).unwrap();
        assert!(empty.bytes().is_empty());
        // Packed: the head and the bytes give it back, for every type.
        let more = [
            frame_bytes!(Kind::Headers, flags 0x2c, stream 3; [2, 0x80, 0, 0, 1, 255, 0x82, 0, 0]),
            frame_bytes!(Kind::PushPromise, flags 0xc, stream 1; [1, 0, 0, 0, 2, 0x82, 0]),
            frame_bytes!(Kind::Priority, flags 0, stream 5; [0x80, 0, 0, 3, 0]),
            frame_bytes!(Kind::Data, flags 0, stream 7; []),
        ];
        for bytes in frames.iter().chain(&more) {
            let (_, raw) = raw_frame(bytes).unwrap();
            let f = Frame::load(raw).unwrap();
            let copy = f.bytes().to_vec();
            let packed = f.pack();
            assert!(!packed.is_none());
            let moved = packed.unpack(&raw.head, &copy);
            assert_eq!(moved, Some(f), "{:?}", f.kind());
            // The copy is what the moved frame reads, not the original buffer.
            if !copy.is_empty() {
                let moved = moved.unwrap();
                assert_eq!(moved.bytes().as_ptr(), copy.as_ptr(), "{:?}", f.kind());
            }
        }
        assert_eq!(
            Packed::NONE.unpack(&raw_frame(&frames[0]).unwrap().1.head, &[]),
            None
        );
        assert!(Packed::NONE.is_none());
        assert!(std::mem::size_of::<Packed>() <= 16);
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
