//! `h2ledger replay FILE` (and `h2ledger -r FILE`): a saved capture's ledger.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{CaptureArgs, ReplayArgs};
use crate::source::Input;
use crate::Ctx;

pub fn replay(mut a: ReplayArgs, ctx: Ctx) -> Result<ExitCode> {
    let cap = CaptureArgs::file_only(a.count, a.duration);
    // `-r F` and a FILE word: the word is the filter's first (as tcpdump -r F WORDS).
    let mut files = Vec::new();
    let file = match (a.read.take(), a.file.take()) {
        (Some(r), Some(w)) => {
            a.filter.expression.insert(0, w);
            r
        }
        (Some(f), None) => f,
        (None, Some(f)) => {
            files = more_files(&mut a.filter.expression, after_dashes());
            f
        }
        (None, None) => anyhow::bail!("give a capture FILE (or -r FILE)"),
    };
    files.insert(0, file.clone());
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
    if files.len() > 1 {
        return super::jobs::run_files(l, &files, a.jobs.jobs as usize, ctx);
    }
    if a.jobs.jobs > 1 {
        return super::jobs::run(l, a.jobs.jobs as usize, ctx);
    }
    super::ledger::run(l, ctx)
}

/// `replay A B C [WORDS]` (decision 376): the words after FILE that name an existing file
/// (anything but a directory) are more captures, up to the first word that does not; the rest
/// are the filter. Words after `--` (the last `dashed` words) are always filter words.
fn more_files(words: &mut Vec<String>, dashed: usize) -> Vec<String> {
    let before = words.len().saturating_sub(dashed);
    let n = words[..before]
        .iter()
        .take_while(|w| std::fs::metadata(w).is_ok_and(|m| !m.is_dir()))
        .count();
    words.drain(..n).collect()
}

/// How many words of the command line follow its first `--`.
fn after_dashes() -> usize {
    let args: Vec<_> = std::env::args_os().collect();
    args.iter()
        .position(|a| a == "--")
        .map_or(0, |i| args.len() - i - 1)
}
