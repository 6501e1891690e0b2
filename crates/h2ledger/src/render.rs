//! Output: a run's [`Report`] as tables (like the article's) or as JSON.

use h2ledger_core::{FrameClass, LedgerReport, Side};
use serde::Serialize;
use serde_json::Value;
use tabled::builder::Builder;
use tabled::settings::object::Columns;
use tabled::settings::{Alignment, Style};

use h2ledger_core::analysis::Percentiles;
use h2ledger_run::{CaptureStats, Drops, Report, TcpReport};

/// `v` as JSON, its keys in sorted order at every level: the published order of every JSON
/// object (docs/ledger.md), which serde_json's map keeps.
pub fn json_value<T: Serialize + ?Sized>(v: &T) -> Value {
    serde_json::to_value(v).expect("a report always serializes")
}

/// Writes the whole capture's report with its phases as the last key, one phase at a time:
/// each phase's report is built, written and dropped before the next (issue 7: memory follows
/// what is open).
pub fn write_json(
    out: &mut dyn std::io::Write,
    whole: &Report,
    phases: &mut dyn Iterator<Item = Report>,
) -> std::io::Result<()> {
    let head = serde_json::to_string_pretty(&json_value(whole)).expect("json");
    let mut phases = phases.peekable();
    if phases.peek().is_none() {
        return writeln!(out, "{head}");
    }
    // `head` ends with "\n}": continue the object with the phases.
    let body = head.strip_suffix('}').unwrap_or(&head).trim_end();
    write!(out, "{body},\n  \"phases\": [")?;
    for (i, f) in phases.enumerate() {
        let one = serde_json::to_string_pretty(&json_value(&f)).expect("json");
        write!(out, "{}\n    ", if i == 0 { "" } else { "," })?;
        for (k, line) in one.lines().enumerate() {
            if k > 0 {
                write!(out, "\n    ")?;
            }
            write!(out, "{line}")?;
        }
    }
    writeln!(out, "\n  ]\n}}")
}

/// `value` as one JSON line with `record` and `type` set to `kind`.
pub fn record_line(value: serde_json::Value, kind: &str) -> String {
    let mut v = value;
    if let Value::Object(m) = &mut v {
        m.insert("record".into(), Value::from(kind));
        m.insert("type".into(), Value::from(kind));
    }
    v.to_string()
}

/// JSON lines: one `phase` record per phase (built one at a time), then the `summary`.
pub fn write_jsonl(
    out: &mut dyn std::io::Write,
    whole: &Report,
    phases: &mut dyn Iterator<Item = Report>,
) -> std::io::Result<()> {
    for f in phases {
        writeln!(out, "{}", record_line(json_value(&f), "phase"))?;
    }
    writeln!(out, "{}", record_line(json_value(whole), "summary"))
}

/// Rows of the ledger table for one or more ledgers side by side (phases, or just one).
pub fn ledger_table(columns: &[(&str, &LedgerReport)]) -> String {
    ledger_table_with(columns, None)
}

/// [`ledger_table`], with a row of the calls a workload says it made (one per column).
pub fn ledger_table_with(columns: &[(&str, &LedgerReport)], calls_made: Option<&[u64]>) -> String {
    let mut b = Builder::default();
    let mut header = vec![String::new()];
    for (name, _) in columns {
        for s in Side::ALL {
            if name.is_empty() {
                header.push(s.name().to_string());
            } else {
                header.push(format!("{name}\n{}", s.name()));
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
    // Other PING payloads by label (hyper's own BDP/keepalive payload, keepalive zeros, ...).
    let mut labels: Vec<&str> = columns
        .iter()
        .flat_map(|(_, r)| [&r.sides.client, &r.sides.server])
        .flat_map(|t| t.ping_labels.keys().copied())
        .filter(|l| {
            *l != h2_frame_parser::ping::classify(&h2_frame_parser::ping::GRPC_GO_BDP)
                .map_or("", |k| k.label)
        })
        .collect();
    labels.sort_unstable();
    labels.dedup();
    for l in labels {
        b.push_record(row(&format!("  of which {l}"), &|r, s| {
            r.sides
                .get(s)
                .ping_labels
                .get(l)
                .copied()
                .unwrap_or(0)
                .to_string()
        }));
    }
    b.push_record(row("frames", &|r, s| {
        r.sides.get(s).frames.total().to_string()
    }));
    b.push_record(row("control frames", &|r, s| {
        r.sides.get(s).frames.control().to_string()
    }));
    b.push_record(row("writes", &|r, s| r.sides.get(s).writes.to_string()));
    b.push_record(row("bytes", &|r, s| r.sides.get(s).bytes.to_string()));
    // HTTP/2 over TLS: records per side (handshake ones too), as the JSON's `tls_records`.
    if columns
        .iter()
        .any(|(_, r)| r.sides.client.tls_records + r.sides.server.tls_records > 0)
    {
        b.push_record(row("tls_records", &|r, s| {
            r.sides.get(s).tls_records.to_string()
        }));
    }
    b.push_record(row("calls", &|r, s| match s {
        Side::Client => r.calls.to_string(),
        Side::Server => String::new(),
    }));
    if let Some(made) = calls_made {
        let mut r = vec!["calls made (workload)".to_string()];
        for (i, _) in columns.iter().enumerate() {
            r.push(made.get(i).map(|n| n.to_string()).unwrap_or_default());
            r.push(String::new());
        }
        b.push_record(r);
    }
    b.push_record(row("writes per call", &|r, s| {
        per(r.sides.get(s).writes, r.calls)
    }));
    b.push_record(row("frames per call", &|r, s| {
        per(r.sides.get(s).frames.total(), r.calls)
    }));
    b.push_record(row("control frames per call", &|r, s| {
        per(r.sides.get(s).frames.control(), r.calls)
    }));
    let mut t = b.build();
    crate::render::styled(&mut t);
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
            "client\nframes",
            "server\nframes",
            "client\nwrites",
            "server\nwrites",
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
    crate::render::styled(&mut t);
    let mut s = t.to_string();
    if r.per_connection_omitted > 0 {
        s.push_str(&format!(
            "\n... and {} more connections, in the totals but not listed (at most {} are)",
            r.per_connection_omitted,
            h2ledger_core::tally::MAX_CONN_DETAIL
        ));
    }
    Some(s)
}

/// The capture facts under the table: packets, drops, reassembly gaps.
pub fn footer(c: &CaptureStats, t: &TcpReport, drops: Option<&Drops>) -> String {
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
    if t.evicted > 0 {
        s.push_str(&format!(
            "; {} connections evicted to stay within --max-connections",
            t.evicted
        ));
    }
    s
}

/// Analysis rows per side, columns side by side (phases, or just one).
pub fn analysis_table(columns: &[(&str, &Report)]) -> Option<String> {
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
    let mut t = b.build();
    crate::render::styled(&mut t);
    t.modify(Columns::new(1..), Alignment::right());
    let mut out = t.to_string();
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
    crate::render::styled(&mut t);
    t.modify(Columns::new(1..), Alignment::right());
    out.push('\n');
    out.push_str(&t.to_string());
    Some(out)
}

/// Per-method totals of one report.
pub fn methods_table(a: &h2ledger_core::AnalysisReport) -> Option<String> {
    if a.methods.is_empty() {
        return None;
    }
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
        b.push_record([
            crate::render::cut(&m.method, 20),
            m.calls.to_string(),
            m.status
                .iter()
                .map(|(k, v)| format!("{}: {v}", crate::render::short_status(k)))
                .collect::<Vec<_>>()
                .join("\n"),
            opt(m.sides.client.frames_per_call),
            opt(m.sides.server.frames_per_call),
            opt(m.sides.client.writes_per_call),
            opt(m.sides.server.writes_per_call),
            opt(m.latency_us.p50),
            opt(m.latency_us.p99),
        ]);
    }
    let mut t = b.build();
    crate::render::styled(&mut t);
    t.modify(Columns::new(1..), Alignment::right());
    Some(t.to_string())
}

fn opt(v: Option<f64>) -> String {
    match v {
        Some(x) if x.fract() == 0.0 && x.abs() < 1e12 => format!("{x:.0}"),
        Some(x) => format!("{x:.2}"),
        None => "-".to_string(),
    }
}

/// Box drawing, or ASCII with `--ascii` or a locale that is not UTF-8.
pub fn styled(t: &mut tabled::Table) {
    if crate::warn::ascii() {
        t.with(Style::ascii());
    } else {
        t.with(Style::sharp());
    }
}

/// `s` in at most `w` characters: a longer one keeps its end (a method's name) after `…`
/// (`~` in ASCII). Control characters are first written `\xNN` (crate::tty), so that the
/// width counts what the terminal shows.
pub fn cut(s: &str, w: usize) -> String {
    let s = crate::tty::escape(s);
    let n = s.chars().count();
    if n <= w {
        return s.to_string();
    }
    let mark = if crate::warn::ascii() { "~" } else { "…" };
    let tail: String = s.chars().skip(n - (w - 1)).collect();
    format!("{mark}{tail}")
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
