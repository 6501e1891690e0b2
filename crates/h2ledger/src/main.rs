//! h2ledger: what your RPCs really cost on the wire. See README.md and docs/.

mod calls;
mod demo;
mod durations;
mod flowview;
mod frames;
mod input;
mod keys;
mod live;
mod phases;
mod pipeline;
mod plot;
mod render;
mod sniff;
mod source;

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Parser, Subcommand, ValueEnum};
use h2ledger_core::analysis::Splitter;
use h2ledger_core::{LedgerReport, Side, Tally};
use h2ledger_run::{secs, Report};
use h2ledger_tcp::Nanos;

use crate::input::SavedCapture;
use crate::keys::WithKeys as _;
use crate::phases::{Obs, Wanted};
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
    /// List every call (HTTP/2 stream): method, status, frames and writes per side, latency
    Calls(CallsArgs),
    /// Print every frame as it is seen, one line each (like `nghttp -v`)
    Frames(FramesArgs),
    /// The article's experiment, sniffed live: grpc-go's health server and client on loopback
    /// (one connection), 1 caller x 24 calls/s then 8 callers x 3 calls/s; the finding, then
    /// both phases' ledgers side by side. Each stack is its own program (see --workloads)
    Demo(demo::DemoArgs),
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
}

#[derive(Args, Clone)]
pub struct FilterArgs {
    /// Only TCP port N (repeatable); HTTP/2 is detected on any port without it
    #[arg(short, long = "port", value_name = "N")]
    pub ports: Vec<u16>,
    /// Decrypt HTTP/2 over TLS with this key log (SSLKEYLOGFILE format); keys embedded in a
    /// pcapng capture (Decryption Secrets Blocks) are used without it
    #[arg(long, value_name = "FILE")]
    pub keylog: Option<std::path::PathBuf>,
    /// A tcpdump-style BPF capture filter, like tshark -f: `-f "host 127.0.0.1 and tcp port 50051"`
    #[arg(short = 'f', long = "filter", value_name = "EXPR")]
    pub filter: Option<String>,
    /// The filter as trailing words, like tcpdump (`... tcp port 50051`); options may follow
    /// them, and words after `--` are always filter words
    #[arg(value_name = "EXPRESSION")]
    pub expression: Vec<String>,
    /// Connections tracked at once (a few KiB each); beyond, the least recently active one is
    /// closed as evicted and counted (tcp.evicted, a warning)
    #[arg(long, value_name = "N", default_value_t = h2ledger_run::pipeline::DEFAULT_MAX_CONNECTIONS,
          value_parser = max_connections)]
    pub max_connections: usize,
}

fn max_connections(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=10_000_000).contains(&n) => Ok(n),
        _ => Err(format!(
            "\"{s}\": give a number of connections from 1 to 10000000"
        )),
    }
}

impl FilterArgs {
    /// The filter words: `-f EXPR` first, then the trailing words (joined with `and`).
    pub fn words(&self) -> Vec<String> {
        match (&self.filter, self.expression.is_empty()) {
            (Some(f), true) => vec![f.clone()],
            (Some(f), false) => {
                vec![format!("({f}) and ({})", self.expression.join(" "))]
            }
            (None, _) => self.expression.clone(),
        }
    }
}

/// Analysis options shared by `replay` and `sniff`.
#[derive(Args, Clone, Default)]
pub struct AnalysisArgs {
    /// Add the analysis: what each write carried, PING round trips and BDP rounds, calls in
    /// flight, latency percentiles, per-method totals (costs ~64 bytes per call)
    #[arg(short = 'a', long)]
    pub analyze: bool,
    /// Cut the capture into phases at these times (comma separated): RFC 3339
    /// (2026-11-30T12:10:24.664Z), @EPOCH seconds, or offsets from the first packet (30s);
    /// implies --analyze
    #[arg(long, value_name = "T[,T...]", value_parser = phases::parse_cuts)]
    pub split_at: Option<std::vec::Vec<h2ledger_core::analysis::Cut>>,
    /// Draw frames per second by kind and side over time as SVG into FILE
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<std::path::PathBuf>,
}

impl AnalysisArgs {
    /// What to attach, given `--every`-style phases of `every` (if any).
    pub fn wanted(&self, every: Option<std::time::Duration>) -> Wanted {
        let splitter = match (&self.split_at, every) {
            (Some(c), _) => Some(Splitter::at(c.clone())),
            (None, Some(d)) => Some(Splitter::every(d.as_nanos() as i64)),
            _ => None,
        };
        Wanted {
            analysis: self.analyze || splitter.is_some(),
            splitter,
            timeline: self.plot.as_ref().map(|_| 100_000_000),
        }
    }
}

#[derive(Args)]
struct ReplayArgs {
    /// The capture file (.pcap or .pcapng); `-` reads standard input
    #[arg(value_name = "FILE")]
    file: String,
    /// Output format: a table (warnings on stderr) or one JSON object (warnings inside)
    #[arg(short = 'T', long, value_enum, default_value_t = Format::Table)]
    format: Format,
    #[command(flatten)]
    analysis: AnalysisArgs,
    /// Cut the capture into phases of this length from the first packet (30s, 500ms);
    /// implies --analyze
    #[arg(long, value_name = "D", value_parser = durations::parse_period, conflicts_with = "split_at")]
    every: Option<std::time::Duration>,
    #[command(flatten)]
    filter: FilterArgs,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LineFormat {
    Table,
    Jsonl,
}

#[derive(Args)]
struct CallsArgs {
    #[command(flatten)]
    source: source::SourceArgs,
    /// A table, or one JSON object per call
    #[arg(short = 'T', long, value_enum, default_value_t = LineFormat::Table)]
    format: LineFormat,
    #[command(flatten)]
    filter: FilterArgs,
}

#[derive(Args)]
struct FramesArgs {
    #[command(flatten)]
    source: source::SourceArgs,
    /// One line per frame, or one JSON object per frame
    #[arg(short = 'T', long, value_enum, default_value_t = LineFormat::Table)]
    format: LineFormat,
    /// Only connection N (repeatable; numbered from 0 in order of appearance)
    #[arg(long = "conn", value_name = "N")]
    conns: Vec<u32>,
    /// Only stream N (repeatable)
    #[arg(long = "stream", value_name = "N")]
    streams: Vec<u32>,
    /// Only frames of this wire type (HEADERS, DATA, PING, ...) or ledger class (TRAILERS,
    /// PING_ACK, SETTINGS_ACK); repeatable, case-insensitive
    #[arg(short = 't', long = "type", value_name = "TYPE", value_parser = frame_type)]
    types: Vec<String>,
    /// Only frames sent by this side
    #[arg(long, value_enum)]
    side: Option<SideArg>,
    #[command(flatten)]
    filter: FilterArgs,
}

/// `-t NAME`: a frame type or ledger class, checked, in upper case.
fn frame_type(s: &str) -> Result<String, String> {
    h2ledger_core::FrameClass::from_name(s.trim())
        .map(|c| c.name().to_string())
        .ok_or_else(|| {
            let names: Vec<&str> = h2ledger_core::FrameClass::ALL
                .iter()
                .map(|c| c.name())
                .collect();
            format!("unknown frame type \"{s}\" (one of {})", names.join(", "))
        })
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SideArg {
    Client,
    Server,
}

/// Set when the packets go to standard output (`sniff -w -`): the report then goes to stderr.
static REPORT_TO_STDERR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Where reports are printed: stdout, or stderr when stdout carries the packets (`-w -`).
pub fn report_out() -> Box<dyn std::io::Write> {
    if REPORT_TO_STDERR.load(std::sync::atomic::Ordering::Relaxed) {
        Box::new(std::io::stderr().lock())
    } else {
        Box::new(std::io::stdout().lock())
    }
}

/// Whether the report goes to a terminal.
pub fn report_is_terminal() -> bool {
    use std::io::IsTerminal;
    if REPORT_TO_STDERR.load(std::sync::atomic::Ordering::Relaxed) {
        std::io::stderr().is_terminal()
    } else {
        std::io::stdout().is_terminal()
    }
}

/// Sends reports to stderr from now on (the packets take stdout).
pub fn report_to_stderr() {
    REPORT_TO_STDERR.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// No backtraces for users: a panic (a bug) is one line and exit status 2, and an allocation
/// failure prints libstd's one line without the backtrace RUST_BACKTRACE would add. Set
/// H2LEDGER_BACKTRACE=1 to get them back when debugging.
fn quiet_failures() {
    if std::env::var_os("H2LEDGER_BACKTRACE").is_some() {
        return;
    }
    // Single-threaded here, before anything reads the environment.
    std::env::remove_var("RUST_BACKTRACE");
    std::env::remove_var("RUST_LIB_BACKTRACE");
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".to_string());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!(
            "h2ledger: internal error: {msg}{at}; please report it with the command (H2LEDGER_BACKTRACE=1 adds a backtrace)"
        );
        std::process::exit(2);
    }));
}

fn main() -> ExitCode {
    quiet_failures();
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
        Cmd::Calls(a) => calls_cmd(a),
        Cmd::Frames(a) => frames_cmd(a),
        Cmd::Demo(a) => demo::demo(a),
    }
}

fn replay(a: ReplayArgs) -> Result<ExitCode> {
    let filter = input::bpf(&a.filter.ports, &a.filter.words());
    let mut cap = SavedCapture::open(&a.file, filter.as_deref())?;
    let linktype = cap.linktype;
    let wanted = a.analysis.wanted(a.every);
    let keys = keys::load(a.filter.keylog.as_deref(), Some(&a.file), false)?;
    let mut p =
        Pipeline::with_max_connections(Obs::new(&wanted), a.filter.max_connections).with_keys(keys);
    let read = cap.for_each(|ts, data| {
        p.ledger.observer.set_origin(ts);
        p.packet(linktype, ts, data)
    });
    p.finish();
    let mut report = ledger_report(&p, &p.ledger.observer.tally);
    let mut code = ExitCode::SUCCESS;
    if let Err(e) = &read {
        report.warnings.push(format!(
            "{e:#}; the ledger covers the packets before that point"
        ));
        code = ExitCode::from(1);
    }
    note_empty(&mut report, &p, filter.as_deref());
    let (whole, phases) = phases::build(&mut p, report);
    if let Some(path) = &a.analysis.plot {
        write_plot(path, &p, &phases, &cap.name)?;
    }
    print_full(
        a.format,
        &cap.name,
        &whole,
        &mut phases.reports(&p.ledger.observer),
    );
    Ok(code)
}

/// Writes the `--plot` SVG.
pub fn write_plot(
    path: &std::path::Path,
    p: &Pipeline<Obs>,
    phases: &phases::Phases,
    source: &str,
) -> Result<()> {
    let Some(t) = &p.ledger.observer.timeline else {
        return Ok(());
    };
    let origin = t.origin.unwrap_or(0) as f64 / 1e9;
    let cuts: Vec<f64> = (1..phases.len())
        .map(|k| phases.bounds(k).0 as f64 / 1e9 - origin)
        .collect();
    if t.refused > 0 {
        eprintln!(
            "warning: the plot keeps {} time buckets: {} frames of later buckets are not drawn",
            h2ledger_core::analysis::timeline::MAX_BUCKETS,
            t.refused
        );
    }
    let windows = p
        .ledger
        .observer
        .analysis
        .as_ref()
        .and_then(|a| a.flow.series.as_ref());
    let svg = plot::svg(
        t,
        &cuts,
        &format!("{source}: HTTP/2 frames per second"),
        windows,
    );
    std::fs::write(path, svg)
        .map_err(|e| anyhow::anyhow!("{}: cannot write the plot: {e}", path.display()))
}

fn calls_cmd(a: CallsArgs) -> Result<ExitCode> {
    let wanted = Wanted {
        analysis: true,
        ..Wanted::default()
    };
    let mut obs = Obs::new(&wanted);
    obs.analysis = obs.analysis.map(|an| an.keep_finished());
    let mut p = Pipeline::with_max_connections(obs, a.filter.max_connections)
        .with_keys(source::keys(&a.source, &a.filter)?);
    let mut printer = calls::CallPrinter::new(a.format == LineFormat::Jsonl);
    let live = a.source.live.interface.is_some();
    let read = source::feed(&a.source, &a.filter, |linktype, ts, data| {
        printer.set_origin(ts);
        p.packet(linktype, ts, data);
        if let Some(an) = p.ledger.observer.analysis.as_mut() {
            an.drain_finished(|c| printer.call(&c));
        }
        if live {
            printer.flush();
        }
        if printer.broken {
            // The reader went away (`| head`): stop now, quietly, even on an endless stdin.
            std::process::exit(0);
        }
    })?;
    p.finish();
    if let Some(an) = p.ledger.observer.analysis.as_mut() {
        an.flush();
        an.drain_finished(|c| printer.call(&c));
    }
    printer.finish();
    if printer.broken {
        return Ok(ExitCode::SUCCESS);
    }
    Ok(listing_done(&p.ledger.warnings.messages, read, "calls"))
}

/// After `calls` or `frames`: warnings on stderr, and exit status 1 when the input ended early.
fn listing_done(warnings: &[String], read: source::Read, what: &str) -> ExitCode {
    for w in warnings {
        eprintln!("warning: {w}");
    }
    match read.error {
        Some(e) => {
            eprintln!("warning: {e:#}; the {what} listed are those before that point");
            ExitCode::from(1)
        }
        None => ExitCode::SUCCESS,
    }
}

fn frames_cmd(a: FramesArgs) -> Result<ExitCode> {
    let ff = frames::FrameFilter {
        conns: a.conns,
        streams: a.streams,
        types: a.types,
        side: a.side.map(|s| match s {
            SideArg::Client => Side::Client,
            SideArg::Server => Side::Server,
        }),
    };
    let mut printer = frames::FramePrinter::new(a.format == LineFormat::Jsonl, ff);
    // Live: each frame as soon as it is seen.
    printer.flush_each = a.source.live.interface.is_some();
    let mut p = Pipeline::with_max_connections(printer, a.filter.max_connections)
        .with_keys(source::keys(&a.source, &a.filter)?);
    let read = source::feed(&a.source, &a.filter, |linktype, ts, data| {
        p.ledger.observer.set_origin(ts);
        p.packet(linktype, ts, data);
        if p.ledger.observer.broken {
            // The reader went away (`| head`): stop now, quietly, even on an endless stdin.
            std::process::exit(0);
        }
    })?;
    p.finish();
    p.ledger.observer.flush();
    if p.ledger.observer.broken {
        return Ok(ExitCode::SUCCESS);
    }
    Ok(listing_done(&p.ledger.warnings.messages, read, "frames"))
}

/// The ledger report of a pipeline (from `tally`), with its warnings.
pub fn ledger_report<O: h2ledger_core::Observer>(p: &Pipeline<O>, tally: &Tally) -> LedgerReport {
    p.ledger_report(tally)
}

/// Says why a ledger is empty.
pub fn note_empty<O>(report: &mut LedgerReport, p: &Pipeline<O>, filter: Option<&str>) {
    p.note_empty(report, filter)
}

/// Phase columns per table block: a table of more phases is printed as consecutive blocks of
/// this many phases (the whole capture's column in the first), so only one block's reports are
/// held at a time and each block stays readable.
const PHASES_PER_TABLE: usize = 8;

/// Prints a run's report (and its phases, built one at a time by `phases`) in the chosen format.
pub fn print_full(
    format: Format,
    source: &str,
    whole: &Report,
    phases: &mut dyn Iterator<Item = Report>,
) {
    let mut out = report_out();
    let report = &whole.ledger;
    match format {
        Format::Json => {
            let _ = render::write_json(&mut out, whole, phases);
        }
        Format::Table => {
            let _ = writeln!(out, "{}", render::headline(source, report));
            let mut phases = phases.peekable();
            let split = phases.peek().is_some();
            let origin = whole.start.unwrap_or(0);
            // Each phase's name and bounds, for the lines under the tables.
            let mut spans: Vec<(String, Nanos, Nanos)> = Vec::new();
            let mut first_block = true;
            while report.connections > 0 && (first_block || phases.peek().is_some()) {
                let block: Vec<Report> = phases.by_ref().take(PHASES_PER_TABLE).collect();
                let mut cols: Vec<(String, &Report)> = Vec::new();
                if first_block {
                    cols.push((
                        if split {
                            "all".to_string()
                        } else {
                            String::new()
                        },
                        whole,
                    ));
                }
                for f in &block {
                    let (start, end) = (f.start.unwrap_or(0), f.end.unwrap_or(0));
                    spans.push((f.name.clone(), start, end));
                    cols.push((
                        format!(
                            "{} ({:.3}-{:.3} s)",
                            f.name,
                            secs(start - origin),
                            secs(end - origin)
                        ),
                        f,
                    ));
                }
                let lcols: Vec<(&str, &LedgerReport)> =
                    cols.iter().map(|(n, f)| (n.as_str(), &f.ledger)).collect();
                let _ = writeln!(out, "{}", render::ledger_table(&lcols));
                let acols: Vec<(&str, &Report)> =
                    cols.iter().map(|(n, f)| (n.as_str(), *f)).collect();
                if let Some(t) = render::analysis_table(&acols) {
                    let _ = writeln!(out, "{t}");
                }
                if first_block {
                    if let Some(t) = whole.analysis.as_ref().and_then(render::methods_table) {
                        let _ = writeln!(out, "{t}");
                    }
                }
                let fcols: Vec<(&str, &h2ledger_core::AnalysisReport)> = cols
                    .iter()
                    .filter_map(|(n, f)| f.analysis.as_ref().map(|a| (n.as_str(), a)))
                    .collect();
                for t in [flowview::flow_table(&fcols), flowview::grpc_table(&fcols)]
                    .into_iter()
                    .flatten()
                {
                    let _ = writeln!(out, "{t}");
                }
                first_block = false;
            }
            if report.connections > 0 {
                if let Some(t) = render::connections_table(report) {
                    let _ = writeln!(out, "{t}");
                }
                for (name, start, end) in &spans {
                    let _ = writeln!(
                        out,
                        "{name}: {} to {}",
                        phases::fmt_rfc3339(*start),
                        phases::fmt_rfc3339(*end)
                    );
                }
            }
            let (capture, tcp) = (
                whole.capture.clone().unwrap_or_default(),
                whole.tcp.unwrap_or_default(),
            );
            let _ = writeln!(
                out,
                "{}",
                render::footer(&capture, &tcp, whole.drops.as_ref())
            );
            if let Some(l) = whole.tls.as_ref().and_then(keys::tls_line) {
                let _ = writeln!(out, "{l}");
            }
            let _ = out.flush();
            for w in &report.warnings {
                eprintln!("warning: {w}");
            }
            if let Some(a) = &whole.analysis {
                for g in a.goaways.iter().filter(|g| g.too_many_pings) {
                    eprintln!(
                        "warning: connection {}: the {} sent GOAWAY ENHANCE_YOUR_CALM (debug \"{}\"): too many pings",
                        g.conn, g.side, g.debug
                    );
                }
            }
        }
    }
}
