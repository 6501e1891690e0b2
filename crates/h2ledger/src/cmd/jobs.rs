//! `replay -j N`: the capture read once, its packets dealt by TCP connection to N sessions
//! (`h2ledger_run::parallel`), one merged report; `replay A B C ...`: each file its own
//! session, up to N at once, one merged report.

use std::ops::ControlFlow;
use std::process::ExitCode;

use anyhow::{bail, Result};
use h2ledger_core::analysis::Cut;
use h2ledger_run::merge::phased::{Merged, Part};
use h2ledger_run::parallel::{deal, each, Dealer};
use h2ledger_run::{End, Obs, Report, Session, Stop};
use h2ledger_tcp::{LinkType, Nanos};

use super::ledger::{draw, layout, open_plot, Ledger};
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
    if matches!(l.format, Format::Jsonl | Format::Prometheus) {
        bail!("-j N > 1 and several files write tables or -T json, not -T jsonl or -T prometheus");
    }
    Ok(())
}

/// A session as the flags ask, with `input`'s keys (each worker's and each file's own).
fn session(l: &Ledger<'_>, input: &Input) -> Result<Session> {
    let opts = source::keys::options(input, l.filter, None, None)?;
    let mut wanted = l.analysis.wanted(l.every);
    wanted.findings = Some(l.findings.config()?);
    Ok(Session::new(Obs::new(&wanted), opts))
}

pub fn run(l: Ledger<'_>, jobs: usize, ctx: Ctx) -> Result<ExitCode> {
    refuse(&l)?;
    let plot = l.analysis.plot.as_deref().map(open_plot).transpose()?;
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
    print(&l, ctx, ended?, &report, plot)
}

/// The first packet of a file after the filter (`None`: it has none).
struct First(Option<Nanos>);

impl Hooks for First {
    fn packet(&mut self, _: LinkType, ts: Nanos, _: &[u8]) -> ControlFlow<Stop> {
        self.0 = Some(ts);
        ControlFlow::Break(Stop::Count)
    }

    fn secrets(&mut self, _: &str) {}

    fn frames(&self) -> u64 {
        0
    }
}

/// The origin the files' phases and plot count from when offsets, `--every` or `--plot` need
/// one: the earliest first packet of the files after the filter, as one session reading them
/// merged by time (mergecap) counts from (decisions 414, 429). Each file is opened once more for it, so a file
/// must be one that can be: not standard input or a pipe.
fn files_origin(l: &Ledger<'_>, files: &[String], bpf: Option<&str>) -> Result<Option<Nanos>> {
    let offsets = match &l.analysis.split_at {
        Some(cuts) => cuts.iter().any(|c| matches!(c, Cut::Offset(_))),
        None => l.every.is_some(),
    };
    // The plot's bins count from it too (decision 429).
    if !offsets && l.analysis.plot.is_none() {
        return Ok(None);
    }
    let mut origin: Option<Nanos> = None;
    for f in files {
        if !std::fs::metadata(f).is_ok_and(|m| m.is_file()) {
            bail!(
                "{f}: several files with --plot, --every or a --split-at offset (30s) are read \
                 twice (the plot and the phases count from the earliest first packet of all of \
                 them); give regular files, or mergecap them into one first"
            );
        }
        let cap = crate::source::CaptureOpts {
            write: None,
            ..l.cap.opts()
        };
        let reading = Reading {
            input: &Input::File(f.clone()),
            cap: &cap,
            bpf,
            every: None,
            progress: false,
            keys: None,
        };
        let mut first = First(None);
        source::run(&reading, &mut first)?;
        origin = [origin, first.0].into_iter().flatten().min();
    }
    Ok(origin)
}

/// `replay A B C ...`: each file read by its own session, up to `jobs` files at once.
pub fn run_files(l: Ledger<'_>, files: &[String], jobs: usize, ctx: Ctx) -> Result<ExitCode> {
    refuse(&l)?;
    if l.cap.count.is_some() || l.cap.duration.is_some() {
        bail!("-c and --duration read one capture; give one FILE with them");
    }
    let bpf = l.filter.bpf();
    let origin = files_origin(&l, files, bpf.as_deref())?;
    let plot = l.analysis.plot.as_deref().map(open_plot).transpose()?;
    let job = |i: usize| -> (Result<Ended>, (Report, Option<Part>)) {
        let input = Input::File(files[i].clone());
        let one = || -> Result<(Ended, (Report, Option<Part>))> {
            let mut s = Feed(session(&l, &input)?);
            if let Some(t) = origin {
                s.0.set_origin(t);
            }
            let reading = Reading {
                input: &input,
                cap: &l.cap.opts(),
                bpf: bpf.as_deref(),
                every: None,
                progress: false,
                keys: None,
            };
            let ended = source::run(&reading, &mut s)?;
            let mut done = s.0.finish(&ended.end, None);
            let report = std::mem::take(&mut done.report);
            let part = Part::of(&mut s.0, done);
            Ok((ended, (report, part)))
        };
        match one() {
            Ok((e, r)) => (Ok(e), r),
            Err(e) => (Err(e), (Report::default(), None)),
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
    print(&l, ctx, ended, &report, plot)
}

/// The merged report and phases, the merged `--plot` (into `plot`), and the exit status.
fn print(
    l: &Ledger<'_>,
    ctx: Ctx,
    ended: Ended,
    merged: &Merged,
    plot: Option<std::fs::File>,
) -> Result<ExitCode> {
    let report = &merged.report;
    if let (Some(file), Some(p)) = (plot, merged.plot()) {
        draw(l, file, &p, &ended.source, report)?;
    }
    l.format.printer(ctx.style).layout(layout(l)).write(
        &mut ctx.out(),
        &mut std::io::stderr(),
        &ended.source,
        report,
        &mut merged.phases(),
    );
    let status = l.findings.exit_status(report, &ended.end);
    ended.saved()?;
    Ok(status)
}
