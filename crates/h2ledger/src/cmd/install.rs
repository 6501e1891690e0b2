//! What an install puts in place besides the binary: `h2ledger completions SHELL` (clap_complete)
//! and `h2ledger man` (clap_mangen), both made from the one clap definition of the CLI, so they
//! cannot drift from `--help`. The manual is h2ledger(1) plus one page per subcommand,
//! h2ledger-replay(1) and so on, as git does (decision 91).

use std::io::Write as _;

use anyhow::{anyhow, Result};
use clap::CommandFactory as _;

use crate::cli::{CompletionsArgs, ManArgs};

/// The CLI as clap knows it, built (subcommands get their `h2ledger-NAME` display names).
fn command() -> clap::Command {
    let mut cmd = crate::cli::Cli::command();
    cmd.build();
    cmd
}

pub fn completions(a: CompletionsArgs) -> Result<std::process::ExitCode> {
    let mut cmd = command();
    // Into a buffer: clap_complete panics on a write error (`| head`).
    let mut buf = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "h2ledger", &mut buf);
    print(&buf, "the completions")
}

/// Writes `bytes` on stdout; a reader that went away early (`| head`) is not an error.
fn print(bytes: &[u8], what: &str) -> Result<std::process::ExitCode> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow!("cannot write {what}: {e}"))
        }
        _ => Ok(std::process::ExitCode::SUCCESS),
    }
}

/// Every page: h2ledger(1), then one per subcommand (not `help`).
fn pages() -> Vec<clap::Command> {
    let cmd = command();
    let subs = cmd
        .get_subcommands()
        .filter(|s| s.get_name() != "help")
        .cloned()
        .collect::<Vec<_>>();
    std::iter::once(cmd).chain(subs).collect()
}

fn render(page: clap::Command) -> Result<(String, Vec<u8>)> {
    let man = clap_mangen::Man::new(page).manual("h2ledger manual");
    let mut buf = Vec::new();
    man.render(&mut buf)
        .map_err(|e| anyhow!("cannot render the manual: {e}"))?;
    Ok((man.get_filename(), buf))
}

pub fn man(a: ManArgs) -> Result<std::process::ExitCode> {
    let pages = pages();
    if let Some(dir) = &a.dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow!("{}: cannot create: {e}", dir.display()))?;
        for page in pages {
            let (name, roff) = render(page)?;
            let path = dir.join(name);
            std::fs::write(&path, roff)
                .map_err(|e| anyhow!("{}: cannot write: {e}", path.display()))?;
            eprintln!("wrote {}", path.display());
        }
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let page = match &a.page {
        None => pages.into_iter().next().expect("the main page"),
        Some(want) => {
            let names: Vec<String> = pages
                .iter()
                .skip(1)
                .map(|p| p.get_name().to_string())
                .collect();
            pages
                .into_iter()
                .skip(1)
                .find(|p| p.get_name() == want)
                .ok_or_else(|| {
                    anyhow!(
                        "no manual page for \"{want}\" (one of {})",
                        names.join(", ")
                    )
                })?
        }
    };
    let (_, roff) = render(page)?;
    print(&roff, "the manual")
}
