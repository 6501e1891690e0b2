//! A report with its phases as tables: the headline, then blocks of tables with the whole
//! capture's column and as many phases as fit [`TABLE_WIDTH`], the connections, the phases'
//! bounds and the capture facts; the warnings on the error writer.

use std::io::Write;

use h2ledger_core::LedgerReport;
use h2ledger_run::{secs, Report};
use h2ledger_tcp::Nanos;

use super::series::{series_heading, series_row};
use super::{
    analysis_table, connections_table, flow, footer, headline_tls, ledger_table, methods_table,
    wrap,
};
use crate::{time::fmt_rfc3339, tty, warn, Style, TABLE_WIDTH};

/// Phase columns per table block: a table of more phases is printed as consecutive blocks of
/// this many phases (the whole capture's column in the first), so only one block's reports are
/// held at a time and each block stays readable.
const PHASES_PER_TABLE: usize = 8;

/// The tables of one block of columns (the whole capture and/or some phases).
fn block_tables(
    cols: &[(String, &Report)],
    whole: &Report,
    first_block: bool,
    st: Style,
) -> String {
    let mut out = String::new();
    let lcols: Vec<(&str, &LedgerReport)> =
        cols.iter().map(|(n, f)| (n.as_str(), &f.ledger)).collect();
    out.push_str(&ledger_table(&lcols, st));
    out.push('\n');
    let acols: Vec<(&str, &Report)> = cols.iter().map(|(n, f)| (n.as_str(), *f)).collect();
    if let Some(t) = analysis_table(&acols, st) {
        out.push_str(&t);
        out.push('\n');
    }
    if first_block {
        if let Some(t) = whole.analysis.as_ref().and_then(|a| methods_table(a, st)) {
            out.push_str(&t);
            out.push('\n');
        }
    }
    let fcols: Vec<(&str, &h2ledger_core::AnalysisReport)> = cols
        .iter()
        .filter_map(|(n, f)| f.analysis.as_ref().map(|a| (n.as_str(), a)))
        .collect();
    for t in [flow::flow_table(&fcols, st), flow::grpc_table(&fcols, st)]
        .into_iter()
        .flatten()
    {
        out.push_str(&t);
        out.push('\n');
    }
    out
}

/// How phases are shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhaseLayout {
    /// Every table with a column per phase beside the whole capture's (`--split-at`, `--wide`).
    Columns,
    /// The whole capture's tables, then one row per phase (`--every`).
    Series,
}

/// Writes a run's report as tables on `out` (its phases, built one at a time by `phases`, laid
/// out as `layout` says), and its warnings on `err`.
pub fn write_tables(
    out: &mut dyn Write,
    err: &mut dyn Write,
    source: &str,
    whole: &Report,
    phases: &mut dyn Iterator<Item = Report>,
    layout: PhaseLayout,
    st: Style,
) {
    let report = &whole.ledger;
    // Method names, statuses and GOAWAY debug come from the capture (crate::tty).
    let mut out = tty::Safe::new(out);
    let _ = writeln!(
        out,
        "{}",
        wrap(
            &headline_tls(source, report, whole.tls.as_ref()),
            TABLE_WIDTH
        )
    );
    if let Some(b) = whole
        .findings
        .as_deref()
        .and_then(|f| super::findings::findings_block(f, whole.start, st))
    {
        let _ = write!(out, "{b}");
    }
    if layout == PhaseLayout::Series && report.connections > 0 {
        let _ = write!(
            out,
            "{}",
            block_tables(&[(String::new(), whole)], whole, true, st)
        );
        series(&mut out, whole, phases);
        return tail(&mut out, err, whole, &[], st);
    }
    let mut phases = phases.peekable();
    let split = phases.peek().is_some();
    let origin = whole.start.unwrap_or(0);
    // Each phase's name and bounds, for the lines under the tables.
    let mut spans: Vec<(String, Nanos, Nanos)> = Vec::new();
    let mut first_block = true;
    // Phases wait here until a table of them is printed: at most PHASES_PER_TABLE.
    let mut pending: Vec<Report> = Vec::new();
    while report.connections > 0 && (first_block || phases.peek().is_some() || !pending.is_empty())
    {
        while pending.len() < PHASES_PER_TABLE {
            match phases.next() {
                Some(f) => pending.push(f),
                None => break,
            }
        }
        // As many phases as fit in 100 columns (at least one).
        let mut k = pending.len();
        let text = loop {
            let mut cols: Vec<(String, &Report)> = Vec::new();
            if first_block {
                cols.push((
                    if split {
                        "all".to_string()
                    } else {
                        String::new()
                    },
                    whole,
                ));
            }
            for f in &pending[..k] {
                let (start, end) = (f.start.unwrap_or(0), f.end.unwrap_or(0));
                cols.push((
                    format!(
                        "{}\n{:.3}-{:.3} s",
                        f.name,
                        secs(start - origin),
                        secs(end - origin)
                    ),
                    f,
                ));
            }
            let text = block_tables(&cols, whole, first_block, st);
            let width = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
            // The whole capture's column alone if need be, then one phase a block.
            let least = usize::from(!first_block);
            if width <= TABLE_WIDTH || k <= least {
                break text;
            }
            k -= 1;
        };
        for f in pending.drain(..k) {
            spans.push((f.name.clone(), f.start.unwrap_or(0), f.end.unwrap_or(0)));
        }
        let _ = write!(out, "{text}");
        first_block = false;
    }
    tail(&mut out, err, whole, &spans, st);
}

/// The phases as a time series: a row each, the whole capture's first.
fn series(out: &mut dyn Write, whole: &Report, phases: &mut dyn Iterator<Item = Report>) {
    let origin = whole.start.unwrap_or(0);
    let _ = writeln!(out, "{}", series_heading());
    let _ = writeln!(
        out,
        "{}",
        series_row("all", &whole.ledger, whole.analysis.as_ref())
    );
    // The period: the longest phase (the last one, and a lone one, end with the capture and
    // may be shorter), named only when two phases or more show it.
    let (mut period, mut n): (Option<i64>, usize) = (None, 0);
    for p in phases {
        let (start, end) = (p.start.unwrap_or(0), p.end.unwrap_or(0));
        period = Some(period.map_or(end - start, |d: i64| d.max(end - start)));
        n += 1;
        let label = format!("{:.3}", secs(start - origin));
        let _ = writeln!(
            out,
            "{}",
            series_row(&label, &p.ledger, p.analysis.as_ref())
        );
    }
    if let Some(d) = period {
        let per = if n > 1 {
            crate::time::show_duration(std::time::Duration::from_nanos(d.max(0) as u64))
        } else {
            "--every period".to_string()
        };
        let _ = writeln!(
            out,
            "{}",
            wrap(
                &format!(
                    "a row per {per} from {} (start s: from the first packet); cli/srv: client/server; --wide: every table per phase",
                    fmt_rfc3339(origin)
                ),
                TABLE_WIDTH
            )
        );
    }
}

/// The connections, the phases' bounds, the capture facts and the warnings.
fn tail(
    out: &mut dyn Write,
    err: &mut dyn Write,
    whole: &Report,
    spans: &[(String, Nanos, Nanos)],
    st: Style,
) {
    let report = &whole.ledger;
    if report.connections > 0 {
        if let Some(t) = connections_table(report, st) {
            let _ = writeln!(out, "{t}");
        }
        if let Some(t) = super::ledger::processes_lines(report, st) {
            let _ = writeln!(out, "{t}");
        }
        for (name, start, end) in spans {
            let _ = writeln!(
                out,
                "{name}: {} to {}",
                fmt_rfc3339(*start),
                fmt_rfc3339(*end)
            );
        }
    }
    let (capture, tcp) = (
        whole.capture.clone().unwrap_or_default(),
        whole.tcp.unwrap_or_default(),
    );
    // Wrapped at spaces: a live capture's drop counters make it longer than a line.
    let _ = writeln!(
        out,
        "{}",
        wrap(&footer(&capture, &tcp, whole.drops.as_ref()), TABLE_WIDTH)
    );
    if let Some(l) = whole.tls.as_ref().and_then(super::tls_line) {
        let _ = writeln!(out, "{}", wrap(&l, TABLE_WIDTH));
    }
    let _ = out.flush();
    warn::write(err, &report.warnings, st);
    if let Some(a) = &whole.analysis {
        for g in a.goaways.iter().filter(|g| g.too_many_pings) {
            let _ = writeln!(
                err,
                "warning: connection {}: the {} sent GOAWAY ENHANCE_YOUR_CALM (debug \"{}\"): too many pings",
                g.conn,
                g.side,
                tty::escape(&g.debug)
            );
        }
    }
}
