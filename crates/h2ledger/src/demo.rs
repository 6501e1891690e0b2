//! `h2ledger demo`: the article's experiment with real gRPC stacks, sniffed live.
//!
//! Each stack is a separate program (the sniffer carries no gRPC stack): grpc-go
//! (`h2ledger-grpcgo`, built from crates/h2ledger-workload/grpcgo), grpcio
//! (`h2ledger-grpcio.py` under /usr/bin/python3) and tonic (`h2ledger-workload`). They speak one
//! protocol (crates/h2ledger-workload/README.md): listen on 127.0.0.1:0 and print
//! `{"impl","version","port"}`, wait for a line on stdin, make the calls over one connection,
//! print `{"phases":[...]}` with the calls made and each phase's start, exit.
//!
//! The programs are started first (as the invoking user), then the capture opens on their
//! ports (and gives root up), then each stack runs in turn. Packets are kept in memory (a 10 s
//! phase is a few thousand; capped at [`MAX_PACKETS`], reported when hit) and each stack's
//! ledger is cut into phases at the phase starts the program reported (docs/decisions.md 7).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, ValueEnum};
use h2ledger_core::analysis::{Cut, Splitter};
use h2ledger_core::{AnalysisReport, FrameClass, Side};
use h2ledger_tcp::Nanos;
use serde::Deserialize;
use serde_json::{json, Value};
use tabled::builder::Builder;
use tabled::settings::object::{Cell, Columns};
use tabled::settings::{Alignment, Span};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use crate::live::{Live, LiveOptions, Pkt, DEFAULT_BUFFER_KIB, DEFAULT_SNAPLEN};
use crate::phases::{Obs, Wanted};
use crate::pipeline::Pipeline;
use crate::{render, Format};
use h2ledger_run::{Report, TcpReport};

/// Packets kept for the tally at the end (about 200 bytes each on loopback: 200 MB at most).
pub const MAX_PACKETS: usize = 1_000_000;

/// The finding stays on one line up to this width (the issue's own example is 106 columns;
/// the tables below it fit 100), else it takes one line per phase.
const FINDING_WIDTH: usize = 110;

/// Environment variable naming the directory of the workload programs (as `--workloads`).
pub const WORKLOADS_ENV: &str = "H2LEDGER_WORKLOADS";

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
    /// Directory of the workload programs (h2ledger-grpcgo, h2ledger-grpcio.py,
    /// h2ledger-workload); default: $H2LEDGER_WORKLOADS, then the h2ledger binary's directory
    #[arg(long, value_name = "DIR")]
    pub workloads: Option<PathBuf>,
    /// Also save the demo's packets to FILE (pcap), to replay later
    #[arg(short = 'w', long, value_name = "FILE")]
    pub write: Option<PathBuf>,
    #[command(flatten)]
    pub user: crate::live::UserArg,
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stack {
    GrpcGo,
    Grpcio,
    Tonic,
}

impl Stack {
    fn name(self) -> &'static str {
        match self {
            Stack::GrpcGo => "grpc-go",
            Stack::Grpcio => "grpcio",
            Stack::Tonic => "tonic",
        }
    }

    fn file(self) -> &'static str {
        match self {
            Stack::GrpcGo => "h2ledger-grpcgo",
            Stack::Grpcio => "h2ledger-grpcio.py",
            Stack::Tonic => "h2ledger-workload",
        }
    }

    /// How to get the program when it is missing.
    fn remedy(self) -> &'static str {
        match self {
            Stack::GrpcGo => "`just demo` builds it (scripts/build-grpcgo-demo.sh DIR)",
            Stack::Grpcio => {
                "`just demo` copies it there (crates/h2ledger-workload/grpcio/h2ledger-grpcio.py)"
            }
            Stack::Tonic => "`just demo` builds it (cargo build --release -p h2ledger-workload)",
        }
    }

    /// The program's command line for `phases`.
    fn command(self, prog: &Path, phases: &[PhaseSpec], static_window: bool) -> Command {
        let mut c = match self {
            Stack::Grpcio => {
                let mut c = Command::new(PYTHON);
                c.arg(prog);
                c
            }
            _ => Command::new(prog),
        };
        let dashes = if self == Stack::GrpcGo { "-" } else { "--" };
        for p in phases {
            c.arg(format!("{dashes}phase"))
                .arg(format!("{}:{}:{}:{}", p.name, p.callers, p.rate, p.seconds));
        }
        if static_window {
            c.arg(format!("{dashes}static-window"));
        }
        if self == Stack::Tonic {
            c.arg("--wait");
        }
        c
    }
}

/// Debian's python3-grpcio imports only under this interpreter.
const PYTHON: &str = "/usr/bin/python3";

struct PhaseSpec {
    name: String,
    callers: usize,
    rate: f64,
    seconds: f64,
}

#[derive(Deserialize)]
struct Hello {
    #[serde(rename = "impl")]
    _impl: String,
    version: String,
    port: u16,
}

#[derive(Deserialize, Clone)]
struct PhaseResult {
    name: String,
    callers: u64,
    rate_per_caller: f64,
    calls_made: u64,
    calls_ok: u64,
    start_ns: Nanos,
    end_ns: Nanos,
}

#[derive(Deserialize)]
struct Results {
    phases: Vec<PhaseResult>,
}

/// One started workload program.
struct Running {
    stack: Stack,
    program: PathBuf,
    version: String,
    port: u16,
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

/// The workloads' directories, in search order.
fn search_dirs(flag: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(d) = flag {
        dirs.push(d.to_path_buf());
    } else if let Some(d) = std::env::var_os(WORKLOADS_ENV).filter(|d| !d.is_empty()) {
        dirs.push(PathBuf::from(d));
    }
    if let Some(d) = std::env::current_exe()
        .ok()
        .and_then(|e| e.canonicalize().ok())
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        dirs.push(d);
    }
    dirs
}

fn locate(stack: Stack, dirs: &[PathBuf]) -> Result<PathBuf> {
    if let Some(p) = dirs
        .iter()
        .map(|d| d.join(stack.file()))
        .find(|p| p.is_file())
    {
        return Ok(p);
    }
    let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    bail!(
        "the {} workload {} is not in {} (--workloads DIR or ${WORKLOADS_ENV} names another \
         directory); {}",
        stack.name(),
        stack.file(),
        looked.join(" nor "),
        stack.remedy()
    )
}

fn stacks(impls: &[ImplArg]) -> Vec<Stack> {
    let mut out = Vec::new();
    let all = [Stack::GrpcGo, Stack::Grpcio, Stack::Tonic];
    let chosen: Vec<Stack> = if impls.is_empty() {
        vec![Stack::GrpcGo]
    } else {
        impls
            .iter()
            .flat_map(|i| match i {
                ImplArg::GrpcGo => vec![Stack::GrpcGo],
                ImplArg::Grpcio => vec![Stack::Grpcio],
                ImplArg::Tonic => vec![Stack::Tonic],
                ImplArg::All => all.to_vec(),
            })
            .collect()
    };
    for s in chosen {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

pub fn demo(a: DemoArgs) -> Result<ExitCode> {
    if !(a.seconds > 0.0 && a.seconds.is_finite() && a.seconds <= 3600.0) {
        return Err(anyhow!("--seconds must be a number in (0, 3600]"));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    rt.block_on(demo_async(a))
}

/// Starts one workload program and reads its hello line.
async fn start(stack: Stack, prog: PathBuf, phases: &[PhaseSpec], sw: bool) -> Result<Running> {
    let mut cmd = stack.command(&prog, phases, sw);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {}", prog.display()))?;
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .map_err(|_| anyhow!("{}: no port reported within 60 s", prog.display()))?
        .with_context(|| format!("{}: reading its output", prog.display()))?
        .ok_or_else(|| anyhow!("{}: exited before reporting its port", prog.display()))?;
    let hello: Hello = serde_json::from_str(&line).map_err(|e| {
        anyhow!(
            "{}: expected {{\"impl\",\"version\",\"port\"}}, got {line:?}: {e}",
            prog.display()
        )
    })?;
    Ok(Running {
        stack,
        program: prog,
        version: hello.version,
        port: hello.port,
        child,
        lines,
    })
}

/// What one stack's run left: its packets and what the program reported.
struct Run {
    stack: Stack,
    program: PathBuf,
    version: String,
    port: u16,
    results: Vec<PhaseResult>,
    packets: Vec<Pkt>,
}

async fn demo_async(a: DemoArgs) -> Result<ExitCode> {
    let table = a.format == Format::Table;
    let specs = [
        PhaseSpec {
            name: "1 caller x 24/s".into(),
            callers: 1,
            rate: 24.0,
            seconds: a.seconds,
        },
        PhaseSpec {
            name: "8 callers x 3/s".into(),
            callers: 8,
            rate: 3.0,
            seconds: a.seconds,
        },
    ];
    let dirs = search_dirs(a.workloads.as_deref());
    let chosen = stacks(&a.impls);
    let progs = chosen
        .iter()
        .map(|&s| locate(s, &dirs).map(|p| (s, p)))
        .collect::<Result<Vec<_>>>()?;
    // Start them all before the capture opens: afterwards we may no longer be root.
    let mut running = Vec::new();
    for (s, p) in progs {
        running.push(start(s, p, &specs, a.static_window).await?);
    }
    let filter = running
        .iter()
        .map(|r| format!("tcp port {}", r.port))
        .collect::<Vec<_>>()
        .join(" or ");
    let mut live = Live::open(&LiveOptions {
        device: "lo".into(),
        filter: Some(filter),
        snaplen: DEFAULT_SNAPLEN,
        buffer_kib: DEFAULT_BUFFER_KIB,
        write: a.write.clone(),
        user: Some(a.user.user.clone()),
    })?;
    let linktype = live.linktype;
    if table {
        eprintln!(
            "h2ledger demo: {} s per phase, windows {}{}",
            a.seconds,
            if a.static_window {
                "static (--static-window: no BDP estimator)"
            } else {
                "as each stack sets them (BDP estimator on)"
            },
            live.dropped_to
                .as_deref()
                .map(|u| format!("; capturing on lo as {u}"))
                .unwrap_or_default()
        );
    }
    let budget = Duration::from_secs_f64(2.0 * a.seconds * specs.len() as f64 + 30.0);
    let mut capped = 0u64;
    let mut store = |packets: &mut Vec<Pkt>, p: Pkt| {
        if packets.len() < MAX_PACKETS {
            packets.push(p);
        } else {
            capped += 1;
        }
    };
    let mut runs: Vec<Run> = Vec::new();
    let mut packets: Vec<Pkt> = Vec::new();
    for mut r in running {
        if table {
            eprintln!(
                "h2ledger demo: {} {} on 127.0.0.1:{} ({}): {}",
                r.stack.name(),
                r.version,
                r.port,
                r.program.display(),
                specs
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", then ")
            );
        }
        let mut stdin = r.child.stdin.take().expect("piped stdin");
        stdin.write_all(b"go\n").await?;
        stdin.flush().await?;
        let deadline = tokio::time::sleep(budget);
        tokio::pin!(deadline);
        let line = loop {
            tokio::select! {
                l = r.lines.next_line() => break l?,
                p = live.next() => match p {
                    Some(Ok(p)) => store(&mut packets, p),
                    Some(Err(e)) => return Err(e),
                    None => bail!("the capture on lo ended early"),
                },
                _ = &mut deadline => bail!(
                    "the {} workload did not finish within {} s",
                    r.stack.name(),
                    budget.as_secs()
                ),
            }
        };
        let line = line.ok_or_else(|| {
            anyhow!(
                "the {} workload ({}) exited without its results",
                r.stack.name(),
                r.program.display()
            )
        })?;
        let res: Results = serde_json::from_str(&line).map_err(|e| {
            anyhow!(
                "the {} workload printed {line:?}, not its results: {e}",
                r.stack.name()
            )
        })?;
        let status = loop {
            tokio::select! {
                s = r.child.wait() => break s?,
                p = live.next() => match p {
                    Some(Ok(p)) => store(&mut packets, p),
                    Some(Err(e)) => return Err(e),
                    None => bail!("the capture on lo ended early"),
                },
            }
        };
        if !status.success() {
            eprintln!(
                "warning: the {} workload exited with {status} (some calls failed)",
                r.stack.name()
            );
        }
        runs.push(Run {
            stack: r.stack,
            program: r.program,
            version: r.version,
            port: r.port,
            results: res.phases,
            packets: Vec::new(),
        });
    }
    // Frames still in flight (the last ACKs) arrive within the delivery timeout.
    live.drain(Duration::from_millis(300), |p| store(&mut packets, p))
        .await;
    let drops = live.drops();
    drop(live);

    // Each packet to the stack whose port it carries (undecodable ones to the first stack,
    // whose ledger counts and reports them).
    for p in packets {
        let port = h2ledger_tcp::link::decode(linktype, &p.data)
            .ok()
            .flatten()
            .map(|s| (s.src.port(), s.dst.port()));
        let i = port
            .and_then(|(s, d)| runs.iter().position(|r| r.port == s || r.port == d))
            .unwrap_or(0);
        if let Some(r) = runs.get_mut(i) {
            r.packets.push(p);
        }
    }
    let done: Vec<Done> = runs.into_iter().map(|r| tally(r, linktype)).collect();
    let mut limits = serde_json::Map::new();
    if capped > 0 {
        limits.insert("demo_packets".into(), json!(capped));
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match a.format {
        Format::Json | Format::Jsonl => {
            let workloads: Vec<Value> = done.iter().map(|d| d.json(a.static_window)).collect();
            let first = done.first();
            let v = json!({
                "server": first.map(|d| format!("127.0.0.1:{}", d.port)),
                "adaptive_window": !a.static_window,
                "static_window": a.static_window,
                "phases": first.map(|d| d.phases_json()).unwrap_or_default(),
                "workloads": workloads,
                "capture": first.map(|d| &d.pipeline.stats),
                "tcp": first.map(|d| TcpReport::from(&d.pipeline.reasm.stats())),
                "drops": drops,
                "limits": limits,
            });
            if a.format == Format::Jsonl {
                writeln!(out, "{}", crate::render::record_line(v, "summary"))?;
            } else {
                writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
            }
        }
        Format::Table => {
            for (i, d) in done.iter().enumerate() {
                if i > 0 {
                    writeln!(out)?;
                }
                writeln!(out, "{}", d.finding())?;
                writeln!(out, "{}", d.table(a.static_window))?;
                writeln!(
                    out,
                    "{}",
                    render::footer(&d.pipeline.stats, &(&d.pipeline.reasm.stats()).into(), None)
                )?;
            }
            writeln!(
                out,
                "capture on lo: dropped by the kernel: {}, by the interface: {}",
                drops.kernel, drops.interface
            )?;
            out.flush()?;
            for d in &done {
                for w in &d.whole.ledger.warnings {
                    eprintln!("warning: {}: {w}", d.stack.name());
                }
            }
            if capped > 0 {
                eprintln!(
                    "warning: {capped} packets past the demo's cap of {MAX_PACKETS} were not tallied (shorten --seconds)"
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One stack's run, tallied.
struct Done {
    stack: Stack,
    program: PathBuf,
    version: String,
    port: u16,
    results: Vec<PhaseResult>,
    pipeline: Pipeline<Obs>,
    whole: Report,
    /// One per workload phase (empty ledgers when the capture saw nothing).
    phases: Vec<Report>,
}

fn tally(r: Run, linktype: i32) -> Done {
    // Phase i runs from its start (the first from the capture's start) to the next one's.
    let cuts = r
        .results
        .iter()
        .skip(1)
        .map(|p| Cut::At(p.start_ns))
        .collect();
    let wanted = Wanted {
        analysis: true,
        splitter: Some(Splitter::at(cuts)),
        timeline: None,
    };
    let mut p = Pipeline::new(Obs::new(&wanted));
    for pkt in &r.packets {
        p.ledger.observer.set_origin(pkt.ts);
        p.packet(linktype, pkt.ts, &pkt.data);
    }
    p.finish();
    let report = crate::ledger_report(&p, &p.ledger.observer.tally);
    let (whole, phases) = crate::phases::build(&mut p, report);
    let mut phases: Vec<Report> = phases.reports(&p.ledger.observer).collect();
    phases.resize_with(r.results.len(), Report::default);
    for (f, res) in phases.iter_mut().zip(&r.results) {
        f.name = res.name.clone();
    }
    Done {
        stack: r.stack,
        program: r.program,
        version: r.version,
        port: r.port,
        results: r.results,
        pipeline: p,
        whole,
        phases,
    }
}

/// Per-phase numbers the finding line and the test read.
struct Finding {
    /// BDP PINGs (a payload the PING table marks as a BDP probe) per call, mean of both sides.
    bdp_per_call: Option<f64>,
    /// All PINGs (not ACKs) per call, mean of both sides.
    pings_per_call: Option<f64>,
    /// Labels of the PINGs seen.
    labels: Vec<&'static str>,
}

fn finding_of(f: &Report) -> Finding {
    let l = &f.ledger;
    let calls = l.calls as f64;
    let bdp = f.analysis.as_ref().map_or(0, |a| {
        a.sides.client.rounds.rounds + a.sides.server.rounds.rounds
    });
    let pings =
        l.sides.client.frames.get(FrameClass::Ping) + l.sides.server.frames.get(FrameClass::Ping);
    let mut labels: Vec<&'static str> = [&l.sides.client, &l.sides.server]
        .iter()
        .flat_map(|s| s.ping_labels.keys().copied())
        .collect();
    labels.sort_unstable();
    labels.dedup();
    let per = |n: u64| (l.calls > 0).then(|| n as f64 / 2.0 / calls);
    Finding {
        bdp_per_call: per(bdp),
        pings_per_call: per(pings),
        labels,
    }
}

fn f2(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.2}"))
}

impl Done {
    /// `grpc-go, 1 caller x 24/s: 1.00 BDP ping per call per side; 8 callers x 3/s: 0.13 (...)`
    fn finding(&self) -> String {
        let mut parts = Vec::new();
        for (i, (f, res)) in self.phases.iter().zip(&self.results).enumerate() {
            let x = finding_of(f);
            // grpc-go and hyper probe with a fixed payload the PING table knows; C-core's
            // PINGs carry a counter, so for grpcio the line counts every PING, by label.
            let bdp_known = self.stack != Stack::Grpcio;
            let mut s = format!("{}: ", res.name);
            if bdp_known {
                s.push_str(&f2(x.bdp_per_call));
                if i == 0 {
                    s.push_str(" BDP ping per call per side");
                }
            } else {
                s.push_str(&format!(
                    "{} PING per call per side (payload {}: not a known BDP probe)",
                    f2(x.pings_per_call),
                    x.labels.join("/")
                ));
            }
            if res.callers > 1 && bdp_known && f.ledger.calls > 0 {
                // Rounds per side per wave of `callers` calls.
                let per_wave = x.bdp_per_call.unwrap_or(0.0) * res.callers as f64;
                let what = if (per_wave - 1.0).abs() < 0.25 {
                    "one round".to_string()
                } else {
                    format!("{per_wave:.1} rounds")
                };
                s.push_str(&format!(" ({what} per wave of {})", res.callers));
            }
            parts.push(s);
        }
        let line = format!("{}, {}", self.stack.name(), parts.join("; "));
        if line.chars().count() <= FINDING_WIDTH {
            return line;
        }
        // One line per phase when the phases do not fit one line.
        format!("{}:\n  {}", self.stack.name(), parts.join("\n  "))
    }

    fn phases_json(&self) -> Vec<Value> {
        self.phases
            .iter()
            .zip(&self.results)
            .map(|(f, res)| {
                let x = finding_of(f);
                json!({
                    "name": res.name,
                    "callers": res.callers,
                    "rate_per_caller": res.rate_per_caller,
                    "calls_made": res.calls_made,
                    "calls_ok": res.calls_ok,
                    "start": res.start_ns as f64 / 1e9,
                    "end": res.end_ns as f64 / 1e9,
                    "bdp_pings_per_call_per_side": x.bdp_per_call,
                    "pings_per_call_per_side": x.pings_per_call,
                    "ledger": render::json_value(f),
                })
            })
            .collect()
    }

    fn json(&self, static_window: bool) -> Value {
        json!({
            "impl": self.stack.name(),
            "version": self.version,
            "program": self.program.display().to_string(),
            "server": format!("127.0.0.1:{}", self.port),
            "static_window": static_window,
            "finding": self.finding(),
            "phases": self.phases_json(),
            "capture": self.pipeline.stats,
            "tcp": TcpReport::from(&self.pipeline.reasm.stats()),
        })
    }

    /// Both phases side by side, client and server columns; fits 100 columns.
    fn table(&self, static_window: bool) -> String {
        let mut b = Builder::default();
        let title = format!(
            "{} {}{}",
            self.stack.name(),
            self.version,
            if static_window { ", static window" } else { "" }
        );
        let mut h1 = vec![title];
        let mut h2 = vec![String::new()];
        for f in &self.phases {
            h1.push(f.name.clone());
            h1.push(String::new());
            h2.push("client".into());
            h2.push("server".into());
        }
        b.push_record(h1);
        b.push_record(h2);
        type SideCell<'a> = &'a dyn Fn(&Report, Option<&AnalysisReport>, Side) -> String;
        let side_row = |b: &mut Builder, label: &str, f: SideCell<'_>| {
            let mut r = vec![label.to_string()];
            for p in &self.phases {
                for s in Side::ALL {
                    r.push(f(p, p.analysis.as_ref(), s));
                }
            }
            b.push_record(r);
        };
        // A value for the whole phase, in the client column (the server's is spanned over).
        let phase_row = |b: &mut Builder, label: &str, f: &dyn Fn(usize, &Report) -> String| {
            let mut r = vec![label.to_string()];
            for (i, p) in self.phases.iter().enumerate() {
                r.push(f(i, p));
                r.push(String::new());
            }
            b.push_record(r);
        };
        phase_row(&mut b, "calls made (workload)", &|i, _| {
            self.results[i].calls_made.to_string()
        });
        phase_row(&mut b, "calls on the wire", &|_, p| {
            p.ledger.calls.to_string()
        });
        for c in [
            FrameClass::Headers,
            FrameClass::Trailers,
            FrameClass::Data,
            FrameClass::WindowUpdate,
            FrameClass::Ping,
        ] {
            side_row(&mut b, c.name(), &|p, _, s| {
                p.ledger.sides.get(s).frames.get(c).to_string()
            });
        }
        let mut labels: Vec<&'static str> = self
            .phases
            .iter()
            .flat_map(|p| [&p.ledger.sides.client, &p.ledger.sides.server])
            .flat_map(|t| t.ping_labels.keys().copied())
            .collect();
        labels.sort_unstable();
        labels.dedup();
        for l in labels {
            side_row(&mut b, &format!("  of which {l}"), &|p, _, s| {
                let n = p.ledger.sides.get(s).ping_labels.get(l).copied();
                n.unwrap_or(0).to_string()
            });
        }
        side_row(&mut b, "PING_ACK", &|p, _, s| {
            p.ledger
                .sides
                .get(s)
                .frames
                .get(FrameClass::PingAck)
                .to_string()
        });
        side_row(&mut b, "writes", &|p, _, s| {
            p.ledger.sides.get(s).writes.to_string()
        });
        side_row(&mut b, "writes per call", &|p, _, s| {
            per(p.ledger.sides.get(s).writes, p.ledger.calls)
        });
        side_row(&mut b, "calls per write (max)", &|_, a, s| {
            a.map_or("-".into(), |a| {
                calls_per_write(&a.sides.get(s).writes_by_calls.0)
            })
        });
        side_row(&mut b, "BDP rounds", &|_, a, s| {
            a.map_or("-".into(), |a| a.sides.get(s).rounds.rounds.to_string())
        });
        side_row(&mut b, "calls per round", &|_, a, s| {
            a.map_or("-".into(), |a| f2(a.sides.get(s).rounds.calls_per_round))
        });
        let us = |v: Option<f64>| v.map_or("-".into(), |x| format!("{x:.0}"));
        phase_row(&mut b, "PING rtt p50 / p99 (us)", &|_, p| {
            p.analysis.as_ref().map_or("-".into(), |a| {
                let r = &a.latency_us.ping_rtt;
                format!("{} / {}", us(r.p50), us(r.p99))
            })
        });
        phase_row(&mut b, "call p50 / p99 (us)", &|_, p| {
            p.analysis.as_ref().map_or("-".into(), |a| {
                let r = &a.latency_us.call;
                format!("{} / {}", us(r.p50), us(r.p99))
            })
        });
        let rows = b.count_records();
        let spanned = [0usize, 2, 3, rows - 2, rows - 1];
        let mut t = b.build();
        crate::render::styled(&mut t);
        t.modify(Columns::new(1..), Alignment::right());
        for i in 0..self.phases.len() {
            let col = 1 + 2 * i;
            for &row in &spanned {
                t.modify(Cell::new(row, col), Span::column(2));
            }
        }
        t.modify(Cell::new(0, 1), Alignment::center());
        if self.phases.len() > 1 {
            t.modify(Cell::new(0, 3), Alignment::center());
        }
        t.to_string()
    }
}

fn per(n: u64, calls: u64) -> String {
    if calls == 0 {
        "-".to_string()
    } else {
        format!("{:.2}", n as f64 / calls as f64)
    }
}

/// Mean calls per write over the writes that carried at least one call, and the most calls
/// one write carried: `4.60 (8)`.
fn calls_per_write(hist: &[u64]) -> String {
    let (mut writes, mut calls, mut max) = (0u64, 0u64, 0usize);
    for (k, &n) in hist.iter().enumerate().skip(1) {
        writes += n;
        calls += k as u64 * n;
        if n > 0 {
            max = k;
        }
    }
    if writes == 0 {
        return "-".into();
    }
    format!("{:.2} ({max})", calls as f64 / writes as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_per_write_skips_control_only_writes() {
        assert_eq!(calls_per_write(&[10, 6, 0, 3, 16]), "3.16 (4)");
        assert_eq!(calls_per_write(&[5]), "-");
    }

    #[test]
    fn impl_all_expands_once() {
        assert_eq!(stacks(&[]), vec![Stack::GrpcGo]);
        assert_eq!(
            stacks(&[ImplArg::Tonic, ImplArg::All]),
            vec![Stack::Tonic, Stack::GrpcGo, Stack::Grpcio]
        );
    }
}
