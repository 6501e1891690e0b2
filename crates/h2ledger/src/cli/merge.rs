//! `h2ledger merge`'s flags, and `replay -j`.

use clap::Args;

use super::Format;

#[derive(Args)]
pub struct MergeArgs {
    /// Reports written by `replay -T json` (or JSON lines: their `summary` lines are taken;
    /// several documents in one file are several reports); `-` reads standard input
    #[arg(value_name = "REPORT", required = true)]
    pub files: Vec<String>,
    /// Tables (warnings on stderr), or one JSON document (the `replay -T json` object)
    #[arg(short = 'T', long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// `replay -j N`.
#[derive(Args)]
pub struct JobsArgs {
    /// Workers: the packets dealt by TCP connection (split's hash) to N sessions on their own
    /// threads, their reports merged; the same report as one worker where no cap is hit (caps
    /// apply per worker). Not with --analyze, phases, --plot, -T jsonl or -T prometheus
    #[arg(short = 'j', long = "jobs", value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub jobs: u32,
}
