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

use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use h2ledger_run::{Options, Session, Wanted};
use h2ledger_tcp::{LinkType, Nanos};
use serde::Deserialize;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use crate::cli::{DemoArgs, Format, ImplArg};
use crate::source::live::{Live, LiveOptions, Pkt, DEFAULT_BUFFER_KIB, DEFAULT_SNAPLEN};
use crate::Ctx;
use h2ledger_output::demo::PhaseResult;
use h2ledger_run::workloads::{locate, search_dirs, PhaseSpec, Stack};
use h2ledger_run::Report;

/// Packets kept for the tally at the end (about 200 bytes each on loopback: 200 MB at most).
pub const MAX_PACKETS: usize = 1_000_000;

#[derive(Deserialize)]
struct Hello {
    #[serde(rename = "impl")]
    _impl: String,
    version: String,
    port: u16,
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

/// The stacks `--impl` names, each once, in the order first named (grpc-go without one).
fn stacks(impls: &[ImplArg]) -> Vec<Stack> {
    let mut out: Vec<Stack> = Vec::new();
    for i in impls {
        let named: &[Stack] = match i {
            ImplArg::GrpcGo => &[Stack::GrpcGo],
            ImplArg::Grpcio => &[Stack::Grpcio],
            ImplArg::Tonic => &[Stack::Tonic],
            ImplArg::All => &[Stack::GrpcGo, Stack::Grpcio, Stack::Tonic],
        };
        for s in named {
            if !out.contains(s) {
                out.push(*s);
            }
        }
    }
    if out.is_empty() {
        out.push(Stack::GrpcGo);
    }
    out
}

pub fn demo(a: DemoArgs, ctx: Ctx) -> Result<ExitCode> {
    a.format.refuse_prometheus("demo")?;
    // An unknown --severity id or level fails before anything starts.
    a.findings.config()?;
    if !(a.seconds > 0.0 && a.seconds.is_finite() && a.seconds <= 3600.0) {
        return Err(anyhow!("--seconds must be a number in (0, 3600]"));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    rt.block_on(demo_async(a, ctx))
}

/// Starts one workload program and reads its hello line.
async fn start(
    stack: Stack,
    prog: PathBuf,
    phases: &[PhaseSpec],
    sw: bool,
    tls: bool,
) -> Result<Running> {
    let mut cmd = Command::from(stack.command(&prog, phases, sw, tls));
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

async fn demo_async(a: DemoArgs, ctx: Ctx) -> Result<ExitCode> {
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
    if let Some(s) = chosen.iter().find(|s| a.tls && **s == Stack::Tonic) {
        bail!(
            "demo --tls runs grpc-go and grpcio only: their secrets are taken by a uprobe (Go's \
             crypto/tls, OpenSSL or BoringSSL), and {} is on rustls, which has no such function",
            s.name()
        );
    }
    let progs = chosen
        .iter()
        .map(|&s| locate(s, &dirs).map(|p| (s, p)))
        .collect::<Result<Vec<_>, String>>()
        .map_err(|e| anyhow!(e))?;
    // Start them all before the capture opens: afterwards we may no longer be root.
    let mut running = Vec::new();
    for (s, p) in progs {
        running.push(start(s, p, &specs, a.static_window, a.tls).await?);
    }
    // --tls: the secrets of each program, taken from its first handshake on (it dials only
    // once told to go); attached while we may still be root.
    let keys = if a.tls {
        let pids: Vec<u32> = running.iter().filter_map(|r| r.child.id()).collect();
        let feed = crate::source::keys::attach_all(&pids, &[], None)
            .map_err(|e| anyhow!("demo --tls: {e:#}"))?;
        Some(std::rc::Rc::new(std::cell::RefCell::new(
            crate::source::keys::Tap::single(feed),
        )))
    } else {
        None
    };
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
        keys: keys.clone(),
        netns: None,
    })?;
    let linktype = LinkType(live.linktype);
    if table {
        eprintln!(
            "h2ledger demo: {} s per phase, windows {}{}{}",
            a.seconds,
            if a.static_window {
                "static (--static-window: no BDP estimator)"
            } else {
                "as each stack sets them (BDP estimator on)"
            },
            keys.as_ref()
                .map(|k| format!("; over TLS, secrets from {}", k.borrow().describe()))
                .unwrap_or_default(),
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
    live.drain(
        Duration::from_millis(300),
        crate::source::now_nanos(),
        |p| store(&mut packets, p),
    )
    .await;
    let drops = live.drops();
    let saved = live.finish_write();
    drop(live);
    // Every secret the programs logged, for the tally (which reads the packets afterwards).
    let keylog = match &keys {
        Some(k) => {
            let mut k = k.borrow_mut();
            let (warnings, _) = k.finish();
            for w in warnings {
                eprintln!("h2ledger: warning: {w}");
            }
            k.take_for_session()
        }
        None => None,
    };

    let findings_cfg = a.findings.config()?;
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
    let done: Vec<Done> = runs
        .into_iter()
        .map(|r| tally(r, linktype, keylog.as_deref(), findings_cfg))
        .collect();
    let programs: Vec<String> = done
        .iter()
        .map(|d| d.program.display().to_string())
        .collect();
    let stacks: Vec<h2ledger_output::demo::Stack<'_>> = done
        .iter()
        .zip(&programs)
        .map(|(d, program)| h2ledger_output::demo::Stack {
            name: d.stack.name(),
            version: &d.version,
            program,
            port: d.port,
            bdp_known: d.stack != Stack::Grpcio,
            results: &d.results,
            phases: &d.phases,
            whole: &d.whole,
            capture: d.whole.capture.as_ref().expect("a whole capture's report"),
            tcp: d.whole.tcp.unwrap_or_default(),
        })
        .collect();
    let format = a.format.output();
    h2ledger_output::demo::write_demo(
        &mut std::io::stdout().lock(),
        &mut std::io::stderr(),
        format,
        &stacks,
        a.static_window,
        drops,
        capped,
        MAX_PACKETS,
        ctx.style,
    )?;
    saved?;
    let worst = done.iter().filter_map(|d| d.whole.worst()).max();
    Ok(if a.findings.fails(worst) {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    })
}

/// One stack's run, tallied.
struct Done {
    stack: Stack,
    program: PathBuf,
    version: String,
    port: u16,
    results: Vec<PhaseResult>,
    whole: Report,
    /// One per workload phase (empty ledgers when the capture saw nothing).
    phases: Vec<Report>,
}

/// One stack's packets through a session cut at its phase starts; `keylog`: the TLS secrets
/// of `--tls`, all known before the first packet is read.
fn tally(
    r: Run,
    linktype: LinkType,
    keylog: Option<&str>,
    findings: h2ledger_core::findings::FindingsConfig,
) -> Done {
    let wanted = Wanted {
        analysis: true,
        findings: Some(findings),
        ..Wanted::default()
    };
    let opts = Options {
        tls: h2ledger_tls::Tls::new(
            h2ledger_tls::Config::default(),
            h2ledger_tls::KeyLog::parse(keylog.unwrap_or_default()),
        ),
        ..Options::default()
    };
    let starts: Vec<Nanos> = r.results.iter().map(|p| p.start_ns).collect();
    let packets = r.packets.iter().map(|p| (p.ts, &p.data[..]));
    let (whole, mut phases) = Session::cut_at(wanted, opts, &starts, linktype, packets);
    for (f, res) in phases.iter_mut().zip(&r.results) {
        f.name = res.name.clone();
    }
    Done {
        stack: r.stack,
        program: r.program,
        version: r.version,
        port: r.port,
        results: r.results,
        whole,
        phases,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impl_all_expands_once() {
        assert_eq!(stacks(&[]), vec![Stack::GrpcGo]);
        assert_eq!(
            stacks(&[ImplArg::Tonic, ImplArg::All]),
            vec![Stack::Tonic, Stack::GrpcGo, Stack::Grpcio]
        );
    }
}
