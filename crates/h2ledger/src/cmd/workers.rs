//! `sniff --workers N`: N capture handles in one `PACKET_FANOUT_HASH` group
//! (`source::fanout`), each read by its own session on its own thread
//! (`h2ledger_run::parallel::side_by_side`), one merged report (`h2ledger_run::merge`); the
//! metrics of `--metrics` summed over the workers (`h2ledger_output::metrics::Parts`), the
//! live view of `--every` merged from their ticks (`h2ledger_output::live::TickParts`), the
//! processes looked up by one `Owners` they share, the `--keys-from` secrets broadcast to
//! every worker (`source::keys::attach_for`, decision 417).

use std::cell::RefCell;
use std::ops::ControlFlow;
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use h2ledger_output::live::TickParts;
use h2ledger_output::metrics::{Batch, Exporter, Figures, Part, Parts};
use h2ledger_run::parallel::side_by_side;
use h2ledger_run::procs::Owners;
use h2ledger_run::{Drops, End, FireAt, Obs, Session, Stop, Tick};
use h2ledger_tcp::{LinkType, Nanos};
use tokio::sync::Notify;

use super::ledger::{
    draw, fill_owners, layout, live_view, open_plot, owners, processes_into, Ledger,
};
use crate::cli::Format;
use crate::source::fanout::{self, Control, WorkerEnd};
use crate::source::live::{LiveOptions, DEFAULT_BUFFER_KIB, DEFAULT_SNAPLEN};
use crate::source::{self, Hooks, Input};
use crate::Ctx;

/// Each worker's own report (`replay -T json`'s object) is written to `DIR/worker-K.json`
/// when this names a directory: what the tests read to see that no connection was split
/// (decision 374).
pub const WORKER_REPORTS_ENV: &str = "H2LEDGER_WORKER_REPORTS";

/// What `--workers N > 1` cannot do yet (docs/scale.md), said in one line.
fn refuse(l: &Ledger<'_>) -> Result<()> {
    if l.max_frames.is_some() {
        bail!("--workers N > 1 does not take --max-frames; use -c PACKETS or --workers 1");
    }
    Ok(())
}

/// What the workers share besides the stop: the metrics, the live view, the processes.
struct Shared<'a> {
    parts: Option<&'a Parts>,
    /// One wake-up per worker: a scrape wakes them all.
    wakes: &'a [Arc<Notify>],
    ticks: Option<&'a TickParts>,
    owners: &'a Owners,
    ctx: Ctx,
    /// The first packet any worker handled (`i64::MIN` until then): every worker's phases
    /// count from it (decision 415).
    origin: &'a AtomicI64,
}

/// One worker's hooks on the live loop: its session, its calls not yet handed to the
/// metrics, its share of the metrics and of the live view.
struct Worker<'a, 's> {
    k: usize,
    session: &'s mut Session,
    batch: Batch,
    part: Option<Part<'a>>,
    shared: &'a Shared<'a>,
    /// The session was given the run's origin.
    origin_set: bool,
    /// Packets so far (where a finding line goes among the workers': decision 443).
    n: u64,
}

impl Worker<'_, '_> {
    /// The calls folded and the round trips measured since the last time, into the batch;
    /// handed over when full.
    fn drain(&mut self) {
        if let Some(p) = &self.part {
            let b = &mut self.batch;
            self.session.drain_calls(|c| b.call(&c));
            self.session.drain_rtts(|side, rtt| b.ping_rtt(side, rtt));
            if b.full() {
                p.flush(b);
            }
        }
    }
}

impl Hooks for Worker<'_, '_> {
    fn packet(&mut self, linktype: LinkType, ts: Nanos, data: &[u8]) -> ControlFlow<Stop> {
        self.shared.owners.packet(linktype, data);
        if !self.origin_set {
            // The first worker to see a packet sets the run's origin; the others take it.
            let o = self.shared.origin;
            let _ = o.compare_exchange(i64::MIN, ts, Ordering::SeqCst, Ordering::SeqCst);
            self.session.set_origin(o.load(Ordering::SeqCst));
            self.origin_set = true;
        }
        // Only --max-frames stops a session, and --workers does not take it.
        let _ = self.session.feed(linktype, ts, data);
        self.n += 1;
        self.session.fire_at(FireAt::packet(ts, self.n));
        self.drain();
        ControlFlow::Continue(())
    }

    fn secrets(&mut self, text: &str) {
        // A live device has no secrets blocks; kept for the trait's sake.
        self.session.add_keys(text);
    }

    fn frames(&self) -> u64 {
        self.session.frames()
    }

    fn idle(&mut self, now: Nanos) {
        self.session.idle(now);
        // Connections the clock closed may have fired findings.
        self.session.fire_at(FireAt::packet(now, self.n));
        self.drain();
    }

    fn tick(&mut self, _at: Nanos, drops: Option<Drops>) {
        if let (Some(t), Some(d)) = (self.shared.ticks, drops) {
            let tick = self.session.tick();
            t.post(self.k, tick, d, &mut self.shared.ctx.out());
        }
    }

    fn metrics_wake(&self) -> Option<Arc<Notify>> {
        self.part
            .as_ref()
            .map(|_| self.shared.wakes[self.k].clone())
    }

    fn wants_sync(&self) -> bool {
        self.part.as_ref().is_some_and(Part::wants_sync)
    }

    fn sync(&mut self, drops: Drops) {
        let Some(asked) = self.part.as_ref().map(Part::asked) else {
            return;
        };
        self.drain();
        let Some(p) = &self.part else { return };
        p.flush(&mut self.batch);
        let f = Figures::running(&self.session.running(), Some(drops));
        processes_into(p_metrics(self.shared), self.shared.owners);
        p.publish(asked, f, self.session.findings_filed(), false);
    }
}

fn p_metrics<'a>(s: &'a Shared<'_>) -> &'a h2ledger_output::metrics::Metrics {
    s.parts.expect("metrics").metrics()
}

/// What a worker hands back: how its `-w` file ended, its calls not yet in the metrics, its
/// last tick (the live view's end).
struct Out {
    end: Result<WorkerEnd>,
    batch: Batch,
    last: Option<(Tick, Drops)>,
}

pub fn run(l: Ledger<'_>, workers: usize, ctx: Ctx) -> Result<ExitCode> {
    let Input::Device(dev) = &l.input else {
        bail!("--workers applies to a live capture (-i DEV); a file is read in parallel with `replay FILE -j N`");
    };
    refuse(&l)?;
    let plot = l.analysis.plot.as_deref().map(open_plot).transpose()?;
    let findings_cfg = l.findings.config()?;
    let bpf = l.filter.bpf();
    // Checked once here, so that a worker's own copy cannot fail.
    source::keys::options(&l.input, l.filter, None, None)?;
    let cap = l.cap;
    // --keys-from: attached while still root, before the capture opens; every worker gets
    // every secret (decision 417).
    let feed = source::keys::attach_for(cap, &l.input, workers)?;
    let o = LiveOptions {
        device: dev.clone(),
        filter: bpf.clone(),
        snaplen: cap.snaplen.unwrap_or(DEFAULT_SNAPLEN),
        buffer_kib: cap.buffer_kib.unwrap_or(DEFAULT_BUFFER_KIB),
        write: cap.write.clone(),
        user: Some(cap.user.user.clone()),
        // Read only as each handle opens (a -w file holds the secrets: pcapng); each worker
        // reads its own tap (fanout::work).
        keys: feed.as_ref().map(|b| Rc::new(RefCell::new(b.tap(0)))),
        netns: cap.netns.clone(),
    };
    fanout::check(&o)?;
    // The port is bound before the capture opens (a port below 1024 works as root).
    let wakes: Vec<Arc<Notify>> = (0..workers).map(|_| Arc::new(Notify::new())).collect();
    let parts = match l.metrics {
        Some(addr) => {
            let w = wakes.clone();
            let wake = Box::new(move || w.iter().for_each(|n| n.notify_one()));
            let e = Exporter::serve(addr, l.metrics_max_paths, wake).map_err(|e| anyhow!(e))?;
            if let Some(a) = e.addr {
                eprintln!("h2ledger: metrics on http://{a}/metrics");
            }
            // Every finding id at 0 from the start, so that rate() and absent() work.
            e.metrics()
                .findings(std::iter::empty(), &findings_cfg.severities);
            Some(Parts::new(e, workers, findings_cfg.severities))
        }
        // `-T prometheus`: the page the workers' metrics sum to, printed at the end.
        None if l.format == Format::Prometheus => {
            let e = Exporter::offline(l.metrics_max_paths);
            e.metrics()
                .findings(std::iter::empty(), &findings_cfg.severities);
            Some(Parts::new(e, workers, findings_cfg.severities))
        }
        None => None,
    };
    let ticks = live_view(&l, &format!("{dev} ({workers} workers)"), ctx)
        .map(|v| TickParts::new(v, workers));
    // Created before root is given up, like the -w files.
    let mut dump = match std::env::var_os(WORKER_REPORTS_ENV) {
        Some(d) => (0..workers)
            .map(|k| {
                let p = std::path::Path::new(&d).join(format!("worker-{k}.json"));
                std::fs::File::create(&p).map_err(|e| anyhow!("{}: {e}", p.display()))
            })
            .collect::<Result<Vec<_>>>()?,
        None => Vec::new(),
    };
    // Before the capture opens and root is given up: the helper keeps it to read /proc.
    let owners = owners();
    let group = fanout::open_group(&o, workers)?;
    let since = group.since;
    let ctl = Arc::new(Control::new(cap.count));
    let feed = feed.as_ref();
    let make = |k: usize| {
        let mut wanted = l.analysis.wanted(l.every);
        wanted.findings = Some(findings_cfg);
        wanted.metrics = parts.is_some();
        let tap = feed.map(|b| Rc::new(RefCell::new(b.tap(k))));
        let opts = source::keys::options(&l.input, l.filter, None, tap.as_ref())
            .unwrap_or_else(|_| h2ledger_run::Options::default());
        let mut s = Session::new(Obs::new(&wanted), opts);
        if l.format == Format::Jsonl {
            s.keep_fired();
        }
        s
    };
    let shared = Shared {
        parts: parts.as_ref(),
        wakes: &wakes,
        ticks: ticks.as_ref(),
        owners: &owners,
        ctx,
        origin: &AtomicI64::new(i64::MIN),
    };
    let every = l.every;
    let (outs, mut merged, stop) = std::thread::scope(|sc| {
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let ctl = &ctl;
        let shared = &shared;
        let controller = sc.spawn(move || ctl.control(cap.duration, ready_tx));
        let _ = ready.recv();
        // Always said (like tcpdump's "listening on"): scripts wait for this line.
        eprintln!(
            "h2ledger: listening on {dev}{}{}, {workers} workers (PACKET_FANOUT_HASH){}; Ctrl-C to stop",
            bpf.as_deref()
                .map(|f| format!(", filter \"{f}\""))
                .unwrap_or_default(),
            feed.map(|b| format!(", TLS secrets from {}", b.describe()))
                .unwrap_or_default(),
            group
                .dropped_to
                .as_deref()
                .map(|u| format!(", running as {u}"))
                .unwrap_or_default()
        );
        let read = |k: usize, h, s: &mut Session| {
            let mut w = Worker {
                k,
                session: s,
                batch: Batch::default(),
                part: shared.parts.map(|p| p.part(k)),
                shared,
                origin_set: false,
                n: 0,
            };
            let keys = feed.map(|b| b.tap(k));
            let (end, how, drops) = fanout::work(h, since, ctl, every, keys, &mut w);
            let last = shared
                .ticks
                .map(|_| (w.session.tick(), drops.unwrap_or_default()));
            if let Some(t) = shared.ticks {
                t.ended(k, &mut shared.ctx.out());
            }
            let batch = std::mem::take(&mut w.batch);
            (Out { end, batch, last }, how, drops)
        };
        let finished = |k: usize, out: &mut Out, s: &mut Session, r: &h2ledger_run::Report| {
            let Some(parts) = shared.parts else { return };
            let p = parts.part(k);
            // The calls the end folded, then this worker's final figures: its report's.
            let b = &mut out.batch;
            s.drain_calls(|c| b.call(&c));
            s.drain_rtts(|side, rtt| b.ping_rtt(side, rtt));
            p.flush(b);
            let mut f = Figures::report(r);
            let running = s.running();
            f.calm_goaways = running.calm_goaways;
            f.error_codes = running.error_codes;
            p.publish(p.asked(), f, s.findings_filed(), true);
        };
        let r = side_by_side(group.handles, &make, &read, &finished, |k, r| {
            if let Some(f) = dump.get_mut(k) {
                h2ledger_output::Printer::new(h2ledger_output::Format::Json, ctx.style).write(
                    f,
                    &mut std::io::sink(),
                    &format!("{dev} (live, worker {k})"),
                    r,
                    &mut std::iter::empty(),
                );
            }
        });
        // Every worker ended (a stop, or the device went away): the controller stops waiting.
        let stop = *ctl.stop.borrow();
        ctl.stop
            .send_replace(Some(stop.unwrap_or(h2ledger_run::Stop::Interrupted)));
        let _ = controller.join();
        (r.0, r.1, stop)
    });
    let mut write_error = None;
    if let Some(b) = feed {
        let (warnings, saved) = b.finish();
        for w in warnings {
            eprintln!("h2ledger: warning: {w}");
        }
        write_error = saved.err().map(anyhow::Error::msg);
    }
    let mut lasts = Vec::new();
    for o in outs {
        let w = o.end?;
        write_error = write_error.or(w.write_error);
        lasts.extend(o.last);
    }
    if let Some(t) = &ticks {
        t.last(lasts, &mut ctx.out());
    }
    let end = match stop {
        Some(s) => End::Stopped(s),
        None => End::Complete,
    };
    if matches!(l.format, Format::Table | Format::Prometheus) {
        eprintln!("h2ledger: stopped ({})", end.describe());
    }
    fill_owners(&owners, &mut merged.report);
    super::jobs::finding_lines(&l, ctx, &mut merged);
    let report = &merged.report;
    if let Some(p) = &parts {
        processes_into(p.metrics(), &owners);
        p.exporter().synced(true);
    }
    let source = format!("{dev} (live)");
    match (&parts, l.format) {
        (Some(p), Format::Prometheus) => {
            use std::io::Write as _;
            h2ledger_output::warn::write(
                &mut std::io::stderr(),
                &report.ledger.warnings,
                ctx.style,
            );
            let page = p
                .metrics()
                .encode(h2ledger_output::metrics::Exposition::Prometheus);
            let _ = ctx.out().write_all(page.as_bytes());
        }
        _ => l.format.printer(ctx.style).layout(layout(&l)).write(
            &mut ctx.out(),
            &mut std::io::stderr(),
            &source,
            report,
            &mut merged.phases(),
        ),
    }
    if let (Some(file), Some(p)) = (plot, merged.plot()) {
        draw(&l, file, &p, &source, report)?;
    }
    let worst = report
        .findings
        .as_deref()
        .and_then(|f| f.iter().map(|x| x.severity).max());
    if let Some(e) = write_error {
        return Err(e);
    }
    Ok(if l.findings.fails(worst) {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    })
}
