//! One h2ledger run as a library: packets in, reports out.
//!
//! [`Pipeline`] decodes each packet (link, IP, TCP), reassembles each direction and feeds the
//! ledger, which hands frames to an observer; [`Obs`] is the observer of a run (the tally,
//! per-phase tallies, the analysis and the plot timeline, each only when asked for), and
//! [`build`] turns a finished run into the whole capture's [`Report`] and its [`Phases`],
//! whose reports are built one at a time when printed. A `Report` is typed
//! (`#[derive(Serialize)]`-backed): the binary's tables read its fields and its JSON is the
//! published object; the crate never patches JSON after the fact. The crate
//! is pure: no pcap, no tokio, no printing, no unsafe; the binary adds the capture sources, the
//! command line and the rendering. Memory is bounded as docs/ledger.md ("Memory bounds") says.
//!
//! ```
//! use h2ledger_run::{build, Obs, Pipeline, Wanted};
//!
//! let mut p = Pipeline::new(Obs::new(&Wanted { analysis: true, ..Wanted::default() }));
//! // A raw IPv4 packet (LINKTYPE_RAW = 101) that is not TCP: counted, nothing else.
//! let mut udp = vec![0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1];
//! udp.extend_from_slice(&[0, 1, 0, 2, 0, 8, 0, 0]);
//! p.packet(101, 1_000_000_000, &udp);
//! p.finish();
//! let whole = p.ledger_report(&p.ledger.observer.tally);
//! let (full, phases) = build(&mut p, whole);
//! assert_eq!(full.ledger.connections, 0);
//! assert_eq!(full.capture.as_ref().map(|c| c.packets), Some(1));
//! assert_eq!(p.stats.not_tcp, 1);
//! assert!(phases.is_empty());
//! ```
#![forbid(unsafe_code)]

pub mod pipeline;
pub mod report;
pub mod run;

pub use pipeline::{CaptureStats, Pipeline};
pub use report::{secs, Drops, Report, TcpReport};
pub use run::{build, Obs, Phases, Wanted};
