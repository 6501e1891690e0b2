//! `h2ledger merge REPORT...`: the report of the union of captures from their reports.

use std::io::Read as _;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context as _, Result};
use h2ledger_output::table::PhaseLayout;
use h2ledger_run::merge::{merge as merge_reports, read};
use h2ledger_run::Report;
use serde_json::Value;

use crate::cli::{Format, MergeArgs};
use crate::Ctx;

/// Every report in one file's text: one JSON document, several, or JSON lines (only their
/// `summary` lines are reports).
fn reports(name: &str, text: &str, into: &mut Vec<Report>) -> Result<()> {
    let before = into.len();
    for v in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
        let v = v.map_err(|e| anyhow!("{name}: not JSON: {e}"))?;
        if let Some(t) = v.get("type").and_then(Value::as_str) {
            if t != "summary" {
                continue;
            }
        }
        into.push(read::from_json(&v).map_err(|e| anyhow!("{name}: {e}"))?);
    }
    if into.len() == before {
        bail!("{name}: no report in it (give what `replay -T json` wrote)");
    }
    Ok(())
}

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
        reports(f, &text, &mut parts)?;
    }
    let n = parts.len();
    let merged = merge_reports(parts);
    h2ledger_output::write_report(
        &mut ctx.out(),
        &mut std::io::stderr(),
        a.format.output(),
        &format!("{n} reports merged"),
        &merged,
        &mut std::iter::empty(),
        PhaseLayout::Columns,
        ctx.style,
    );
    Ok(ExitCode::SUCCESS)
}
