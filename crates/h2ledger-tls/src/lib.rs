//! HTTP/2 over TLS for h2ledger: a layer between TCP reassembly ([`h2ledger_tcp::Reassembler`])
//! and the ledger that decrypts TLS 1.2 and 1.3 with the secrets of a key log
//! (`SSLKEYLOGFILE`).
//!
//! [`Tls::layer`] wraps any [`h2ledger_tcp::Sink`] (the ledger) into a `Sink`: connections that
//! are not TLS pass through unchanged; on a TLS connection each direction is split into records
//! (counted with [`h2ledger_tcp::Sink::tls_record`]), the handshake is read (client random,
//! version, cipher suite, ALPN), keys are derived from the [`KeyLog`] and the application data
//! of connections whose ALPN is `h2` is handed to the inner sink, tagged with the write (TCP
//! segment) that completed its record. Writes pass through unchanged, so `writes` and `bytes`
//! stay TCP segments. What could not be decrypted, and why, is in [`Tls::report`] and
//! [`Tls::take_warnings`].
//!
//! The crate is pure: no pcap, no tokio, no printing, no unsafe; the record AEADs come from
//! `ring`, the key schedules from RustCrypto. Memory is bounded by [`Config`] and
//! [`wire::MAX_RECORD_PAYLOAD`] (one partial record per direction), plus the plaintext of one
//! `data` call while it is decrypted. The plaintext of the records one TCP segment completes
//! reaches the inner sink in one `data` call, as that segment's bytes would on cleartext.
//!
//! ```
//! use h2ledger_tls::{Config, KeyLog, Tls};
//! use h2ledger_tcp::{CloseKind, ConnId, ConnMeta, Dir, Sink, Write};
//! use h2ledger_core::{Ledger, Tally};
//!
//! let keys = KeyLog::parse("# no keys\n");
//! let mut tls = Tls::new(Config::default(), keys);
//! let mut ledger = Ledger::new(Tally::new());
//! let meta = ConnMeta {
//!     id: ConnId(0),
//!     first_src: "127.0.0.1:50000".parse().unwrap(),
//!     first_dst: "127.0.0.1:443".parse().unwrap(),
//!     syn_sender: Some(Dir::Fwd),
//!     start: 0,
//!     resumes: None,
//! };
//! let w = Write { index: 0, ts: 1, len: 5 };
//! let mut sink = tls.layer(&mut ledger);
//! sink.open(&meta);
//! sink.write(ConnId(0), Dir::Fwd, &w);
//! sink.data(ConnId(0), Dir::Fwd, &w, &[22, 3, 1, 0, 0]); // a TLS handshake record
//! sink.close(ConnId(0), 2, CloseKind::EndOfCapture);
//! assert_eq!(tls.report().connections, 1);
//! assert_eq!(tls.report().truncated_handshake, 1);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod crypto;
mod keylog;
mod layer;
pub mod wire;

pub use keylog::{KeyLog, KeyLogStats, Secrets};
pub use layer::{Config, ConnReport, Layer, Status, Tls, TlsLayer, TlsReport, KEYLOG_HOWTO};
