//! Link/IP/TCP decoding and per-direction TCP reassembly for h2ledger.
//!
//! Two stages, both pure (no pcap, no I/O, no `unsafe`):
//!
//! 1. [`link::decode`] turns one captured frame into a borrowed [`TcpSegment`]
//!    (or `Ok(None)` for anything that is not TCP). It never panics on any input.
//! 2. A [`Reassembler`] turns segments into ordered byte streams, one per connection and
//!    direction, reported to a [`Sink`]:
//!    * [`Sink::open`] once per connection, [`Sink::close`] once per connection (RST,
//!      both FINs, eviction, or [`Reassembler::finish`]), after all its data;
//!    * [`Sink::write`] once per *write*: a segment that carries at least one byte not
//!      seen before in its direction, when first seen, before any of its bytes;
//!      retransmissions and zero-length segments are not writes;
//!    * [`Sink::data`] with in-order bytes, each chunk tagged with the [`Write`] that
//!      carried it; every stream byte is delivered at most once;
//!    * [`Sink::gap`] for bytes proven lost (see the crate README for the rules).
//!
//!    Memory is bounded by [`Config`]; in-order data is passed through borrowed.
//!
//! ```
//! use h2ledger_tcp::{link, CloseKind, Config, ConnId, ConnMeta, Dir, Nanos, Reassembler, Sink, Write};
//!
//! #[derive(Default)]
//! struct Collect { bytes: Vec<u8>, writes: Vec<u64>, closed: bool }
//! impl Sink for Collect {
//!     fn open(&mut self, meta: &ConnMeta) { assert_eq!(meta.id, ConnId(0)); }
//!     fn write(&mut self, _: ConnId, _: Dir, w: &Write) { self.writes.push(w.index); }
//!     fn data(&mut self, _: ConnId, _: Dir, _: &Write, bytes: &[u8]) { self.bytes.extend_from_slice(bytes); }
//!     fn gap(&mut self, _: ConnId, _: Dir, _: Nanos, _: u64) { unreachable!(); }
//!     fn close(&mut self, _: ConnId, _: Nanos, kind: CloseKind) {
//!         assert_eq!(kind, CloseKind::EndOfCapture);
//!         self.closed = true;
//!     }
//! }
//!
//! // Raw IPv4 (LINKTYPE_RAW = 101): 127.0.0.1:40000 -> 127.0.0.1:50051, seq 1000, ACK|PSH, "PRI "
//! let frame: &[u8] = &[
//!     0x45, 0, 0, 44, 0, 0, 0x40, 0, 64, 6, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1,
//!     0x9c, 0x40, 0xc3, 0x83, 0, 0, 0x03, 0xe8, 0, 0, 0, 1, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0,
//!     b'P', b'R', b'I', b' ',
//! ];
//! let seg = link::decode(link::LinkType::RAW, frame).unwrap().expect("a TCP segment");
//! assert_eq!(seg.dst.port(), 50051);
//! assert_eq!(seg.payload, b"PRI ");
//!
//! let mut sink = Collect::default();
//! let mut reasm = Reassembler::new(Config::default());
//! reasm.push(1_000, &seg, &mut sink);
//! reasm.push(2_000, &seg, &mut sink); // a retransmission: no write, no data
//! reasm.finish(3_000, &mut sink);
//! assert_eq!(sink.bytes, b"PRI ");
//! assert_eq!(sink.writes, [0]);
//! assert!(sink.closed);
//! assert_eq!(reasm.stats().retransmissions, 1);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use core::net::SocketAddr;

pub mod defrag;
pub mod link;
mod reasm;
pub mod seq;

pub use link::{DecodeError, LinkType};
pub use reasm::{
    stale_to_drop, CloseKind, Config, ConnId, ConnMeta, Dir, Dirs, Reassembler, Sink, Stats, Write,
    DEFAULT_MAX_EVICTED, RST_GRACE_NS,
};

/// Nanoseconds since the Unix epoch.
pub type Nanos = i64;

/// The TCP flags the reassembler looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpFlags {
    /// SYN.
    pub syn: bool,
    /// FIN.
    pub fin: bool,
    /// RST.
    pub rst: bool,
    /// ACK: the acknowledgment number is valid.
    pub ack: bool,
    /// PSH.
    pub psh: bool,
}

/// One decoded TCP segment, borrowing its payload from the captured frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSegment<'a> {
    /// Sender.
    pub src: SocketAddr,
    /// Receiver.
    pub dst: SocketAddr,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number (meaningful when `flags.ack`).
    pub ack: u32,
    /// Flags.
    pub flags: TcpFlags,
    /// Window (unscaled).
    pub window: u16,
    /// Payload bytes present in the capture.
    pub payload: &'a [u8],
    /// Payload bytes the IP header says were sent: larger than `payload.len()` when the
    /// frame was cut by the snapshot length.
    pub wire_payload_len: u32,
}
