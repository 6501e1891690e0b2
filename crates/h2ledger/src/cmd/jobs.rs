//! `replay -j N`: the capture read once, its packets dealt by TCP connection to N sessions
//! (`h2ledger_run::parallel`), one merged report.

use std::ops::ControlFlow;
use std::process::ExitCode;

use anyhow::{bail, Result};
use h2ledger_output::table::PhaseLayout;
use h2ledger_run::parallel::{deal, Dealer};
use h2ledger_run::{End, Obs, Session, Stop};
use h2ledger_tcp::{LinkType, Nanos};

use super::ledger::Ledger;
use crate::cli::Format;
use crate::source::{self, Hooks, Reading};
use crate::Ctx;

struct Deal<'a>(&'a mut Dealer);

impl Hooks for Deal<'_> {
    fn packet(&mut self, linktype: LinkType, ts: Nanos, data: &[u8]) -> ControlFlow<Stop> {
        self.0.packet(linktype, ts, data);
        ControlFlow::Continue(())
    }

    fn frames(&self) -> u64 {
        // The progress display counts packets here: the frames are the workers'.
        self.0.packets()
    }
}

/// What `-j` cannot merge yet (docs/scale.md).
fn refuse(l: &Ledger<'_>) -> Result<()> {
    let a = l.analysis;
    if a.analyze || a.split_at.is_some() || l.every.is_some() {
        bail!(
            "-j N > 1 does not take --analyze, --split-at or --every yet (docs/scale.md); use -j 1"
        );
    }
    if a.plot.is_some() {
        bail!("-j N > 1 does not take --plot yet; use -j 1");
    }
    if matches!(l.format, Format::Jsonl | Format::Prometheus) {
        bail!("-j N > 1 writes tables or -T json; use -j 1 for -T jsonl or -T prometheus");
    }
    Ok(())
}

pub fn run(l: Ledger<'_>, jobs: usize, ctx: Ctx) -> Result<ExitCode> {
    refuse(&l)?;
    let findings_cfg = l.findings.config()?;
    let bpf = l.filter.bpf();
    // Checked once here, so that a worker's own copy cannot fail.
    source::keys::options(&l.input, l.filter, None, None)?;
    let make = || {
        let opts = source::keys::options(&l.input, l.filter, None, None)
            .unwrap_or_else(|_| h2ledger_run::Options::default());
        let mut wanted = l.analysis.wanted(None);
        wanted.findings = Some(findings_cfg);
        Session::new(Obs::new(&wanted), opts)
    };
    let reading = Reading {
        input: &l.input,
        cap: &l.cap.opts(),
        bpf: bpf.as_deref(),
        every: None,
        progress: ctx.progress,
        keys: None,
    };
    let (ended, report) = deal(jobs, &make, |d| {
        let r = source::run(&reading, &mut Deal(d));
        let end = r.as_ref().map_or(End::Complete, |e| e.end.clone());
        (r, end)
    });
    let ended = ended?;
    h2ledger_output::write_report(
        &mut ctx.out(),
        &mut std::io::stderr(),
        l.format.output(),
        &ended.source,
        &report,
        &mut std::iter::empty(),
        PhaseLayout::Columns,
        ctx.style,
    );
    let failed = matches!(ended.end, End::Damaged(_));
    let worst = report
        .findings
        .as_deref()
        .and_then(|f| f.iter().map(|x| x.severity).max());
    ended.saved()?;
    Ok(if l.findings.fails(worst) {
        ExitCode::from(3)
    } else if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
