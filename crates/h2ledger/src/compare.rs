//! `h2ledger compare A B`: two captures' ledgers side by side, with the difference per row:
//! "what changed on the wire between these two runs".

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use h2ledger_core::{FrameClass, LedgerReport, Side, Tally};
use tabled::builder::Builder;
use tabled::settings::object::Columns;
use tabled::settings::Alignment;

use crate::input::SavedCapture;
use crate::keys::WithKeys as _;
use crate::pipeline::Pipeline;
use crate::{render, FilterArgs, Format};

#[derive(Args)]
pub struct CompareArgs {
    /// The capture before (A): pcap or pcapng, also gzip- or zstd-compressed
    #[arg(value_name = "A")]
    a: String,
    /// The capture after (B)
    #[arg(value_name = "B")]
    b: String,
    /// A table (A, B and B - A per side), or `{"a": ledger, "b": ledger}`
    #[arg(short = 'T', long, value_enum, default_value_t = Format::Table)]
    format: Format,
    #[command(flatten)]
    filter: FilterArgs,
}

/// One capture's ledger and its JSON (with capture, TCP and TLS facts).
struct One {
    name: String,
    report: LedgerReport,
    json: serde_json::Value,
    damaged: bool,
}

fn load(file: &str, filter: &FilterArgs) -> Result<One> {
    let bpf = crate::source::bpf(filter);
    let mut cap = SavedCapture::open(file, bpf.as_deref())?;
    let linktype = cap.linktype;
    let keys = crate::keys::load(filter.keylog.as_deref(), Some(file), false)?;
    let mut p =
        Pipeline::with_max_connections(Tally::new(), filter.max_connections).with_keys(keys);
    let read = cap.for_each(|ts, data| {
        p.packet(linktype, ts, data);
        true
    });
    p.finish();
    let mut report = crate::ledger_report(&p, &p.ledger.observer);
    if let Err(e) = &read {
        report.warnings.push(format!(
            "{e:#}; the ledger covers the packets before that point"
        ));
    }
    crate::note_empty(&mut report, &p, bpf.as_deref());
    let json = render::json_value(&h2ledger_run::Report {
        name: String::new(),
        start: p.stats.first,
        end: p.stats.last,
        ledger: report.clone(),
        analysis: None,
        capture: Some(p.stats.clone()),
        tcp: Some((&p.reasm.stats()).into()),
        tls: Some(p.tls.report()),
        drops: None,
    });
    Ok(One {
        name: cap.name.clone(),
        report,
        json,
        damaged: read.is_err(),
    })
}

fn delta(a: u64, b: u64) -> String {
    let d = b as i128 - a as i128;
    let pct = if a == 0 {
        String::new()
    } else {
        format!(" ({:+.0}%)", d as f64 * 100.0 / a as f64)
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
fn table(a: &LedgerReport, b: &LedgerReport) -> String {
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
        }
    }
    t.push_record(count_row("  of which bdpPing", &|r, s| {
        r.sides.get(s).bdp_pings
    }));
    t.push_record(count_row("frames", &|r, s| r.sides.get(s).frames.total()));
    t.push_record(count_row("writes", &|r, s| r.sides.get(s).writes));
    t.push_record(count_row("bytes", &|r, s| r.sides.get(s).bytes));
    let per_row = |label: &str, f: &dyn Fn(&LedgerReport, Side) -> u64| {
        let mut r = vec![label.to_string()];
        for s in Side::ALL {
            let (x, y) = (per_call(f(a, s), a.calls), per_call(f(b, s), b.calls));
            r.extend([fmt_per(x), fmt_per(y), delta_per(x, y)]);
        }
        r
    };
    t.push_record(per_row("writes per call", &|r, s| r.sides.get(s).writes));
    t.push_record(per_row("frames per call", &|r, s| {
        r.sides.get(s).frames.total()
    }));
    t.push_record(per_row("control frames per call", &|r, s| {
        r.sides.get(s).frames.control()
    }));
    let mut t = t.build();
    render::styled(&mut t);
    t.modify(Columns::new(1..), Alignment::right());
    t.to_string()
}

pub fn compare(a: CompareArgs) -> Result<ExitCode> {
    let x = load(&a.a, &a.filter)?;
    let y = load(&a.b, &a.filter)?;
    let code = if x.damaged || y.damaged {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    };
    let mut out = crate::report_out();
    use std::io::Write as _;
    match a.format {
        Format::Json => {
            let v = serde_json::json!({"a": x.json, "b": y.json});
            let _ = writeln!(out, "{}", serde_json::to_string_pretty(&v).expect("json"));
        }
        Format::Jsonl => {
            let v = serde_json::json!({"a": x.json, "b": y.json});
            let _ = writeln!(out, "{}", render::record_line(v, "summary"));
        }
        _ => {
            // Method names and statuses come from the captures (crate::tty).
            let mut out = crate::tty::Safe::new(&mut out);
            let _ = writeln!(out, "A = {}", render::headline(&x.name, &x.report));
            let _ = writeln!(out, "B = {}", render::headline(&y.name, &y.report));
            let _ = writeln!(
                out,
                "calls: {} -> {} ({}); connections: {} -> {} ({})",
                x.report.calls,
                y.report.calls,
                delta(x.report.calls, y.report.calls),
                x.report.connections,
                y.report.connections,
                delta(x.report.connections, y.report.connections)
            );
            let _ = writeln!(out, "{}", table(&x.report, &y.report));
            let _ = out.flush();
            for (tag, one) in [("A", &x), ("B", &y)] {
                let w: Vec<String> = one
                    .report
                    .warnings
                    .iter()
                    .map(|w| format!("{tag}: {w}"))
                    .collect();
                crate::warn::print(&w);
            }
        }
    }
    Ok(code)
}
