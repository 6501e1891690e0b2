//! `sniff --workers N`: N capture handles in one `PACKET_FANOUT_HASH` group
//! (`source::fanout`), each read by its own session on its own thread
//! (`h2ledger_run::parallel::side_by_side`), one merged report (`h2ledger_run::merge`).

use std::process::ExitCode;

use anyhow::{anyhow, bail, Result};
use h2ledger_output::table::PhaseLayout;
use h2ledger_run::parallel::side_by_side;
use h2ledger_run::{End, Obs, Session};

use super::ledger::Ledger;
use crate::cli::Format;
use crate::source::fanout::{self, Control};
use crate::source::live::{LiveOptions, DEFAULT_BUFFER_KIB, DEFAULT_SNAPLEN};
use crate::source::{self, Input};
use crate::Ctx;

/// Each worker's own report (`replay -T json`'s object) is written to `DIR/worker-K.json`
/// when this names a directory: what the tests read to see that no connection was split
/// (decision 374).
pub const WORKER_REPORTS_ENV: &str = "H2LEDGER_WORKER_REPORTS";

/// What `--workers N > 1` cannot do yet (docs/scale.md), said in one line.
fn refuse(l: &Ledger<'_>) -> Result<()> {
    let a = l.analysis;
    if a.analyze || a.split_at.is_some() || l.every.is_some() || a.plot.is_some() {
        bail!("--workers N > 1 does not take --analyze, --split-at, --every or --plot yet (docs/scale.md); use --workers 1");
    }
    if l.metrics.is_some() {
        bail!("--workers N > 1 does not serve --metrics yet (docs/scale.md); use --workers 1");
    }
    if matches!(l.format, Format::Jsonl | Format::Prometheus) {
        bail!("--workers N > 1 writes tables or -T json; use --workers 1 for -T jsonl or -T prometheus");
    }
    if l.max_frames.is_some() {
        bail!("--workers N > 1 does not take --max-frames; use -c PACKETS or --workers 1");
    }
    if !l.cap.keys_from.is_empty() || !l.cap.keys_from_lib.is_empty() {
        bail!("--workers N > 1 does not take --keys-from or --keys-from-lib yet; use --workers 1");
    }
    Ok(())
}

pub fn run(l: Ledger<'_>, workers: usize, ctx: Ctx) -> Result<ExitCode> {
    let Input::Device(dev) = &l.input else {
        bail!("--workers applies to a live capture (-i DEV); a file is read in parallel with `replay FILE -j N`");
    };
    refuse(&l)?;
    let findings_cfg = l.findings.config()?;
    let bpf = l.filter.bpf();
    // Checked once here, so that a worker's own copy cannot fail.
    source::keys::options(&l.input, l.filter, None, None)?;
    let cap = l.cap;
    let o = LiveOptions {
        device: dev.clone(),
        filter: bpf.clone(),
        snaplen: cap.snaplen.unwrap_or(DEFAULT_SNAPLEN),
        buffer_kib: cap.buffer_kib.unwrap_or(DEFAULT_BUFFER_KIB),
        write: cap.write.clone(),
        user: Some(cap.user.user.clone()),
        keys: None,
        netns: cap.netns.clone(),
    };
    fanout::check(&o)?;
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
    let (handles, dropped_to) = fanout::open_group(&o, workers)?;
    let ctl = std::sync::Arc::new(Control::new(cap.count));
    let make = || {
        let mut wanted = l.analysis.wanted(None);
        wanted.findings = Some(findings_cfg);
        let opts = source::keys::options(&l.input, l.filter, None, None)
            .unwrap_or_else(|_| h2ledger_run::Options::default());
        Session::new(Obs::new(&wanted), opts)
    };
    let (outs, report, stop) = std::thread::scope(|sc| {
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let ctl = &ctl;
        let controller = sc.spawn(move || ctl.control(cap.duration, ready_tx));
        let _ = ready.recv();
        // Always said (like tcpdump's "listening on"): scripts wait for this line.
        eprintln!(
            "h2ledger: listening on {dev}{}, {workers} workers (PACKET_FANOUT_HASH){}; Ctrl-C to stop",
            bpf.as_deref()
                .map(|f| format!(", filter \"{f}\""))
                .unwrap_or_default(),
            dropped_to
                .as_deref()
                .map(|u| format!(", running as {u}"))
                .unwrap_or_default()
        );
        let r = side_by_side(
            handles,
            &make,
            &|_, h, s| fanout::work(h, ctl, s),
            |k, r| {
                if let Some(f) = dump.get_mut(k) {
                    h2ledger_output::write_report(
                        f,
                        &mut std::io::sink(),
                        h2ledger_output::Format::Json,
                        &format!("{dev} (live, worker {k})"),
                        r,
                        &mut std::iter::empty(),
                        PhaseLayout::Columns,
                        ctx.style,
                    );
                }
            },
        );
        // Every worker ended (a stop, or the device went away): the controller stops waiting.
        let stop = *ctl.stop.borrow();
        ctl.stop
            .send_replace(Some(stop.unwrap_or(h2ledger_run::Stop::Interrupted)));
        let _ = controller.join();
        (r.0, r.1, stop)
    });
    let mut write_error = None;
    for o in outs {
        let w = o?;
        write_error = write_error.or(w.write_error);
    }
    let end = match stop {
        Some(s) => End::Stopped(s),
        None => End::Complete,
    };
    if matches!(l.format, Format::Table) {
        eprintln!("h2ledger: stopped ({})", end.describe());
    }
    h2ledger_output::write_report(
        &mut ctx.out(),
        &mut std::io::stderr(),
        l.format.output(),
        &format!("{dev} (live)"),
        &report,
        &mut std::iter::empty(),
        PhaseLayout::Columns,
        ctx.style,
    );
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
