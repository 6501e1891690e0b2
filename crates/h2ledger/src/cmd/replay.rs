//! `h2ledger replay FILE` (and `h2ledger -r FILE`): a saved capture's ledger.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{CaptureArgs, ReplayArgs};
use crate::source::Input;
use crate::Ctx;

pub fn replay(mut a: ReplayArgs, ctx: Ctx) -> Result<ExitCode> {
    let cap = CaptureArgs::file_only(a.count, a.duration);
    // `-r F` and a FILE word: the word is the filter's first (as tcpdump -r F WORDS).
    let file = match (a.read.take(), a.file.take()) {
        (Some(r), Some(w)) => {
            a.filter.expression.insert(0, w);
            r
        }
        (Some(f), None) | (None, Some(f)) => f,
        (None, None) => anyhow::bail!("give a capture FILE (or -r FILE)"),
    };
    let l = super::ledger::Ledger {
        input: Input::File(file),
        cap: &cap,
        filter: &a.filter,
        analysis: &a.analysis,
        findings: &a.findings,
        every: a.every,
        format: a.format,
        max_frames: None,
        live: false,
        metrics: None,
        metrics_max_paths: a.metrics_max_paths,
    };
    if a.jobs.jobs > 1 {
        return super::jobs::run(l, a.jobs.jobs as usize, ctx);
    }
    super::ledger::run(l, ctx)
}
