//! What tcpdump and tshark users type: `-r FILE` and `-i DEV` without a subcommand, tshark's
//! `-t` time formats, and what to use instead of their letters h2ledger does not take.

use clap::{CommandFactory as _, ValueEnum};

use super::Cli;

/// `frames -t`: tshark's time formats.
#[derive(Clone, Copy, ValueEnum)]
pub enum TimeFormatArg {
    /// Seconds since the first packet
    #[value(name = "r")]
    Relative,
    /// Local time of day
    #[value(name = "a")]
    Absolute,
    /// Local date and time
    #[value(name = "ad")]
    AbsoluteDate,
    /// UTC time of day
    #[value(name = "u")]
    Utc,
    /// UTC date and time
    #[value(name = "ud")]
    UtcDate,
    /// Seconds since the epoch
    #[value(name = "e")]
    Epoch,
    /// Seconds since the previous frame, printed or not
    #[value(name = "d")]
    Delta,
    /// Seconds since the previous frame printed
    #[value(name = "dd")]
    DeltaDisplayed,
}

impl TimeFormatArg {
    /// The output library's clock for this format; the local zone is the system's (UTC when
    /// it cannot be found).
    pub fn clock(self) -> h2ledger_output::lines::Clock {
        use h2ledger_output::lines::TimeFormat as F;
        let f = match self {
            TimeFormatArg::Relative => F::Relative,
            TimeFormatArg::Absolute => F::Absolute,
            TimeFormatArg::AbsoluteDate => F::AbsoluteDate,
            TimeFormatArg::Utc => F::Utc,
            TimeFormatArg::UtcDate => F::UtcDate,
            TimeFormatArg::Epoch => F::Epoch,
            TimeFormatArg::Delta => F::Delta,
            TimeFormatArg::DeltaDisplayed => F::DeltaDisplayed,
        };
        let tz = match f {
            F::Absolute | F::AbsoluteDate => {
                jiff::tz::TimeZone::try_system().unwrap_or(jiff::tz::TimeZone::UTC)
            }
            _ => jiff::tz::TimeZone::UTC,
        };
        h2ledger_output::lines::Clock::new(f, tz)
    }
}

/// tcpdump's `-r FILE` with no subcommand: `h2ledger [-q] -r F ARGS...` is `h2ledger [-q]
/// replay -r F ARGS...` (`-rF` and `--read=F` too); its `-i DEV`: `h2ledger -i lo ARGS...` is
/// `h2ledger sniff -i lo ARGS...`. Words after a subcommand are left alone.
pub fn tcpdump_style(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
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
        // tcpdump -i DEV with no subcommand: a live capture, `sniff`.
        if a == "-i" || a == "--interface" || a.starts_with("--interface=") || a.starts_with("-i") {
            args.insert(i, "sniff".into());
            break;
        }
        // `replay -r F`: the words after F stay filter words, never more files.
        if a == "-r" || a == "--read" || a.starts_with("--read=") || a.starts_with("-r") {
            args.insert(i, "replay".into());
            break;
        }
        if !a.starts_with('-') {
            break;
        }
    }
    args
}

/// Letters tcpdump and tshark give a meaning h2ledger does not have, and what to use instead.
const OTHER_TOOLS: &[(&str, &str)] = &[
    (
        "-Y",
        "-Y, tshark's display filter, selects records: `h2ledger calls -Y` or `frames -Y`",
    ),
    (
        "-R",
        "-R is tshark's read filter: use a capture filter (-f EXPR), --port, frames --type",
    ),
    ("-n", "h2ledger never resolves names or ports: leave -n out"),
    (
        "-a",
        "tshark's -a duration:N is --duration N here, -a packets:N is -c N; --analyze is long",
    ),
    (
        "-d",
        "h2ledger finds HTTP/2 on any port by itself; --duration has no short form",
    ),
    (
        "-V",
        "each frame with its fields: `h2ledger frames` (one JSON object each with -T jsonl)",
    ),
    (
        "-x",
        "each frame with its fields: `h2ledger frames` (one JSON object each with -T jsonl)",
    ),
    (
        "-X",
        "each frame with its fields: `h2ledger frames` (one JSON object each with -T jsonl)",
    ),
    (
        "-A",
        "each frame with its fields: `h2ledger frames` (one JSON object each with -T jsonl)",
    ),
    (
        "-e",
        "each frame with its fields: `h2ledger frames` (one JSON object each with -T jsonl)",
    ),
    (
        "-t",
        "-t (tshark's time format) is a flag of `h2ledger frames`",
    ),
];

/// clap's error for a flag it does not know suggests `-- -Y` to pass it as a value, which here
/// would make it a word of the capture filter: that tip is replaced by what to use instead of
/// a tcpdump or tshark letter, or removed.
pub fn explain(mut e: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        return e;
    }
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return e;
    };
    let arg = arg.clone();
    // `-nn`, `-tad`, `-Yhttp2`: the letter is what counts.
    let letter: String = arg.chars().take(2).collect();
    let tip = OTHER_TOOLS
        .iter()
        .find(|(f, _)| *f == letter && !arg.starts_with("--"))
        .map(|(_, t)| *t);
    if let Some(ContextValue::StyledStrs(v)) = e.get(ContextKind::Suggested) {
        if v.iter().any(|s| s.to_string().contains("'-- ")) {
            e.remove(ContextKind::Suggested);
        }
    }
    if let Some(t) = tip {
        e.insert(
            ContextKind::Suggested,
            ContextValue::StyledStrs(vec![t.to_string().into()]),
        );
    }
    e
}

#[cfg(test)]
mod tests {
    /// Each tip fits a 100-column terminal after clap's "  tip: ".
    #[test]
    fn tips_fit_in_100_columns() {
        for (flag, tip) in super::OTHER_TOOLS {
            assert!(
                tip.chars().count() <= 93,
                "{flag}: {} characters",
                tip.len()
            );
        }
    }
}
