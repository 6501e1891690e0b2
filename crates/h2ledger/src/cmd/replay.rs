//! `h2ledger replay FILE` (and `h2ledger -r FILE`): a saved capture's ledger.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{CaptureArgs, ReplayArgs};
use crate::source::Input;
use crate::Ctx;

pub fn replay(a: ReplayArgs, ctx: Ctx) -> Result<ExitCode> {
    let cap = CaptureArgs::file_only(a.count, a.duration);
    super::ledger::run(
        super::ledger::Ledger {
            input: Input::File(a.file.clone()),
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
        },
        ctx,
    )
}
