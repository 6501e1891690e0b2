//! `h2ledger calls`: every call (stream) of a capture, as a table or JSON lines.

use std::io::Write as _;

use h2ledger_core::analysis::{CallView, CALL_KINDS};
use serde_json::{json, Value};
use tabled::builder::Builder;
use tabled::settings::object::Columns;
use tabled::settings::{Alignment, Style};

fn secs(ns: i64) -> f64 {
    ns.div_euclid(1_000_000_000) as f64 + ns.rem_euclid(1_000_000_000) as f64 / 1e9
}

fn us(ns: i64) -> Value {
    if ns < 0 {
        Value::Null
    } else {
        json!(ns as f64 / 1000.0)
    }
}

/// One call as a JSON object.
pub fn call_json(c: &CallView<'_>) -> Value {
    let r = c.rec;
    let frames = |rel: usize| -> Value {
        CALL_KINDS
            .iter()
            .zip(r.frames[rel])
            .map(|(k, n)| (k.to_string(), json!(n)))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let mut v = json!({
        "conn": r.conn,
        "stream": r.stream,
        "method": c.method,
        "status": c.status(),
        "grpc_status": (r.grpc_status != h2ledger_core::analysis::NO_STATUS).then_some(r.grpc_status),
        "http_status": (r.http_status != 0).then_some(r.http_status),
        "start": secs(r.start),
        "end": (r.end >= 0).then(|| secs(r.start + r.end)),
        "first_byte_us": us(r.first_byte),
        "duration_us": us(r.end),
        "in_flight_at_start": r.inflight,
        "reset": r.reset(),
        "frames": {"client": frames(0), "server": frames(1)},
        "writes": {"client": r.writes[0], "server": r.writes[1]},
        "opened_bdp_round": {
            "client": r.opened_round(h2ledger_core::Side::Client),
            "server": r.opened_round(h2ledger_core::Side::Server),
        },
    });
    if let Value::Object(m) = &mut v {
        m.extend(crate::flowview::call_keys(c));
    }
    v
}

/// Prints calls as JSON lines; stops quietly on a closed pipe.
pub fn print_jsonl<'a>(calls: impl Iterator<Item = CallView<'a>>) {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for c in calls {
        if writeln!(out, "{}", call_json(&c)).is_err() {
            return;
        }
    }
    let _ = out.flush();
}

/// Prints calls as a table (times relative to `origin`, seconds since the epoch).
pub fn print_table<'a>(calls: impl Iterator<Item = CallView<'a>>, origin: f64) {
    let mut b = Builder::default();
    b.push_record(
        [
            "conn",
            "stream",
            "start s",
            "method",
            "status",
            "first byte ms",
            "call ms",
            "in flight",
            "client H/D/T/o",
            "server H/D/T/o",
            "writes c/s",
            "opened round c/s",
        ]
        .into_iter()
        .chain(crate::flowview::CALL_COLUMNS)
        .map(String::from),
    );
    let ms = |ns: i64| {
        if ns < 0 {
            "-".to_string()
        } else {
            format!("{:.3}", ns as f64 / 1e6)
        }
    };
    let mut n = 0u64;
    for c in calls {
        let r = c.rec;
        let f = |rel: usize| {
            r.frames[rel]
                .iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join("/")
        };
        let yn = |b: bool| if b { "y" } else { "-" };
        b.push_record(
            [
                r.conn.to_string(),
                r.stream.to_string(),
                format!("{:.6}", secs(r.start) - origin),
                c.method.to_string(),
                c.status(),
                ms(r.first_byte),
                ms(r.end),
                r.inflight.to_string(),
                f(0),
                f(1),
                format!("{}/{}", r.writes[0], r.writes[1]),
                format!(
                    "{}/{}",
                    yn(r.opened_round(h2ledger_core::Side::Client)),
                    yn(r.opened_round(h2ledger_core::Side::Server))
                ),
            ]
            .into_iter()
            .chain(crate::flowview::call_cells(&c)),
        );
        n += 1;
    }
    let mut t = b.build();
    t.with(Style::sharp());
    t.modify(Columns::new(5..), Alignment::right());
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let _ = writeln!(out, "{t}");
    let _ = writeln!(out, "{n} calls");
}
