//! `compare A B`: two ledgers side by side, with the difference per row (B - A, per side).

use std::io::Write;

use h2ledger_core::{FrameClass, LedgerReport, Side};
use h2ledger_run::Report;
use tabled::builder::Builder;
use tabled::settings::object::Columns;
use tabled::settings::Alignment;

use crate::{tty, warn, Style};

fn delta(a: u64, b: u64) -> String {
    let d = b as i128 - a as i128;
    let p = if a == 0 {
        None
    } else {
        Some(d as f64 * 100.0 / a as f64)
    };
    // A change that rounds to 0% says how small it is, not "-0%" (issue 20, item 12).
    let pct = match p {
        None => String::new(),
        Some(p) if p.abs() < 0.5 && p < 0.0 => " (>-1%)".to_string(),
        Some(p) if p.abs() < 0.5 => " (<+1%)".to_string(),
        Some(p) => format!(" ({p:+.0}%)"),
    };
    match d {
        0 => "=".to_string(),
        d => format!("{d:+}{pct}"),
    }
}

fn per_call(n: u64, calls: u64) -> Option<f64> {
    (calls > 0).then(|| n as f64 / calls as f64)
}

fn fmt_per(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.2}"))
}

fn delta_per(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if (a - b).abs() < 0.005 => "=".to_string(),
        (Some(a), Some(b)) => format!("{:+.2}", b - a),
        _ => "-".to_string(),
    }
}

/// The table: a row per frame kind seen in either capture, then PINGs, writes, bytes, and the
/// per-call rows; columns A, B and B - A for each side.
pub fn compare_table(a: &LedgerReport, b: &LedgerReport, st: Style) -> String {
    let t = compare_table_with(a, b, st, true);
    // Large counts with their percentages can pass 100 columns: then the counts alone.
    if t.lines().any(|l| l.chars().count() > crate::TABLE_WIDTH) {
        return compare_table_with(a, b, st, false);
    }
    t
}

fn compare_table_with(a: &LedgerReport, b: &LedgerReport, st: Style, pct: bool) -> String {
    let delta = |x: u64, y: u64| {
        let d = delta(x, y);
        if pct {
            d
        } else {
            d.split(' ').next().unwrap_or_default().to_string()
        }
    };
    let mut t = Builder::default();
    let mut head = vec![String::new()];
    for s in Side::ALL {
        for c in ["A", "B", "B - A"] {
            head.push(format!("{}\n{c}", s.name()));
        }
    }
    t.push_record(head);
    let count_row = |label: &str, f: &dyn Fn(&LedgerReport, Side) -> u64| {
        let mut r = vec![label.to_string()];
        for s in Side::ALL {
            let (x, y) = (f(a, s), f(b, s));
            r.extend([x.to_string(), y.to_string(), delta(x, y)]);
        }
        r
    };
    for c in FrameClass::ALL {
        let n = |r: &LedgerReport| r.sides.client.frames.get(c) + r.sides.server.frames.get(c);
        if n(a) + n(b) > 0 {
            t.push_record(count_row(c.name(), &|r, s| r.sides.get(s).frames.get(c)));
            // grpc-go's BDP pings under the PING row, spelt as the ledger table spells them.
            if c == FrameClass::Ping {
                t.push_record(count_row("  of which grpc-go-bdp", &|r, s| {
                    r.sides.get(s).bdp_pings
                }));
            }
        }
    }
    t.push_record(count_row("frames", &|r, s| r.sides.get(s).frames.total()));
    t.push_record(count_row("writes", &|r, s| r.sides.get(s).writes));
    t.push_record(count_row("bytes", &|r, s| r.sides.get(s).bytes));
    let per_row = |label: &str, f: &dyn Fn(&LedgerReport, Side) -> u64| {
        let mut r = vec![label.to_string()];
        for s in Side::ALL {
            let (x, y) = (
                per_call(f(a, s), a.all_calls()),
                per_call(f(b, s), b.all_calls()),
            );
            r.extend([fmt_per(x), fmt_per(y), delta_per(x, y)]);
        }
        r
    };
    t.push_record(per_row("writes per call", &|r, s| r.sides.get(s).writes));
    t.push_record(per_row("all frames per call", &|r, s| {
        r.sides.get(s).frames.total()
    }));
    t.push_record(per_row("control frames per call", &|r, s| {
        r.sides.get(s).frames.control()
    }));
    let mut t = t.build();
    super::styled(&mut t, st);
    t.modify(Columns::new(1..), Alignment::right());
    t.to_string()
}

/// Writes the comparison of `a` and `b` (each a capture's name and report) in `format`, the
/// warnings of each (tagged `A:`, `B:`) on `err`.
pub fn write_compare(
    out: &mut dyn Write,
    err: &mut dyn Write,
    a: (&str, &Report),
    b: (&str, &Report),
    format: crate::Format,
    st: Style,
) {
    let (x, y) = (&a.1.ledger, &b.1.ledger);
    match format {
        crate::Format::Json => crate::json::write_compare(out, a.1, b.1, false),
        crate::Format::Jsonl => crate::json::write_compare(out, a.1, b.1, true),
        crate::Format::Table => {
            // Method names and statuses come from the captures (crate::tty).
            let mut out = tty::Safe::new(out);
            // A long path wraps, as replay's headline does (at most 100 columns).
            for (tag, (path, r)) in [("A", a), ("B", b)] {
                let head = super::headline_tls(path, &r.ledger, r.tls.as_ref());
                let wrapped = super::wrap(&head, crate::TABLE_WIDTH - 4);
                for (i, l) in wrapped.lines().enumerate() {
                    let lead = if i == 0 {
                        format!("{tag} = ")
                    } else {
                        "    ".into()
                    };
                    let _ = writeln!(out, "{lead}{l}");
                }
            }
            let _ = writeln!(
                out,
                "calls: {} -> {} ({}); connections: {} -> {} ({})",
                x.all_calls(),
                y.all_calls(),
                delta(x.all_calls(), y.all_calls()),
                x.connections,
                y.connections,
                delta(x.connections, y.connections)
            );
            let _ = writeln!(out, "{}", compare_table(x, y, st));
            let _ = out.flush();
            for (tag, r) in [("A", x), ("B", y)] {
                let w: Vec<String> = r.warnings.iter().map(|w| format!("{tag}: {w}")).collect();
                warn::write(err, &w, st);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_small_change_is_not_zero_percent() {
        assert_eq!(super::delta(100_000, 99_604), "-396 (>-1%)");
        assert_eq!(super::delta(100_000, 100_100), "+100 (<+1%)");
        assert_eq!(super::delta(100, 150), "+50 (+50%)");
        assert_eq!(super::delta(0, 3), "+3");
        assert_eq!(super::delta(7, 7), "=");
    }
}
