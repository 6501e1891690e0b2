//! The run's pipeline lives in the library (crates/h2ledger-run); the binary adds libpcap's
//! timestamps.

pub use h2ledger_run::pipeline::*;

/// A libpcap timestamp in nanoseconds. Captures are opened with nanosecond precision, so
/// `tv_usec` holds nanoseconds.
pub fn ts_nanos(ts: &libc::timeval) -> h2ledger_tcp::Nanos {
    ts.tv_sec
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_usec)
}
