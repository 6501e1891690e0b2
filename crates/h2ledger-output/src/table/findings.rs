//! The findings, first in a report's tables: one line each, most severe first, at most
//! [`FINDINGS_SHOWN`] and a count of the rest.

use h2ledger_core::findings::{Finding, Severity};

use crate::{Style, TABLE_WIDTH};

/// Findings listed one by one in a table; the others are counted.
pub const FINDINGS_SHOWN: usize = 10;

/// `s` in at most `w` characters, its end cut (`…`, `~` in ASCII).
fn clip(s: &str, w: usize, st: Style) -> String {
    if s.chars().count() <= w {
        return s.to_string();
    }
    let mark = if st.ascii { "~" } else { "…" };
    let head: String = s.chars().take(w.saturating_sub(1)).collect();
    format!("{head}{mark}")
}

/// Where a finding is: `conn 3 client`, `conn 3`, or `capture`.
fn place(f: &Finding) -> String {
    match (f.conn, f.side) {
        (Some(c), Some(s)) => format!("conn {c} {}", s.name()),
        (Some(c), None) => format!("conn {c}"),
        (None, _) => "capture".to_string(),
    }
}

/// The findings block (`None` without findings): a headline with the count by severity, one
/// line per finding (severity, id, where, title), each at most [`TABLE_WIDTH`] columns.
/// `findings` are in report order (most severe first).
pub fn findings_block(findings: &[Finding], st: Style) -> Option<String> {
    if findings.is_empty() {
        return None;
    }
    let by = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
    let counts: Vec<String> = Severity::ALL
        .iter()
        .rev()
        .filter(|s| by(**s) > 0)
        .map(|s| format!("{} {}", by(*s), s.name()))
        .collect();
    let mut out = format!(
        "findings: {} (evidence, rule and advice: -T json)\n",
        counts.join(", ")
    );
    for f in findings.iter().take(FINDINGS_SHOWN) {
        let line = format!(
            "  {:<8}  {:<19} {:<14} {}",
            f.severity.name(),
            f.id.name(),
            place(f),
            f.title
        );
        out.push_str(&clip(&line, TABLE_WIDTH, st));
        out.push('\n');
    }
    if findings.len() > FINDINGS_SHOWN {
        out.push_str(&format!(
            "  ... and {} more\n",
            findings.len() - FINDINGS_SHOWN
        ));
    }
    Some(out)
}
