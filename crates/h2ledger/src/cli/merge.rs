//! The flags of scaling out: `h2ledger split`, `h2ledger merge` and `replay -j`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::Format;

#[derive(Args)]
pub struct MergeArgs {
    /// Reports written by `replay -T json` (or JSON lines: their `summary` lines are taken;
    /// several documents in one file are several reports); `-` reads standard input. Reports
    /// cut into phases merge phase by phase when their edges line up (--split-at at absolute
    /// times)
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
    /// apply per worker). With several FILEs, N files are read at once, each by its own
    /// session. Also with --analyze (its histograms merge exactly) and phases (--split-at,
    /// --every: every worker cuts at the same instants), --plot (one plot of all of them, as
    /// one session draws it), -T prometheus (the metrics summed) and -T jsonl (the finding
    /// lines in the order one session writes them)
    #[arg(short = 'j', long = "jobs", value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub jobs: u32,
}

#[derive(Args)]
pub struct SplitArgs {
    /// The capture (pcap or pcapng, also gzip- or zstd-compressed); `-` reads standard input
    #[arg(value_name = "FILE")]
    pub file: String,
    /// How many captures to write (1 to 4096)
    #[arg(short = 'n', long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub shards: u32,
    /// The directory to write them into (made if missing; shards of the same name in it are
    /// overwritten)
    #[arg(short = 'w', long = "write", value_name = "DIR")]
    pub dir: PathBuf,
    /// How to cut: by TCP connection (the only way so far)
    #[arg(long, value_enum, default_value_t = SplitBy::Connection)]
    pub by: SplitBy,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SplitBy {
    /// Both directions of a TCP connection (a symmetric hash of its two endpoints) in one shard
    Connection,
}
