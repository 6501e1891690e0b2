//! `h2ledger calls`: every call (stream) of a capture, as a table or JSON lines.

use h2ledger_core::analysis::CallView;

use crate::lines::{secs, CallLine, Out, Shape};

/// The `calls` listing, printed as calls are folded (about the order they end, within a second
/// of capture time), so that no row is held: the table's columns have fixed widths.
pub struct CallPrinter {
    pub out: Out,
    layout: Vec<(usize, &'static str, i32)>,
    /// Times are printed relative to this (the first packet), seconds since the epoch.
    origin: Option<f64>,
    pub calls: u64,
    /// `H2LEDGER_CALLS_VIA_SERDE` set: the JSON records by serde_json instead of the faster
    /// hand writer (a test compares the two outputs byte for byte).
    via_serde: bool,
}

/// Column headers and widths of the `--wide` table (a negative width aligns left and may cut
/// the text; numbers are never cut).
const WIDE: [(&str, i32); 16] = [
    ("conn", 4),
    ("stream", 6),
    ("start s", 10),
    ("method", -28),
    ("status", -14),
    ("1st byte us", 11),
    ("call us", 9),
    ("in fl", 5),
    ("client H/D/T/o", 14),
    ("server H/D/T/o", 14),
    ("writes c/s", 10),
    ("round c/s", 9),
    // Flow control and gRPC (crate::flowview::call_cells).
    ("stalls c/s", 10),
    ("stalled us c/s", 14),
    ("msgs c/s", 9),
    ("server us / rtt us", 18),
];

/// The default table, at most 100 columns: (index into [`WIDE`]'s cells, header, width).
const NARROW: [(usize, &str, i32); 11] = [
    (0, "conn", 4),
    (1, "stream", 6),
    (2, "start s", 8),
    (3, "method", -23),
    (4, "status", -8),
    (5, "1st us", 7),
    (6, "call us", 7),
    (8, "c H/D/T/o", 9),
    (9, "s H/D/T/o", 9),
    (10, "wr c/s", 6),
    (11, "rnd", 3),
];

/// What the columns mean (`calls --help` and docs/ledger.md say the same).
pub const LEGEND: &str = "Columns: conn and stream number the call; start s: seconds from the \
first packet; 1st us: request HEADERS to the first response frame; call us: to the response's \
END_STREAM; c/s: client/server; H/D/T/o: the call's HEADERS/DATA/TRAILERS/other frames sent by \
that side; wr: TCP writes that carried them; rnd: the call opened a BDP-estimator round of the \
client/server (y); in fl (--wide): other calls in flight at its start; stalls, stalled us, msgs, \
server us / rtt us (--wide): flow-control stalls, gRPC messages, server time and the \
connection's PING round trip. Durations in microseconds (us), like every table and the JSON \
keys; `-` is not seen.";

fn row(layout: &[(usize, &str, i32)], cells: &[String]) -> String {
    let mut line = String::new();
    for (i, (cell, _, w)) in layout.iter().enumerate() {
        if i > 0 {
            line.push(' ');
        }
        let c = &cells[*cell];
        let width = w.unsigned_abs() as usize;
        if *w < 0 {
            let c = crate::render::cut(c, width);
            line.push_str(&format!("{c:<width$}"));
        } else {
            line.push_str(&format!("{c:>width$}"));
        }
    }
    line.trim_end().to_string()
}

/// The layout of the `--wide` table.
fn wide() -> Vec<(usize, &'static str, i32)> {
    WIDE.iter()
        .enumerate()
        .map(|(i, (h, w))| (i, *h, *w))
        .collect()
}

impl CallPrinter {
    pub fn new(shape: Shape, wide_table: bool) -> Self {
        CallPrinter {
            out: Out::new(shape, "calls"),
            layout: if wide_table { wide() } else { NARROW.to_vec() },
            origin: None,
            calls: 0,
            via_serde: std::env::var_os("H2LEDGER_CALLS_VIA_SERDE").is_some(),
        }
    }

    pub fn set_origin(&mut self, t: h2ledger_tcp::Nanos) {
        if self.origin.is_none() {
            self.origin = Some(secs(t));
        }
    }

    fn line(&mut self, s: &str) {
        self.out.line(s);
    }

    pub fn call(&mut self, c: &CallView<'_>) {
        self.calls += 1;
        if self.out.shape != Shape::Table {
            let line = CallLine::new(c);
            if self.via_serde {
                self.out.record(&line);
                return;
            }
            self.out.record_with(|buf| {
                line.write_json(buf);
                true
            });
            return;
        }
        let narrow = self.layout.len() < WIDE.len();
        if self.calls == 1 {
            let mut head = vec![String::new(); WIDE.len()];
            for (i, h, _) in &self.layout {
                head[*i] = h.to_string();
            }
            let l = row(&self.layout, &head);
            self.line(&l);
        }
        let r = c.rec;
        // Durations in microseconds, like every other table and the JSON keys (decision 97).
        let us = crate::flowview::us;
        let f = |rel: usize| {
            r.frames[rel]
                .iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join("/")
        };
        let yn = |b: bool| if b { "y" } else { "-" };
        let base = [
            r.conn.to_string(),
            r.stream.to_string(),
            if narrow {
                format!("{:.3}", secs(r.start) - self.origin.unwrap_or(0.0))
            } else {
                format!("{:.6}", secs(r.start) - self.origin.unwrap_or(0.0))
            },
            c.method.to_string(),
            if narrow {
                crate::render::short_status(&c.status())
            } else {
                c.status()
            },
            us(r.first_byte),
            us(r.end),
            r.inflight.to_string(),
            f(0),
            f(1),
            format!("{}/{}", r.writes[0], r.writes[1]),
            format!(
                "{}/{}",
                yn(r.opened_round(h2ledger_core::Side::Client)),
                yn(r.opened_round(h2ledger_core::Side::Server))
            ),
        ];
        let cells: Vec<String> = base
            .into_iter()
            .chain(crate::flowview::call_cells(c))
            .collect();
        let l = row(&self.layout, &cells);
        self.line(&l);
    }

    /// After the last call (table): the count. The JSON shapes end with the summary record.
    pub fn finish(&mut self) {
        if self.out.shape == Shape::Table {
            let n = self.calls;
            self.line(&format!("{n} calls"));
        }
    }
}
