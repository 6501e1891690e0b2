//! `-T parquet -w FILE` of `calls` and `frames`: where the records go. The Parquet writer is
//! the h2ledger-parquet crate; here only the flags: `-w` names the Parquet file (not a packet
//! save), and a binary file is never written to a terminal (decision 341).

use std::io::{BufWriter, IsTerminal as _, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use h2ledger_output::lines::Out;

use crate::cli::{CaptureArgs, LineFormat};
use crate::Ctx;

/// For `-T parquet`: the file of `-w`, taken from `cap` (so that it is no packet save), before
/// the input is opened. Errors without -w, and for `-w -` on a terminal.
pub fn take(
    format: LineFormat,
    every: Option<Duration>,
    cap: &mut CaptureArgs,
) -> Result<Option<PathBuf>> {
    if format != LineFormat::Parquet {
        return Ok(None);
    }
    if every.is_some() {
        bail!(
            "--every's tick records do not fit the Parquet columns: use -T jsonl (or the table) \
             with --every"
        );
    }
    let Some(path) = cap.write.take() else {
        bail!(
            "-T parquet writes a file: name it with -w FILE (or -w - for standard output \
             into a pipe)"
        );
    };
    if path == Path::new("-") && std::io::stdout().is_terminal() {
        bail!("-T parquet is binary and standard output is a terminal: -w FILE, or pipe it");
    }
    Ok(Some(path))
}

/// The output of a line view: standard output in `format`, or the Parquet file `file`
/// (from [`take`]).
pub fn out(file: Option<PathBuf>, format: LineFormat, ctx: Ctx, view: &'static str) -> Result<Out> {
    let Some(path) = file else {
        return Ok(Out::new(ctx.out(), format.shape(), view));
    };
    let w: Box<dyn Write + Send> = if path == Path::new("-") {
        Box::new(BufWriter::with_capacity(1 << 20, std::io::stdout()))
    } else {
        let f = std::fs::File::create(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        Box::new(BufWriter::with_capacity(1 << 20, f))
    };
    let sink = h2ledger_parquet::ParquetSink::new(w, view);
    Ok(Out::columns(Box::new(sink), view))
}
