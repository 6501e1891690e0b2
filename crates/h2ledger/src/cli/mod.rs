//! The command line: every flag of every command (clap), parsed into one [`Cli`], and the
//! parsers of the values they take (durations, times, counts).

mod analysis;
pub use h2ledger_run::time::durations;
mod findings;
mod merge;
pub mod messages;
mod tcpdump;
pub use h2ledger_run::time::cuts as times;

pub use tcpdump::{explain, tcpdump_style, TimeFormatArg};

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use analysis::AnalysisArgs;
pub use findings::FindingsArgs;
pub use merge::{JobsArgs, MergeArgs, SplitArgs};

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
pub struct Cli {
    /// List the capture devices, numbered, with their flags and addresses (like tcpdump -D)
    #[arg(short = 'D', long)]
    pub list_interfaces: bool,
    /// Quiet: one line per kind of warning and one line per finding, cut to 100 columns, and
    /// no progress display on stderr while a capture file is read
    #[arg(short = 'q', long, global = true)]
    pub quiet: bool,
    /// Verbose: every warning on its own lines (by default, one per kind with a count and the
    /// first example; the JSON always holds every one), and every finding (by default the
    /// first 10) with when it was first and last seen
    #[arg(short = 'v', long, global = true, conflicts_with = "quiet")]
    pub verbose: bool,
    /// Plain ASCII tables (the default when the locale is not UTF-8)
    #[arg(long, global = true)]
    pub ascii: bool,
    #[command(subcommand)]
    pub cmd: Option<Cmd>,
}

#[derive(Subcommand)]
pub enum Cmd {
    /// Read a saved capture and print the per-side HTTP/2 frame ledger
    Replay(ReplayArgs),
    /// Capture live (loopback by default) and print the ledger on Ctrl-C, SIGTERM, --duration or --count
    Sniff(SniffArgs),
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
    Demo(DemoArgs),
    /// Two captures' ledgers side by side with the difference per row (B - A, per side):
    /// what changed on the wire between two runs
    Compare(CompareArgs),
    /// Cut a capture into N captures by TCP connection, in one pass: both directions of every
    /// connection in the same shard, the format kept (pcap stays pcap, pcapng keeps its
    /// interfaces and secrets blocks in every shard)
    ///
    /// Writes DIR/NAME.K.pcap (or .pcapng) for K = 0 .. N-1, NAME the input's file name
    /// without .gz, .zst, .pcap, .pcapng or .cap (`stdin` for `-`), K padded to the width of
    /// N-1. Packets that are not TCP over IP go to shard 0 and are counted. Replaying each shard
    /// gives reports whose connections, calls and frames add up to the whole capture's.
    Split(SplitArgs),
    /// The report of the union of captures whose TCP connections are disjoint, from their
    /// reports (`replay -T json`); docs/scale.md says what merges exactly
    Merge(MergeArgs),
    /// What a finding id means: its rule, the source the rule comes from, and the advice
    /// (without an id: every id, its severity and what it names)
    Explain(ExplainArgs),
    /// Print a shell completion script (bash, zsh, fish) on stdout
    ///
    /// `h2ledger completions bash > ~/.local/share/bash-completion/completions/h2ledger`;
    /// `just install` puts all three in place.
    Completions(CompletionsArgs),
    /// Print the manual page (roff) on stdout: `h2ledger man | man -l -`
    ///
    /// h2ledger(1), or h2ledger-SUBCOMMAND(1) for one subcommand; `--dir DIR` writes them all
    /// (`just install` puts them in man1).
    Man(ManArgs),
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
    /// replay, sniff: the metrics of `sniff --metrics` once, in the Prometheus text format
    /// (for node_exporter's textfile collector); implies --analyze
    Prometheus,
}

impl Format {
    /// The output library's format.
    pub fn output(self) -> h2ledger_output::Format {
        match self {
            Format::Table => h2ledger_output::Format::Table,
            Format::Json => h2ledger_output::Format::Json,
            Format::Jsonl => h2ledger_output::Format::Jsonl,
            // Printed by the ledger commands themselves; the others refuse it.
            Format::Prometheus => h2ledger_output::Format::Table,
        }
    }

    /// The printer of a report in this format (phases in columns), in `style`.
    pub fn printer(self, style: h2ledger_output::Style) -> h2ledger_output::Printer {
        h2ledger_output::Printer::new(self.output(), style)
    }

    /// `-T prometheus` is for `replay` and `sniff` only.
    pub fn refuse_prometheus(self, command: &str) -> anyhow::Result<()> {
        if self == Format::Prometheus {
            anyhow::bail!("-T prometheus applies to replay and sniff, not to {command}");
        }
        Ok(())
    }
}

/// `--metrics-max-paths N`: 1 to the number of paths the analysis names.
fn max_paths(s: &str) -> Result<usize, String> {
    let max = h2ledger_output::metrics::MAX_PATHS;
    match s.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!("\"{s}\": give a number of paths from 1 to {max}")),
    }
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
    /// Comma-separated values: a header line, then a line per record; the columns are the JSON
    /// keys (a nested one as `writes.client`), RFC 4180 quoting; the summary and warnings go
    /// to stderr
    Csv,
    /// Apache Parquet (zstd) into the file of -w (not standard output): the columns of the
    /// JSON lines, a nested object as a group, a list as its JSON text; the summary in the
    /// file's metadata (docs/schema/parquet.md)
    Parquet,
}

impl LineFormat {
    /// The output library's shape of the line views.
    pub fn shape(self) -> h2ledger_output::lines::Shape {
        match self {
            LineFormat::Table => h2ledger_output::lines::Shape::Table,
            LineFormat::Json => h2ledger_output::lines::Shape::Document,
            LineFormat::Jsonl => h2ledger_output::lines::Shape::Lines,
            LineFormat::Csv => h2ledger_output::lines::Shape::Csv,
            LineFormat::Parquet => h2ledger_output::lines::Shape::Columns,
        }
    }
}

/// `-Y EXPR`: tshark's display filter, over the view's fields (docs/filter.md).
const DISPLAY_FILTER_HELP: &str = "Print only the records that pass this display filter, \
with tshark's shape over the fields of the JSON lines: `grpc.status != 0`, `call.duration > \
10ms`, `path contains \"Health\"`, `http2.type == 3` (frames), `conn in {0 1} and not reset`. \
Operators == != < <= > >= contains matches (a regex, case-insensitive as in tshark) in {...}, \
and or not && || !, parentheses; a field alone means present and not zero or empty; a \
comparison with a field the record lacks (null) is false. Fields: the JSON keys (nested as \
writes.client) and tshark's names where they mean the same (http2.streamid, http2.type, \
http2.flags.end_stream, ...); docs/filter.md lists them";

/// Parses `-Y` for `view`: the error names the column, under the expression, as tshark does.
pub fn display_filter(
    expr: Option<&str>,
    view: h2ledger_filter::View,
) -> anyhow::Result<Option<h2ledger_filter::Filter>> {
    let Some(e) = expr else {
        return Ok(None);
    };
    let f = h2ledger_filter::Filter::parse(e, view)
        .map_err(|err| anyhow::anyhow!("-Y: {}", err.render(e)))?;
    for n in f.notes() {
        eprintln!("h2ledger: -Y: note: {n}");
    }
    Ok(Some(f))
}

#[derive(Args, Clone)]
pub struct FilterArgs {
    /// Only TCP port N (repeatable); HTTP/2 is detected on any port without it
    #[arg(long = "port", value_name = "N")]
    pub ports: Vec<u16>,
    /// Decrypt HTTP/2 over TLS with this key log (SSLKEYLOGFILE format, or Wireshark's
    /// `RSA Session-ID:... Master-Key:...` for TLS 1.2); keys embedded in a pcapng capture
    /// (Decryption Secrets Blocks) are used without it, for the packets after them
    #[arg(long, value_name = "FILE")]
    pub keylog: Option<PathBuf>,
    /// A tcpdump-style BPF capture filter, like tshark -f: `-f "host 127.0.0.1 and tcp port 50051"`
    #[arg(short = 'f', long = "filter", value_name = "EXPR")]
    pub filter: Option<String>,
    /// The filter as trailing words, like tcpdump (`... tcp port 50051`); options may follow
    /// them, and words after `--` are always filter words
    #[arg(value_name = "EXPRESSION")]
    pub expression: Vec<String>,
    /// Connections tracked at once (a few KiB each); beyond, the least recently active one is
    /// closed as evicted and counted (tcp.evicted, a warning)
    #[arg(long, value_name = "N", default_value_t = h2ledger_run::DEFAULT_MAX_CONNECTIONS,
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

    /// The BPF program of `--port`, `-f` and the expression words.
    pub fn bpf(&self) -> Option<String> {
        let ports = self
            .ports
            .iter()
            .map(|p| format!("tcp port {p}"))
            .collect::<Vec<_>>()
            .join(" or ");
        let expr = self.words().join(" ");
        match (ports.is_empty(), expr.trim().is_empty()) {
            (true, true) => None,
            (false, true) => Some(ports),
            (true, false) => Some(expr),
            (false, false) => Some(format!("({ports}) and ({expr})")),
        }
    }
}

#[derive(Args)]
pub struct ReplayArgs {
    /// The capture file (.pcap or .pcapng); `-` reads standard input. More files may follow
    /// (each word that names an existing file, up to the first that does not): one report of
    /// them all, up to -j files read at once
    #[arg(value_name = "FILE", required_unless_present = "read")]
    pub file: Option<String>,
    /// Read this saved capture (like tcpdump -r); the same as giving FILE, and then the words
    /// that follow are all filter words
    #[arg(short = 'r', long = "read", value_name = "FILE")]
    pub read: Option<String>,
    /// Output format: tables (warnings on stderr), one JSON document (warnings inside), or JSON
    /// lines: a `phase` record per phase, then the `summary`
    #[arg(short = 'T', long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    #[command(flatten)]
    pub findings: FindingsArgs,
    /// Cut the capture into phases of this length from the first packet (30s, 500ms);
    /// implies --analyze
    #[arg(long, value_name = "D", value_parser = durations::parse_period, conflicts_with = "split_at")]
    pub every: Option<Duration>,
    /// Read only the first N packets (after the filter), like tcpdump -r FILE -c N
    #[arg(short = 'c', long = "count", value_name = "N", value_parser = count)]
    pub count: Option<u64>,
    /// Read only this much capture time from the first packet (30s, 1m30s, 250ms)
    #[arg(long, value_parser = durations::parse_period, value_name = "D")]
    pub duration: Option<Duration>,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// With -T prometheus: distinct :path labels; calls of later paths are labelled
    /// path="other" (counted in h2ledger_limits_hit_total{limit="metrics_paths"})
    #[arg(long, value_name = "N", default_value_t = h2ledger_output::metrics::DEFAULT_MAX_PATHS, value_parser = max_paths)]
    pub metrics_max_paths: usize,
    #[command(flatten)]
    pub jobs: JobsArgs,
}

/// The capture flags every capturing command takes.
#[derive(Args, Clone, Debug)]
pub struct CaptureArgs {
    /// Read this saved capture (like tcpdump -r); the same as giving FILE
    #[arg(
        short = 'r',
        long = "read",
        value_name = "FILE",
        conflicts_with = "interface"
    )]
    pub read: Option<String>,
    /// Capture live on DEV (`lo` for loopback, `any` for all; `h2ledger -D` lists them)
    #[arg(short = 'i', long = "interface", value_name = "DEV")]
    pub interface: Option<String>,
    /// Stop after N packets (read or captured, after the filter), like tcpdump -c
    #[arg(short = 'c', long = "count", value_name = "N", value_parser = count)]
    pub count: Option<u64>,
    /// Stop after this long (30s, 1m30s, 250ms): wall-clock time live, capture time from the
    /// first packet when reading a file
    #[arg(long, value_parser = durations::parse_period, value_name = "D")]
    pub duration: Option<Duration>,
    /// Live: also save the packets to FILE, like tcpdump -w (with `calls`/`frames -T parquet`:
    /// the Parquet file instead, live or not): pcap with nanosecond timestamps,
    /// or pcapng when FILE ends in .pcapng or --keys-from is given (then the secrets are saved
    /// in it, before the packets they decrypt, for `replay` and Wireshark); `-w -` writes them
    /// to standard output and the report to standard error
    #[arg(short = 'w', long, value_name = "FILE")]
    pub write: Option<PathBuf>,
    /// Live: kernel capture buffer in KiB, like tcpdump -B [default: 32768; 131072 for
    /// full-speed loopback bursts]
    #[arg(short = 'B', long = "buffer-size", value_name = "KiB", value_parser = clap::value_parser!(i32).range(1..=4_194_304))]
    pub buffer_kib: Option<i32>,
    /// Live: snap length, bytes kept of each packet, like tcpdump -s [default: 262144]
    #[arg(short = 's', long = "snapshot-length", visible_alias = "snaplen", value_name = "BYTES", value_parser = clap::value_parser!(i32).range(64..=262_144))]
    pub snaplen: Option<i32>,
    /// Live: do not put the interface into promiscuous mode (tcpdump -p). h2ledger never
    /// does: it reads the host's own traffic, loopback above all; accepted for tcpdump habits
    #[arg(short = 'p', long = "no-promiscuous-mode")]
    pub no_promiscuous: bool,
    /// Live: decrypt HTTP/2 over TLS with secrets taken from the running program PID
    /// (repeatable), by a uprobe attached before the capture opens: Go's
    /// crypto/tls.(*Config).writeKeyLog, or the ssl_log_secret of every OpenSSL (1.1.1, 3.x)
    /// or BoringSSL copy it maps (shared libssl, static, stripped; amd64); the program needs no
    /// key log. Needs root or CAP_SYS_ADMIN (and CAP_SYS_PTRACE for another user's process);
    /// connections whose handshake came before are named in a warning
    #[arg(long = "keys-from", value_name = "PID", value_parser = pid)]
    pub keys_from: Vec<u32>,
    /// Live: as --keys-from, for every process that maps FILE, now or started later
    /// (repeatable): a libssl.so, an executable or shared object with OpenSSL or BoringSSL
    /// inside, or a Go executable
    #[arg(long = "keys-from-lib", value_name = "FILE")]
    pub keys_from_lib: Vec<PathBuf>,
    /// Live: capture in another network namespace (a container's): a process id (its
    /// /proc/PID/ns/net), a name from `ip netns list`, or a path; entered before the device
    /// opens, then privileges are dropped as usual. Needs root or CAP_SYS_ADMIN
    #[arg(long = "netns", value_name = "PID|NAME|PATH")]
    pub netns: Option<String>,
    /// Live: append the secrets taken with --keys-from or --keys-from-lib to FILE
    /// (SSLKEYLOGFILE format, created with mode 0600)
    #[arg(long = "keys-out", value_name = "FILE")]
    pub keys_out: Option<PathBuf>,
    #[command(flatten)]
    pub user: UserArg,
}

/// `--keys-from PID`: a process id.
fn pid(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "\"{s}\": give the id of a running process (a number)"
        )),
    }
}

impl CaptureArgs {
    /// The flags of a saved capture read with tcpdump's `-c` and `--duration` only (`replay`,
    /// `compare`).
    pub fn file_only(count: Option<u64>, duration: Option<Duration>) -> CaptureArgs {
        CaptureArgs {
            read: None,
            interface: None,
            count,
            duration,
            write: None,
            buffer_kib: None,
            snaplen: None,
            no_promiscuous: false,
            keys_from: Vec::new(),
            keys_from_lib: Vec::new(),
            netns: None,
            keys_out: None,
            user: UserArg {
                user: "nobody".into(),
            },
        }
    }
}

/// `-Z USER`, shared by the commands that capture live.
#[derive(Args, Clone, Debug)]
pub struct UserArg {
    /// When started as root, switch to this user once the capture is open (tcpdump -Z);
    /// `-Z root` keeps root
    #[arg(
        short = 'Z',
        long = "user",
        default_value = "nobody",
        value_name = "USER"
    )]
    pub user: String,
}

/// `-c N`: a number of packets, 1 or more.
pub fn count(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("\"{s}\": give a number of packets, 1 or more")),
    }
}

#[derive(Args)]
pub struct SniffArgs {
    #[command(flatten)]
    pub capture: CaptureArgs,
    /// Stop after N HTTP/2 frames (`-c` counts packets, like tcpdump)
    #[arg(long, value_name = "N")]
    pub max_frames: Option<u64>,
    /// Reprint the running ledger every D, the last D beside the total (redrawn in place on a
    /// terminal, appended otherwise; with --format jsonl one `tick` record per line); the final
    /// ledger is then cut into phases of D, like `replay --every`
    #[arg(long, value_parser = durations::parse_period, value_name = "D", conflicts_with = "split_at")]
    pub every: Option<Duration>,
    /// Output format
    #[arg(short = 'T', long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    #[command(flatten)]
    pub findings: FindingsArgs,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Serve Prometheus metrics on ADDR:PORT (GET /metrics) while the capture runs, bound
    /// before privileges are dropped (127.0.0.1:9464; port 0 picks one, said on stderr);
    /// implies --analyze. docs/ledger.md, "Metrics", lists them
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<String>,
    /// Distinct :path labels in the metrics; calls of later paths are labelled path="other"
    /// (counted in h2ledger_limits_hit_total{limit="metrics_paths"})
    #[arg(long, value_name = "N", default_value_t = h2ledger_output::metrics::DEFAULT_MAX_PATHS, value_parser = max_paths)]
    pub metrics_max_paths: usize,
    /// Capture handles in one Linux PACKET_FANOUT_HASH group, each read by its own thread
    /// (both directions of a connection in one), reports merged, --metrics and the --every view
    /// summed over them, phases cut from one origin; -w out.pcap writes out.0.pcap,
    /// out.1.pcap, ...; --keys-from gives every worker every secret; --plot draws them all
    /// in one; -T prometheus prints their metrics summed; -T jsonl their finding lines, at the end
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub workers: u32,
}

#[derive(Args)]
pub struct CallsArgs {
    /// The capture file (.pcap, .pcapng, also gzip- or zstd-compressed); `-` reads standard
    /// input. With -i, this word is the first word of the filter
    #[arg(value_name = "FILE")]
    pub file: Option<String>,
    #[command(flatten)]
    pub capture: CaptureArgs,
    /// Print a `tick` line (packets, frames and calls of the last D) every D: wall-clock time
    /// live, capture time on a file
    #[arg(long, value_parser = durations::parse_period, value_name = "D")]
    pub every: Option<Duration>,
    /// A table, one JSON document, one JSON object per call (then a summary line), CSV, or
    /// Parquet into the file of -w
    #[arg(short = 'T', long, value_enum, default_value_t = LineFormat::Table)]
    pub format: LineFormat,
    #[arg(short = 'Y', long = "display-filter", value_name = "EXPR", long_help = DISPLAY_FILTER_HELP,
          help = "Only the calls that pass this display filter (tshark's -Y): grpc.status != 0, call.duration > 10ms, path contains \"Health\"")]
    pub display_filter: Option<String>,
    /// The table with every column (about 200 characters wide): calls in flight, flow-control
    /// stalls, gRPC messages, server time and PING round trip
    #[arg(long)]
    pub wide: bool,
    #[command(flatten)]
    pub messages: messages::MessageArgs,
    #[command(flatten)]
    pub filter: FilterArgs,
}

#[derive(Args)]
pub struct FramesArgs {
    /// The capture file (.pcap, .pcapng, also gzip- or zstd-compressed); `-` reads standard
    /// input. With -i, this word is the first word of the filter
    #[arg(value_name = "FILE")]
    pub file: Option<String>,
    #[command(flatten)]
    pub capture: CaptureArgs,
    /// Stop after N frames printed (`-c` counts packets, like tcpdump)
    #[arg(long, value_name = "N")]
    pub max_frames: Option<u64>,
    /// Print a `tick` line (packets and frames of the last D) every D: wall-clock time live,
    /// capture time on a file
    #[arg(long, value_parser = durations::parse_period, value_name = "D")]
    pub every: Option<Duration>,
    /// One line per frame, one JSON document, one JSON object per frame (then a summary), CSV,
    /// or Parquet into the file of -w
    #[arg(short = 'T', long, value_enum, default_value_t = LineFormat::Table)]
    pub format: LineFormat,
    #[arg(short = 'Y', long = "display-filter", value_name = "EXPR", long_help = DISPLAY_FILTER_HELP,
          help = "Only the frames that pass this display filter (tshark's -Y): http2.type == 3, http2.flags.end_stream, stream == 1")]
    pub display_filter: Option<String>,
    /// Only connection N (repeatable; numbered from 0 in order of appearance)
    #[arg(long = "conn", value_name = "N")]
    pub conns: Vec<u32>,
    /// Only stream N (repeatable)
    #[arg(long = "stream", value_name = "N")]
    pub streams: Vec<u32>,
    /// Only frames of this wire type (HEADERS, DATA, PING, ...) or ledger class (TRAILERS,
    /// PING_ACK, SETTINGS_ACK); repeatable, case-insensitive
    #[arg(long = "type", value_name = "TYPE", value_parser = frame_type)]
    pub types: Vec<String>,
    /// Only frames sent by this side
    #[arg(long, value_enum)]
    pub side: Option<SideArg>,
    /// How times are printed, with tshark's -t letters: r (seconds since the first packet),
    /// a / ad (local time of day / date and time), u / ud (the same in UTC), e (epoch
    /// seconds), d / dd (since the previous frame / previous frame printed)
    #[arg(
        short = 't',
        long = "time-format",
        value_enum,
        value_name = "FORMAT",
        default_value = "r"
    )]
    pub time_format: TimeFormatArg,
    /// With --messages, each message's table line whole (otherwise cut to 100 columns)
    #[arg(long)]
    pub wide: bool,
    #[command(flatten)]
    pub messages: messages::MessageArgs,
    #[command(flatten)]
    pub filter: FilterArgs,
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
pub enum SideArg {
    Client,
    Server,
}

#[derive(Args)]
pub struct CompareArgs {
    /// The capture before (A): pcap or pcapng, also gzip- or zstd-compressed
    #[arg(value_name = "A")]
    pub a: String,
    /// The capture after (B)
    #[arg(value_name = "B")]
    pub b: String,
    /// A table (A, B and B - A per side), or `{"a": ledger, "b": ledger}`
    #[arg(short = 'T', long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    #[command(flatten)]
    pub filter: FilterArgs,
}

#[derive(Args)]
pub struct DemoArgs {
    /// Seconds per phase
    #[arg(long, default_value_t = 10.0, value_name = "S")]
    pub seconds: f64,
    /// The gRPC stack(s) to run, one after the other (repeatable; default grpc-go)
    #[arg(long = "impl", value_enum, value_name = "IMPL")]
    pub impls: Vec<ImplArg>,
    /// Fixed flow-control windows on both ends, which turns the BDP estimator off (grpc-go:
    /// WithInitialWindowSize/WithInitialConnWindowSize and the server's InitialWindowSize/
    /// InitialConnWindowSize; grpcio: grpc.http2.bdp_probe=0; tonic: no adaptive window)
    #[arg(long, alias = "no-bdp")]
    pub static_window: bool,
    /// Serve and call over TLS (grpc-go and grpcio; grpcio from PyPI's wheel, BoringSSL, when
    /// scripts/grpcio-wheel.sh made its venv): the workload makes a self-signed certificate
    /// and writes no key log; the demo takes its secrets with a uprobe, as `sniff --keys-from
    /// PID` does (root or CAP_SYS_ADMIN), and decrypts
    #[arg(long)]
    pub tls: bool,
    /// Directory of the workload programs (h2ledger-grpcgo, h2ledger-grpcio.py,
    /// h2ledger-workload); default: $H2LEDGER_WORKLOADS, then the h2ledger binary's directory
    #[arg(long, value_name = "DIR")]
    pub workloads: Option<PathBuf>,
    /// Also save the demo's packets to FILE (pcap), to replay later
    #[arg(short = 'w', long, value_name = "FILE")]
    pub write: Option<PathBuf>,
    #[command(flatten)]
    pub user: UserArg,
    #[command(flatten)]
    pub findings: FindingsArgs,
    /// Output format (`-T`, like every other view; `-f` still works here)
    #[arg(short = 'T', long, short_alias = 'f', value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ImplArg {
    /// grpc-go (Debian's golang-google-grpc-dev), the article's stack
    #[value(name = "grpc-go")]
    GrpcGo,
    /// python3-grpcio (gRPC C-core)
    Grpcio,
    /// tonic (hyper + h2)
    Tonic,
    /// all three
    All,
}

#[derive(Args)]
pub struct ExplainArgs {
    /// The finding id (bdp-ping-per-call, stream-slots-full, ...); without it, every id
    #[arg(value_name = "ID")]
    pub id: Option<String>,
}

#[derive(Args)]
pub struct CompletionsArgs {
    /// The shell to complete for (bash, zsh, fish; also elvish, powershell)
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Args)]
pub struct ManArgs {
    /// Print this subcommand's page (h2ledger-SUBCOMMAND(1)) instead of h2ledger(1)
    #[arg(value_name = "SUBCOMMAND")]
    pub page: Option<String>,
    /// Write every page into DIR (h2ledger.1, h2ledger-replay.1, ...) and list them on stderr
    #[arg(long, value_name = "DIR", conflicts_with = "page")]
    pub dir: Option<PathBuf>,
}

impl Cli {
    /// Whether the reports go to stderr: the packets take stdout (`-w -`).
    pub fn packets_on_stdout(&self) -> bool {
        let dash = |p: &Option<PathBuf>| p.as_deref() == Some(std::path::Path::new("-"));
        match &self.cmd {
            Some(Cmd::Sniff(a)) => dash(&a.capture.write),
            Some(Cmd::Calls(a)) => dash(&a.capture.write),
            Some(Cmd::Frames(a)) => dash(&a.capture.write),
            _ => false,
        }
    }

    /// Whether the command prints records while it reads (then a progress display on the
    /// same terminal would be drawn over them).
    pub fn streams(&self) -> bool {
        match &self.cmd {
            Some(Cmd::Calls(_) | Cmd::Frames(_)) => true,
            Some(Cmd::Sniff(a)) => a.every.is_some(),
            _ => false,
        }
    }
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
