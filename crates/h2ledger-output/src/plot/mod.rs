//! `--plot FILE.svg`: frames over time as small multiples, one row per frame kind that was
//! seen and one column per side, so that series with equal values never hide each other; with
//! `--analyze`, two more rows: each side's connection window and the available window of its
//! busiest stream. Drawn with plotters' SVG backend, the bars (each with its count as a
//! tooltip) laid over it.
//!
//! What is drawn is decided first, as data (a plan): the bin (from the capture's length, or
//! `--bin`), the rows, the ticks and the legend entries (only for marks that are drawn).
//! [`svg`] then draws it. A plot without frames says why ([`why_empty`]).

mod draw;
mod plan;

#[cfg(test)]
use draw::render;
pub use draw::svg;
pub use plan::{
    fmt_duration, Options, CONN_WINDOW, MAX_BINS, PHASE_BOUNDARY, STALL, STREAM_WINDOW,
};

use h2ledger_run::{PlotInput, Report};

/// The plot could not be drawn (plotters' error, as text).
#[derive(Debug)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot draw the plot: {}", self.0)
    }
}

impl std::error::Error for Error {}

/// Writes the `--plot` SVG of a finished run into `file`; a bin other than `--bin` asked for,
/// and a plot without frames, are said on `err` (one `warning:` line each).
pub fn write(
    mut file: std::fs::File,
    p: &PlotInput<'_>,
    o: &Options,
    err: &mut dyn std::io::Write,
) -> Result<(), Error> {
    let plan = plan::Plan::new(p, o);
    if let Some(n) = &plan.bin_note {
        let _ = writeln!(err, "warning: {n}");
    }
    if let Some(why) = &plan.empty {
        let _ = writeln!(err, "warning: the plot is empty: {why}");
    }
    let svg = draw::render(&plan)?;
    std::io::Write::write_all(&mut file, svg.as_bytes()).map_err(|e| Error(e.to_string()))
}

/// Why a run has no HTTP/2 frame to draw, in a few words (a `warning:` line stays within 100
/// columns): no packets, TLS that was not decrypted (and why not), no HTTP/2 in the TCP
/// segments, or connections without a complete frame.
pub fn why_empty(r: &Report) -> String {
    let s = |n: u64| if n == 1 { "" } else { "s" };
    let (packets, tcp) = r
        .capture
        .as_ref()
        .map_or((0, 0), |c| (c.packets, c.tcp_segments));
    if packets == 0 {
        return "no packets (an empty capture, or the filter matched none)".into();
    }
    if let Some(t) = r
        .tls
        .as_ref()
        .filter(|t| t.decrypted == 0 && t.connections > 0)
    {
        let n = t.connections;
        let h2 = n.saturating_sub(t.not_h2);
        if h2 == 0 {
            return format!("{n} TLS connection{}, none with ALPN h2", s(n));
        }
        let lead = if h2 == n {
            format!("{n} TLS connection{} (ALPN h2)", s(n))
        } else {
            format!("{n} TLS connections ({h2} ALPN h2)")
        };
        let why = if t.keylog.key_lines == 0 {
            "pass --keylog FILE"
        } else if t.without_key > 0 {
            "no secret in the key log"
        } else if t.no_handshake > 0 {
            "the capture began after the handshake"
        } else if t.auth_failed > 0 {
            "the key log's secrets fail"
        } else {
            "see the TLS table"
        };
        return format!("{lead}, not decrypted: {why}");
    }
    if tcp == 0 {
        return format!("none of the {packets} packet{} is TCP", s(packets));
    }
    if r.ledger.connections == 0 {
        return format!(
            "no HTTP/2 in {tcp} TCP segment{}: check --port and the filter",
            s(tcp)
        );
    }
    let n = r.ledger.connections;
    format!("{n} HTTP/2 connection{}, but no complete frame", s(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use h2ledger_run::CaptureStats;

    #[test]
    fn an_empty_plot_says_why() {
        let mut r = Report::default();
        assert!(why_empty(&r).starts_with("no packets"));
        r.capture = Some(CaptureStats {
            packets: 154,
            ..CaptureStats::default()
        });
        assert_eq!(why_empty(&r), "none of the 154 packets is TCP");
        r.capture.as_mut().unwrap().tcp_segments = 154;
        assert_eq!(
            why_empty(&r),
            "no HTTP/2 in 154 TCP segments: check --port and the filter"
        );
        r.tls = Some(h2ledger_tls::TlsReport {
            connections: 3,
            without_key: 3,
            ..Default::default()
        });
        assert_eq!(
            why_empty(&r),
            "3 TLS connections (ALPN h2), not decrypted: pass --keylog FILE"
        );
        r.tls.as_mut().unwrap().keylog.key_lines = 4;
        assert_eq!(
            why_empty(&r),
            "3 TLS connections (ALPN h2), not decrypted: no secret in the key log"
        );
    }
}
