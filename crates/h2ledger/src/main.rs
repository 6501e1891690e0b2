//! h2ledger: what your RPCs really cost on the wire. See README.md and docs/.

mod demo;
mod input;
mod live;
mod pipeline;
mod render;
mod sniff;

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Parser, Subcommand, ValueEnum};
use h2ledger_core::{LedgerReport, Tally};

use crate::input::SavedCapture;
use crate::pipeline::Pipeline;

#[derive(Parser)]
#[command(
    name = "h2ledger",
    version,
    about = "Watch HTTP/2 on the wire and tell what your RPCs really cost",
    long_about = "Watch HTTP/2 on the wire and tell what your RPCs really cost.\n\n\
        h2ledger reads a saved capture (pcap or pcapng, as written by tcpdump, Wireshark or \
        `h2ledger sniff --write`) and prints a ledger of HTTP/2 frames per side (client, server): \
        HEADERS, TRAILERS, DATA, WINDOW_UPDATE, PING and PING ACK (with grpc-go's BDP pings \
        flagged), SETTINGS, and the TCP writes that carried them. HTTP/2 is found on any port, \
        also when the capture starts mid-connection. docs/ledger.md defines every term."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Read a saved capture and print the per-side HTTP/2 frame ledger
    Replay(ReplayArgs),
    /// Capture live (loopback by default) and print the ledger on Ctrl-C, SIGTERM, --duration or --count
    Sniff(sniff::SniffArgs),
    /// The article's experiment, sniffed live: a gRPC health server and client on loopback,
    /// 1 caller x 24 calls/s then 8 callers x 3 calls/s, each phase's ledger side by side
    Demo(demo::DemoArgs),
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
}

#[derive(Args)]
pub struct FilterArgs {
    /// Only TCP port N (repeatable); HTTP/2 is detected on any port without it
    #[arg(short, long = "port", value_name = "N")]
    pub ports: Vec<u16>,
    /// A tcpdump-style BPF filter expression, e.g. `host 127.0.0.1 and tcp port 50051`
    #[arg(
        value_name = "EXPRESSION",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub expression: Vec<String>,
}

#[derive(Args)]
struct ReplayArgs {
    /// The capture file (.pcap or .pcapng); `-` reads standard input
    #[arg(value_name = "FILE")]
    file: String,
    /// Output format: a table (warnings on stderr) or one JSON object (warnings inside)
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    format: Format,
    #[command(flatten)]
    filter: FilterArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            // One line a person can act on; no backtrace even with RUST_BACKTRACE=1.
            eprintln!("h2ledger: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.cmd {
        Cmd::Replay(a) => replay(a),
        Cmd::Sniff(a) => sniff::sniff(a),
        Cmd::Demo(a) => demo::demo(a),
    }
}

fn replay(a: ReplayArgs) -> Result<ExitCode> {
    let filter = input::bpf(&a.filter.ports, &a.filter.expression);
    let mut cap = SavedCapture::open(&a.file, filter.as_deref())?;
    let linktype = cap.linktype;
    let mut p = Pipeline::new(Tally::new());
    let read = cap.for_each(|ts, data| p.packet(linktype, ts, data));
    p.finish();
    let mut report = report_of(&p);
    let mut code = ExitCode::SUCCESS;
    if let Err(e) = &read {
        report.warnings.push(format!(
            "{e:#}; the ledger covers the packets before that point"
        ));
        code = ExitCode::from(1);
    }
    note_empty(&mut report, &p, filter.as_deref());
    print_ledger(a.format, &cap.name, &report, &p, None);
    Ok(code)
}

/// The ledger report of a pipeline, with its warnings.
pub fn report_of(p: &Pipeline<Tally>) -> LedgerReport {
    let mut report = LedgerReport::build(&p.ledger.connections(), &p.ledger.observer);
    report.warnings = p.ledger.warnings.messages.clone();
    report.anomalies = p
        .ledger
        .warnings
        .counts
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    report
}

/// Says why a ledger is empty.
pub fn note_empty(report: &mut LedgerReport, p: &Pipeline<Tally>, filter: Option<&str>) {
    if p.stats.packets > 0 && report.connections == 0 {
        report.warnings.push(format!(
            "no HTTP/2 connection among {} packets ({} TCP segments){}",
            p.stats.packets,
            p.stats.tcp_segments,
            filter
                .map(|f| format!(" matching \"{f}\""))
                .unwrap_or_default()
        ));
    } else if p.stats.packets == 0 {
        report.warnings.push(match filter {
            Some(f) => format!("no packets matched \"{f}\""),
            None => "the capture holds no packets".to_string(),
        });
    }
}

/// Prints a ledger in the chosen format (`drops`: live capture counters).
pub fn print_ledger<O>(
    format: Format,
    source: &str,
    report: &LedgerReport,
    p: &Pipeline<O>,
    drops: Option<&live::Drops>,
) {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match format {
        Format::Json => {
            let mut v = render::ledger_json(report, Some(&p.stats), Some(&p.reasm.stats()));
            if let (Some(d), serde_json::Value::Object(m)) = (drops, &mut v) {
                m.insert("drops".into(), serde_json::to_value(d).expect("json"));
            }
            let _ = writeln!(out, "{}", serde_json::to_string_pretty(&v).expect("json"));
        }
        Format::Table => {
            let _ = writeln!(out, "{}", render::headline(source, report));
            if report.connections > 0 {
                let _ = writeln!(out, "{}", render::ledger_table(&[("", report)]));
                if let Some(t) = render::connections_table(report) {
                    let _ = writeln!(out, "{t}");
                }
            }
            let _ = writeln!(out, "{}", render::footer(&p.stats, &p.reasm.stats(), drops));
            let _ = out.flush();
            for w in &report.warnings {
                eprintln!("warning: {w}");
            }
        }
    }
}
