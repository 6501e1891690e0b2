//! Times as printed: nanoseconds since the epoch (the one clock of a run) as RFC 3339; and
//! times and durations as the command line gives them ([`durations`], [`cuts`]).

pub mod cuts;
pub mod durations;

use h2ledger_tcp::Nanos;

/// Nanoseconds since the epoch as RFC 3339 UTC with microseconds.
pub fn fmt_rfc3339(t: Nanos) -> String {
    let ts = jiff::Timestamp::from_nanosecond(i128::from(t))
        .and_then(|ts| ts.round(jiff::Unit::Microsecond))
        .unwrap_or(jiff::Timestamp::MAX);
    ts.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// A duration as the shortest exact unit: `1s`, `90s`, `250ms`, `1500us`, `7ns`.
pub fn show_duration(d: std::time::Duration) -> String {
    let ns = d.as_nanos();
    match ns {
        _ if ns.is_multiple_of(1_000_000_000) => format!("{}s", ns / 1_000_000_000),
        _ if ns.is_multiple_of(1_000_000) => format!("{}ms", ns / 1_000_000),
        _ if ns.is_multiple_of(1_000) => format!("{}us", ns / 1_000),
        _ => format!("{ns}ns"),
    }
}
