//! One h2ledger run as a library: packets in, reports out.
//!
//! A [`Session`] is what every command drives: built from an observer (usually [`Obs`], the
//! run's observers: the tally, per-phase tallies, the analysis and the plot timeline, each only
//! when asked for by [`Wanted`]) and [`Options`] (connections tracked, limits, the filter, TLS
//! keys), it is fed packets ([`Session::feed`] decodes the link, IP and TCP layers, reassembles
//! each direction, decrypts TLS and feeds the ledger; it says with a typed [`Stop`] when a limit
//! ends the run), told about idle time, and finished with how the input ended ([`End`]). The
//! [`Finished`] run holds the whole capture's [`Report`]; its phases' reports are built one at a
//! time when printed. A `Report` is typed: its JSON is the published object, fields in the
//! published order.
//!
//! [`input`] holds the readers a saved capture's bytes go through before libpcap: gzip and
//! zstd decompression, and a forward-only reader for the pcapng key scan. [`split`] cuts a
//! capture into shards by TCP connection (`h2ledger split`).
//!
//! The crate is pure: no pcap, no tokio, no printing, no unsafe. Memory is bounded as
//! docs/ledger.md ("Memory bounds") says.
//!
//! ```
//! use h2ledger_run::{End, Obs, Options, Session, Wanted};
//! use h2ledger_tcp::LinkType;
//!
//! let obs = Obs::new(&Wanted { analysis: true, ..Wanted::default() });
//! let mut s = Session::new(obs, Options::default());
//! // A raw IPv4 packet that is not TCP: counted, nothing else.
//! let mut udp = vec![0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1];
//! udp.extend_from_slice(&[0, 1, 0, 2, 0, 8, 0, 0]);
//! assert!(s.feed(LinkType::RAW, 1_000_000_000, &udp).is_continue());
//! let done = s.finish(&End::Complete, None);
//! assert_eq!(done.report.ledger.connections, 0);
//! assert_eq!(done.report.capture.as_ref().map(|c| (c.packets, c.not_tcp)), Some((1, 1)));
//! assert_eq!(done.phase_count(), 0);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod far;
pub mod input;
pub mod keylog;
pub mod merge;
mod obs;
pub mod parallel;
mod pipeline;
pub mod procs;
mod report;
mod session;
pub mod split;
mod ticker;
pub mod time;
pub mod workloads;

pub use obs::{Obs, Wanted};
pub use pipeline::KeyPoll;
pub use report::{secs, CaptureStats, Drops, Report, TcpReport};
pub use session::{
    End, Finished, FireAt, Fired, Options, PlotInput, RunEnd, Running, Session, Stop, Tick, View,
    DEFAULT_MAX_CONNECTIONS,
};
pub use ticker::Ticker;
