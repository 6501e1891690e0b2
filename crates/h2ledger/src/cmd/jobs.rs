//! `replay -j N`: the capture read once, its packets dealt by TCP connection to N sessions
//! (`h2ledger_run::parallel`), one merged report; `replay A B C ...`: each file its own
//! session, up to N at once, one merged report.

use std::ops::ControlFlow;
use std::process::ExitCode;

use anyhow::{bail, Result};
use h2ledger_run::parallel::{deal, each, Dealer};
use h2ledger_run::{End, Obs, Report, Session, Stop};
use h2ledger_tcp::{LinkType, Nanos};

use super::ledger::Ledger;
use crate::cli::Format;
use crate::source::{self, Ended, Hooks, Input, Reading};
use crate::Ctx;

struct Deal<'a>(&'a mut Dealer);

impl Hooks for Deal<'_> {
    fn packet(&mut self, linktype: LinkType, ts: Nanos, data: &[u8]) -> ControlFlow<Stop> {
        self.0.packet(linktype, ts, data);
        ControlFlow::Continue(())
    }

    fn secrets(&mut self, text: &str) {
        self.0.secrets(text);
    }

    fn frames(&self) -> u64 {
        // The progress display counts packets here: the frames are the workers'.
        self.0.packets()
    }
}

/// One file's own session (`replay A B C`).
struct Feed(Session);

impl Hooks for Feed {
    fn packet(&mut self, linktype: LinkType, ts: Nanos, data: &[u8]) -> ControlFlow<Stop> {
        self.0.feed(linktype, ts, data)
    }

    fn secrets(&mut self, text: &str) {
        self.0.add_keys(text);
    }

    fn frames(&self) -> u64 {
        self.0.frames()
    }
}

/// What `-j` cannot merge yet (docs/scale.md).
fn refuse(l: &Ledger<'_>) -> Result<()> {
    let a = l.analysis;
    if a.split_at.is_some() || l.every.is_some() || a.plot.is_some() {
        bail!(
            "-j N > 1 and several files do not take --split-at, --every or --plot yet \
             (docs/scale.md)"
        );
    }
    if matches!(l.format, Format::Jsonl | Format::Prometheus) {
        bail!("-j N > 1 and several files write tables or -T json, not -T jsonl or -T prometheus");
    }
    Ok(())
}

/// A session as the flags ask, with `input`'s keys (each worker's and each file's own).
fn session(l: &Ledger<'_>, input: &Input) -> Result<Session> {
    let opts = source::keys::options(input, l.filter, None, None)?;
    let mut wanted = l.analysis.wanted(None);
    wanted.findings = Some(l.findings.config()?);
    Ok(Session::new(Obs::new(&wanted), opts))
}

pub fn run(l: Ledger<'_>, jobs: usize, ctx: Ctx) -> Result<ExitCode> {
    refuse(&l)?;
    let bpf = l.filter.bpf();
    // Checked once here, so that a worker's own copy cannot fail.
    session(&l, &l.input)?;
    let make = || {
        session(&l, &l.input).unwrap_or_else(|_| {
            Session::new(Obs::new(&l.analysis.wanted(None)), Default::default())
        })
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
    print(&l, ctx, ended?, &report)
}

/// `replay A B C ...`: each file read by its own session, up to `jobs` files at once.
pub fn run_files(l: Ledger<'_>, files: &[String], jobs: usize, ctx: Ctx) -> Result<ExitCode> {
    refuse(&l)?;
    if l.cap.count.is_some() || l.cap.duration.is_some() {
        bail!("-c and --duration read one capture; give one FILE with them");
    }
    let bpf = l.filter.bpf();
    let job = |i: usize| -> (Result<Ended>, Report) {
        let input = Input::File(files[i].clone());
        let one = || -> Result<(Ended, Report)> {
            let mut s = Feed(session(&l, &input)?);
            let reading = Reading {
                input: &input,
                cap: &l.cap.opts(),
                bpf: bpf.as_deref(),
                every: None,
                progress: false,
                keys: None,
            };
            let ended = source::run(&reading, &mut s)?;
            let report = s.0.finish(&ended.end, None).report;
            Ok((ended, report))
        };
        match one() {
            Ok((e, r)) => (Ok(e), r),
            Err(e) => (Err(e), Report::default()),
        }
    };
    // The largest files first (standard input and pipes last).
    let size = |f: &String| std::fs::metadata(f).map_or(0, |m| m.len());
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(size(&files[i])));
    let (ends, report) = each(jobs, &order, &job);
    let ends = ends.into_iter().collect::<Result<Vec<_>>>()?;
    // A damaged file makes the run's exit status 1 (its report warns of it).
    let damaged = ends.iter().position(|e| matches!(e.end, End::Damaged(_)));
    let mut ended = ends
        .into_iter()
        .nth(damaged.unwrap_or(0))
        .ok_or_else(|| anyhow::anyhow!("give a capture FILE"))?;
    ended.source = format!("{} files ({}, ...)", files.len(), files[0]);
    print(&l, ctx, ended, &report)
}

/// The merged report, and the exit status.
fn print(l: &Ledger<'_>, ctx: Ctx, ended: Ended, report: &Report) -> Result<ExitCode> {
    l.format.printer(ctx.style).write(
        &mut ctx.out(),
        &mut std::io::stderr(),
        &ended.source,
        report,
        &mut std::iter::empty(),
    );
    let status = l.findings.exit_status(report, &ended.end);
    ended.saved()?;
    Ok(status)
}
