//! Output: the ledger as a table (like the article's) or as JSON.

use h2ledger_core::{FrameClass, LedgerReport, Side};
use serde_json::{json, Value};
use tabled::builder::Builder;
use tabled::settings::object::Columns;
use tabled::settings::{Alignment, Style};

use crate::pipeline::CaptureStats;
use h2ledger_tcp::Stats as TcpStats;

/// The JSON object of one ledger: the report plus capture and TCP facts.
pub fn ledger_json(
    r: &LedgerReport,
    capture: Option<&CaptureStats>,
    tcp: Option<&TcpStats>,
) -> Value {
    let mut v = serde_json::to_value(r).expect("a ledger always serializes");
    if let Value::Object(m) = &mut v {
        if let Some(c) = capture {
            m.insert(
                "capture".into(),
                serde_json::to_value(c).expect("serializes"),
            );
        }
        if let Some(t) = tcp {
            m.insert("tcp".into(), tcp_json(t));
        }
    }
    v
}

pub fn tcp_json(t: &TcpStats) -> Value {
    json!({
        "segments": t.tcp_segments,
        "retransmissions": t.retransmissions,
        "overlaps": t.overlaps,
        "out_of_order": t.out_of_order,
        "gaps": t.gaps,
        "gap_bytes": t.gap_bytes,
        "truncated": t.truncated,
        "bound_hits": t.bound_hits,
        "evicted": t.evicted,
        "data_after_rst": t.data_after_rst,
    })
}

/// Rows of the ledger table for one or more ledgers side by side (phases, or just one).
pub fn ledger_table(columns: &[(&str, &LedgerReport)]) -> String {
    let mut b = Builder::default();
    let mut header = vec![String::new()];
    for (name, _) in columns {
        for s in Side::ALL {
            if name.is_empty() {
                header.push(s.name().to_string());
            } else {
                header.push(format!("{name} {}", s.name()));
            }
        }
    }
    b.push_record(header);
    let row = |label: &str, f: &dyn Fn(&LedgerReport, Side) -> String| {
        let mut r = vec![label.to_string()];
        for (_, rep) in columns {
            for s in Side::ALL {
                r.push(f(rep, s));
            }
        }
        r
    };
    for c in FrameClass::ALL {
        // Rows that are zero everywhere are noise, except the ones the article reads.
        let always = matches!(
            c,
            FrameClass::Headers
                | FrameClass::Trailers
                | FrameClass::Data
                | FrameClass::WindowUpdate
                | FrameClass::Ping
                | FrameClass::PingAck
                | FrameClass::Settings
                | FrameClass::SettingsAck
        );
        let any = columns
            .iter()
            .any(|(_, r)| r.sides.client.frames.get(c) + r.sides.server.frames.get(c) > 0);
        if always || any {
            b.push_record(row(c.name(), &|r, s| {
                r.sides.get(s).frames.get(c).to_string()
            }));
        }
    }
    b.push_record(row("  of which bdpPing", &|r, s| {
        r.sides.get(s).bdp_pings.to_string()
    }));
    b.push_record(row("frames", &|r, s| {
        r.sides.get(s).frames.total().to_string()
    }));
    b.push_record(row("control frames", &|r, s| {
        r.sides.get(s).frames.control().to_string()
    }));
    b.push_record(row("writes", &|r, s| r.sides.get(s).writes.to_string()));
    b.push_record(row("bytes", &|r, s| r.sides.get(s).bytes.to_string()));
    b.push_record(row("calls", &|r, s| match s {
        Side::Client => r.calls.to_string(),
        Side::Server => String::new(),
    }));
    b.push_record(row("writes per call", &|r, s| {
        per(r.sides.get(s).writes, r.calls)
    }));
    b.push_record(row("frames per call", &|r, s| {
        per(r.sides.get(s).frames.total(), r.calls)
    }));
    let mut t = b.build();
    t.with(Style::sharp());
    t.modify(Columns::new(1..), Alignment::right());
    t.to_string()
}

fn per(n: u64, calls: u64) -> String {
    if calls == 0 {
        "-".to_string()
    } else {
        format!("{:.2}", n as f64 / calls as f64)
    }
}

/// A one-line summary above the table.
pub fn headline(source: &str, r: &LedgerReport) -> String {
    let conns = r.connections;
    let plural = if conns == 1 { "" } else { "s" };
    let mut s = format!(
        "{source}: {conns} HTTP/2 connection{plural}, {} calls",
        r.calls
    );
    if conns == 0 {
        s.push_str(" (no HTTP/2 seen: check --port / the filter, or that the capture holds HTTP/2 over cleartext TCP)");
    }
    s
}

/// Per-connection lines under the table (only when there is more than one).
pub fn connections_table(r: &LedgerReport) -> Option<String> {
    if r.per_connection.len() < 2 {
        return None;
    }
    let mut b = Builder::default();
    b.push_record(
        [
            "conn",
            "client",
            "server",
            "calls",
            "client frames",
            "server frames",
            "client writes",
            "server writes",
        ]
        .map(String::from),
    );
    for c in &r.per_connection {
        b.push_record([
            c.id.to_string(),
            c.client.clone(),
            c.server.clone(),
            c.calls.to_string(),
            c.sides.client.frames.total().to_string(),
            c.sides.server.frames.total().to_string(),
            c.sides.client.writes.to_string(),
            c.sides.server.writes.to_string(),
        ]);
    }
    let mut t = b.build();
    t.with(Style::sharp());
    Some(t.to_string())
}

/// The capture facts under the table: packets, drops, reassembly gaps.
pub fn footer(c: &CaptureStats, t: &TcpStats, drops: Option<&crate::live::Drops>) -> String {
    let mut s = format!(
        "{} packets, {} TCP segments; {} retransmissions; {} reassembly gaps ({} bytes)",
        c.packets, c.tcp_segments, t.retransmissions, t.gaps, t.gap_bytes
    );
    if let Some(d) = drops {
        s.push_str(&format!(
            "; dropped by the kernel: {}, by the interface: {}",
            d.kernel, d.interface
        ));
    }
    s
}
