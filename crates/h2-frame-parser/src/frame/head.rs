//! The 9-octet frame header (RFC 9113 §4.1) and the frame type and flag newtypes.
//!
//! # Contract
//!
//! [`Head::parse`] reads exactly [`HEAD_LEN`] octets and never panics; every field of a
//! [`Head`] is a plain value, so nothing read from it afterwards can panic either.

use core::fmt;

use super::StreamId;

use nom::bytes::streaming::take;
use nom::IResult;

/// Length of the frame header: 24-bit length, 8-bit type, 8-bit flags, 1 reserved bit and a
/// 31-bit stream identifier.
pub const HEAD_LEN: usize = 9;

/// The client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Frame type. Types this crate does not know are kept as data in [`Kind::Unknown`]:
/// "Implementations MUST ignore and discard frames of unknown types" (RFC 9113 §4.1), so an
/// extension frame is something to count, never an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// DATA (0x0).
    Data,
    /// HEADERS (0x1).
    Headers,
    /// PRIORITY (0x2).
    Priority,
    /// RST_STREAM (0x3).
    RstStream,
    /// SETTINGS (0x4).
    Settings,
    /// PUSH_PROMISE (0x5).
    PushPromise,
    /// PING (0x6).
    Ping,
    /// GOAWAY (0x7).
    GoAway,
    /// WINDOW_UPDATE (0x8).
    WindowUpdate,
    /// CONTINUATION (0x9).
    Continuation,
    /// Any type octet not defined by RFC 9113 (for example 0x10 PRIORITY_UPDATE from RFC 9218).
    Unknown(u8),
}

impl Kind {
    /// The kind of a type octet; undefined octets become [`Kind::Unknown`].
    pub fn from_u8(byte: u8) -> Kind {
        match byte {
            0x0 => Kind::Data,
            0x1 => Kind::Headers,
            0x2 => Kind::Priority,
            0x3 => Kind::RstStream,
            0x4 => Kind::Settings,
            0x5 => Kind::PushPromise,
            0x6 => Kind::Ping,
            0x7 => Kind::GoAway,
            0x8 => Kind::WindowUpdate,
            0x9 => Kind::Continuation,
            other => Kind::Unknown(other),
        }
    }

    /// The type octet on the wire.
    pub fn as_u8(self) -> u8 {
        match self {
            Kind::Data => 0x0,
            Kind::Headers => 0x1,
            Kind::Priority => 0x2,
            Kind::RstStream => 0x3,
            Kind::Settings => 0x4,
            Kind::PushPromise => 0x5,
            Kind::Ping => 0x6,
            Kind::GoAway => 0x7,
            Kind::WindowUpdate => 0x8,
            Kind::Continuation => 0x9,
            Kind::Unknown(other) => other,
        }
    }

    /// The RFC's upper-case name; `"UNKNOWN"` for [`Kind::Unknown`].
    pub fn name(self) -> &'static str {
        match self {
            Kind::Data => "DATA",
            Kind::Headers => "HEADERS",
            Kind::Priority => "PRIORITY",
            Kind::RstStream => "RST_STREAM",
            Kind::Settings => "SETTINGS",
            Kind::PushPromise => "PUSH_PROMISE",
            Kind::Ping => "PING",
            Kind::GoAway => "GOAWAY",
            Kind::WindowUpdate => "WINDOW_UPDATE",
            Kind::Continuation => "CONTINUATION",
            Kind::Unknown(_) => "UNKNOWN",
        }
    }

    /// The flag bits RFC 9113 defines for this type (0 for unknown types).
    pub(crate) fn defined_flags(self) -> u8 {
        match self {
            Kind::Data => Flags::END_STREAM | Flags::PADDED,
            Kind::Headers => {
                Flags::END_STREAM | Flags::END_HEADERS | Flags::PADDED | Flags::PRIORITY
            }
            Kind::Settings | Kind::Ping => Flags::ACK,
            Kind::PushPromise => Flags::END_HEADERS | Flags::PADDED,
            Kind::Continuation => Flags::END_HEADERS,
            Kind::Priority
            | Kind::RstStream
            | Kind::GoAway
            | Kind::WindowUpdate
            | Kind::Unknown(_) => 0,
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Unknown(byte) => write!(f, "UNKNOWN({byte:#04x})"),
            known => f.write_str(known.name()),
        }
    }
}

/// The flags octet. Which bits mean something depends on the frame type: `0x1` is END_STREAM
/// on DATA and HEADERS but ACK on SETTINGS and PING.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Flags(pub u8);

impl Flags {
    /// DATA, HEADERS: the sender's last frame on the stream.
    pub const END_STREAM: u8 = 0x1;
    /// SETTINGS, PING: an acknowledgement.
    pub const ACK: u8 = 0x1;
    /// HEADERS, PUSH_PROMISE, CONTINUATION: the header block ends with this frame.
    pub const END_HEADERS: u8 = 0x4;
    /// DATA, HEADERS, PUSH_PROMISE: Pad Length and padding are present.
    pub const PADDED: u8 = 0x8;
    /// HEADERS: the priority fields are present.
    pub const PRIORITY: u8 = 0x20;

    pub(crate) fn contains(self, bits: u8) -> bool {
        self.0 & bits == bits
    }
    /// END_STREAM is set (meaningful on DATA and HEADERS).
    pub fn is_end_stream(self) -> bool {
        self.contains(Self::END_STREAM)
    }
    /// ACK is set (meaningful on SETTINGS and PING).
    pub fn is_ack(self) -> bool {
        self.contains(Self::ACK)
    }
    /// END_HEADERS is set.
    pub fn is_end_headers(self) -> bool {
        self.contains(Self::END_HEADERS)
    }
    /// PADDED is set.
    pub fn is_padded(self) -> bool {
        self.contains(Self::PADDED)
    }
    /// PRIORITY is set.
    pub fn is_priority(self) -> bool {
        self.contains(Self::PRIORITY)
    }
}

impl fmt::Display for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#04x}", self.0)
    }
}

/// A decoded frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Head {
    /// Payload length (24 bits), not counting the 9 header octets.
    pub length: u32,
    /// Frame type.
    pub kind: Kind,
    /// Flags octet.
    pub flags: Flags,
    /// Stream identifier with the reserved bit masked off.
    pub stream_id: StreamId,
    /// The reserved bit. "MUST remain unset (0x0) when sending and MUST be ignored when
    /// receiving" (RFC 9113 §4.1): `Frame::load` ignores it, [`Head::plausible`] rejects it.
    pub reserved_bit: bool,
}

impl Head {
    /// Streaming parser: `Err(Incomplete(Needed::Size(n)))` when `n` more octets are needed to
    /// complete the [`HEAD_LEN`]-octet header.
    pub fn parse(input: &[u8]) -> IResult<&[u8], Head> {
        // Streaming outside (so `Needed` counts the whole header), complete inside.
        let (rest, head) = take(HEAD_LEN)(input)?;
        match <&[u8; HEAD_LEN]>::try_from(head) {
            Ok(octets) => Ok((rest, Head::from_octets(octets))),
            // `take` gave exactly HEAD_LEN octets; this arm is never taken.
            Err(_) => Err(nom::Err::Error(nom::error::Error::new(
                input,
                nom::error::ErrorKind::Eof,
            ))),
        }
    }

    /// The fields of exactly [`HEAD_LEN`] octets (the fixed layout needs no combinator: this
    /// is the per-frame hot path, a few instructions instead of four nom parsers).
    #[inline]
    pub(crate) fn from_octets(h: &[u8; HEAD_LEN]) -> Head {
        let sid = u32::from_be_bytes([h[5], h[6], h[7], h[8]]);
        Head {
            length: u32::from_be_bytes([0, h[0], h[1], h[2]]),
            kind: Kind::from_u8(h[3]),
            flags: Flags(h[4]),
            stream_id: StreamId(sid & 0x7fff_ffff),
            reserved_bit: sid & 0x8000_0000 != 0,
        }
    }

    /// Whether this header could start a frame of a well-behaved peer, judged from the 9
    /// octets alone. Used for HTTP/2 detection and to resynchronise after a gap.
    ///
    /// True when all of these hold: the reserved bit is clear; `length <= max_frame_size`;
    /// the type is one RFC 9113 defines; no flag bit outside the type's defined flags is set;
    /// the stream identifier is 0 for SETTINGS, PING and GOAWAY and non-zero for DATA,
    /// HEADERS, PRIORITY, RST_STREAM, PUSH_PROMISE and CONTINUATION; PING is 8 octets long,
    /// WINDOW_UPDATE and RST_STREAM 4, PRIORITY 5; SETTINGS is a multiple of 6 long and
    /// empty when ACK is set.
    ///
    /// Minimum lengths that depend on flags (PADDED, PRIORITY) or that only bound the payload
    /// from below (GOAWAY >= 8, PUSH_PROMISE >= 4) are left to `Frame::load`.
    pub fn plausible(&self, max_frame_size: u32) -> bool {
        if self.reserved_bit || self.length > max_frame_size {
            return false;
        }
        if self.flags.0 & !self.kind.defined_flags() != 0 {
            return false;
        }
        let zero = self.stream_id.is_zero();
        match self.kind {
            Kind::Unknown(_) => false,
            Kind::Settings => {
                zero && self.length.is_multiple_of(6) && !(self.flags.is_ack() && self.length != 0)
            }
            Kind::Ping => zero && self.length == 8,
            Kind::GoAway => zero,
            Kind::WindowUpdate => self.length == 4,
            Kind::RstStream => !zero && self.length == 4,
            Kind::Priority => !zero && self.length == 5,
            Kind::Data | Kind::Headers | Kind::PushPromise | Kind::Continuation => !zero,
        }
    }
}
