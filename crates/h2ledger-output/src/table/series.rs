//! `--every` as a time series: one row per phase with the numbers that matter (calls, frames
//! and writes per call, BDP pings, PING round trip, call latency, stalls, bytes), the whole
//! capture first; the same columns for the live view appended to a pipe, one row per tick.
//! Columns have fixed widths, so rows printed one at a time line up.

use h2ledger_core::{AnalysisReport, LedgerReport, Side};

/// The columns: a heading on two lines and a width (values are right-aligned; a longer value
/// pushes the row, it is never cut).
const COLUMNS: [(&str, &str, usize); 9] = [
    ("start s", "", 9),
    ("calls", "", 7),
    ("frames/call", "cli/srv", 11),
    ("writes/call", "cli/srv", 11),
    ("BDP pings", "cli/srv", 11),
    ("PING RTT", "p50", 8),
    ("call time", "p50/p99", 13),
    ("stalls", "cli/srv", 9),
    ("bytes", "cli/srv", 13),
];

/// The live view's columns, when it is appended (a pipe): a row per tick, its last period.
const LIVE_COLUMNS: [(&str, &str, usize); 8] = [
    ("time", "UTC", 8),
    ("calls", "", 7),
    ("frames/call", "cli/srv", 11),
    ("writes/call", "cli/srv", 11),
    ("BDP pings", "cli/srv", 11),
    ("frames/s", "", 9),
    ("bytes", "cli/srv", 13),
    ("dropped", "", 8),
];

/// The two heading lines.
pub fn series_heading() -> String {
    heading(&COLUMNS)
}

/// The live view's two heading lines.
pub fn live_heading() -> String {
    heading(&LIVE_COLUMNS)
}

fn heading(cols: &[(&str, &str, usize)]) -> String {
    let line = |row: usize| {
        cols.iter()
            .map(|c| format!("{:>w$}", if row == 0 { c.0 } else { c.1 }, w = c.2))
            .collect::<Vec<_>>()
            .join(" ")
            .trim_end()
            .to_string()
    };
    format!("{}\n{}", line(0), line(1))
}

fn row(cells: &[String], cols: &[(&str, &str, usize)]) -> String {
    cells
        .iter()
        .zip(cols)
        .map(|(v, c)| format!("{v:>w$}", w = c.2))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `x/y` of a side's count, client first.
fn pair(f: &dyn Fn(Side) -> String) -> String {
    format!("{}/{}", f(Side::Client), f(Side::Server))
}

/// Per call, client/server; `-` without a call.
fn per_call(calls: u64, f: &dyn Fn(Side) -> u64) -> String {
    if calls == 0 {
        "-".to_string()
    } else {
        pair(&|s| format!("{:.2}", f(s) as f64 / calls as f64))
    }
}

/// A row of the live view: `clock` (`12:41:07`), the last period's ledger `l`, its frames per
/// second and the packets dropped in it.
pub fn live_row(clock: &str, l: &LedgerReport, frames_per_s: f64, dropped: u64) -> String {
    let calls = l.all_calls();
    let cells = [
        clock.to_string(),
        calls.to_string(),
        per_call(calls, &|s| l.sides.get(s).frames.total()),
        per_call(calls, &|s| l.sides.get(s).writes),
        pair(&|s| l.sides.get(s).bdp_pings.to_string()),
        format!("{frames_per_s:.0}"),
        pair(&|s| bytes(l.sides.get(s).bytes)),
        dropped.to_string(),
    ];
    row(&cells, &LIVE_COLUMNS)
}

/// One row: `label` in the first column (`all`, or the phase's start in seconds from the first
/// packet), then the scope's numbers; `-` where there is nothing to say.
pub fn series_row(label: &str, l: &LedgerReport, a: Option<&AnalysisReport>) -> String {
    let calls = l.all_calls();
    let per = |f: &dyn Fn(Side) -> u64| per_call(calls, f);
    let cells = [
        label.to_string(),
        calls.to_string(),
        per(&|s| l.sides.get(s).frames.total()),
        per(&|s| l.sides.get(s).writes),
        pair(&|s| l.sides.get(s).bdp_pings.to_string()),
        a.and_then(|a| a.latency_us.ping_rtt.p50)
            .map_or("-".to_string(), dur),
        a.map(|a| &a.latency_us.call)
            .and_then(|c| Some(format!("{}/{}", dur(c.p50?), dur(c.p99?))))
            .unwrap_or_else(|| "-".to_string()),
        a.map_or("-".to_string(), |a| {
            pair(&|s| a.flow_control.sides.get(s).stalls.to_string())
        }),
        pair(&|s| bytes(l.sides.get(s).bytes)),
    ];
    row(&cells, &COLUMNS)
}

/// Microseconds as `326us`, `1.2ms`, `3.4s`.
fn dur(us: f64) -> String {
    if us < 1000.0 {
        format!("{us:.0}us")
    } else if us < 1e6 {
        format!("{:.1}ms", us / 1e3)
    } else {
        format!("{:.1}s", us / 1e6)
    }
}

/// Bytes exact up to 99,999, then `123.4k`, `12.3M`, `1.2G`.
fn bytes(n: u64) -> String {
    let x = n as f64;
    if n < 100_000 {
        n.to_string()
    } else if x < 1e6 {
        format!("{:.1}k", x / 1e3)
    } else if x < 1e9 {
        format!("{:.1}M", x / 1e6)
    } else {
        format!("{:.1}G", x / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_fit_100_columns_and_line_up() {
        for (h, r) in [
            (
                series_heading(),
                series_row("1234.500", &LedgerReport::default(), None),
            ),
            (
                live_heading(),
                live_row("12:41:07", &LedgerReport::default(), 0.0, 0),
            ),
        ] {
            for l in h.lines().chain([r.as_str()]) {
                assert!(l.chars().count() <= 100, "{l}");
            }
            // Right-aligned under their headings: the last column ends where the heading does.
            assert_eq!(h.lines().next().unwrap().chars().count(), r.chars().count());
        }
        assert_eq!(dur(326.0), "326us");
        assert_eq!(dur(1234.0), "1.2ms");
        assert_eq!(bytes(123_456), "123.5k");
    }
}
