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
    // After an HTTP method: a gRPC call is always a POST, so a `POST /pkg.Service/Method` that
    // does not fit loses its POST first; another method stays, and the path is cut after it.
    if let Some((verb, rest)) = s.split_once(' ') {
        if !verb.is_empty() && verb.bytes().all(|b| b.is_ascii_uppercase()) {
            if verb == "POST" {
                if rest.chars().count() <= w {
                    return Some(rest.to_string());
                }
                return grpc_middle(rest, w, mark);
            }
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

/// A call's status as the tables show it: a gRPC status by name (`grpc-status 5` as
/// `NOT_FOUND`, as the metrics label it), `:status 200` as `http 200`, `RST_STREAM` as `RST`,
/// `none` (no response status seen) as it is.
pub fn short_status(s: &str) -> String {
    if let Some(n) = s.strip_prefix("grpc-status ") {
        if let Ok(code) = n.trim().parse::<u16>() {
            return h2ledger_core::grpc::status_name(code).into_owned();
        }
    }
    s.replace("grpc-status ", "grpc ")
        .replace(":status ", "http ")
        .replace("RST_STREAM", "RST")
}

/// A per-method table's status cell: one `NAME: count` line per status ([`short_status`]), each
/// at most `max` characters: a longer name is cut with `…` (`~` in ASCII) before its count.
pub fn status_cell(
    status: &std::collections::BTreeMap<String, u64>,
    max: usize,
    st: Style,
) -> String {
    status
        .iter()
        .map(|(k, v)| {
            let name = short_status(k);
            let count = format!(": {v}");
            let room = max.saturating_sub(count.chars().count()).max(2);
            format!("{}{count}", cut_end(&name, room, st))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A table built by `build(max)` for the widest status cell `max` that keeps it within
/// [`crate::TABLE_WIDTH`] (the status names cut as [`status_cell`] does), from no cut down.
pub fn fit_status(build: impl Fn(usize) -> String) -> String {
    let widest = |t: &str| t.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    let whole = build(usize::MAX);
    let over = widest(&whole).saturating_sub(crate::TABLE_WIDTH);
    if over == 0 {
        return whole;
    }
    // The status column's widest line now, less what is over.
    let mut max = 64usize;
    while max > 8 {
        let t = build(max);
        if widest(&t) <= crate::TABLE_WIDTH {
            return t;
        }
        max -= 1;
    }
    build(max)
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
        // A gRPC request line: the POST goes first, then the package (decision 303).
        assert_eq!(
            cut("POST /h2ledger.test.v1.TestService/Empty", 20, st),
            "/h…TestService/Empty"
        );
        assert_eq!(
            cut("POST /grpc.health.v1.Health/Check", 30, st),
            "/grpc.health.v1.Health/Check"
        );
        assert_eq!(
            cut("POST /grpc.health.v1.Health/Check", 20, st),
            "/grpc.h…Health/Check"
        );
        assert_eq!(
            cut("POST /grpc.health.v1.Health/Check", 28, st),
            "/grpc.health.v1.Health/Check"
        );
    }

    #[test]
    fn statuses_by_name() {
        assert_eq!(short_status("grpc-status 5"), "NOT_FOUND");
        assert_eq!(short_status("grpc-status 0"), "OK");
        assert_eq!(short_status("grpc-status 99"), "Code(99)");
        assert_eq!(short_status(":status 200"), "http 200");
        assert_eq!(short_status("RST_STREAM"), "RST");
        assert_eq!(short_status("none"), "none");
    }
}
