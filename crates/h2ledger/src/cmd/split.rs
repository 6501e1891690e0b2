//! `h2ledger split F --shards N -w DIR`: a capture cut into N captures by TCP connection, in
//! one pass (the cutting and the files are `h2ledger_run::split`, the summary
//! `h2ledger_output::split`; decision 320).

use std::process::ExitCode;

use anyhow::{anyhow, Result};
use h2ledger_run::split::split_to_dir;

use crate::cli::SplitArgs;
use crate::Ctx;

pub fn split(a: SplitArgs, ctx: Ctx) -> Result<ExitCode> {
    let name = if a.file == "-" {
        "standard input".to_string()
    } else {
        a.file.clone()
    };
    let s = split_to_dir(&a.file, &name, a.shards as usize, &a.dir).map_err(|e| anyhow!(e))?;
    h2ledger_output::split::write_summary(&mut ctx.out(), &name, &s);
    if let Some(at) = s.counts.cut_at {
        let total: u64 = s.counts.packets.iter().sum();
        eprintln!(
            "h2ledger: {name}: the capture ends inside a record at byte {at} of its {} \
             stream: the {total} packets before it were split, the cut record was not",
            s.counts.format
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
