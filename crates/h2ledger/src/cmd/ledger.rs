//! The ledger commands, `replay` and `sniff`: a session of the run's observers fed from a file
//! or a device, then the report (tables or JSON) and the `--plot`; `sniff --every` also shows
//! the live view at each tick.

use std::ops::ControlFlow;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use std::io::Write as _;

use anyhow::{anyhow, bail, Result};
use h2ledger_output::live::{LiveView, TickFormat};
use h2ledger_output::metrics::{Batch, Exposition, Figures};
use h2ledger_output::table::PhaseLayout;
use h2ledger_run::procs::Owners;
use h2ledger_run::{Drops, Obs, Session, Stop};

/// How long the report waits for the process lookups still running (a retry is 100 ms away).
const OWNERS_WAIT: Duration = Duration::from_millis(500);
use h2ledger_tcp::{LinkType, Nanos};

use crate::cli::{AnalysisArgs, CaptureArgs, FilterArgs, FindingsArgs, Format};
use crate::source::{Hooks, Input, Plan};
use crate::Ctx;
use h2ledger_output::metrics::Exporter;

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
    /// `sniff --metrics ADDR:PORT`: where to serve the metrics.
    pub metrics: Option<&'a str>,
    /// `--metrics-max-paths`.
    pub metrics_max_paths: usize,
}

/// The session, the live view of its ticks, and its metrics.
struct Run {
    session: Session,
    view: Option<LiveView>,
    ctx: Ctx,
    metrics: Option<Exporter>,
    /// What a scrape wakes: the capture loop's idle wait (`--metrics`).
    wake: Option<std::sync::Arc<tokio::sync::Notify>>,
    /// The calls and round trips not yet handed to the metrics (decision 206).
    batch: Batch,
    /// `-T jsonl`: a `finding` line the moment each finding fires.
    finding_lines: bool,
    /// The severity of each finding id (`--severity`), for the metrics' labels.
    severities: h2ledger_core::findings::Severities,
    /// `sniff`: the processes at each connection's ends, looked up at its SYN.
    owners: Option<Owners>,
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

    /// The calls folded and the PING round trips measured since the last time, into the
    /// batch (after every packet: the analysis keeps them until then); the batch goes into
    /// the metrics when it is full, and at each sync and the end ([`Run::flush`]).
    fn drain(&mut self) {
        if let Some(e) = &self.metrics {
            let b = &mut self.batch;
            self.session.drain_calls(|c| b.call(&c));
            self.session.drain_rtts(|side, rtt| b.ping_rtt(side, rtt));
            if b.full() {
                e.metrics().flush(b);
            }
        }
    }

    /// Everything drained so far, into the metrics.
    fn flush(&mut self) {
        self.drain();
        if let Some(e) = &self.metrics {
            e.metrics().flush(&mut self.batch);
        }
    }
}

/// The connections by owning process, into the metrics (`sniff`: attribution is on).
fn processes(e: &Exporter, owners: Option<&Owners>) {
    if let Some(o) = owners {
        processes_into(e.metrics(), o);
    }
}

/// See [`processes`].
pub(super) fn processes_into(m: &h2ledger_output::metrics::Metrics, o: &Owners) {
    let by = o.by_comm();
    m.processes(by.iter().map(|(s, c, n)| (*s, c.as_str(), *n)));
}

/// The process lookups of `sniff` on a device, in the helper that keeps root to read /proc
/// (started before the capture opens and root is given up).
pub(super) fn owners() -> Owners {
    let mut cmd =
        std::process::Command::new(std::env::current_exe().unwrap_or_else(|_| "h2ledger".into()));
    cmd.arg(crate::PROCS_HELPER);
    Owners::helper(cmd)
}

/// Each connection's processes into the report, and a warning when some went unlooked-up.
pub(super) fn fill_owners(o: &Owners, report: &mut h2ledger_run::Report) {
    o.fill(&mut report.ledger.per_connection, OWNERS_WAIT);
    let cut = o.stats().cut;
    if cut > 0 {
        report.ledger.warnings.push(format!(
            "owners-cap: {cut} connections not looked up in /proc: {} are kept (MAX_OWNERS)",
            h2ledger_run::procs::MAX_OWNERS
        ));
    }
}

impl Hooks for Run {
    fn packet(&mut self, linktype: LinkType, ts: Nanos, data: &[u8]) -> ControlFlow<Stop> {
        if let Some(o) = &self.owners {
            o.packet(linktype, data);
        }
        let flow = self.session.feed(linktype, ts, data);
        self.drain();
        self.print_findings();
        flow
    }

    fn idle(&mut self, now: Nanos) {
        self.session.idle(now);
        // Calls that ended a while ago are folded by the clock: a quiet sniff's scrapes count
        // them.
        self.drain();
        // Connections the clock closed may have fired findings.
        self.print_findings();
    }

    fn metrics_wake(&self) -> Option<std::sync::Arc<tokio::sync::Notify>> {
        self.wake.clone()
    }

    fn wants_sync(&self) -> bool {
        self.metrics.as_ref().is_some_and(Exporter::wants_sync)
    }

    fn sync(&mut self, drops: Drops) {
        self.flush();
        if let Some(e) = &self.metrics {
            let running = self.session.running();
            e.metrics().set(&Figures::running(&running, Some(drops)));
            e.metrics()
                .findings(self.session.findings_filed(), &self.severities);
            processes(e, self.owners.as_ref());
            e.synced(false);
        }
    }

    fn secrets(&mut self, text: &str) {
        self.session.add_keys(text);
    }

    fn frames(&self) -> u64 {
        self.session.frames()
    }

    fn tick(&mut self, _at: Nanos, drops: Option<Drops>) {
        if let (Some(d), Some(v)) = (drops, self.view.as_mut()) {
            let tick = self.session.tick();
            v.tick(&mut self.ctx.out(), &tick, d);
        }
    }
}

/// A ledger command: setup, drive, report.
pub fn run(l: Ledger<'_>, ctx: Ctx) -> Result<ExitCode> {
    let findings_cfg = l.findings.config()?;
    // Before the capture opens and gives up privileges: the `--keys-from` processes are
    // attached, the key log stays open, and the plot
    // file is created (an unwritable path fails at once, not after an hour of capture).
    let plan = Plan::new(
        l.cap,
        l.input.clone(),
        l.filter,
        l.max_frames,
        l.every,
        ctx.progress,
    )?;
    let (opts, drive) = plan.split();
    let plot = l.analysis.plot.as_deref().map(open_plot).transpose()?;
    let mut run = setup(&l, ctx, opts, findings_cfg)?;
    let ended = drive.run(&mut run).inspect_err(|_| {
        if let Some(path) = &l.analysis.plot {
            let _ = std::fs::remove_file(path);
        }
    })?;
    report(&l, run, ended, plot)
}

/// The session of a ledger command and what watches it: the metrics exporter (`--metrics`,
/// `-T prometheus`), the live view (`sniff --every`), the process lookups (`sniff`).
fn setup(
    l: &Ledger<'_>,
    ctx: Ctx,
    opts: h2ledger_run::Options,
    findings_cfg: h2ledger_core::findings::FindingsConfig,
) -> Result<Run> {
    let wake = l
        .metrics
        .map(|_| std::sync::Arc::new(tokio::sync::Notify::new()));
    let metrics = match (l.metrics, &l.input) {
        (Some(_), Input::File(f)) => {
            bail!("--metrics applies to a live capture (-i DEV), not to reading {f}")
        }
        (Some(addr), Input::Device(_)) => {
            let w = wake.clone().unwrap_or_default();
            let e = Exporter::serve(addr, l.metrics_max_paths, Box::new(move || w.notify_one()))
                .map_err(|e| anyhow!(e))?;
            if let Some(a) = e.addr {
                eprintln!("h2ledger: metrics on http://{a}/metrics");
            }
            Some(e)
        }
        (None, _) if l.format == Format::Prometheus => Some(Exporter::offline(l.metrics_max_paths)),
        (None, _) => None,
    };
    if let Some(e) = &metrics {
        // Every finding id at 0 from the start, so that rate() and absent() work.
        e.metrics()
            .findings(std::iter::empty(), &findings_cfg.severities);
    }
    let mut wanted = l.analysis.wanted(l.every);
    wanted.metrics = metrics.is_some();
    wanted.findings = Some(findings_cfg);
    // A saved capture's report: the analysis and the findings on a thread of their own
    // (decision 261). Not live (the findings are drained as they fire, the clock advances
    // calls) and not `-T jsonl` (a finding line the moment it fires).
    wanted.threads = matches!(l.input, Input::File(_))
        && !l.live
        && l.format != Format::Jsonl
        && std::env::var_os("H2LEDGER_ONE_THREAD").is_none();
    let obs = Obs::new(&wanted);
    let view = live_view(l, l.input.name(), ctx);
    Ok(Run {
        session: Session::new(obs, opts),
        view,
        ctx,
        metrics,
        wake,
        batch: Batch::default(),
        finding_lines: l.format == Format::Jsonl,
        severities: findings_cfg.severities,
        // Before the capture opens and root is given up: the helper keeps it to read /proc.
        owners: matches!(l.input, Input::Device(_)).then(owners),
    })
}

/// The report of a ledger command once its input ended: the live view's last tick, the
/// metrics' final figures, the plot, the report itself, and the exit status.
fn report(
    l: &Ledger<'_>,
    mut run: Run,
    ended: crate::source::Ended,
    plot: Option<std::fs::File>,
) -> Result<ExitCode> {
    let ctx = run.ctx;
    if let Some(v) = run.view.as_mut() {
        let tick = run.session.tick();
        v.last_tick(&mut run.ctx.out(), &tick, ended.drops.unwrap_or_default());
    }
    if l.live && matches!(l.format, Format::Table | Format::Prometheus) {
        eprintln!("h2ledger: stopped ({})", ended.end.describe());
    }
    let mut done = run.session.finish(&ended.end, ended.drops);
    if let Some(o) = &run.owners {
        fill_owners(o, &mut done.report);
    }
    // Findings that fired as the last connections closed.
    run.print_findings();
    // The calls the end folded, then the final figures: the report's.
    run.flush();
    if let Some(e) = &run.metrics {
        let mut f = Figures::report(&done.report);
        // Every GOAWAY of the kind, also beyond the 1,000 the report lists.
        let running = run.session.running();
        f.calm_goaways = running.calm_goaways;
        // Every GOAWAY and RST_STREAM by code (the report lists only the first GOAWAYs).
        f.error_codes = running.error_codes;
        e.metrics().set(&f);
        e.metrics()
            .findings(run.session.findings_filed(), &run.severities);
        processes(e, run.owners.as_ref());
        e.synced(true);
    }
    let s = &mut run.session;
    if let (Some(file), Some(p)) = (plot, s.plot(&done)) {
        draw(l, file, &p, &ended.source, &done.report)?;
    }
    match (l.format, &run.metrics) {
        (Format::Prometheus, Some(e)) => {
            h2ledger_output::warn::write(
                &mut std::io::stderr(),
                &done.report.ledger.warnings,
                ctx.style,
            );
            let page = e.metrics().encode(Exposition::Prometheus);
            let _ = ctx.out().write_all(page.as_bytes());
        }
        _ => l.format.printer(ctx.style).layout(layout(l)).write(
            &mut ctx.out(),
            &mut std::io::stderr(),
            &ended.source,
            &done.report,
            &mut s.phases(&done),
        ),
    }
    let status = l.findings.exit_status(&done.report, &ended.end);
    ended.saved()?;
    Ok(status)
}

/// How the tables lay phases out: a series with `--every` (unless `--wide`), else columns.
pub(super) fn layout(l: &Ledger<'_>) -> PhaseLayout {
    if l.every.is_some() && !l.analysis.wide {
        PhaseLayout::Series
    } else {
        PhaseLayout::Columns
    }
}

/// `sniff --every`: the live view of the ticks, in the format's way, headed with `name`.
pub(super) fn live_view(l: &Ledger<'_>, name: &str, ctx: Ctx) -> Option<LiveView> {
    (l.live && l.every.is_some()).then(|| {
        let format = match l.format {
            Format::Table => TickFormat::Table,
            Format::Jsonl => TickFormat::Jsonl,
            Format::Json | Format::Prometheus => TickFormat::None,
        };
        let redraw = h2ledger_output::live::can_redraw(
            ctx.out_is_terminal(),
            std::env::var("TERM").ok().as_deref(),
        );
        LiveView::new(name, format, redraw, ctx.style)
    })
}

/// Draws the `--plot` of `report` (read from `source`) into `file`, created by [`open_plot`]
/// (one session's plot, or the merged one of several: decision 429).
pub(super) fn draw(
    l: &Ledger<'_>,
    file: std::fs::File,
    p: &h2ledger_run::PlotInput<'_>,
    source: &str,
    report: &h2ledger_run::Report,
) -> Result<()> {
    use h2ledger_output::plot;
    let Some(path) = &l.analysis.plot else {
        return Ok(());
    };
    let o = plot::Options {
        title: format!("{source}: HTTP/2 frames over time"),
        bin: l.analysis.bin_ns(),
        why_empty: plot::why_empty(report),
    };
    plot::write(file, p, &o, &mut std::io::stderr())
        .map_err(|e| anyhow!("{}: cannot write the plot: {e}", path.display()))?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

/// Creates the `--plot` file before the capture is read: an unwritable path fails at once, not
/// after an hour of capture, and `sniff` creates it before it gives up root.
pub(super) fn open_plot(path: &Path) -> Result<std::fs::File> {
    std::fs::File::create(path)
        .map_err(|e| anyhow!("{}: cannot write the plot: {e}", path.display()))
}
