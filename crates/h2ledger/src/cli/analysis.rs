//! The analysis' flags (`--analyze`, `--split-at`, `--every`, the plot's bin).

use std::time::Duration;

use clap::Args;
use h2ledger_core::analysis::{Cut, Splitter};

use std::path::PathBuf;

use h2ledger_run::Wanted;

use super::{durations, times};

/// Analysis options shared by `replay` and `sniff`.
#[derive(Args, Clone, Default)]
pub struct AnalysisArgs {
    /// Add the analysis: what each write carried, PING round trips and BDP rounds, calls in
    /// flight, latency percentiles, per-method totals (costs ~64 bytes per call)
    #[arg(long)]
    pub analyze: bool,
    /// Cut the capture into phases at these times (comma separated): RFC 3339
    /// (2026-11-30T12:10:24.664Z), @EPOCH seconds, or offsets from the first packet (30s);
    /// implies --analyze
    #[arg(long, value_name = "T[,T...]", value_parser = times::parse_cuts)]
    pub split_at: Option<std::vec::Vec<Cut>>,
    /// Draw frames over time by kind and side as SVG into FILE (frames per bin; the bin is
    /// chosen from the capture's length, at most 100 bins, unless --bin gives it)
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// With --plot: the bin (1ms, 100ms, 1s; at least 1us). A bin that would make more than
    /// 1,000 bins is widened, and stderr and the plot say so
    #[arg(long, value_name = "D", value_parser = parse_bin, requires = "plot")]
    pub bin: Option<Duration>,
    /// With --every: every table with a column per phase (as --split-at shows phases), instead
    /// of one row per phase under the whole capture's tables
    #[arg(long)]
    pub wide: bool,
}

impl AnalysisArgs {
    /// `--bin`, nanoseconds.
    pub fn bin_ns(&self) -> Option<i64> {
        self.bin.map(|d| d.as_nanos().min(i64::MAX as u128) as i64)
    }

    /// What to attach, given `--every`-style phases of `every` (if any).
    pub fn wanted(&self, every: Option<Duration>) -> Wanted {
        let splitter = match (&self.split_at, every) {
            (Some(c), _) => Some(Splitter::at(c.clone())),
            (None, Some(d)) => Some(Splitter::every(d.as_nanos() as i64)),
            _ => None,
        };
        Wanted {
            analysis: self.analyze || splitter.is_some(),
            splitter,
            timeline: self.plot.as_ref().map(|_| {
                self.bin_ns()
                    .unwrap_or(h2ledger_core::analysis::timeline::FINEST)
            }),
            ..Wanted::default()
        }
    }
}

/// `--bin D`: a duration of at least a microsecond (the finest a pcap timestamp tells).
fn parse_bin(s: &str) -> Result<Duration, String> {
    let d = durations::parse_period(s)?;
    if d < Duration::from_micros(1) {
        return Err(format!(
            "\"{}\" is under a microsecond: give a bin of 1us or more",
            s.trim()
        ));
    }
    Ok(d)
}
