//! `h2ledger split F --shards N -w DIR`: a capture cut into N captures by TCP connection, in
//! one pass (the cutting and the files are `h2ledger_run::split`; here the summary;
//! decision 320).

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use h2ledger_run::split::{split_to_dir, Split};

use crate::cli::SplitArgs;
use crate::Ctx;

pub fn split(a: SplitArgs, ctx: Ctx) -> Result<ExitCode> {
    let name = if a.file == "-" {
        "standard input".to_string()
    } else {
        a.file.clone()
    };
    let n = a.shards as usize;
    let Split { counts, paths } =
        split_to_dir(&a.file, &name, n, &a.dir).map_err(|e| anyhow!(e))?;
    let mut out = ctx.out();
    let total: u64 = counts.packets.iter().sum();
    let _ = writeln!(
        out,
        "{name} ({}): {total} packets into {n} shards by TCP connection",
        counts.format
    );
    let _ = writeln!(
        out,
        "{:>5}  {:>12}  {:>14}  file",
        "shard", "packets", "bytes"
    );
    for (k, p) in paths.iter().enumerate() {
        let _ = writeln!(
            out,
            "{k:>5}  {:>12}  {:>14}  {}",
            counts.packets[k],
            counts.bytes[k],
            p.display()
        );
    }
    if counts.not_tcp > 0 {
        let _ = writeln!(
            out,
            "{} packets not TCP over IP (or not decoded) went to shard 0",
            counts.not_tcp
        );
    }
    if counts.copied_blocks > 0 {
        let _ = writeln!(
            out,
            "{} pcapng blocks that are not packets (section headers, interfaces, secrets, ...) \
             copied to every shard",
            counts.copied_blocks
        );
    }
    if let Some(at) = counts.cut_at {
        eprintln!(
            "h2ledger: {name}: the capture ends inside a record at byte {at} of its {} \
             stream: the {total} packets before it were split, the cut record was not",
            counts.format
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
