//! The demo's workload programs (`h2ledger demo`): which stacks, where their programs are, and
//! their command lines. Each stack is a separate program (the sniffer carries no gRPC stack):
//! grpc-go (`h2ledger-grpcgo`, built from crates/h2ledger-workload/grpcgo), grpcio
//! (`h2ledger-grpcio.py` under /usr/bin/python3) and tonic (`h2ledger-workload`); they speak
//! the protocol of crates/h2ledger-workload/README.md.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Environment variable naming the directory of the workload programs (as `--workloads`).
pub const WORKLOADS_ENV: &str = "H2LEDGER_WORKLOADS";

/// A gRPC stack of the demo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stack {
    /// grpc-go.
    GrpcGo,
    /// grpcio (Python).
    Grpcio,
    /// tonic (Rust).
    Tonic,
}

impl Stack {
    /// Its name in the demo's output.
    pub fn name(self) -> &'static str {
        match self {
            Stack::GrpcGo => "grpc-go",
            Stack::Grpcio => "grpcio",
            Stack::Tonic => "tonic",
        }
    }

    /// Its program's file name.
    pub fn file(self) -> &'static str {
        match self {
            Stack::GrpcGo => "h2ledger-grpcgo",
            Stack::Grpcio => "h2ledger-grpcio.py",
            Stack::Tonic => "h2ledger-workload",
        }
    }

    /// How to get the program when it is missing.
    pub fn remedy(self) -> &'static str {
        match self {
            Stack::GrpcGo => "`just demo` builds it (scripts/build-grpcgo-demo.sh DIR)",
            Stack::Grpcio => {
                "`just demo` copies it there (crates/h2ledger-workload/grpcio/h2ledger-grpcio.py)"
            }
            Stack::Tonic => "`just demo` builds it (cargo build --release -p h2ledger-workload)",
        }
    }

    /// The program's command line for `phases`.
    pub fn command(
        self,
        prog: &Path,
        phases: &[PhaseSpec],
        static_window: bool,
        tls: bool,
    ) -> Command {
        let mut c = match self {
            Stack::Grpcio => {
                let mut c = Command::new(grpcio_python(tls));
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
        if tls {
            c.arg(format!("{dashes}tls"));
        }
        c
    }
}

/// Debian's python3-grpcio imports only under this interpreter.
const PYTHON: &str = "/usr/bin/python3";

/// The venv scripts/grpcio-wheel.sh makes: PyPI's grpcio wheel, BoringSSL inside.
const WHEEL_PYTHON: &str = "/opt/h2l-grpcio-venv/bin/python";

/// The interpreter of the grpcio workload: with `--tls`, PyPI's wheel (BoringSSL, the stack
/// issue 37 asks the demo for) when `H2LEDGER_GRPCIO_PYTHON` or scripts/grpcio-wheel.sh's
/// venv gives one; otherwise Debian's python3-grpcio.
fn grpcio_python(tls: bool) -> PathBuf {
    if tls {
        if let Some(p) = std::env::var_os("H2LEDGER_GRPCIO_PYTHON") {
            return PathBuf::from(p);
        }
        if Path::new(WHEEL_PYTHON).exists() {
            return PathBuf::from(WHEEL_PYTHON);
        }
    }
    PathBuf::from(PYTHON)
}

/// One phase the workload runs: its name, callers, calls per second per caller, seconds.
pub struct PhaseSpec {
    /// The phase's name.
    pub name: String,
    /// Concurrent callers.
    pub callers: usize,
    /// Calls per second of each caller.
    pub rate: f64,
    /// How long it lasts.
    pub seconds: f64,
}

/// The workloads' directories, in search order.
pub fn search_dirs(flag: Option<&Path>) -> Vec<PathBuf> {
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

/// The program of `stack` in the first of `dirs` that has it; the error is one line that says
/// where it looked and how to get it.
pub fn locate(stack: Stack, dirs: &[PathBuf]) -> Result<PathBuf, String> {
    if let Some(p) = dirs
        .iter()
        .map(|d| d.join(stack.file()))
        .find(|p| p.is_file())
    {
        return Ok(p);
    }
    let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    Err(format!(
        "the {} workload {} is not in {} (--workloads DIR or ${WORKLOADS_ENV} names another \
         directory); {}",
        stack.name(),
        stack.file(),
        looked.join(" nor "),
        stack.remedy()
    ))
}
