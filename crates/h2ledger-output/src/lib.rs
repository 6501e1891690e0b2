//! Everything h2ledger prints, as a library: the JSON records (typed, written by serde or by the
//! fast writer [`jsonw`] for the line views, byte for byte the same), the tables, the live view,
//! the `calls` and `frames` lines, and the `--plot` SVG.
//!
//! Every function writes to a writer it is given (`&mut dyn Write`); nothing here reads the
//! command line, the environment or a global. How text looks is a [`Style`], decided once by the
//! binary. Text from the capture is escaped for the terminal ([`tty`]) before it is measured.
//!
//! ```
//! use h2ledger_output::{table, Style};
//!
//! let r = h2ledger_core::LedgerReport::default();
//! let text = table::headline("capture.pcap", &r);
//! assert!(text.starts_with("capture.pcap: 0 HTTP/2 connections"));
//! let t = table::ledger_table(&[("", &r)], Style::default());
//! assert!(t.contains("HEADERS"));
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod demo;
pub mod json;
pub mod jsonw;
pub mod lines;
pub mod live;
pub mod metrics;
pub mod plot;
pub mod progress;
pub mod split;
pub mod table;
pub use h2ledger_run::time;
pub mod tty;
pub mod warn;

/// How text is written, decided once by the binary from the command line and the locale.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Style {
    /// Plain ASCII: table borders and the ellipsis of cut text (`--ascii`, or a locale that is
    /// not UTF-8).
    pub ascii: bool,
    /// `-q`: one line per kind of warning, cut to the width.
    pub quiet: bool,
    /// `-v`: every warning on its own lines (by default one per kind, with a count).
    pub verbose: bool,
}

impl Style {
    /// The style for `--ascii` (`forced`) and `-q`, given the locale variables' values as
    /// `lookup` finds them (`LC_ALL`, then `LC_CTYPE`, then `LANG`; none set: UTF-8 assumed).
    pub fn new(forced_ascii: bool, quiet: bool, lookup: impl Fn(&str) -> Option<String>) -> Style {
        let locale = ["LC_ALL", "LC_CTYPE", "LANG"]
            .iter()
            .find_map(|k| lookup(k).filter(|v| !v.is_empty()))
            .unwrap_or_else(|| "C.UTF-8".to_string())
            .to_ascii_lowercase();
        let utf8 = locale.contains("utf-8") || locale.contains("utf8");
        Style {
            ascii: forced_ascii || !utf8,
            quiet,
            verbose: false,
        }
    }
}

/// How a report is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Tables (warnings on the error writer).
    Table,
    /// One JSON document (warnings inside).
    Json,
    /// One JSON object per line, each with `record` and `type`.
    Jsonl,
}

/// How a report is printed, decided once from the command line: the format, how phases are laid
/// out, and the terminal's style. Every command that prints a report builds one and calls
/// [`Printer::write`] (ripgrep's printers are built the same way, from its `HiArgs`).
///
/// ```
/// use h2ledger_output::{table::PhaseLayout, Format, Printer, Style};
///
/// let p = Printer::new(Format::Json, Style::default()).layout(PhaseLayout::Series);
/// let mut out = Vec::new();
/// p.write(&mut out, &mut std::io::sink(), "x.pcap", &Default::default(), &mut std::iter::empty());
/// assert!(out.starts_with(b"{"));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Printer {
    format: Format,
    layout: table::PhaseLayout,
    style: Style,
}

impl Printer {
    /// A printer of `format` in `style`, phases in columns.
    pub fn new(format: Format, style: Style) -> Printer {
        Printer {
            format,
            layout: table::PhaseLayout::Columns,
            style,
        }
    }

    /// The same printer, phases laid out as `layout` says (tables only).
    pub fn layout(self, layout: table::PhaseLayout) -> Printer {
        Printer { layout, ..self }
    }

    /// Writes a run's report (the whole capture, and its phases built one at a time by
    /// `phases`; `source` names the capture): tables on `out` with the warnings on `err`, or
    /// JSON with the warnings inside.
    pub fn write(
        &self,
        out: &mut dyn std::io::Write,
        err: &mut dyn std::io::Write,
        source: &str,
        whole: &h2ledger_run::Report,
        phases: &mut dyn Iterator<Item = h2ledger_run::Report>,
    ) {
        match self.format {
            Format::Json => {
                let _ = json::write_json(out, whole, phases);
            }
            Format::Jsonl => {
                let _ = json::write_jsonl(out, whole, phases);
            }
            Format::Table => {
                table::write_tables(out, err, source, whole, phases, self.layout, self.style)
            }
        }
    }
}

/// The widest a table may be: 100 columns.
pub const TABLE_WIDTH: usize = 100;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_from_the_locale() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert!(!Style::new(false, false, env(&[])).ascii);
        assert!(Style::new(false, false, env(&[("LANG", "C")])).ascii);
        assert!(
            !Style::new(
                false,
                false,
                env(&[("LC_ALL", "en_US.UTF-8"), ("LANG", "C")])
            )
            .ascii
        );
        assert!(Style::new(true, false, env(&[("LANG", "C.UTF-8")])).ascii);
        assert!(!Style::new(false, false, env(&[("LC_ALL", ""), ("LANG", "de_DE.utf8")])).ascii);
    }
}
