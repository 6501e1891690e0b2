//! `h2ledger sniff`: the replay pipeline on live packets (or `-r FILE`), with the live view of
//! `--every`.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::SniffArgs;
use crate::Ctx;

pub fn sniff(a: SniffArgs, ctx: Ctx) -> Result<ExitCode> {
    let mut filter = a.filter.clone();
    let input = a.capture.input(None, &mut filter, Some("lo"))?;
    let l = super::ledger::Ledger {
        input,
        cap: &a.capture,
        filter: &filter,
        analysis: &a.analysis,
        findings: &a.findings,
        every: a.every,
        format: a.format,
        max_frames: a.max_frames,
        live: true,
        metrics: a.metrics.as_deref(),
        metrics_max_paths: a.metrics_max_paths,
    };
    if a.workers > 1 {
        return super::workers::run(l, a.workers as usize, ctx);
    }
    super::ledger::run(l, ctx)
}
