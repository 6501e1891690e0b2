//! h2ledger: what your RPCs really cost on the wire. See README.md and docs/.

mod compare;
mod demo;
mod devices;
mod durations;
mod input;
mod install;
mod keys;
mod live;
mod phases;
mod pipeline;
mod progress;
mod sniff;
mod source;

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, CommandFactory as _, Parser, Subcommand, ValueEnum};
use h2ledger_core::analysis::Splitter;
use h2ledger_core::{LedgerReport, Side, Tally};
use h2ledger_run::{secs, Report};

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
        also when the capture starts mid-connection. docs/ledger.md defines every term.",
    arg_required_else_help = true
)]
struct Cli {
    /// List the capture devices, numbered, with their flags and addresses (like tcpdump -D)
    #[arg(short = 'D', long)]
    list_interfaces: bool,
    /// Quiet: one line per kind of warning (with a count and the first example), and no
    /// progress display on stderr while a capture file is read
    #[arg(short = 'q', long, global = true)]
    quiet: bool,
    /// Plain ASCII tables (the default when the locale is not UTF-8)
    #[arg(long, global = true)]
    ascii: bool,
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

/// How text looks (`--ascii`, the locale, `-q`), set once before the command runs.
static STYLE: std::sync::OnceLock<h2ledger_output::Style> = std::sync::OnceLock::new();

pub fn style() -> h2ledger_output::Style {
    STYLE.get().copied().unwrap_or_default()
}

/// Whether `-q/--quiet` was given.
pub fn quiet() -> bool {
    style().quiet
}

/// The output library's format of a command's `--format`.
pub fn output_format(f: Format) -> h2ledger_output::Format {
    match f {
        Format::Table => h2ledger_output::Format::Table,
        Format::Json => h2ledger_output::Format::Json,
        Format::Jsonl => h2ledger_output::Format::Jsonl,
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Read a saved capture and print the per-side HTTP/2 frame ledger
    Replay(ReplayArgs),
    /// Capture live (loopback by default) and print the ledger on Ctrl-C, SIGTERM, --duration or --count
    Sniff(sniff::SniffArgs),
    /// List every call (HTTP/2 stream): method, status, frames and writes per side, latency
    #[command(after_help = h2ledger_output::lines::LEGEND)]
    Calls(CallsArgs),
    /// Print every frame as it is seen, one line each (like `nghttp -v`; on a terminal, a frame
    /// wider than 100 columns goes on, on lines that repeat its time, connection, side and
    /// stream, then `+` and its class)
    Frames(FramesArgs),
    /// The article's experiment, sniffed live: grpc-go's health server and client on loopback
    /// (one connection), 1 caller x 24 calls/s then 8 callers x 3 calls/s; the finding, then
    /// both phases' ledgers side by side. Each stack is its own program (see --workloads)
    Demo(demo::DemoArgs),
    /// Two captures' ledgers side by side with the difference per row (B - A, per side):
    /// what changed on the wire between two runs
    Compare(compare::CompareArgs),
    /// Print a shell completion script (bash, zsh, fish) on stdout
    ///
    /// `h2ledger completions bash > ~/.local/share/bash-completion/completions/h2ledger`;
    /// `just install` puts all three in place.
    Completions(install::CompletionsArgs),
    /// Print the manual page (roff) on stdout: `h2ledger man | man -l -`
    ///
    /// h2ledger(1), or h2ledger-SUBCOMMAND(1) for one subcommand; `--dir DIR` writes them all
    /// (`just install` puts them in man1).
    Man(install::ManArgs),
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Tables (warnings on stderr)
    Table,
    /// One JSON document (warnings inside)
    Json,
    /// One JSON object per line, each with `record` and `type`: a `tick` per --every period
    /// (sniff), a `phase` per phase, and the `summary` (the whole ledger) last
    Jsonl,
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

/// A run's observers.
pub fn observers(w: &Wanted) -> Obs {
    Obs::new(w)
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
    /// Output format: tables (warnings on stderr), one JSON document (warnings inside), or JSON
    /// lines: a `phase` record per phase, then the `summary`
    #[arg(short = 'T', long, value_enum, default_value_t = Format::Table)]
    format: Format,
    #[command(flatten)]
    analysis: AnalysisArgs,
    /// Cut the capture into phases of this length from the first packet (30s, 500ms);
    /// implies --analyze
    #[arg(long, value_name = "D", value_parser = durations::parse_period, conflicts_with = "split_at")]
    every: Option<std::time::Duration>,
    /// Read only the first N packets (after the filter), like tcpdump -r FILE -c N
    #[arg(short = 'c', long = "count", value_name = "N", value_parser = source::count)]
    count: Option<u64>,
    /// Read only this much capture time from the first packet (30s, 1m30s, 250ms)
    #[arg(short = 'd', long, value_parser = durations::parse_period, value_name = "D")]
    duration: Option<std::time::Duration>,
    #[command(flatten)]
    filter: FilterArgs,
}

/// The formats of the line views (`calls`, `frames`).
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LineFormat {
    /// Fixed columns, one row per record
    Table,
    /// One JSON document: the records in an array, then the summary
    Json,
    /// One JSON object per line, each with a `type`; the last one is the summary
    Jsonl,
}

impl LineFormat {
    fn shape(self) -> h2ledger_output::lines::Shape {
        match self {
            LineFormat::Table => h2ledger_output::lines::Shape::Table,
            LineFormat::Json => h2ledger_output::lines::Shape::Document,
            LineFormat::Jsonl => h2ledger_output::lines::Shape::Lines,
        }
    }
}

#[derive(Args)]
struct CallsArgs {
    /// The capture file (.pcap, .pcapng, also gzip- or zstd-compressed); `-` reads standard
    /// input. With -i, this word is the first word of the filter
    #[arg(value_name = "FILE")]
    file: Option<String>,
    #[command(flatten)]
    capture: source::CaptureArgs,
    /// Print a `tick` line (packets, frames and calls of the last D) every D: wall-clock time
    /// live, capture time on a file
    #[arg(long, value_parser = durations::parse_period, value_name = "D")]
    every: Option<std::time::Duration>,
    /// A table, one JSON document, or one JSON object per call (then a summary line)
    #[arg(short = 'T', long, value_enum, default_value_t = LineFormat::Table)]
    format: LineFormat,
    /// The table with every column (about 200 characters wide): calls in flight, flow-control
    /// stalls, gRPC messages, server time and PING round trip
    #[arg(long)]
    wide: bool,
    #[command(flatten)]
    filter: FilterArgs,
}

#[derive(Args)]
struct FramesArgs {
    /// The capture file (.pcap, .pcapng, also gzip- or zstd-compressed); `-` reads standard
    /// input. With -i, this word is the first word of the filter
    #[arg(value_name = "FILE")]
    file: Option<String>,
    #[command(flatten)]
    capture: source::CaptureArgs,
    /// Stop after N frames printed (`-c` counts packets, like tcpdump)
    #[arg(long, value_name = "N")]
    max_frames: Option<u64>,
    /// Print a `tick` line (packets and frames of the last D) every D: wall-clock time live,
    /// capture time on a file
    #[arg(long, value_parser = durations::parse_period, value_name = "D")]
    every: Option<std::time::Duration>,
    /// One line per frame, one JSON document, or one JSON object per frame (then a summary)
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
pub fn report_out() -> Box<dyn std::io::Write + Send> {
    // Not locked: the `calls` writer thread owns its output (each write takes the lock).
    if REPORT_TO_STDERR.load(std::sync::atomic::Ordering::Relaxed) {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
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

/// tcpdump's `-r FILE` with no subcommand: `h2ledger [-q] -r F ARGS...` is `h2ledger [-q]
/// replay F ARGS...` (`-rF` and `--read=F` too). Words after a subcommand are left alone.
fn tcpdump_style(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    use clap::CommandFactory as _;
    let subcommands: Vec<String> = Cli::command()
        .get_subcommands()
        .flat_map(|c| {
            std::iter::once(c.get_name().to_string()).chain(c.get_all_aliases().map(str::to_string))
        })
        .chain(["help".to_string()])
        .collect();
    for i in 1..args.len() {
        let Some(a) = args[i].to_str().map(str::to_string) else {
            break;
        };
        if subcommands.contains(&a) || a == "--" {
            break;
        }
        if a == "-r" || a == "--read" {
            args[i] = "replay".into();
            break;
        }
        let file = a.strip_prefix("--read=").or_else(|| {
            a.strip_prefix("-r")
                .filter(|f| !f.is_empty() && !a.starts_with("--"))
        });
        if let Some(f) = file {
            let f = f.to_string();
            args.splice(i..=i, ["replay".into(), f.into()]);
            break;
        }
        if !a.starts_with('-') {
            break;
        }
    }
    args
}

fn main() -> ExitCode {
    quiet_failures();
    let cli = Cli::parse_from(tcpdump_style(std::env::args_os().collect()));
    let _ = STYLE.set(h2ledger_output::Style::new(cli.ascii, cli.quiet, |k| {
        std::env::var(k).ok()
    }));
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
    // The line views print while they read: no progress over them on one terminal.
    progress::set_streaming(match &cli.cmd {
        Some(Cmd::Calls(_) | Cmd::Frames(_)) => true,
        Some(Cmd::Sniff(a)) => a.every.is_some(),
        _ => false,
    });
    if cli.list_interfaces {
        return devices::list();
    }
    let Some(cmd) = cli.cmd else {
        Cli::command()
            .error(
                clap::error::ErrorKind::MissingSubcommand,
                "give a subcommand (replay, sniff, calls, frames, ...) or -D",
            )
            .exit()
    };
    match cmd {
        Cmd::Replay(a) => replay(a),
        Cmd::Sniff(a) => sniff::sniff(a),
        Cmd::Calls(a) => calls_cmd(a),
        Cmd::Frames(a) => frames_cmd(a),
        Cmd::Demo(a) => demo::demo(a),
        Cmd::Compare(a) => compare::compare(a),
        Cmd::Completions(a) => install::completions(a),
        Cmd::Man(a) => install::man(a),
    }
}

fn replay(a: ReplayArgs) -> Result<ExitCode> {
    let filter = input::bpf(&a.filter.ports, &a.filter.words());
    let mut cap = SavedCapture::open(&a.file, filter.as_deref())?;
    let plot = a.analysis.plot.as_deref().map(open_plot).transpose()?;
    let linktype = cap.linktype;
    let wanted = a.analysis.wanted(a.every);
    let keys = keys::load(a.filter.keylog.as_deref(), Some(&a.file), false)?;
    let mut p = Pipeline::with_max_connections(observers(&wanted), a.filter.max_connections)
        .with_keys(keys);
    let mut limits = source::FileLimits::new(a.count, a.duration);
    let read = cap.for_each(|ts, data| {
        if limits.past_duration(ts) {
            return false;
        }
        p.ledger.observer.set_origin(ts);
        p.packet(linktype, ts, data);
        progress::frames(p.ledger.observer.frames());
        !limits.counted()
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
    let (mut whole, phases) = phases::build(&mut p, report);
    if a.analysis.split_at.is_some() {
        warn_cuts_outside(&mut whole, &phases);
    }
    if let (Some(path), Some(file)) = (&a.analysis.plot, plot) {
        write_plot(path, file, &p, &phases, &cap.name)?;
    }
    print_full(
        a.format,
        &cap.name,
        &whole,
        &mut phases.reports(&p.ledger.observer),
    );
    Ok(code)
}

/// `--split-at` cuts before the first packet or after the last one make empty phases: say so.
pub fn warn_cuts_outside(whole: &mut Report, phases: &phases::Phases) {
    let (Some(first), Some(last)) = (whole.start, whole.end) else {
        return;
    };
    for k in 1..phases.len() {
        let (cut, _) = phases.bounds(k);
        let empty = if cut < first {
            format!("phase {k} is empty")
        } else if cut > last {
            format!("phase {} and those after it are empty", k + 1)
        } else {
            continue;
        };
        whole.ledger.warnings.push(format!(
            "the cut at {} ({:+.3} s) is outside the capture ({} to {}): {empty}",
            h2ledger_output::time::fmt_rfc3339(cut),
            secs(cut - first),
            h2ledger_output::time::fmt_rfc3339(first),
            h2ledger_output::time::fmt_rfc3339(last),
        ));
        if cut > last {
            break;
        }
    }
}

/// Creates the `--plot` file before the capture is read: an unwritable path fails at once, not
/// after an hour of capture, and `sniff` creates it before it gives up root.
pub fn open_plot(path: &std::path::Path) -> Result<std::fs::File> {
    std::fs::File::create(path)
        .map_err(|e| anyhow::anyhow!("{}: cannot write the plot: {e}", path.display()))
}

/// Writes the `--plot` SVG into `file` (from [`open_plot`]).
pub fn write_plot(
    path: &std::path::Path,
    mut file: std::fs::File,
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
    let end = p.stats.last.map(|l| l as f64 / 1e9 - origin);
    let svg = h2ledger_output::plot::svg(
        t,
        &cuts,
        end,
        &format!("{source}: HTTP/2 frames per second"),
        windows,
    )?;
    std::io::Write::write_all(&mut file, svg.as_bytes())
        .map_err(|e| anyhow::anyhow!("{}: cannot write the plot: {e}", path.display()))?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

fn calls_cmd(a: CallsArgs) -> Result<ExitCode> {
    let mut filter = a.filter.clone();
    let input = a.capture.input(a.file.as_deref(), &mut filter, None)?;
    let bpf = source::bpf(&filter);
    let wanted = Wanted {
        analysis: true,
        ..Wanted::default()
    };
    let mut obs = observers(&wanted);
    obs.analysis = obs.analysis.map(|an| an.calls_only());
    let p = Pipeline::with_max_connections(obs, filter.max_connections)
        .with_keys(source::keys(&input, &filter)?);
    struct Calls {
        p: Pipeline<Obs>,
        printer: h2ledger_output::lines::CallPrinter,
        ticks: h2ledger_output::lines::Ticks,
    }
    impl source::Hooks for Calls {
        fn packet(&mut self, linktype: i32, ts: h2ledger_tcp::Nanos, data: &[u8]) -> bool {
            self.printer.set_origin(ts);
            self.ticks.packet();
            self.p.packet(linktype, ts, data);
            progress::frames(self.p.ledger.observer.frames());
            if let Some(an) = self.p.ledger.observer.analysis.as_mut() {
                let printer = &mut self.printer;
                an.drain_finished(|c| printer.call(&c));
            }
            !self.printer.broken()
        }
        fn idle(&mut self) {
            // Nothing arrives: calls that ended a second ago are due (live, packets carry
            // the wall clock), not held until the next frame.
            if let Some(an) = self.p.ledger.observer.analysis.as_mut() {
                an.advance(source::now_nanos());
                let printer = &mut self.printer;
                an.drain_finished(|c| printer.call(&c));
            }
            self.printer.flush();
        }
        fn tick(&mut self, at: h2ledger_tcp::Nanos, drops: Option<&mut h2ledger_run::Drops>) {
            let (f, c) = (self.p.ledger.observer.frames(), self.printer.calls);
            self.ticks
                .tick(self.printer.out(), at, f, c, drops.map(|d| *d));
        }
    }
    let mut h = Calls {
        p,
        printer: h2ledger_output::lines::CallPrinter::new(
            h2ledger_output::lines::Out::new(report_out(), a.format.shape(), "calls"),
            a.wide,
            style(),
        ),
        ticks: h2ledger_output::lines::Ticks::new(a.every),
    };
    let outcome = source::run(&input, &a.capture, bpf.as_deref(), a.every, &mut h)?;
    h.p.finish();
    if let Some(an) = h.p.ledger.observer.analysis.as_mut() {
        an.flush();
        let printer = &mut h.printer;
        an.drain_finished(|c| printer.call(&c));
    }
    h.printer.finish();
    let calls = h.printer.calls;
    let frames = h.p.ledger.observer.frames();
    let (stats, tcp) = (h.p.stats.clone(), (&h.p.reasm.stats()).into());
    let warnings = &h.p.ledger.warnings.messages;
    let s = Listing {
        view: "calls",
        calls: Some(calls),
        frames,
        capture: &stats,
        tcp,
        warnings,
    };
    listing_done(h.printer.out(), s, outcome)
}

/// What the summary record of `calls` and `frames` says.
struct Listing<'a> {
    view: &'static str,
    calls: Option<u64>,
    frames: u64,
    capture: &'a pipeline::CaptureStats,
    tcp: h2ledger_run::TcpReport,
    warnings: &'a [String],
}

/// After `calls` or `frames`: the summary record (JSON shapes), warnings on stderr, and exit
/// status 1 when the input ended early.
fn listing_done(
    out: &mut h2ledger_output::lines::Out,
    s: Listing<'_>,
    outcome: source::Outcome,
) -> Result<ExitCode> {
    let (view, warnings) = (s.view, s.warnings);
    let error = outcome.error.as_ref().map(|e| format!("{e:#}"));
    out.summary(&h2ledger_output::lines::Summary {
        calls: s.calls,
        capture: s.capture,
        error: error.clone(),
        frames: Some(s.frames),
        record: "summary",
        tcp: s.tcp,
        kind: "summary",
        view,
        warnings,
    });
    if out.broken {
        // The reader went away (`| head`): quietly done.
        return Ok(ExitCode::SUCCESS);
    }
    h2ledger_output::warn::write(&mut std::io::stderr(), warnings, style());
    let code = match error {
        Some(e) => {
            eprintln!("warning: {e}; the {view} listed are those before that point");
            ExitCode::from(1)
        }
        None => ExitCode::SUCCESS,
    };
    outcome.saved()?;
    Ok(code)
}

fn frames_cmd(a: FramesArgs) -> Result<ExitCode> {
    let mut filter = a.filter.clone();
    let input = a.capture.input(a.file.as_deref(), &mut filter, None)?;
    let bpf = source::bpf(&filter);
    let ff = h2ledger_output::lines::FrameFilter {
        conns: a.conns,
        streams: a.streams,
        types: a.types,
        side: a.side.map(|s| match s {
            SideArg::Client => Side::Client,
            SideArg::Server => Side::Server,
        }),
    };
    let mut printer = h2ledger_output::lines::FramePrinter::new(
        h2ledger_output::lines::Out::new(report_out(), a.format.shape(), "frames"),
        ff,
        report_is_terminal(),
    );
    printer.max = a.max_frames;
    let p = Pipeline::with_max_connections(printer, filter.max_connections)
        .with_keys(source::keys(&input, &filter)?);
    struct Frames {
        p: Pipeline<h2ledger_output::lines::FramePrinter>,
        ticks: h2ledger_output::lines::Ticks,
    }
    impl source::Hooks for Frames {
        fn packet(&mut self, linktype: i32, ts: h2ledger_tcp::Nanos, data: &[u8]) -> bool {
            self.p.ledger.observer.set_origin(ts);
            self.ticks.packet();
            self.p.packet(linktype, ts, data);
            let o = &self.p.ledger.observer;
            progress::frames(o.out.records);
            !o.out.broken && !o.full()
        }
        fn idle(&mut self) {
            self.p.ledger.observer.out.flush();
        }
        fn tick(&mut self, at: h2ledger_tcp::Nanos, drops: Option<&mut h2ledger_run::Drops>) {
            let o = &mut self.p.ledger.observer;
            let printed = o.out.records;
            self.ticks
                .tick(&mut o.out, at, printed, 0, drops.map(|d| *d));
        }
    }
    let mut h = Frames {
        p,
        ticks: h2ledger_output::lines::Ticks::new(a.every),
    };
    let outcome = source::run(&input, &a.capture, bpf.as_deref(), a.every, &mut h)?;
    h.p.finish();
    let printed = h.p.ledger.observer.out.records;
    let (stats, tcp) = (h.p.stats.clone(), (&h.p.reasm.stats()).into());
    let warnings = &h.p.ledger.warnings.messages;
    let s = Listing {
        view: "frames",
        calls: None,
        frames: printed,
        capture: &stats,
        tcp,
        warnings,
    };
    listing_done(&mut h.p.ledger.observer.out, s, outcome)
}

/// The ledger report of a pipeline (from `tally`), with its warnings.
pub fn ledger_report<O: h2ledger_core::Observer>(p: &Pipeline<O>, tally: &Tally) -> LedgerReport {
    p.ledger_report(tally)
}

/// Says why a ledger is empty.
pub fn note_empty<O>(report: &mut LedgerReport, p: &Pipeline<O>, filter: Option<&str>) {
    p.note_empty(report, filter)
}

/// Prints a run's report (and its phases, built one at a time by `phases`) in the chosen format.
pub fn print_full(
    format: Format,
    source: &str,
    whole: &Report,
    phases: &mut dyn Iterator<Item = Report>,
) {
    h2ledger_output::write_report(
        &mut report_out(),
        &mut std::io::stderr(),
        output_format(format),
        source,
        whole,
        phases,
        style(),
    );
}

#[cfg(test)]
mod tests {
    /// clap's own checks of the whole command line (two flags on one letter, a default that is
    /// not a possible value, ...), which otherwise only a debug build's first run would hit.
    #[test]
    fn command_line_is_consistent() {
        use clap::CommandFactory as _;
        super::Cli::command().debug_assert();
    }
}
