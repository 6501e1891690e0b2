//! Tables, as the article prints them: one block per kind of fact, side by side per scope
//! (the whole capture, phases), at most [`crate::TABLE_WIDTH`] columns.

mod analysis;
mod compare;
pub mod findings;
pub mod flow;
mod ledger;
mod pages;
mod series;

pub use analysis::{analysis_table, methods_table};
pub use compare::{compare_table, write_compare};
pub use ledger::{
    calls_phrase, connections_table, footer, headline, headline_tls, ledger_table,
    ledger_table_with, tls_line,
};
pub use pages::{write_tables, PhaseLayout};
pub use series::{live_heading, live_row, series_heading, series_row};

use crate::Style;

/// A number with two decimals, whole numbers without; `-` for none.
pub(crate) fn opt(v: Option<f64>) -> String {
    match v {
        Some(x) if x.fract() == 0.0 && x.abs() < 1e12 => format!("{x:.0}"),
        Some(x) => format!("{x:.2}"),
        None => "-".to_string(),
    }
}

/// Box drawing, or ASCII with `--ascii` or a locale that is not UTF-8.
pub fn styled(t: &mut tabled::Table, st: Style) {
    if st.ascii {
        t.with(tabled::settings::Style::ascii());
    } else {
        t.with(tabled::settings::Style::sharp());
    }
}

/// `s` in at most `w` characters: a longer one keeps its end (a method's name) after `…`
/// (`~` in ASCII). Control characters are first written `\xNN` (crate::tty), so that the
/// width counts what the terminal shows.
pub fn cut(s: &str, w: usize, st: Style) -> String {
    let s = crate::tty::escape(s);
    let n = s.chars().count();
    if n <= w {
        return s.to_string();
    }
    let mark = if st.ascii { "~" } else { "…" };
    let tail: String = s.chars().skip(n - (w - 1)).collect();
    format!("{mark}{tail}")
}

/// `s` in at most `w` characters, keeping its start: a longer one ends with `…` (`~` in
/// ASCII).
pub fn cut_end(s: &str, w: usize, st: Style) -> String {
    if s.chars().count() <= w {
        return s.to_string();
    }
    let mark = if st.ascii { "~" } else { "…" };
    let head: String = s.chars().take(w.saturating_sub(1)).collect();
    format!("{head}{mark}")
}

/// `grpc-status 0` as `grpc 0`, `:status 200` as `http 200`, `RST_STREAM` as `RST`.
pub fn short_status(s: &str) -> String {
    s.replace("grpc-status ", "grpc ")
        .replace(":status ", "http ")
        .replace("RST_STREAM", "RST")
}

/// `s` wrapped at spaces into lines of at most `w` characters (a longer word stays whole).
pub fn wrap(s: &str, w: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for word in s.split(' ') {
        let n = word.chars().count();
        if line > 0 && line + 1 + n > w {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += n;
    }
    out
}
