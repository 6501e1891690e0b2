//! The h2ledger ledger: HTTP/2 on reassembled TCP streams, counted per side.
//!
//! [`Ledger`] is a [`h2ledger_tcp::Sink`]: feed it from an [`h2ledger_tcp::Reassembler`]. It
//! finds HTTP/2 on any port (the client preface, or a proven run of frame headers when the
//! capture started mid-connection or mid-frame), splits each direction into frames, decodes
//! header blocks with one HPACK decoder per direction, tells the client from the server and
//! hands every frame to an [`Observer`]. [`Tally`] is the observer that counts the ledger;
//! [`LedgerReport`] is its serializable result. docs/ledger.md defines every term.
//!
//! The crate is pure: no pcap, no tokio, no unsafe. Memory per connection is bounded by the
//! constants in [`ledger`] (detection buffer, header block, tracked streams).
//!
//! # What it offers
//!
//! The root re-exports what a run wires together: the ledger and what it feeds ([`Ledger`],
//! [`Observer`], [`FrameEvent`], [`ConnSummary`], [`ClientBy`], [`Warnings`], [`HeaderList`],
//! [`Header`]), the counting ([`Tally`], [`LedgerReport`], [`SideTally`], [`ConnLedger`]), the
//! analysis ([`Analysis`], [`AnalysisReport`], [`Splitter`], [`Timeline`]) and the vocabulary
//! ([`Side`], [`Sides`], [`FrameClass`], [`FrameCounts`], [`StreamId`]). The public modules hold
//! the rest of each job's API and its published bounds (`MAX_*`): [`ledger`], [`tally`],
//! [`analysis`] (calls, phases, the report types), [`flow`] (flow control), [`grpc`] (gRPC
//! messages) and [`stats`] (percentiles, bounded histograms). Detection, framing, header
//! blocks and the phase arithmetic are private.
//!
//! ```
//! use h2ledger_core::{Ledger, LedgerReport, Tally};
//! use h2ledger_tcp::{ConnId, ConnMeta, Dir, Sink, Write};
//!
//! let mut ledger = Ledger::new(Tally::new());
//! let meta = ConnMeta {
//!     id: ConnId(0),
//!     first_src: "127.0.0.1:50000".parse().unwrap(),
//!     first_dst: "127.0.0.1:50051".parse().unwrap(),
//!     syn_sender: Some(Dir::Fwd),
//!     start: 0,
//!     resumes: None,
//! };
//! ledger.open(&meta);
//! let mut bytes = h2_frame_parser::PREFACE.to_vec();
//! bytes.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]); // empty SETTINGS
//! let w = Write { index: 0, ts: 1, len: bytes.len() as u32 };
//! ledger.write(ConnId(0), Dir::Fwd, &w);
//! ledger.data(ConnId(0), Dir::Fwd, &w, &bytes);
//! let report = LedgerReport::build(&ledger.connections(), &ledger.observer);
//! assert_eq!(report.connections, 1);
//! assert_eq!(report.sides.client.frames.get(h2ledger_core::FrameClass::Settings), 1);
//! assert_eq!(report.sides.client.writes, 1);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod analysis;
mod detect;
pub mod findings;
pub mod flow;
pub mod grpc;
mod headers;
pub mod ledger;
mod model;
mod phase;
pub mod stats;
pub(crate) mod table;
pub mod tally;
#[cfg(test)]
mod testkit;
mod text;

/// The maps keyed by connection, stream and call ids that every frame touches: foldhash, seeded
/// at random per process (std's SipHash took about a sixth of `calls --format jsonl`; decision
/// 96).
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// The seed of the hashes of ids the wire chooses (stream ids): drawn once per process and
/// XORed into the id before the golden ratio's multiply-shift, so that a capture or a peer
/// cannot pick ids whose hashes collide (linear probing through one run of them would make
/// every lookup cost as many steps as there are streams: quadratic time; decision 246), while
/// the ids of a stream's neighbours keep the multiply's even spread (a random multiplier,
/// decision 246's first form, spread them unevenly for some draws: up to 11% more
/// instructions in a replay; decision 262). Tables keyed by it are never iterated in an order
/// that reaches the output.
pub(crate) fn id_seed() -> u64 {
    use std::hash::BuildHasher;
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SEED.get_or_init(|| std::collections::hash_map::RandomState::new().hash_one(0x9e37_79b9_u64))
}

/// The golden ratio's multiplier (Fibonacci hashing): consecutive ids land far apart.
pub(crate) const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;
/// The set of [`FastMap`]'s kind.
pub(crate) type FastSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;

pub use analysis::{Analysis, AnalysisReport, Splitter, Timeline};
pub use h2_frame_parser::StreamId;
pub use headers::{Header, HeaderList, Known};
pub use ledger::{ClientBy, ConnSummary, FrameEvent, Ledger, Observer, Warnings};
pub use model::{
    FrameClass, FrameCounts, PingFact, Side, Sides, StreamStep, MAX_OPEN_STREAMS,
    MAX_OUTSTANDING_PINGS,
};
pub use tally::{ConnLedger, LedgerReport, SideTally, Tally, Unlisted};
