//! The layer between TCP reassembly and the ledger: finds TLS connections, splits each
//! direction into records, reads the handshake, derives keys from the key log and forwards the
//! decrypted application data of `h2` connections to the inner [`Sink`](h2ledger_tcp::Sink).
//!
//! One module per job; each uses only the modules above it in this list (and the crate's
//! `dirs`, `wire`, `crypto`, `keylog`), so there is no cycle:
//!
//! ```text
//! state      the state machines: State per direction, Keys per connection (one match each)
//! detect     is a connection TLS (its first bytes)
//! framing    a direction's bytes into whole records
//! conn       what is kept per connection and direction               state, framing
//! handshake  what the hellos tell (client random, version, suite, ALPN)      conn
//! report     Status, ConnReport, TlsReport; a connection's summary at its end  conn
//! tls        Config, Tls (all connections, totals, warnings), Layer   conn, report
//! keys       key log lookups, traffic keys, Finished, KeyUpdate  conn, state, tls
//! held       records waiting for their keys, bounded                conn, state, tls
//! record     a whole record: read, held or decrypted; its handshake messages;
//!            released records                                         all above
//! sink       the Sink: detection, framing, gaps, keys added live, close; TlsLayer
//!                                                                     all above
//! ```
//!
//! A direction's life, in [`state::State`]: `Hello` (handshake in the clear; TLS 1.3's
//! protected handshake under the handshake key) to `Cipher` (TLS 1.2, after
//! ChangeCipherSpec) or `App` (TLS 1.3, after Finished; `Trial` first when only the
//! application secret is known), and `Dead` (decryption given up) or `Lost` (framing lost).
//! A connection's key log lookups, in [`state::Keys`]: `Unknown`, `Found`, `Missing`, or
//! (live) `Waiting` with its records held.

mod conn;
mod detect;
mod framing;
mod handshake;
mod held;
mod keys;
mod record;
mod report;
mod sink;
mod state;
mod tls;

#[cfg(test)]
mod tests;

pub use report::{ConnReport, Status, TlsReport, KEYLOG_HOWTO};
pub use sink::TlsLayer;
pub use tls::{Config, Layer, Tls};
