//! h2ledger: what your RPCs really cost on the wire. See README.md and docs/.
//!
//! The binary is the command line ([`cli`]), the capture sources ([`source`]: files through
//! libpcap, live devices through tokio, keys) and one file per command ([`cmd`]); the run is
//! `h2ledger_run::Session`, and everything printed comes from `h2ledger_output`.

mod cli;
mod cmd;
mod source;

use std::io::IsTerminal as _;
use std::process::ExitCode;

use anyhow::Result;
use clap::{CommandFactory as _, Parser as _};
use h2ledger_output::Style;

use crate::cli::{Cli, Cmd};

/// What every command is given besides its flags: how text looks, where the report goes, and
/// whether a progress display may be drawn while a file is read.
#[derive(Clone, Copy)]
pub struct Ctx {
    /// `--ascii`, the locale, `-q`.
    pub style: Style,
    /// The packets take stdout (`-w -`): reports go to stderr.
    pub to_stderr: bool,
    /// A progress display may be drawn on stderr.
    pub progress: bool,
}

impl Ctx {
    /// Where reports are printed: stdout, or stderr when stdout carries the packets.
    pub fn out(&self) -> Box<dyn std::io::Write + Send> {
        // Not locked: the `calls` writer thread owns its output (each write takes the lock).
        if self.to_stderr {
            Box::new(std::io::stderr())
        } else {
            Box::new(std::io::stdout())
        }
    }

    /// Whether the report goes to a terminal.
    pub fn out_is_terminal(&self) -> bool {
        if self.to_stderr {
            std::io::stderr().is_terminal()
        } else {
            std::io::stdout().is_terminal()
        }
    }
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

/// glibc's malloc gives a block of 128 KiB or more a mapping of its own, returned to the system
/// when freed, but each such free raises that threshold to the block's size (up to 32 MiB):
/// from then on the large tables that grow with the connections seen (doubling, the old one
/// freed) are carved from the heap, which cannot shrink below what was allocated after them.
/// Held at 128 KiB, 100,000 connections peak 3 MB lower (decision 459). Not for sessions on
/// threads side by side (`replay -j N`, `sniff --workers N`): each of their 256 KiB read
/// blocks was then a mapping of its own, whose unmapping stops the other cores (50 files
/// with -j 2: 1.69x -j 1 without it, 1.48x with it; decision 462). Their bound is N sessions'.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn fixed_mmap_threshold(cli: &Cli) {
    let parts = match &cli.cmd {
        Some(Cmd::Replay(r)) => r.jobs.jobs,
        Some(Cmd::Sniff(s)) => s.workers,
        _ => 1,
    };
    if parts > 1 {
        return;
    }
    // SAFETY: mallopt sets one of the allocator's tunables, before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn fixed_mmap_threshold(_: &Cli) {}

fn main() -> ExitCode {
    quiet_failures();
    // `sniff`'s /proc helper (h2ledger_run::procs::serve): started before root is given up,
    // it reads only /proc, never a packet.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == PROCS_HELPER)
    {
        let p = h2ledger_run::procs::Proc::default();
        let _ = h2ledger_run::procs::serve(&p, std::io::stdin().lock(), std::io::stdout().lock());
        return ExitCode::SUCCESS;
    }
    let cli = Cli::try_parse_from(cli::tcpdump_style(std::env::args_os().collect()))
        .unwrap_or_else(|e| cli::explain(e).exit());
    fixed_mmap_threshold(&cli);
    let style = Style {
        verbose: cli.verbose,
        ..Style::new(cli.ascii, cli.quiet, |k| std::env::var(k).ok())
    };
    let mut ctx = Ctx {
        style,
        to_stderr: cli.packets_on_stdout(),
        progress: false,
    };
    ctx.progress = source::progress::wanted(cli.streams(), ctx.out_is_terminal(), cli.quiet);
    match run(cli, ctx) {
        Ok(code) => code,
        Err(e) => {
            // One line a person can act on; no backtrace even with RUST_BACKTRACE=1.
            eprintln!("h2ledger: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The argument that starts the /proc helper instead of a command.
pub const PROCS_HELPER: &str = "__h2ledger-procs-helper";

fn run(cli: Cli, ctx: Ctx) -> Result<ExitCode> {
    if cli.list_interfaces {
        return source::devices::list();
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
        Cmd::Replay(a) => cmd::replay::replay(a, ctx),
        Cmd::Sniff(a) => cmd::sniff::sniff(a, ctx),
        Cmd::Calls(a) => cmd::calls::calls(a, ctx),
        Cmd::Frames(a) => cmd::frames::frames(a, ctx),
        Cmd::Demo(a) => cmd::demo::demo(a, ctx),
        Cmd::Compare(a) => cmd::compare::compare(a, ctx),
        Cmd::Split(a) => cmd::split::split(a, ctx),
        Cmd::Merge(a) => cmd::merge::merge(a, ctx),
        Cmd::Explain(a) => cmd::explain::explain(a),
        Cmd::Completions(a) => cmd::install::completions(a),
        Cmd::Man(a) => cmd::install::man(a),
    }
}
