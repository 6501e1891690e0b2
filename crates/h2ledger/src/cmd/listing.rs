//! What the line views (`calls`, `frames`) share: the closing summary record, the warnings on
//! stderr, and the exit status.

use std::process::ExitCode;

use anyhow::Result;
use h2ledger_output::lines::{Out, Shape, Summary};
use h2ledger_run::{CaptureStats, End, TcpReport};

use crate::source::Ended;
use crate::Ctx;

/// What the summary record of `calls` and `frames` says.
pub struct Listing<'a> {
    pub view: &'static str,
    pub calls: Option<u64>,
    pub frames: u64,
    pub capture: &'a CaptureStats,
    pub tcp: TcpReport,
    pub warnings: &'a [String],
}

/// After `calls` or `frames`: the summary record (JSON shapes), warnings on stderr, and exit
/// status 1 when the input ended early.
pub fn done(out: &mut Out, s: Listing<'_>, ended: Ended, ctx: Ctx) -> Result<ExitCode> {
    let (view, warnings) = (s.view, s.warnings);
    let error = match &ended.end {
        End::Damaged(e) => Some(e.clone()),
        _ => None,
    };
    out.summary(&Summary {
        calls: s.calls,
        capture: s.capture,
        error: error.clone(),
        frames: Some(s.frames),
        record: "summary",
        tcp: s.tcp,
        kind: "summary",
        view,
        warnings,
    });
    if let Some(e) = out.error.take() {
        // The Parquet file could not be written (a full disk): not a quiet end.
        anyhow::bail!("{e}");
    }
    if out.shape == Shape::Columns && !ctx.style.quiet {
        let n = out.records;
        eprintln!(
            "{n} {} written as Parquet",
            if n == 1 {
                &view[..view.len() - 1]
            } else {
                view
            }
        );
    }
    if out.broken {
        // The reader went away (`| head`): quietly done.
        return Ok(ExitCode::SUCCESS);
    }
    h2ledger_output::warn::write(&mut std::io::stderr(), warnings, ctx.style);
    let code = match error {
        Some(e) => {
            eprintln!("warning: {e}; the {view} listed are those before that point");
            ExitCode::from(1)
        }
        None => ExitCode::SUCCESS,
    };
    ended.saved()?;
    Ok(code)
}
