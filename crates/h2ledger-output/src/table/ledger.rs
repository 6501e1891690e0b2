//! The ledger table (frames, writes and bytes per side, per scope), the headline above it and
//! the connections and capture facts under it.

use h2ledger_core::{FrameClass, LedgerReport, Side};
use h2ledger_run::{CaptureStats, Drops, TcpReport};
use tabled::builder::Builder;
use tabled::settings::object::Columns;
use tabled::settings::Alignment;

use crate::Style;

/// Rows of the ledger table for one or more ledgers side by side (phases, or just one).
pub fn ledger_table(columns: &[(&str, &LedgerReport)], st: Style) -> String {
    ledger_table_with(columns, None, st)
}

/// [`ledger_table`] for the live view: each count column at least [`LIVE_MIN_WIDTH`] wide, so
/// that the columns do not move while the counts grow (up to 9,999,999).
pub fn ledger_table_live(columns: &[(&str, &LedgerReport)], st: Style) -> String {
    build(columns, None, st, LIVE_MIN_WIDTH)
}

/// The live view's count columns, with their padding.
pub const LIVE_MIN_WIDTH: usize = 9;

/// [`ledger_table`], with a row of the calls a workload says it made (one per column).
pub fn ledger_table_with(
    columns: &[(&str, &LedgerReport)],
    calls_made: Option<&[u64]>,
    st: Style,
) -> String {
    build(columns, calls_made, st, 0)
}

fn build(
    columns: &[(&str, &LedgerReport)],
    calls_made: Option<&[u64]>,
    st: Style,
    min_width: usize,
) -> String {
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
    if min_width > 0 {
        // Each count column at least `min_width` wide with its padding: its header's first
        // line is padded (the numbers stay right-aligned under it).
        for h in header.iter_mut().skip(1) {
            let (first, rest) = h.split_once('\n').unwrap_or((h.as_str(), ""));
            let first = format!("{first:<w$}", w = min_width.saturating_sub(2));
            *h = if rest.is_empty() {
                first
            } else {
                format!("{first}\n{rest}")
            };
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
    // PING payloads by label, under the PING row: grpc-go's BDP ping (the JSON's `bdp_pings`,
    // spelt as `frames` and `ping_labels` spell it), then hyper's own BDP/keepalive payload,
    // keepalive zeros, ...
    let bdp = h2_frame_parser::ping::classify(&h2_frame_parser::ping::GRPC_GO_BDP)
        .map_or("grpc-go-bdp", |k| k.label);
    let mut labels: Vec<&str> = columns
        .iter()
        .flat_map(|(_, r)| [&r.sides.client, &r.sides.server])
        .flat_map(|t| t.ping_labels.keys().copied())
        .filter(|l| *l != bdp)
        .collect();
    labels.sort_unstable();
    labels.dedup();
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
        if c == FrameClass::Ping {
            b.push_record(row(&format!("  of which {bdp}"), &|r, s| {
                r.sides.get(s).bdp_pings.to_string()
            }));
            for l in &labels {
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
        }
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
    // Every call, the upgraded HTTP/1.1 requests too (the JSON's `calls` + `upgraded_calls`).
    b.push_record(row("calls", &|r, s| match s {
        Side::Client => r.all_calls().to_string(),
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
        per(r.sides.get(s).writes, r.all_calls())
    }));
    // All the connections' frames over the calls (the methods table's "frames /call" counts a
    // call's own).
    b.push_record(row("all frames per call", &|r, s| {
        per(r.sides.get(s).frames.total(), r.all_calls())
    }));
    b.push_record(row("control frames per call", &|r, s| {
        per(r.sides.get(s).frames.control(), r.all_calls())
    }));
    let mut t = b.build();
    super::styled(&mut t, st);
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
    headline_tls(source, r, None)
}

/// [`headline`], saying what TLS hid: connections that offered or chose h2 but had no key,
/// and why (no key log; a key log without their client randoms).
pub fn headline_tls(
    source: &str,
    r: &LedgerReport,
    tls: Option<&h2ledger_tls::TlsReport>,
) -> String {
    let conns = r.connections;
    let plural = if conns == 1 { "" } else { "s" };
    let mut s = format!(
        "{source}: {conns} HTTP/2 connection{plural}, {}",
        calls_phrase(r)
    );
    let hidden = tls.map_or(0, |t| t.without_key_h2);
    if hidden > 0 {
        let t = tls.expect("hidden > 0");
        let them = if hidden == 1 { "it" } else { "them" };
        let why = if t.keylog.key_lines == 0 {
            format!("no key log: pass --keylog FILE (SSLKEYLOGFILE=FILE for curl, OpenSSL, Firefox, Chrome; docs/ledger.md, \"HTTP/2 over TLS\") to decrypt {them}")
        } else {
            format!(
                "the key log has no secret for any of {} {hidden} client random{} ({} in the key log)",
                if hidden == 1 { "its" } else { "their" },
                if hidden == 1 { "" } else { "s" },
                t.keylog_randoms
            )
        };
        s.push_str(&format!(
            "; {} {hidden} TLS connection{} with ALPN h2 not decrypted: {why}",
            if conns == 0 { "but" } else { "and" },
            if hidden == 1 { "" } else { "s" },
        ));
    } else if conns == 0 {
        s.push_str(" (no HTTP/2 seen: check --port / the filter, or that the capture holds HTTP/2 over cleartext TCP)");
    }
    s
}

/// `3 calls (2 by h2c upgrade)`, `1 call`: every call a user made.
pub fn calls_phrase(r: &LedgerReport) -> String {
    let n = r.all_calls();
    let mut s = format!("{n} call{}", if n == 1 { "" } else { "s" });
    if r.upgraded_calls > 0 {
        s.push_str(&format!(" ({} by h2c upgrade)", r.upgraded_calls));
    }
    s
}

/// Per-connection lines under the table (only when there is more than one).
pub fn connections_table(r: &LedgerReport, st: Style) -> Option<String> {
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
            c.all_calls().to_string(),
            c.sides.client.frames.total().to_string(),
            c.sides.server.frames.total().to_string(),
            c.sides.client.writes.to_string(),
            c.sides.server.writes.to_string(),
        ]);
    }
    let mut t = b.build();
    super::styled(&mut t, st);
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

/// `sniff`: the processes at each connection's ends (from /proc), a line per connection with
/// any, `conn N: client COMM[PID] CGROUP > server COMM[PID] CGROUP` (`?` for an end not
/// found), each cut to 100 columns; `None` when no connection has one (and in `replay`).
pub fn processes_lines(r: &LedgerReport, st: Style) -> Option<String> {
    let one = |o: &Option<h2ledger_core::tally::Owner>| match o {
        Some(o) => {
            let mut s = format!("{}[{}]", crate::tty::escape(&o.comm), o.pid);
            if let Some(c) = &o.cgroup {
                s.push(' ');
                s.push_str(&crate::tty::escape(c));
            }
            s
        }
        None => "?".to_string(),
    };
    let lines: Vec<String> = r
        .per_connection
        .iter()
        .filter_map(|c| {
            let p = c.process.as_ref().filter(|p| !p.is_empty())?;
            let l = format!(
                "conn {}: client {} > server {}",
                c.id,
                one(&p.client),
                one(&p.server)
            );
            Some(super::cut_end(&l, 100, st))
        })
        .collect();
    (!lines.is_empty()).then(|| format!("processes (from /proc):\n{}", lines.join("\n")))
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

/// The table's TLS line, when TLS was seen.
pub fn tls_line(r: &h2ledger_tls::TlsReport) -> Option<String> {
    (r.connections > 0).then(|| {
        format!(
            "TLS: {} connections, {} decrypted, {} without key, {} not h2, {} without handshake; {} records, {} failed authentication; key log: {} key lines, {} skipped",
            r.connections,
            r.decrypted,
            r.without_key,
            r.not_h2,
            r.no_handshake + r.truncated_handshake,
            r.records,
            r.auth_failures,
            r.keylog.key_lines,
            r.keylog.skipped_lines
        )
    })
}

#[cfg(test)]
mod tests {
    /// Live, the count columns do not widen as counts grow (issue 20, item 10): a table of
    /// zeros is as wide as one of 7-digit counts.
    #[test]
    fn live_columns_keep_their_width() {
        let zero = h2ledger_core::LedgerReport::default();
        let mut big = h2ledger_core::LedgerReport::default();
        big.sides.client.writes = 9_999_999;
        big.calls = 9_999_999;
        let width = |r: &h2ledger_core::LedgerReport| {
            let t = super::ledger_table_live(&[("total", r), ("last", r)], crate::Style::default());
            t.lines().map(|l| l.chars().count()).max().unwrap()
        };
        assert_eq!(width(&zero), width(&big));
    }
}
