//! The ledger commands, `replay` and `sniff`: a session of the run's observers fed from a file
//! or a device, then the report (tables or JSON) and the `--plot`; `sniff --every` also shows
//! the live view at each tick.

use std::ops::ControlFlow;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, Result};
use h2ledger_output::live::{LiveView, TickFormat};
use h2ledger_run::{Drops, End, Obs, Session, Stop};
use h2ledger_tcp::{LinkType, Nanos};

use crate::cli::{AnalysisArgs, CaptureArgs, FilterArgs, FindingsArgs, Format};
use crate::source::{self, Hooks, Input, Reading};
use crate::Ctx;

/// What a ledger command was asked for.
pub struct Ledger<'a> {
    pub input: Input,
    pub cap: &'a CaptureArgs,
    pub filter: &'a FilterArgs,
    pub analysis: &'a AnalysisArgs,
    pub findings: &'a FindingsArgs,
    pub every: Option<Duration>,
    pub format: Format,
    pub max_frames: Option<u64>,
    /// `sniff`: the live view at each `--every` tick, and the stop said in table mode.
    pub live: bool,
}

/// The session, and the live view of its ticks.
struct Run {
    session: Session,
    view: Option<LiveView>,
    ctx: Ctx,
    /// `-T jsonl`: a `finding` line the moment each finding fires.
    finding_lines: bool,
}

impl Run {
    /// The findings fired since the last call, one `finding` JSON line each (`-T jsonl`).
    fn print_findings(&mut self) {
        if !self.finding_lines {
            return;
        }
        let mut out = self.ctx.out();
        self.session.drain_findings(|f| {
            let _ = h2ledger_output::json::write_line(&mut out, &f.line());
        });
    }
}

impl Hooks for Run {
    fn packet(&mut self, linktype: LinkType, ts: Nanos, data: &[u8]) -> ControlFlow<Stop> {
        let flow = self.session.feed(linktype, ts, data);
        self.print_findings();
        flow
    }

    fn frames(&self) -> u64 {
        self.session.frames()
    }

    fn idle(&mut self, now: Nanos) {
        self.session.idle(now);
    }

    fn tick(&mut self, _at: Nanos, drops: Option<Drops>) {
        if let (Some(d), Some(v)) = (drops, self.view.as_mut()) {
            let tick = self.session.tick();
            v.tick(&mut self.ctx.out(), &tick, d);
        }
    }
}

/// Runs a ledger command (see the module docs).
pub fn run(l: Ledger<'_>, ctx: Ctx) -> Result<ExitCode> {
    let bpf = l.filter.bpf();
    // Before the capture opens and gives up privileges: the `--keys-from` processes are
    // attached, the key log stays open, and the plot
    // file is created (an unwritable path fails at once, not after an hour of capture).
    let keys = source::keys::attach(l.cap, &l.input)?;
    let opts = source::keys::options(&l.input, l.filter, l.max_frames, keys.as_ref())?;
    let plot = l.analysis.plot.as_deref().map(open_plot).transpose()?;
    let mut wanted = l.analysis.wanted(l.every);
    wanted.findings = Some(l.findings.config());
    let obs = Obs::new(&wanted);
    let view = (l.live && l.every.is_some()).then(|| {
        let format = match l.format {
            Format::Table => TickFormat::Table,
            Format::Jsonl => TickFormat::Jsonl,
            Format::Json => TickFormat::None,
        };
        let redraw = h2ledger_output::live::can_redraw(
            ctx.out_is_terminal(),
            std::env::var("TERM").ok().as_deref(),
        );
        LiveView::new(l.input.name(), format, redraw, ctx.style)
    });
    let mut run = Run {
        session: Session::new(obs, opts),
        view,
        ctx,
        finding_lines: l.format == Format::Jsonl,
    };
    let reading = Reading {
        input: &l.input,
        cap: l.cap,
        bpf: bpf.as_deref(),
        every: l.every,
        progress: ctx.progress,
        keys,
    };
    let ended = source::run(&reading, &mut run).inspect_err(|_| {
        if let Some(path) = &l.analysis.plot {
            let _ = std::fs::remove_file(path);
        }
    })?;
    if l.live && l.format == Format::Table {
        eprintln!("h2ledger: stopped ({})", ended.end.describe());
    }
    let done = run.session.finish(&ended.end, ended.drops);
    // Findings that fired as the last connections closed.
    run.print_findings();
    let s = &mut run.session;
    if let (Some(path), Some(file)) = (&l.analysis.plot, plot) {
        if let Some(p) = s.plot(&done) {
            let title = format!("{}: HTTP/2 frames per second", ended.source);
            h2ledger_output::plot::write(file, &p, &title, &mut std::io::stderr())
                .map_err(|e| anyhow!("{}: cannot write the plot: {e}", path.display()))?;
            eprintln!("wrote {}", path.display());
        }
    }
    h2ledger_output::write_report(
        &mut ctx.out(),
        &mut std::io::stderr(),
        l.format.output(),
        &ended.source,
        &done.report,
        &mut s.phases(&done),
        ctx.style,
    );
    let failed = matches!(ended.end, End::Damaged(_));
    let worst = done
        .report
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

/// Creates the `--plot` file before the capture is read: an unwritable path fails at once, not
/// after an hour of capture, and `sniff` creates it before it gives up root.
fn open_plot(path: &Path) -> Result<std::fs::File> {
    std::fs::File::create(path)
        .map_err(|e| anyhow!("{}: cannot write the plot: {e}", path.display()))
}
