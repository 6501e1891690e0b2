//! The flow-control and gRPC blocks of `--analyze` (issue 11), and the flow and gRPC cells of
//! a `calls` row.

use h2ledger_core::analysis::CallView;
use h2ledger_core::flow::FlowSide;
use h2ledger_core::grpc::GrpcSide;
use h2ledger_core::{AnalysisReport, Side};
use tabled::builder::Builder;
use tabled::settings::object::Columns;
use tabled::settings::Alignment;

use crate::Style;

fn opt_us(v: Option<f64>) -> String {
    match v {
        Some(x) => format!("{x:.0}"),
        None => "-".into(),
    }
}

fn opt_n(v: Option<u64>) -> String {
    v.map_or("-".into(), |x| x.to_string())
}

/// A labelled row: the cell of one side.
type Row<'a, T> = (&'a str, &'a dyn Fn(&T) -> String);

fn side_table<T>(
    st: Style,
    cols: &[(&str, &AnalysisReport)],
    get: impl Fn(&AnalysisReport, Side) -> &T,
    rows: &[Row<'_, T>],
) -> String {
    let mut b = Builder::default();
    let mut header = vec![String::new()];
    for (name, _) in cols {
        for s in Side::ALL {
            header.push(if name.is_empty() {
                s.name().to_string()
            } else {
                format!("{name}\n{}", s.name())
            });
        }
    }
    b.push_record(header);
    for (label, f) in rows {
        let mut r = vec![label.to_string()];
        for (_, a) in cols {
            for s in Side::ALL {
                r.push(f(get(a, s)));
            }
        }
        b.push_record(r);
    }
    let mut t = b.build();
    super::styled(&mut t, st);
    t.modify(Columns::new(1..), Alignment::right());
    t.to_string()
}

/// The flow-control block: per side, per scope.
pub fn flow_table(cols: &[(&str, &AnalysisReport)], st: Style) -> Option<String> {
    if cols.is_empty() {
        return None;
    }
    let rows: [Row<'_, FlowSide>; 10] = [
        ("flow-control stalls", &|f| f.stalls.to_string()),
        ("  limited by the stream window", &|f| {
            f.by_limit.stream.to_string()
        }),
        ("  limited by the connection window", &|f| {
            f.by_limit.connection.to_string()
        }),
        ("  limited by both", &|f| f.by_limit.both.to_string()),
        ("  never seen ending (unresolved)", &|f| {
            f.unresolved.to_string()
        }),
        ("time stalled, total (us)", &|f| {
            format!("{:.0}", f.stalled_us.total)
        }),
        ("time stalled p50 / p99 (us)", &|f| {
            format!(
                "{} / {}",
                opt_us(f.stalled_us.p50),
                opt_us(f.stalled_us.p99)
            )
        }),
        ("longest stall (us)", &|f| opt_us(f.stalled_us.max)),
        ("largest stream window", &|f| {
            f.max_window.stream.to_string()
        }),
        ("largest connection window", &|f| {
            f.max_window.connection.to_string()
        }),
    ];
    let mut out = side_table(st, cols, |a, s| a.flow_control.sides.get(s), &rows);
    let unknown: Vec<String> = cols
        .iter()
        .map(|(_, a)| a.flow_control.unknown_connections.to_string())
        .collect();
    out.push_str(&format!(
        "\nconnections with unknown windows (capture started mid-connection or lost frames): {}",
        unknown.join(" / ")
    ));
    Some(out)
}

/// The gRPC block: per side, per scope, then per method (whole capture).
pub fn grpc_table(cols: &[(&str, &AnalysisReport)], st: Style) -> Option<String> {
    if cols.iter().all(|(_, a)| a.grpc.calls == 0) {
        return None;
    }
    let rows: [Row<'_, GrpcSide>; 5] = [
        ("gRPC messages", &|g| g.messages.to_string()),
        ("message bytes", &|g| g.message_bytes.to_string()),
        ("message size p50 / p99 / max", &|g| {
            format!(
                "{} / {} / {}",
                opt_n(g.message_size.p50),
                opt_n(g.message_size.p99),
                opt_n(g.message_size.max)
            )
        }),
        ("compressed messages", &|g| g.compressed.to_string()),
        ("incomplete (bytes not captured)", &|g| {
            g.incomplete.to_string()
        }),
    ];
    let mut out = side_table(st, cols, |a, s| a.grpc.sides.get(s), &rows);
    let a = cols[0].1;
    if !a.grpc.methods.is_empty() {
        let table = super::fit_status(|max| {
            let mut b = Builder::default();
            b.push_record(
                [
                    "gRPC method",
                    "calls",
                    "status",
                    "messages\nc/s",
                    "message\nbytes c/s",
                    "call\np50 us",
                    "call\np99 us",
                ]
                .map(String::from),
            );
            for m in &a.grpc.methods {
                b.push_record([
                    super::cut(&m.method, 20, st),
                    m.calls.to_string(),
                    super::status_cell(&m.status, max, st),
                    format!("{}/{}", m.messages.client, m.messages.server),
                    format!("{}/{}", m.message_bytes.client, m.message_bytes.server),
                    opt_us(m.latency_us.p50),
                    opt_us(m.latency_us.p99),
                ]);
            }
            let mut t = b.build();
            super::styled(&mut t, st);
            t.modify(Columns::new(1..), Alignment::right());
            t.to_string()
        });
        out.push('\n');
        out.push_str(&table);
    }
    Some(out)
}

/// A duration of the `calls` table, nanoseconds as whole microseconds (decision 97); `-` when
/// not seen (negative).
pub fn us(ns: i64) -> String {
    if ns < 0 {
        "-".to_string()
    } else {
        format!("{:.0}", ns as f64 / 1e3)
    }
}

/// The cells of the flow-control and gRPC columns of the `calls` table (stalls c/s, stalled us
/// c/s, msgs c/s, server us / rtt us) for one call.
pub fn call_cells(c: &CallView<'_>) -> [String; 4] {
    let f = c.flow;
    let msgs = match c.grpc {
        Some(g) if g.grpc => format!("{}/{}", g.counts[0].messages, g.counts[1].messages),
        _ => "-".into(),
    };
    let (st, rtt) = c
        .grpc
        .map_or((-1, -1), |g| (g.server_time_ns, g.ping_rtt_ns));
    [
        format!("{}/{}", f.stalls[0], f.stalls[1]),
        format!("{}/{}", us(f.stalled_ns[0]), us(f.stalled_ns[1])),
        msgs,
        format!("{} / {}", us(st), us(rtt)),
    ]
}
