//! The findings, first in a report's tables, most severe first. Each finding takes as many
//! lines as it needs within [`TABLE_WIDTH`]: a line with its severity, id and place, then,
//! indented, its title, evidence, rule and advice, word-wrapped (decision 300). With `-q`, one
//! line each, cut to the width. At most [`FINDINGS_SHOWN`] are listed and the rest counted;
//! `-v` lists every one, with when it was seen.

use h2ledger_core::findings::{Finding, Num, Severity};
use h2ledger_tcp::Nanos;

use crate::{Style, TABLE_WIDTH};

/// Findings listed one by one in a table (without `-v`); the others are counted.
pub const FINDINGS_SHOWN: usize = 10;

/// Where the lines of a finding's title start; its evidence, rule and advice start there too,
/// and their continuation lines two columns further.
const INDENT: usize = 4;

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

/// `text` word-wrapped into lines of at most `width` columns: the first line starts with
/// `first` spaces, the others with `rest`; a word longer than a line is cut across lines.
/// Control characters are escaped first ([`crate::tty`]), so that what is measured is what is
/// printed.
pub fn wrap_indented(text: &str, first: usize, rest: usize, width: usize) -> String {
    wrap_after(&" ".repeat(first), text, rest, width)
}

/// `text` word-wrapped after `prefix` (kept as it is, spaces and all, on the first line), the
/// other lines indented by `rest`; otherwise as [`wrap_indented`].
pub fn wrap_after(prefix: &str, text: &str, rest: usize, width: usize) -> String {
    let text = crate::tty::escape(text);
    let mut out = String::new();
    let mut line = prefix.to_string();
    let mut used = prefix.chars().count();
    let mut indent = used;
    for word in text.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        loop {
            let n = word.len();
            let room = width.saturating_sub(used + usize::from(used > indent));
            if n <= room {
                if used > indent {
                    line.push(' ');
                    used += 1;
                }
                line.extend(word.iter());
                used += n;
                break;
            }
            if used > indent {
                // Start a new line and try again there.
                out.push_str(line.trim_end());
                out.push('\n');
                indent = rest;
                line = " ".repeat(rest);
                used = rest;
                continue;
            }
            // A word longer than a whole line: as much as fits, the rest on the next lines.
            let room = width.saturating_sub(used).max(1);
            line.extend(word.iter().take(room));
            out.push_str(&line);
            out.push('\n');
            word.drain(..room.min(n));
            indent = rest;
            line = " ".repeat(rest);
            used = rest;
            if word.is_empty() {
                break;
            }
        }
    }
    if used > indent || out.is_empty() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Seconds after `origin` (the first packet), or the UTC time of day without one.
fn when(t: Nanos, origin: Option<Nanos>) -> String {
    match origin {
        Some(o) => format!("{:.3} s", (t - o) as f64 / 1e9),
        None => {
            let s = crate::time::fmt_rfc3339(t);
            s.split_once('T')
                .map_or(s.clone(), |(_, tod)| tod.to_string())
        }
    }
}

/// A finding's evidence as `key value` pairs, in the JSON's order (by name); durations keep
/// their `_us` key and times are written as [`when`].
fn evidence(f: &Finding, origin: Option<Nanos>) -> String {
    let items: Vec<String> = f
        .evidence
        .sorted()
        .into_iter()
        .map(|(k, v)| {
            let v = match v {
                Num::U(n) => n.to_string(),
                // Two decimals as the titles write them, without trailing zeros.
                Num::F(x) => {
                    let t = format!("{x:.2}");
                    t.trim_end_matches('0').trim_end_matches('.').to_string()
                }
                Num::At(t) => when(*t, origin),
                Num::Times(ts) => {
                    let v: Vec<String> = ts.iter().map(|t| when(*t, origin)).collect();
                    format!("[{}]", v.join(", "))
                }
                Num::Text(t) => t.to_string(),
            };
            format!("{k} {v}")
        })
        .collect();
    items.join(", ")
}

/// One finding on as many lines as it needs (see the module docs); `verbose` adds when it was
/// first and last seen, its count and stream.
pub fn finding_lines(f: &Finding, origin: Option<Nanos>, verbose: bool) -> String {
    let mut out = format!(
        "  {:<8}  {:<19} {}\n",
        f.severity.name(),
        f.id.name(),
        place(f)
    );
    out.push_str(&wrap_indented(&f.title, INDENT, INDENT, TABLE_WIDTH));
    if verbose {
        let stream = f
            .stream
            .map(|s| format!(", stream {s}"))
            .unwrap_or_default();
        let at = if origin.is_some() {
            " after the first packet"
        } else {
            " UTC"
        };
        out.push_str(&wrap_indented(
            &format!(
                "seen: {} to {}{at}, count {}{stream}",
                when(f.first, origin),
                when(f.last, origin),
                f.count
            ),
            INDENT,
            INDENT + 2,
            TABLE_WIDTH,
        ));
    }
    let ev = evidence(f, origin);
    if !ev.is_empty() {
        out.push_str(&wrap_indented(
            &format!("evidence: {ev}"),
            INDENT,
            INDENT + 2,
            TABLE_WIDTH,
        ));
    }
    for (k, v) in [("rule", &f.rule), ("advice", &f.advice)] {
        out.push_str(&wrap_indented(
            &format!("{k}: {v}"),
            INDENT,
            INDENT + 2,
            TABLE_WIDTH,
        ));
    }
    out
}

/// The findings block (`None` without findings): a headline with the count by severity, then
/// each finding ([`finding_lines`]; one line each with `-q`). `findings` are in report order
/// (most severe first); `origin` is the first packet's time, for the times of `-v`.
pub fn findings_block(findings: &[Finding], origin: Option<Nanos>, st: Style) -> Option<String> {
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
    let hint = if st.quiet {
        "evidence, rule and advice: without -q, or h2ledger explain ID"
    } else {
        "-q: one line each; -v: every one, with times; h2ledger explain ID"
    };
    let mut out = format!("findings: {} ({hint})\n", counts.join(", "));
    let shown = if st.verbose {
        findings.len()
    } else {
        FINDINGS_SHOWN
    };
    for f in findings.iter().take(shown) {
        if st.quiet {
            let line = format!(
                "  {:<8}  {:<19} {:<14} {}",
                f.severity.name(),
                f.id.name(),
                place(f),
                crate::tty::escape(&f.title)
            );
            out.push_str(&clip(&line, TABLE_WIDTH, st));
            out.push('\n');
        } else {
            out.push_str(&finding_lines(f, origin, st.verbose));
        }
    }
    if findings.len() > shown {
        out.push_str(&format!(
            "  ... and {} more (-v lists every one)\n",
            findings.len() - shown
        ));
    }
    Some(out)
}

/// `h2ledger explain ID`: the id's explanation, word-wrapped within [`TABLE_WIDTH`].
pub fn explain_text(e: &h2ledger_core::findings::Explanation) -> String {
    let mut out = wrap_indented(
        &format!("{} ({}): {}", e.id.name(), e.severity.name(), e.what),
        0,
        2,
        TABLE_WIDTH,
    );
    for (k, v) in [
        ("side", e.side),
        ("count", e.count),
        ("rule", e.rule.as_str()),
        ("source", e.source),
        ("advice", e.advice.as_str()),
    ] {
        out.push_str(&wrap_indented(&format!("{k}: {v}"), 2, 4, TABLE_WIDTH));
    }
    out.push_str(&wrap_indented(
        &format!(
            "more: docs/findings.md, \"{}\"; another severity: --severity ID=LEVEL",
            e.id.name()
        ),
        2,
        4,
        TABLE_WIDTH,
    ));
    out
}

/// `h2ledger explain` without an id: every id, its severity and what it names.
pub fn explain_list(cfg: &h2ledger_core::findings::FindingsConfig) -> String {
    let mut out = String::new();
    for id in h2ledger_core::findings::FindingId::ALL {
        let e = h2ledger_core::findings::explain(*id, cfg);
        let head = format!("{:<19} {:<8} ", id.name(), e.severity.name());
        out.push_str(&wrap_after(&head, e.what, 29, TABLE_WIDTH));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_within_the_width_and_cuts_long_words() {
        let text = format!("short words then {} end", "x".repeat(250));
        let w = wrap_indented(&text, 4, 6, 40);
        for l in w.lines() {
            assert!(l.chars().count() <= 40, "{l:?}");
        }
        let joined: String = w.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(joined.starts_with("short words then xxx"));
        assert!(joined.ends_with(" end"));
        assert_eq!(w.matches('x').count(), 250);
        assert!(w.lines().nth(1).unwrap().starts_with("      "));
    }

    #[test]
    fn escapes_before_measuring() {
        let w = wrap_indented("a\u{1b}[2J b", 2, 2, 100);
        assert_eq!(w, "  a\\x1b[2J b\n");
    }
}
