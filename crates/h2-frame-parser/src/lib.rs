#![forbid(unsafe_code)]
#![warn(missing_docs)]
//! HTTP/2 frames (RFC 9113), HPACK (RFC 7541) and known PING payloads, for passive analysis.
//!
//! Pure and zero-copy: no I/O, no async runtime; frames borrow from the caller's reassembled
//! buffer.
//!
//! # Contract
//!
//! No function in this crate panics on any input. The frame envelope is parsed with nom
//! streaming parsers, so `Err(nom::Err::Incomplete(_))` only means "more bytes needed";
//! [`Frame::load`] reports RFC violations as [`FrameError`]; [`hpack::Decoder::decode`]
//! reports bad header blocks as [`hpack::HpackError`] and is bounded in time and memory.
//! Once a frame is loaded, no accessor can panic. Both parsers are fuzzed (see `fuzz/`).
//!
//! # Example
//!
//! ```
//! use h2_frame_parser::{hpack, raw_frame, Frame, Head, PREFACE};
//!
//! // A client's first bytes: preface, SETTINGS, then HEADERS for GET / on stream 1.
//! let mut wire = PREFACE.to_vec();
//! wire.extend_from_slice(&[0, 0, 6, 0x4, 0, 0, 0, 0, 0, 0, 0x3, 0, 0, 0, 100]);
//! wire.extend_from_slice(&[0, 0, 3, 0x1, 0x5, 0, 0, 0, 1, 0x82, 0x86, 0x84]);
//! wire.extend_from_slice(&[0, 0, 8]); // a frame whose rest has not arrived yet
//!
//! let mut input = &wire[PREFACE.len()..];
//! let mut hpack = hpack::Decoder::new();
//! let mut names = Vec::new();
//! while let Ok((rest, raw)) = raw_frame(input) {
//!     assert!(raw.head.plausible(16_384));
//!     match Frame::load(raw) {
//!         Ok(Frame::Headers(h)) => hpack
//!             .decode(h.fragment, |f| names.push(String::from_utf8_lossy(f.name).into_owned()))
//!             .unwrap(),
//!         Ok(other) => println!("{:?}", other.kind()),
//!         Err(e) => println!("malformed: {e}"),
//!     }
//!     input = rest;
//! }
//! assert_eq!(names, [":method", ":scheme", ":path"]);
//! assert_eq!(input.len(), 3); // Incomplete: wait for more bytes
//! # let _ = Head::parse;
//! ```

mod frame;
pub mod hpack;
pub mod ping;

pub use frame::{
    check_data, raw_frame, Continuation, Data, ErrorCode, Flags, Frame, FrameError, GoAway, Head,
    Headers, Kind, Packed, Ping, Priority, PrioritySpec, PushPromise, RawFrame, RstStream,
    SettingId, Settings, SettingsIter, StreamId, WindowUpdate, HEAD_LEN, PREFACE,
};
