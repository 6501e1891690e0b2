//! `h2ledger merge REPORT...`: the report of the union of captures from their reports.

use std::io::Read as _;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context as _, Result};
use h2ledger_run::merge::{phased, read};

use crate::cli::{Format, MergeArgs};
use crate::Ctx;

pub fn merge(a: MergeArgs, ctx: Ctx) -> Result<ExitCode> {
    if !matches!(a.format, Format::Table | Format::Json) {
        bail!("merge writes tables (-T table) or one JSON document (-T json)");
    }
    let mut parts = Vec::new();
    for f in &a.files {
        let text = if f == "-" {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .context("standard input")?;
            s
        } else {
            std::fs::read_to_string(f).with_context(|| f.clone())?
        };
        read::reports_with_phases(f, &text, &mut parts).map_err(|e| anyhow!(e))?;
    }
    let n = parts.len();
    // Phases merge phase by phase when their edges line up (decision 416).
    let (merged, phases) = phased::merge_published(parts).map_err(|e| anyhow!(e))?;
    a.format.printer(ctx.style).write(
        &mut ctx.out(),
        &mut std::io::stderr(),
        &format!("{n} reports merged"),
        &merged,
        &mut phases.into_iter(),
    );
    Ok(ExitCode::SUCCESS)
}
