//! `--plot FILE.svg`: frames per second over time as small multiples, one row per frame kind
//! that was seen and one column per side, so that series with equal values never hide each
//! other; with `--analyze`, two more rows: each side's connection window and the available
//! window of its busiest stream. Drawn with plotters' SVG backend.
//!
//! What is drawn is decided first, as data (a plan): the rows, the bins, the ticks and the
//! legend entries (only for marks that are drawn). [`svg`] then draws it.

mod draw;
mod plan;

#[cfg(test)]
use draw::render;
pub use draw::svg;
pub use plan::{CONN_WINDOW, PHASE_BOUNDARY, STALL, STREAM_WINDOW};

/// The plot could not be drawn (plotters' error, as text).
#[derive(Debug)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot draw the plot: {}", self.0)
    }
}

impl std::error::Error for Error {}

/// Writes the `--plot` SVG of a finished run into `file`.
pub fn write(
    mut file: std::fs::File,
    p: &h2ledger_run::PlotInput<'_>,
    title: &str,
    _err: &mut dyn std::io::Write,
) -> Result<(), Error> {
    let t = p.timeline;
    let svg = svg(t, &p.cuts, p.end, title, p.windows)?;
    std::io::Write::write_all(&mut file, svg.as_bytes()).map_err(|e| Error(e.to_string()))
}
