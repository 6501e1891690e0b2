//! h2ledger-workload [--listen ADDR | --connect ADDR] --phase name:callers:rate:seconds ...
//! [--no-adaptive-window | --static-window] [--stream-window BYTES] [--wait] [--calls N]
//! [--tls [--tls-cert PEM [--tls-key PEM]]]
//!
//! * neither flag: server + client in one process on 127.0.0.1:0; prints
//!   `{"impl":"tonic","version":V,"port":P}` on its own line as soon as the server listens
//!   (with `--wait`, then waits for a line on standard input: the demo's protocol, see
//!   README.md), then the per-phase JSON result line.
//! * `--listen ADDR`: server only (ADDR may use port 0); prints `{"port":P}` and serves
//!   until SIGINT/SIGTERM.
//! * `--connect ADDR`: client only; prints the result JSON.
//!
//! `--calls N` ends each phase after N calls (or its seconds). `--tls`: TLS 1.3 (rustls) with
//! ALPN h2 instead of h2c; the client writes its key log to `$SSLKEYLOGFILE` (rustls'
//! `KeyLogFile`). The certificate (for `localhost`): `--tls-cert`/`--tls-key` (PEM files; the
//! client needs only the certificate), else, in the one-process mode, a fresh self-signed one.

use std::net::SocketAddr;
use std::process::ExitCode;

use h2ledger_workload::{
    json_str, run_phases, serve, Options, Phase, PhaseResult, Tls, STATIC_WINDOW, TONIC_VERSION,
};

const USAGE: &str = "usage: h2ledger-workload [--listen ADDR | --connect ADDR] \
--phase name:callers:rate:seconds ... [--no-adaptive-window | --static-window] [--stream-window BYTES] \
[--wait] [--service NAME] [--calls N] [--tls [--tls-cert PEM] [--tls-key PEM]]";

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
    let (mut tls, mut cert, mut key) = (false, None, None);
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
            "--tls" => tls = true,
            "--tls-cert" => cert = Some(val("--tls-cert")?),
            "--tls-key" => key = Some(val("--tls-key")?),
            "--calls" => {
                opts.max_calls = Some(
                    val("--calls")?
                        .parse()
                        .map_err(|e| format!("--calls: {e}"))?,
                )
            }
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
    if !tls && (cert.is_some() || key.is_some()) {
        return Err("--tls-cert and --tls-key need --tls".into());
    }
    if tls {
        opts.tls = Some(tls_setup(&mode, cert, key)?);
    }
    if phases.is_empty() && !matches!(mode, Mode::Listen(_)) {
        phases.push(Phase::new("single", 1, 24.0, 4.0));
        phases.push(Phase::new("fanout", 8, 3.0, 4.0));
    }
    Ok((mode, phases, opts, wait))
}

fn tls_setup(mode: &Mode, cert: Option<String>, key: Option<String>) -> Result<Tls, String> {
    let read = |f: &str| std::fs::read_to_string(f).map_err(|e| format!("{f}: {e}"));
    match (mode, cert, key) {
        (Mode::Both, None, None) => Tls::self_signed(),
        (Mode::Connect(_), Some(c), None) => Tls::from_pem(read(&c)?, String::new()),
        (Mode::Connect(_), _, _) => {
            Err("--connect --tls needs --tls-cert PEM (the server's)".into())
        }
        (_, Some(c), Some(k)) => Tls::from_pem(read(&c)?, read(&k)?),
        _ => {
            Err("--tls: give both --tls-cert and --tls-key (with --listen they are needed)".into())
        }
    }
}

fn hello(port: u16) {
    println!(
        "{{\"impl\":\"tonic\",\"version\":{},\"port\":{port}}}",
        json_str(TONIC_VERSION)
    );
}

fn results_json(port: u16, opts: &Options, results: &[PhaseResult]) -> String {
    let phases: Vec<String> = results.iter().map(|r| r.to_json()).collect();
    let total: u64 = results.iter().map(|r| r.calls_made).sum();
    let total_ok: u64 = results.iter().map(|r| r.calls_ok).sum();
    format!(
        "{{\"program\":{},\"port\":{port},\"adaptive_window\":{},\"tls\":{},\"calls_made\":{total},\"calls_ok\":{total_ok},\"phases\":[{}]}}",
        json_str("h2ledger-workload"),
        opts.adaptive_window,
        opts.tls.is_some(),
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
            println!("{}", results_json(addr.port(), &opts, &results));
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
            println!("{}", results_json(addr.port(), &opts, &results));
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
