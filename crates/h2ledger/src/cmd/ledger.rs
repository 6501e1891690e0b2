//! The ledger commands, `replay` and `sniff`: a session of the run's observers fed from a file
//! or a device, then the report (tables or JSON) and the `--plot`; `sniff --every` also shows
//! the live view at each tick.

use std::ops::ControlFlow;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, Result};
use h2ledger_output::live::{LiveView, TickFormat};
use h2ledger_output::table::PhaseLayout;
use h2ledger_run::{Drops, End, Obs, Session, Stop};
use h2ledger_tcp::{LinkType, Nanos};

use crate::cli::{AnalysisArgs, CaptureArgs, FilterArgs, Format};
use crate::source::{self, Hooks, Input, Reading};
use crate::Ctx;

/// What a ledger command was asked for.
pub struct Ledger<'a> {
    pub input: Input,
    pub cap: &'a CaptureArgs,
    pub filter: &'a FilterArgs,
    pub analysis: &'a AnalysisArgs,
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
}

impl Hooks for Run {
    fn packet(&mut self, linktype: LinkType, ts: Nanos, data: &[u8]) -> ControlFlow<Stop> {
        self.session.feed(linktype, ts, data)
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
    let obs = Obs::new(&l.analysis.wanted(l.every));
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
    let s = &mut run.session;
    let done = s.finish(&ended.end, ended.drops);
    if let (Some(path), Some(file)) = (&l.analysis.plot, plot) {
        if let Some(p) = s.plot(&done) {
            use h2ledger_output::plot;
            let o = plot::Options {
                title: format!("{}: HTTP/2 frames over time", ended.source),
                bin: l.analysis.bin_ns(),
                why_empty: plot::why_empty(&done.report),
            };
            plot::write(file, &p, &o, &mut std::io::stderr())
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
        if l.every.is_some() && !l.analysis.wide {
            PhaseLayout::Series
        } else {
            PhaseLayout::Columns
        },
        ctx.style,
    );
    let failed = matches!(ended.end, End::Damaged(_));
    ended.saved()?;
    Ok(if failed {
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
