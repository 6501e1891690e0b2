//! `h2ledger sniff`: the replay pipeline on live packets.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, Result};
use clap::Args;
use h2ledger_core::{LedgerReport, Tally};

use crate::keys::WithKeys as _;
use crate::live::{Live, LiveOptions, DEFAULT_BUFFER_KIB, DEFAULT_SNAPLEN, DELIVERY_TIMEOUT_MS};
use crate::phases::{self, Obs};
use crate::pipeline::Pipeline;
use crate::{
    input, ledger_report, note_empty, print_full, render, write_plot, AnalysisArgs, FilterArgs,
    Format,
};

#[derive(Args)]
pub struct SniffArgs {
    /// Capture device (`lo` for loopback, `any` for all)
    #[arg(
        short = 'i',
        long = "interface",
        default_value = "lo",
        value_name = "DEV"
    )]
    pub device: String,
    /// Stop after this long (e.g. 30s, 500ms, 1m30s; a bare number is seconds)
    #[arg(short, long, value_parser = crate::durations::parse_period, value_name = "D")]
    pub duration: Option<Duration>,
    /// Stop after N HTTP/2 frames
    #[arg(short = 'c', long, value_name = "N")]
    pub count: Option<u64>,
    /// Reprint the running ledger every D, the last D beside the total (redrawn in place on a
    /// terminal, appended otherwise; with --format json one compact object per line); the final
    /// ledger is then cut into phases of D, like `replay --every`
    #[arg(long, value_parser = crate::durations::parse_period, value_name = "D", conflicts_with = "split_at")]
    pub every: Option<Duration>,
    /// Also save the packets to FILE (pcap, nanosecond timestamps), like tcpdump -w; `-w -`
    /// writes them to standard output and the report to standard error
    #[arg(short = 'w', long, value_name = "FILE")]
    pub write: Option<PathBuf>,
    /// Kernel capture buffer in KiB, like tcpdump -B
    #[arg(short = 'B', long = "buffer-size", default_value_t = DEFAULT_BUFFER_KIB, value_name = "KiB")]
    pub buffer_kib: i32,
    /// Snap length: bytes kept of each packet
    #[arg(short = 's', long, default_value_t = DEFAULT_SNAPLEN, value_name = "BYTES")]
    pub snaplen: i32,
    #[command(flatten)]
    pub user: crate::live::UserArg,
    /// Output format
    #[arg(short = 'T', long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    #[command(flatten)]
    pub filter: FilterArgs,
}

pub fn sniff(a: SniffArgs) -> Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow!("cannot start the runtime: {e}"))?;
    rt.block_on(sniff_async(a))
}

async fn sniff_async(a: SniffArgs) -> Result<ExitCode> {
    let filter = input::bpf(&a.filter.ports, &a.filter.words());
    if a.write.as_deref() == Some(std::path::Path::new("-")) {
        crate::report_to_stderr();
    }
    let opts = LiveOptions {
        device: a.device.clone(),
        filter: filter.clone(),
        snaplen: a.snaplen,
        buffer_kib: a.buffer_kib,
        write: a.write.clone(),
        user: Some(a.user.user.clone()),
    };
    // Before Live::open gives up privileges: the key log stays open.
    let keys = crate::keys::load(a.filter.keylog.as_deref(), None, true)?;
    let mut live = Live::open(&opts)?;
    // Always said (like tcpdump's "listening on"): scripts wait for this line.
    {
        eprintln!(
            "h2ledger: listening on {}{}{}; Ctrl-C to stop",
            live.device,
            filter
                .as_deref()
                .map(|f| format!(", filter \"{f}\""))
                .unwrap_or_default(),
            live.dropped_to
                .as_deref()
                .map(|u| format!(", running as {u}"))
                .unwrap_or_default()
        );
    }
    let linktype = live.linktype;
    let mut p = Pipeline::with_max_connections(
        Obs::new(&a.analysis.wanted(a.every)),
        a.filter.max_connections,
    )
    .with_keys(keys);
    let stop = run_until_stopped(&mut live, &mut p, linktype, &a).await?;
    // Packets captured before the stop may wait DELIVERY_TIMEOUT_MS in the kernel.
    live.drain(
        Duration::from_millis(4 * DELIVERY_TIMEOUT_MS as u64),
        |pkt| packet(&mut p, linktype, &pkt),
    )
    .await;
    let drops = live.drops();
    let saved = live.finish_write();
    p.finish();
    let mut report = ledger_report(&p, &p.ledger.observer.tally);
    note_empty(&mut report, &p, filter.as_deref());
    if drops.kernel + drops.interface > 0 {
        report.warnings.push(format!(
            "{} packets dropped by the kernel and {} by the interface: counts are low (raise --buffer-size)",
            drops.kernel, drops.interface
        ));
    }
    if a.format == Format::Table {
        eprintln!("h2ledger: stopped ({stop})");
    }
    let source = format!("{} (live)", live.device);
    let (mut whole, phases) = phases::build(&mut p, report);
    whole.drops = Some(drops.into());
    if let Some(path) = &a.analysis.plot {
        write_plot(path, &p, &phases, &source)?;
    }
    print_full(
        a.format,
        &source,
        &whole,
        &mut phases.reports(&p.ledger.observer),
    );
    drop(live);
    saved?;
    Ok(ExitCode::SUCCESS)
}

impl From<crate::live::Drops> for h2ledger_run::Drops {
    fn from(d: crate::live::Drops) -> Self {
        h2ledger_run::Drops {
            received: d.received,
            kernel: d.kernel,
            interface: d.interface,
        }
    }
}

fn packet(p: &mut Pipeline<Obs>, linktype: i32, pkt: &crate::live::Pkt) {
    p.ledger.observer.set_origin(pkt.ts);
    p.packet(linktype, pkt.ts, &pkt.data);
}

async fn run_until_stopped(
    live: &mut Live,
    p: &mut Pipeline<Obs>,
    linktype: i32,
    a: &SniffArgs,
) -> Result<&'static str> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| anyhow!("cannot watch SIGTERM: {e}"))?;
    let deadline = a.duration.map(|d| tokio::time::Instant::now() + d);
    let mut every = a.every.map(|d| {
        let mut i = tokio::time::interval_at(tokio::time::Instant::now() + d, d);
        i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        i
    });
    loop {
        tokio::select! {
            pkt = live.next() => match pkt {
                Some(Ok(pkt)) => {
                    packet(p, linktype, &pkt);
                    if a.count.is_some_and(|n| p.ledger.observer.frames() >= n) {
                        return Ok("--count reached");
                    }
                }
                Some(Err(e)) => return Err(e),
                None => return Ok("the capture ended"),
            },
            _ = tokio::signal::ctrl_c() => return Ok("interrupted"),
            _ = term.recv() => return Ok("SIGTERM"),
            _ = async { tokio::time::sleep_until(deadline.expect("guarded")).await }, if deadline.is_some() => {
                return Ok("--duration reached");
            }
            _ = async { every.as_mut().expect("guarded").tick().await }, if every.is_some() => {
                running(p, a.format, &mut live.drops());
            }
        }
    }
}

/// The running ledger for --every: the total so far, and the last complete period.
fn running(p: &Pipeline<Obs>, format: Format, drops: &mut crate::live::Drops) {
    let o = &p.ledger.observer;
    let report = ledger_report(p, &o.tally);
    let conns = p.ledger.connections();
    // The last complete period: the one before the period the clock is in now. It is shown
    // also when nothing happened in it (an empty column, not the last busy period).
    let last = o.splitter().and_then(|s| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64);
        let current = s.phase_of(now);
        let empty = Tally::new();
        current
            .checked_sub(1)
            .map(|i| LedgerReport::build(&conns, o.phases.get(i).unwrap_or(&empty)))
    });
    let mut out = crate::report_out();
    match format {
        Format::Json => {
            let tick = h2ledger_run::Tick {
                ledger: &report,
                capture: &p.stats,
                tcp: (&p.reasm.stats()).into(),
                drops: (*drops).into(),
                last: last.as_ref(),
            };
            let _ = writeln!(out, "{}", render::json_value(&tick));
        }
        Format::Table => {
            if crate::report_is_terminal() {
                // Redraw in place: clear the screen, cursor home.
                let _ = write!(out, "\x1b[2J\x1b[H");
            } else {
                let _ = writeln!(out, "---");
            }
            let _ = writeln!(out, "{}", render::headline("running", &report));
            let mut cols = vec![("total", &report)];
            if let Some(l) = &last {
                cols.push(("last period", l));
            }
            let _ = writeln!(out, "{}", render::ledger_table(&cols));
            let _ = writeln!(
                out,
                "{}",
                render::footer(&p.stats, &(&p.reasm.stats()).into(), Some(&(*drops).into()))
            );
        }
    }
    let _ = out.flush();
}
