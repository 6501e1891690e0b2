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
    ledger_table_live, ledger_table_with, tls_line, LIVE_MIN_WIDTH,
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
        // As `sharp`: a rule under the header only (tabled's `ascii` draws one after every row).
        use tabled::settings::style::HorizontalLine;
        t.with(
            tabled::settings::Style::ascii()
                .remove_horizontal()
                .horizontals([(1, HorizontalLine::full('-', '+', '+', '+'))]),
        );
    } else {
        t.with(tabled::settings::Style::sharp());
    }
}

/// `s` in at most `w` characters: a longer one keeps its end (a method's name) after `…`
/// (`~` in ASCII); a gRPC path (`/package.Service/Method`) keeps its service and method
/// whole and is shortened in the middle of the package (`/grpc.h…Health/Check`). Control
/// characters are first written `\xNN` (crate::tty), so that the width counts what the
/// terminal shows.
pub fn cut(s: &str, w: usize, st: Style) -> String {
    let s = crate::tty::escape(s);
    let n = s.chars().count();
    if n <= w {
        return s.to_string();
    }
    let mark = if st.ascii { "~" } else { "…" };
    if let Some(short) = grpc_middle(&s, w, mark) {
        return short;
    }
    let tail: String = s.chars().skip(n - (w - 1)).collect();
    format!("{mark}{tail}")
}

/// A gRPC path cut in its package: `/` and the package's start, the mark, then
/// `Service/Method`; `None` when `s` is not `/pkg.Service/Method` or `Service/Method` does
/// not fit in `w` with the `/` and the mark.
fn grpc_middle(s: &str, w: usize, mark: &str) -> Option<String> {
    // After an HTTP method (`POST /pkg.Service/Method`), the same within what is left.
    if let Some((verb, rest)) = s.split_once(' ') {
        if !verb.is_empty() && verb.bytes().all(|b| b.is_ascii_uppercase()) {
            let cut = grpc_middle(rest, w.checked_sub(verb.chars().count() + 1)?, mark)?;
            return Some(format!("{verb} {cut}"));
        }
    }
    let (service, method) = s.strip_prefix('/')?.split_once('/')?;
    if method.is_empty() || method.contains('/') {
        return None;
    }
    let (package, service) = service.rsplit_once('.')?;
    let keep = format!("{service}/{method}");
    let room = w.checked_sub(2 + keep.chars().count())?;
    let head: String = package.chars().take(room).collect();
    Some(format!("/{head}{mark}{keep}"))
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

/// An RST_STREAM or GOAWAY error code in at most 7 characters (the narrow `calls` table's
/// status column): RFC 9113's name without `_ERROR` and shortened, or `0x..`.
pub fn short_code(code: h2_frame_parser::ErrorCode) -> String {
    let short = match code.0 {
        0x0 => "NO_ERR",
        0x1 => "PROTO",
        0x2 => "INTERN",
        0x3 => "FLOWCTL",
        0x4 => "SETTMO",
        0x5 => "CLOSED",
        0x6 => "FRSIZE",
        0x7 => "REFUSED",
        0x8 => "CANCEL",
        0x9 => "COMPR",
        0xa => "CONNECT",
        0xb => "CALM",
        0xc => "INADEQ",
        0xd => "HTTP1.1",
        _ => return format!("{:#x}", code.0),
    };
    short.to_string()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A gRPC name keeps its service and method; other paths keep their end.
    #[test]
    fn grpc_names_are_cut_in_the_package() {
        let st = Style::default();
        assert_eq!(
            cut("/grpc.health.v1.Health/Check", 20, st),
            "/grpc.h…Health/Check"
        );
        assert_eq!(
            cut("/grpc.health.v1.Health/Check", 14, st),
            "/…Health/Check"
        );
        assert_eq!(cut("/grpc.health.v1.Health/Check", 13, st), "…Health/Check");
        assert_eq!(
            cut("/grpc.health.v1.Health/Check", 40, st),
            "/grpc.health.v1.Health/Check"
        );
        assert_eq!(
            cut("/static/images/a-long-name.png", 20, st),
            "…ges/a-long-name.png"
        );
        let ascii = Style {
            ascii: true,
            ..Style::default()
        };
        assert_eq!(
            cut("/helloworld.Greeter/SayHello", 20, ascii),
            "/he~Greeter/SayHello"
        );
    }
}
