//! h2ledger-workload [--listen ADDR | --connect ADDR] --phase name:callers:rate:seconds ...
//! [--no-adaptive-window | --static-window] [--stream-window BYTES] [--wait]
//!
//! * neither flag: server + client in one process on 127.0.0.1:0; prints
//!   `{"impl":"tonic","version":V,"port":P}` on its own line as soon as the server listens
//!   (with `--wait`, then waits for a line on standard input: the demo's protocol, see
//!   README.md), then the per-phase JSON result line.
//! * `--listen ADDR`: server only (ADDR may use port 0); prints `{"port":P}` and serves
//!   until SIGINT/SIGTERM.
//! * `--connect ADDR`: client only; prints the result JSON.

use std::net::SocketAddr;
use std::process::ExitCode;

use h2ledger_workload::{
    json_str, run_phases, serve, Options, Phase, PhaseResult, STATIC_WINDOW, TONIC_VERSION,
};

const USAGE: &str = "usage: h2ledger-workload [--listen ADDR | --connect ADDR] \
--phase name:callers:rate:seconds ... [--no-adaptive-window | --static-window] [--stream-window BYTES] \
[--wait] [--service NAME]";

enum Mode {
    Both,
    Listen(SocketAddr),
    Connect(SocketAddr),
}

fn parse_args() -> Result<(Mode, Vec<Phase>, Options, bool), String> {
    let mut mode = Mode::Both;
    let mut wait = false;
    let mut phases = Vec::new();
    let mut opts = Options::default();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--listen" => {
                mode = Mode::Listen(
                    val("--listen")?
                        .parse()
                        .map_err(|e| format!("--listen: {e}"))?,
                )
            }
            "--connect" => {
                mode = Mode::Connect(
                    val("--connect")?
                        .parse()
                        .map_err(|e| format!("--connect: {e}"))?,
                )
            }
            "--phase" => phases.push(Phase::parse(&val("--phase")?)?),
            "--service" => opts.service = val("--service")?,
            "--no-adaptive-window" => opts.adaptive_window = false,
            "--adaptive-window" => opts.adaptive_window = true,
            "--static-window" => {
                opts.adaptive_window = false;
                opts.static_window = Some(STATIC_WINDOW);
            }
            "--wait" => wait = true,
            "--stream-window" => {
                opts.stream_window = Some(
                    val("--stream-window")?
                        .parse()
                        .map_err(|e| format!("--stream-window: {e}"))?,
                )
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if phases.is_empty() && !matches!(mode, Mode::Listen(_)) {
        phases.push(Phase::new("single", 1, 24.0, 4.0));
        phases.push(Phase::new("fanout", 8, 3.0, 4.0));
    }
    Ok((mode, phases, opts, wait))
}

fn hello(port: u16) {
    println!(
        "{{\"impl\":\"tonic\",\"version\":{},\"port\":{port}}}",
        json_str(TONIC_VERSION)
    );
}

fn results_json(port: u16, adaptive: bool, results: &[PhaseResult]) -> String {
    let phases: Vec<String> = results.iter().map(|r| r.to_json()).collect();
    let total: u64 = results.iter().map(|r| r.calls_made).sum();
    let total_ok: u64 = results.iter().map(|r| r.calls_ok).sum();
    format!(
        "{{\"program\":{},\"port\":{port},\"adaptive_window\":{adaptive},\"calls_made\":{total},\"calls_ok\":{total_ok},\"phases\":[{}]}}",
        json_str("h2ledger-workload"),
        phases.join(",")
    )
}

async fn wait_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

#[tokio::main]
async fn main() -> ExitCode {
    let (mode, phases, opts, wait) = match parse_args() {
        Ok(x) => x,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("h2ledger-workload: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match mode {
        Mode::Both => {
            let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("h2ledger-workload: bind: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let server = serve(listener, &opts).await;
            let addr = server.local_addr;
            hello(addr.port());
            if wait {
                let mut line = String::new();
                if std::io::stdin().read_line(&mut line).unwrap_or(0) == 0 {
                    let _ = server.shutdown().await;
                    return ExitCode::FAILURE;
                }
            }
            let results = run_phases(addr, &phases, &opts).await;
            if let Err(e) = server.shutdown().await {
                eprintln!("h2ledger-workload: {e}");
            }
            println!(
                "{}",
                results_json(addr.port(), opts.adaptive_window, &results)
            );
            ok_code(&results)
        }
        Mode::Listen(addr) => {
            let listener = match tokio::net::TcpListener::bind(addr).await {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("h2ledger-workload: bind {addr}: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let server = serve(listener, &opts).await;
            hello(server.local_addr.port());
            wait_signal().await;
            match server.shutdown().await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("h2ledger-workload: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Mode::Connect(addr) => {
            let results = run_phases(addr, &phases, &opts).await;
            println!(
                "{}",
                results_json(addr.port(), opts.adaptive_window, &results)
            );
            ok_code(&results)
        }
    }
}

fn ok_code(results: &[PhaseResult]) -> ExitCode {
    if results
        .iter()
        .all(|r| r.calls_made > 0 && r.calls_ok == r.calls_made)
    {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
