//! `h2ledger demo`: the article's experiment in one process, sniffed live.
//!
//! A tonic-health server on a loopback port we bind ourselves, one client connection, two
//! phases at the same call rate: 1 caller x 24 calls/s, then 8 callers x 3 calls/s. The
//! packets are captured live; each phase's ledger is the frames and writes whose time falls in
//! that phase.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::{anyhow, Context, Result};
use clap::Args;
use h2ledger_core::{LedgerReport, Tally};
use h2ledger_tcp::Nanos;
use h2ledger_workload::{Options, Phase};
use serde_json::json;

use crate::live::{Live, LiveOptions, Pkt, DEFAULT_BUFFER_KIB, DEFAULT_SNAPLEN};
use crate::pipeline::Pipeline;
use crate::{render, Format};

#[derive(Args)]
pub struct DemoArgs {
    /// Seconds per phase
    #[arg(long, default_value_t = 10.0, value_name = "S")]
    pub seconds: f64,
    /// Turn hyper's adaptive window (BDP pings) off on both ends
    #[arg(long)]
    pub no_bdp: bool,
    /// Also save the demo's packets to FILE (pcap), to replay later
    #[arg(short = 'w', long, value_name = "FILE")]
    pub write: Option<PathBuf>,
    #[command(flatten)]
    pub user: crate::live::UserArg,
    /// Output format
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

fn nanos(t: SystemTime) -> Nanos {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos() as Nanos)
        .unwrap_or(0)
}

pub fn demo(a: DemoArgs) -> Result<ExitCode> {
    if !(a.seconds > 0.0 && a.seconds.is_finite()) {
        return Err(anyhow!("--seconds must be a positive number"));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    rt.block_on(demo_async(a))
}

async fn demo_async(a: DemoArgs) -> Result<ExitCode> {
    // Our own listener on a free port: the client can only reach our server.
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0")
        .context("cannot bind a loopback port for the demo server")?;
    std_listener.set_nonblocking(true)?;
    let addr = std_listener.local_addr()?;
    let listener = tokio::net::TcpListener::from_std(std_listener)?;
    let mut live = Live::open(&LiveOptions {
        device: "lo".into(),
        filter: Some(format!("tcp port {}", addr.port())),
        snaplen: DEFAULT_SNAPLEN,
        buffer_kib: DEFAULT_BUFFER_KIB,
        write: a.write.clone(),
        user: Some(a.user.user.clone()),
    })?;
    let linktype = live.linktype;
    let opts = Options {
        adaptive_window: !a.no_bdp,
        ..Options::default()
    };
    let phases = [
        Phase::new("1 caller x 24/s", 1, 24.0, a.seconds),
        Phase::new("8 callers x 3/s", 8, 3.0, a.seconds),
    ];
    if a.format == Format::Table {
        eprintln!(
            "h2ledger demo: tonic-health server on {addr}, adaptive window (BDP pings) {}, {} s per phase{}",
            if a.no_bdp { "off" } else { "on" },
            a.seconds,
            live.dropped_to
                .as_deref()
                .map(|u| format!("; capturing on lo as {u}"))
                .unwrap_or_default()
        );
    }
    let server = h2ledger_workload::serve(listener, &opts).await;
    let capture_start = nanos(SystemTime::now());
    let mut packets: Vec<Pkt> = Vec::new();
    let results = {
        let work = h2ledger_workload::run_phases(addr, &phases, &opts);
        tokio::pin!(work);
        loop {
            tokio::select! {
                r = &mut work => break r,
                p = live.next() => match p {
                    Some(Ok(p)) => packets.push(p),
                    Some(Err(e)) => return Err(e),
                    None => return Err(anyhow!("the capture on lo ended early")),
                },
            }
        }
    };
    // Frames still in flight (the last ACKs) arrive within milliseconds on loopback.
    live.drain(Duration::from_millis(300), |p| packets.push(p))
        .await;
    let drops = live.drops();
    let capture_end = packets.last().map(|p| p.ts + 1).unwrap_or(capture_start);
    let _ = server.shutdown().await;
    drop(live);

    // Phase i runs from its start (the first from the capture's start) to the next one's.
    let mut bounds: Vec<Nanos> = results.iter().map(|r| nanos(r.start)).collect();
    if let Some(b) = bounds.first_mut() {
        *b = (*b).min(capture_start);
    }
    bounds.push(capture_end.max(*bounds.last().unwrap_or(&capture_end)));
    let windows = bounds
        .windows(2)
        .map(|w| Tally::window(w[0], w[1]))
        .collect::<Vec<_>>();
    let mut p = Pipeline::new(windows);
    for pkt in &packets {
        p.packet(linktype, pkt.ts, &pkt.data);
    }
    p.finish();
    let conns = p.ledger.connections();
    let mut reports: Vec<LedgerReport> = p
        .ledger
        .observer
        .iter()
        .map(|t| LedgerReport::build(&conns, t))
        .collect();
    let warnings = p.ledger.warnings.messages.clone();
    for r in &mut reports {
        r.warnings = warnings.clone();
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match a.format {
        Format::Json => {
            let phases_json: Vec<_> = results
                .iter()
                .zip(&reports)
                .zip(bounds.windows(2))
                .map(|((res, rep), w)| {
                    json!({
                        "name": res.name,
                        "calls_made": res.calls_made,
                        "calls_ok": res.calls_ok,
                        "start": crate::pipeline::secs(w[0]),
                        "end": crate::pipeline::secs(w[1]),
                        "ledger": render::ledger_json(rep, None, None),
                    })
                })
                .collect();
            let v = json!({
                "server": addr.to_string(),
                "adaptive_window": !a.no_bdp,
                "phases": phases_json,
                "capture": p.stats,
                "tcp": render::tcp_json(&p.reasm.stats()),
                "drops": drops,
            });
            writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        }
        Format::Table => {
            let cols: Vec<(&str, &LedgerReport)> = results
                .iter()
                .map(|r| r.name.as_str())
                .zip(reports.iter())
                .collect();
            let made: Vec<u64> = results.iter().map(|r| r.calls_made).collect();
            writeln!(out, "{}", render::ledger_table_with(&cols, Some(&made)))?;
            for (r, rep) in results.iter().zip(&reports) {
                writeln!(
                    out,
                    "{}: the demo made {} calls ({} ok); {} seen on the wire",
                    r.name, r.calls_made, r.calls_ok, rep.calls
                )?;
            }
            writeln!(
                out,
                "{}",
                render::footer(&p.stats, &p.reasm.stats(), Some(&drops))
            )?;
            out.flush()?;
            for w in &warnings {
                eprintln!("warning: {w}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
