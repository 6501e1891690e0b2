//! `h2ledger sniff`: the replay pipeline on live packets.

use std::io::{IsTerminal, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, Result};
use clap::Args;
use h2ledger_core::LedgerReport;

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
    /// Stop after this long (e.g. 30s, 500ms, 2m; a bare number is seconds)
    #[arg(short, long, value_parser = parse_duration, value_name = "D")]
    pub duration: Option<Duration>,
    /// Stop after N HTTP/2 frames
    #[arg(short = 'c', long, value_name = "N")]
    pub count: Option<u64>,
    /// Reprint the running ledger every D, the last D beside the total (redrawn in place on a
    /// terminal, appended otherwise; with --format json one compact object per line); the final
    /// ledger is then cut into phases of D, like `replay --every`
    #[arg(long, value_parser = parse_duration, value_name = "D", conflicts_with = "split_at")]
    pub every: Option<Duration>,
    /// Also save the packets to FILE (pcap, nanosecond timestamps), like tcpdump -w
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
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    #[command(flatten)]
    pub filter: FilterArgs,
}

/// "30s", "500ms", "2m", "1h", "1.5" (seconds).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("\"{s}\" is not a duration (try 30s, 500ms, 2m)"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        _ => {
            return Err(format!(
                "\"{s}\": unknown unit \"{unit}\" (use ms, s, m or h)"
            ))
        }
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("\"{s}\" is not a duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

pub fn sniff(a: SniffArgs) -> Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow!("cannot start the runtime: {e}"))?;
    rt.block_on(sniff_async(a))
}

async fn sniff_async(a: SniffArgs) -> Result<ExitCode> {
    let filter = input::bpf(&a.filter.ports, &a.filter.expression);
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
    let mut p = Pipeline::new(Obs::new(&a.analysis.wanted(a.every))).with_keys(keys);
    let stop = run_until_stopped(&mut live, &mut p, linktype, &a).await?;
    // Packets captured before the stop may wait DELIVERY_TIMEOUT_MS in the kernel.
    live.drain(
        Duration::from_millis(4 * DELIVERY_TIMEOUT_MS as u64),
        |pkt| packet(&mut p, linktype, &pkt),
    )
    .await;
    let drops = live.drops();
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
    let (whole, phases) = phases::build(&mut p, report);
    if let Some(path) = &a.analysis.plot {
        write_plot(path, &p, &phases, &source)?;
    }
    print_full(a.format, &source, &whole, &phases, &p, Some(&drops));
    drop(live);
    Ok(ExitCode::SUCCESS)
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
    let last = o
        .phases
        .len()
        .checked_sub(2)
        .and_then(|i| o.phases.get(i))
        .map(|t| LedgerReport::build(&conns, t));
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match format {
        Format::Json => {
            let mut v = render::ledger_json(&report, Some(&p.stats), Some(&p.reasm.stats()));
            if let serde_json::Value::Object(m) = &mut v {
                m.insert("drops".into(), serde_json::to_value(*drops).expect("json"));
                if let Some(l) = &last {
                    m.insert("last".into(), render::ledger_json(l, None, None));
                }
            }
            let _ = writeln!(out, "{v}");
        }
        Format::Table => {
            if out.is_terminal() {
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
                render::footer(&p.stats, &p.reasm.stats(), Some(drops))
            );
        }
    }
    let _ = out.flush();
}
