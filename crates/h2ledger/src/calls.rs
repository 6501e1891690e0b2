//! `h2ledger calls`: every call (stream) of a capture, as a table or JSON lines.

use h2ledger_core::analysis::CallView;

use crate::lines::{CallLine, Out, Shape};

fn secs(ns: i64) -> f64 {
    ns.div_euclid(1_000_000_000) as f64 + ns.rem_euclid(1_000_000_000) as f64 / 1e9
}

/// The `calls` listing, printed as calls are folded (about the order they end, within a second
/// of capture time), so that no row is held: the table's columns have fixed widths.
pub struct CallPrinter {
    pub out: Out,
    /// Times are printed relative to this (the first packet), seconds since the epoch.
    origin: Option<f64>,
    pub calls: u64,
}

/// Column headers and widths of the table (a negative width aligns left).
const COLUMNS: [(&str, i32); 16] = [
    ("conn", 4),
    ("stream", 6),
    ("start s", 10),
    ("method", -28),
    ("status", -14),
    ("1st byte ms", 11),
    ("call ms", 9),
    ("in fl", 5),
    ("client H/D/T/o", 14),
    ("server H/D/T/o", 14),
    ("writes c/s", 10),
    ("round c/s", 9),
    // Flow control and gRPC (crate::flowview::call_cells).
    ("stalls c/s", 10),
    ("stalled ms c/s", 14),
    ("msgs c/s", 9),
    ("server ms / rtt ms", 18),
];

fn row(cells: &[String]) -> String {
    let mut line = String::new();
    for (i, ((_, w), c)) in COLUMNS.iter().zip(cells).enumerate() {
        if i > 0 {
            line.push(' ');
        }
        let w = w.unsigned_abs() as usize;
        let c = fit(c, w);
        if COLUMNS[i].1 < 0 {
            line.push_str(&format!("{c:<w$}"));
        } else {
            line.push_str(&format!("{c:>w$}"));
        }
    }
    line.trim_end().to_string()
}

/// `s` in at most `w` characters: a longer one keeps its end (a method's name) after `…`.
fn fit(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n <= w {
        return s.to_string();
    }
    let tail: String = s.chars().skip(n - (w - 1)).collect();
    format!("…{tail}")
}

impl CallPrinter {
    pub fn new(shape: Shape) -> Self {
        CallPrinter {
            out: Out::new(shape, "calls"),
            origin: None,
            calls: 0,
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
            self.out.record(&CallLine::new(c));
            return;
        }
        if self.calls == 1 {
            let head: Vec<String> = COLUMNS.iter().map(|(h, _)| h.to_string()).collect();
            self.line(&row(&head));
        }
        let r = c.rec;
        let ms = |ns: i64| {
            if ns < 0 {
                "-".to_string()
            } else {
                format!("{:.3}", ns as f64 / 1e6)
            }
        };
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
            format!("{:.6}", secs(r.start) - self.origin.unwrap_or(0.0)),
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
        ];
        let cells: Vec<String> = base
            .into_iter()
            .chain(crate::flowview::call_cells(c))
            .collect();
        let l = row(&cells);
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
