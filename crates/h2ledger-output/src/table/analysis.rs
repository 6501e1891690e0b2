//! The analysis tables: writes, PINGs and BDP rounds per side; calls, concurrency and latency
//! per scope; per-method totals.

use h2ledger_core::analysis::Percentiles;
use h2ledger_core::Side;
use h2ledger_run::Report;
use tabled::builder::Builder;
use tabled::settings::object::Columns;
use tabled::settings::Alignment;

use super::opt;
use crate::Style;

/// GOAWAY frames listed one per line under the analysis table; the JSON lists them all.
const MAX_GOAWAY_LINES: usize = 5;

/// Analysis rows per side, columns side by side (phases, or just one).
pub fn analysis_table(columns: &[(&str, &Report)], st: Style) -> Option<String> {
    let cols: Vec<(&str, &h2ledger_core::AnalysisReport)> = columns
        .iter()
        .filter_map(|(n, f)| f.analysis.as_ref().map(|a| (*n, a)))
        .collect();
    if cols.is_empty() {
        return None;
    }
    let mut b = Builder::default();
    let mut header = vec![String::new()];
    for (name, _) in &cols {
        for s in Side::ALL {
            header.push(if name.is_empty() {
                s.name().to_string()
            } else {
                format!("{name}\n{}", s.name())
            });
        }
    }
    b.push_record(header);
    type Cell<'a> = &'a dyn Fn(&h2ledger_core::AnalysisReport, Side) -> String;
    let row = |label: &str, f: Cell<'_>| {
        let mut r = vec![label.to_string()];
        for (_, a) in &cols {
            for s in Side::ALL {
                r.push(f(a, s));
            }
        }
        r
    };
    let max_calls = cols
        .iter()
        .flat_map(|(_, a)| {
            [
                a.sides.client.writes_by_calls.0.len(),
                a.sides.server.writes_by_calls.0.len(),
            ]
        })
        .max()
        .unwrap_or(0);
    b.push_record(row("writes in which no frame ends", &|a, s| {
        a.sides.get(s).writes_without_frame_end.to_string()
    }));
    for k in 0..max_calls {
        let label = match k {
            0 => "writes carrying 0 calls (control only)".to_string(),
            1 => "writes carrying 1 call".to_string(),
            _ => format!("writes carrying {k} calls"),
        };
        b.push_record(row(&label, &|a, s| {
            a.sides
                .get(s)
                .writes_by_calls
                .0
                .get(k)
                .copied()
                .unwrap_or(0)
                .to_string()
        }));
    }
    b.push_record(row("frames per write (mean)", &|a, s| {
        opt(a.sides.get(s).frames_per_write.mean)
    }));
    b.push_record(row("bytes per write (mean)", &|a, s| {
        opt(a.sides.get(s).bytes_per_write.mean)
    }));
    b.push_record(row("PINGs sent / acked", &|a, s| {
        let p = &a.sides.get(s).pings;
        format!("{} / {}", p.sent, p.acked)
    }));
    b.push_record(row("BDP rounds (PING to ACK)", &|a, s| {
        a.sides.get(s).rounds.rounds.to_string()
    }));
    b.push_record(row("calls per round", &|a, s| {
        opt(a.sides.get(s).rounds.calls_per_round)
    }));
    b.push_record(row("calls that opened a round", &|a, s| {
        let r = &a.sides.get(s).rounds;
        match r.share_of_calls_opening {
            Some(x) => format!("{} ({:.0}%)", r.calls_opening, x * 100.0),
            None => "-".into(),
        }
    }));
    // Why streams and connections ended: each RST_STREAM and GOAWAY error code per sender.
    let mut rst: Vec<&str> = Vec::new();
    let mut goaway: Vec<&str> = Vec::new();
    for (_, a) in &cols {
        for s in Side::ALL {
            rst.extend(a.sides.get(s).rst_stream_codes.keys().map(String::as_str));
        }
        goaway.extend(a.goaways.iter().map(|g| g.error.as_str()));
    }
    for v in [&mut rst, &mut goaway] {
        v.sort_unstable();
        v.dedup();
    }
    for code in rst {
        b.push_record(row(&format!("RST_STREAM {code}"), &|a, s| {
            a.sides
                .get(s)
                .rst_stream_codes
                .get(code)
                .copied()
                .unwrap_or(0)
                .to_string()
        }));
    }
    for code in goaway {
        b.push_record(row(&format!("GOAWAY {code}"), &|a, s| {
            a.goaways
                .iter()
                .filter(|g| g.error == code && g.side == s.name())
                .count()
                .to_string()
        }));
    }
    let mut t = b.build();
    super::styled(&mut t, st);
    t.modify(Columns::new(1..), Alignment::right());
    let mut out = t.to_string();
    // Each GOAWAY's last stream and debug data (escaped: it comes from the wire), a few.
    let mut seen = std::collections::BTreeSet::new();
    let all: Vec<_> = cols
        .iter()
        .flat_map(|(_, a)| a.goaways.iter())
        .filter(|g| seen.insert((g.conn, g.time.to_bits())))
        .collect();
    for (listed, g) in all.iter().enumerate() {
        if listed == MAX_GOAWAY_LINES {
            out.push_str(&format!(
                "\n{} more GOAWAY frames in the JSON (`goaways`)",
                all.len() - listed
            ));
            break;
        }
        let line = format!(
            "GOAWAY c{} by {} {} last_stream_id={}{}",
            g.conn,
            g.side,
            g.error,
            g.last_stream_id,
            if g.debug.is_empty() {
                String::new()
            } else {
                format!(" debug \"{}\"", crate::tty::escape(&g.debug))
            }
        );
        out.push('\n');
        out.push_str(&super::cut_end(&line, crate::TABLE_WIDTH, st));
    }
    // Calls: concurrency and latency, one column per scope.
    let mut b = Builder::default();
    let mut header = vec![String::new()];
    header.extend(cols.iter().map(|(n, _)| {
        if n.is_empty() {
            "all".to_string()
        } else {
            n.to_string()
        }
    }));
    b.push_record(header);
    let crow = |label: &str, f: &dyn Fn(&h2ledger_core::AnalysisReport) -> String| {
        let mut r = vec![label.to_string()];
        r.extend(cols.iter().map(|(_, a)| f(a)));
        r
    };
    b.push_record(crow("calls", &|a| a.concurrency.calls.to_string()));
    b.push_record(crow("calls in flight at start (mean)", &|a| {
        opt(a.concurrency.mean_in_flight)
    }));
    b.push_record(crow("calls in flight at start (max)", &|a| {
        a.concurrency.max_in_flight.to_string()
    }));
    let pct = |label: &str, p: &dyn Fn(&h2ledger_core::AnalysisReport) -> &Percentiles| {
        let mut rows = Vec::new();
        for (i, name) in ["p1", "p25", "p50", "p75", "p90", "p95", "p99"]
            .iter()
            .enumerate()
        {
            rows.push(crow(&format!("{label} {name} (us)"), &|a| {
                opt(p(a).values()[i])
            }));
        }
        rows.push(crow(&format!("{label} max (us)"), &|a| opt(p(a).max)));
        rows
    };
    for r in pct("call", &|a| &a.latency_us.call) {
        b.push_record(r);
    }
    for r in pct("first byte", &|a| &a.latency_us.first_byte) {
        b.push_record(r);
    }
    for r in pct("PING rtt", &|a| &a.latency_us.ping_rtt) {
        b.push_record(r);
    }
    b.push_record(crow("GOAWAY ENHANCE_YOUR_CALM", &|a| {
        a.too_many_pings.to_string()
    }));
    let mut t = b.build();
    super::styled(&mut t, st);
    t.modify(Columns::new(1..), Alignment::right());
    out.push('\n');
    out.push_str(&t.to_string());
    Some(out)
}

/// Per-method totals of one report.
pub fn methods_table(a: &h2ledger_core::AnalysisReport, st: Style) -> Option<String> {
    if a.methods.is_empty() {
        return None;
    }
    Some(super::fit_status(|max| methods_table_at(a, max, st)))
}

/// [`methods_table`] with status cells of at most `max` characters.
fn methods_table_at(a: &h2ledger_core::AnalysisReport, max: usize, st: Style) -> String {
    let mut b = Builder::default();
    b.push_record(
        [
            "method",
            "calls",
            "status",
            "client\nframes\n/call",
            "server\nframes\n/call",
            "client\nwrites\n/call",
            "server\nwrites\n/call",
            "call\np50 us",
            "call\np99 us",
        ]
        .map(String::from),
    );
    for m in &a.methods {
        // Grouped by HTTP method and path: `GET /index.html`.
        let name = if m.http_method.is_empty() {
            m.method.clone()
        } else {
            format!("{} {}", m.http_method, m.method)
        };
        b.push_record([
            super::cut(&name, 20, st),
            m.calls.to_string(),
            super::status_cell(&m.status, max, st),
            opt(m.sides.client.frames_per_call),
            opt(m.sides.server.frames_per_call),
            opt(m.sides.client.writes_per_call),
            opt(m.sides.server.writes_per_call),
            opt(m.latency_us.p50),
            opt(m.latency_us.p99),
        ]);
    }
    let mut t = b.build();
    super::styled(&mut t, st);
    t.modify(Columns::new(1..), Alignment::right());
    t.to_string()
}
