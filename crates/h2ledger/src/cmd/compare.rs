//! `h2ledger compare A B`: two captures' ledgers side by side, with the difference per row:
//! "what changed on the wire between these two runs".

use std::process::ExitCode;

use anyhow::Result;
use h2ledger_run::{End, Obs, Report, Session, Wanted};

use crate::cli::{CaptureArgs, CompareArgs, FilterArgs};
use crate::source::{Input, Plan};
use crate::Ctx;

/// One capture's ledger report (with capture, TCP and TLS facts), its name, and whether it
/// ended early.
fn load(file: &str, filter: &FilterArgs, ctx: Ctx) -> Result<(String, Report, bool)> {
    let cap = CaptureArgs::file_only(None, None);
    let input = Input::File(file.to_string());
    let (opts, drive) = Plan::new(&cap, input, filter, None, None, ctx.progress)?.split();
    let mut s = Session::new(Obs::new(&Wanted::default()), opts);
    let ended = drive.run(&mut s)?;
    let done = s.finish(&ended.end, None);
    let damaged = matches!(ended.end, End::Damaged(_));
    Ok((ended.source, done.report, damaged))
}

pub fn compare(a: CompareArgs, ctx: Ctx) -> Result<ExitCode> {
    a.format.refuse_prometheus("compare")?;
    let x = load(&a.a, &a.filter, ctx)?;
    let y = load(&a.b, &a.filter, ctx)?;
    h2ledger_output::table::write_compare(
        &mut ctx.out(),
        &mut std::io::stderr(),
        (&x.0, &x.1),
        (&y.0, &y.1),
        a.format.output(),
        ctx.style,
    );
    Ok(if x.2 || y.2 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
