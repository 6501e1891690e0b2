//! `replay -j N`: the capture read once, its packets dealt by TCP connection to N sessions
//! (`h2ledger_run::parallel`), one merged report; `replay A B C ...`: each file its own
//! session, up to N at once, one merged report.

use std::ops::ControlFlow;
use std::process::ExitCode;

use anyhow::{bail, Result};
use h2ledger_core::analysis::Cut;
use h2ledger_output::metrics::{Batch, Exporter, Exposition, Figures, Parts};
use h2ledger_run::merge::phased::{Merged, Part};
use h2ledger_run::parallel::{deal_tended, each, Dealer, Tend};
use h2ledger_run::{End, FireAt, Obs, Report, Session, Stop};
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

/// One file's own session (`replay A B C`), with `-T prometheus` its part of the metrics,
/// its index, and its packets so far.
struct Feed<'a>(Session, Option<&'a Metered>, usize, u64);

impl Hooks for Feed<'_> {
    fn packet(&mut self, linktype: LinkType, ts: Nanos, data: &[u8]) -> ControlFlow<Stop> {
        let flow = self.0.feed(linktype, ts, data);
        // `-T jsonl`: the findings it fired, placed by the packet's time (decision 443).
        self.3 += 1;
        self.0.fire_at(FireAt::packet(ts, self.3));
        if let Some(m) = self.1 {
            m.tend(self.2, &mut self.0, None);
        }
        flow
    }

    fn secrets(&mut self, text: &str) {
        self.0.add_keys(text);
    }

    fn frames(&self) -> u64 {
        self.0.frames()
    }
}

/// `-T prometheus` with several sessions: their metrics summed into one page, as `sniff
/// --workers N --metrics` sums its workers' (`h2ledger_output::metrics::Parts`, decision 432):
/// each session's calls and PING round trips as they fold, its figures (its report's) and
/// findings at its end.
struct Metered {
    parts: Parts,
    batches: Vec<std::sync::Mutex<Batch>>,
}

impl Metered {
    fn new(l: &Ledger<'_>, n: usize) -> Result<Option<Metered>> {
        if l.format != Format::Prometheus {
            return Ok(None);
        }
        let severities = l.findings.config()?.severities;
        let e = Exporter::offline(l.metrics_max_paths);
        // Every finding id at 0 from the start, as one session's page has them.
        e.metrics().findings(std::iter::empty(), &severities);
        Ok(Some(Metered {
            parts: Parts::new(e, n, severities),
            batches: (0..n).map(|_| Default::default()).collect(),
        }))
    }

    /// Session `k`'s calls folded since the last time into its batch (into the metrics when
    /// full); at its end (`report`), everything, and its figures and findings.
    fn tend(&self, k: usize, s: &mut Session, report: Option<&Report>) {
        let mut b = self.batches[k].lock().unwrap_or_else(|e| e.into_inner());
        s.drain_calls(|c| b.call(&c));
        s.drain_rtts(|side, rtt| b.ping_rtt(side, rtt));
        let p = self.parts.part(k);
        if b.full() || report.is_some() {
            p.flush(&mut b);
        }
        if let Some(r) = report {
            let mut f = Figures::report(r);
            let running = s.running();
            f.calm_goaways = running.calm_goaways;
            f.error_codes = running.error_codes;
            p.publish(0, f, s.findings_filed(), true);
        }
    }
}

/// A session as the flags ask, with `input`'s keys (each worker's and each file's own).
fn session(l: &Ledger<'_>, input: &Input) -> Result<Session> {
    let opts = source::keys::options(input, l.filter, None, None)?;
    let mut wanted = l.analysis.wanted(l.every);
    wanted.findings = Some(l.findings.config()?);
    wanted.metrics = l.format == Format::Prometheus;
    let mut s = Session::new(Obs::new(&wanted), opts);
    if l.format == Format::Jsonl {
        // Its `finding` lines are merged with the other sessions' (decision 443).
        s.keep_fired();
    }
    Ok(s)
}

pub fn run(l: Ledger<'_>, jobs: usize, ctx: Ctx) -> Result<ExitCode> {
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
    let metered = Metered::new(&l, jobs.max(1))?;
    let tend = |k: usize, s: &mut Session, r: Option<&Report>| {
        if let Some(m) = &metered {
            m.tend(k, s, r);
        }
    };
    let tend: Option<&Tend<'_>> = metered.as_ref().map(|_| &tend as &Tend<'_>);
    let (ended, mut report) = deal_tended(jobs, &make, tend, |d| {
        let r = source::run(&reading, &mut Deal(d));
        let end = r.as_ref().map_or(End::Complete, |e| e.end.clone());
        (r, end)
    });
    print(&l, ctx, ended?, &mut report, metered.as_ref(), plot)
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
    if l.cap.count.is_some() || l.cap.duration.is_some() {
        bail!("-c and --duration read one capture; give one FILE with them");
    }
    let bpf = l.filter.bpf();
    let origin = files_origin(&l, files, bpf.as_deref())?;
    let metered = Metered::new(&l, files.len())?;
    let plot = l.analysis.plot.as_deref().map(open_plot).transpose()?;
    let job = |i: usize| -> (Result<Ended>, (Report, Option<Part>)) {
        let input = Input::File(files[i].clone());
        let one = || -> Result<(Ended, (Report, Option<Part>))> {
            let mut s = Feed(session(&l, &input)?, metered.as_ref(), i, 0);
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
            if let Some(m) = &metered {
                m.tend(i, &mut s.0, Some(&done.report));
            }
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
    let (ends, mut report) = each(jobs, &order, &job);
    let ends = ends.into_iter().collect::<Result<Vec<_>>>()?;
    // A damaged file makes the run's exit status 1 (its report warns of it).
    let damaged = ends.iter().position(|e| matches!(e.end, End::Damaged(_)));
    let mut ended = ends
        .into_iter()
        .nth(damaged.unwrap_or(0))
        .ok_or_else(|| anyhow::anyhow!("give a capture FILE"))?;
    ended.source = format!("{} files ({}, ...)", files.len(), files[0]);
    print(&l, ctx, ended, &mut report, metered.as_ref(), plot)
}

/// `-T jsonl`: the sessions' `finding` lines, merged into the order one session writes them
/// (decision 443), before the phases and the summary.
pub(super) fn finding_lines(l: &Ledger<'_>, ctx: Ctx, merged: &mut Merged) {
    if l.format == Format::Jsonl {
        let mut out = ctx.out();
        for f in merged.finding_lines() {
            let _ = h2ledger_output::json::write_line(&mut out, &f.line());
        }
    }
}

/// The merged report and phases (or with `-T prometheus` the summed page; with `-T jsonl`
/// first the sessions' `finding` lines, merged), the merged `--plot` (into `plot`), and the
/// exit status.
fn print(
    l: &Ledger<'_>,
    ctx: Ctx,
    ended: Ended,
    merged: &mut Merged,
    metered: Option<&Metered>,
    plot: Option<std::fs::File>,
) -> Result<ExitCode> {
    finding_lines(l, ctx, merged);
    let report = &merged.report;
    if let (Some(file), Some(p)) = (plot, merged.plot()) {
        draw(l, file, &p, &ended.source, report)?;
    }
    match metered {
        Some(m) => {
            use std::io::Write as _;
            let w = &report.ledger.warnings;
            h2ledger_output::warn::write(&mut std::io::stderr(), w, ctx.style);
            let page = m.parts.metrics().encode(Exposition::Prometheus);
            let _ = ctx.out().write_all(page.as_bytes());
        }
        None => l.format.printer(ctx.style).layout(layout(l)).write(
            &mut ctx.out(),
            &mut std::io::stderr(),
            &ended.source,
            report,
            &mut merged.phases(),
        ),
    }
    let status = l.findings.exit_status(report, &ended.end);
    ended.saved()?;
    Ok(status)
}
