//! The live view of `sniff --every`: at each tick, a header (wall clock, elapsed time, the
//! rates and drops of the period since the previous tick), the running ledger and that period
//! beside it, redrawn in place through crossterm on a terminal that can take it. Appended
//! otherwise (a pipe, a file, `TERM=dumb`) it is a time series: one heading, then a row per tick
//! with the period's calls, frames and writes per call, BDP pings, frames per second, bytes and
//! drops. With JSON lines, one `tick` record.

use std::io::Write;
use std::time::Instant;

use std::collections::BTreeMap;

use h2ledger_core::{ConnLedger, LedgerReport, SideTally, Sides};
use h2ledger_run::{CaptureStats, Drops, TcpReport, Tick};
use serde::Serialize;

use crate::table::{footer, ledger_table_live};
use crate::time::fmt_rfc3339;
use crate::{tty, Style};

/// How the ticks are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TickFormat {
    /// The table view (redrawn or appended).
    Table,
    /// One `tick` JSON line per tick.
    Jsonl,
    /// Nothing per tick (one JSON document at the end).
    None,
}

/// The live view's state between ticks.
pub struct LiveView {
    device: String,
    started: Instant,
    prev_at: Instant,
    prev_packets: u64,
    prev_frames: u64,
    format: TickFormat,
    redraw: bool,
    ticks: u64,
    /// Packets dropped by the previous tick (kernel and interface).
    prev_dropped: u64,
    style: Style,
}

/// The header's numbers (also the `live` object of a JSON tick line).
#[derive(Clone, Debug, Serialize)]
pub struct TickHeader {
    /// Calls per second in the period.
    pub calls_per_s: f64,
    /// Seconds since the sniff began.
    pub elapsed_s: f64,
    /// Frames per second in the period.
    pub frames_per_s: f64,
    /// Packets per second in the period.
    pub packets_per_s: f64,
    /// The period the rates and `last` cover: since the previous tick.
    pub period_s: f64,
    /// Wall clock, RFC 3339 UTC.
    pub time: String,
}

/// A JSON tick line: the running ledger's keys with the capture facts, the last period's
/// ledger and the header, in the published order.
#[derive(Serialize)]
struct TickLine<'a> {
    anomalies: &'a BTreeMap<String, u64>,
    calls: u64,
    capture: &'a CaptureStats,
    connections: u64,
    drops: Drops,
    last: &'a LedgerReport,
    live: &'a TickHeader,
    per_connection: &'a [ConnLedger],
    per_connection_omitted: u64,
    record: &'static str,
    sides: &'a Sides<SideTally>,
    tcp: TcpReport,
    #[serde(rename = "type")]
    kind: &'static str,
    upgraded_calls: u64,
    warnings: &'a [String],
}

impl LiveView {
    /// A view of the sniff on `device`; `redraw`: the output is a terminal that takes cursor
    /// movement (see [`can_redraw`]).
    pub fn new(device: &str, format: TickFormat, redraw: bool, style: Style) -> LiveView {
        let started = Instant::now();
        LiveView {
            device: device.to_string(),
            started,
            prev_at: started,
            prev_packets: 0,
            prev_frames: 0,
            format,
            redraw: format == TickFormat::Table && redraw,
            ticks: 0,
            prev_dropped: 0,
            style,
        }
    }

    /// At the end of a capture: the tick of the part of a period since the last tick, if a
    /// packet came in it (a `--duration` that is not a multiple of `--every`, Ctrl-C).
    pub fn last_tick(&mut self, out: &mut dyn Write, s: &Tick, drops: Drops) {
        if s.capture.packets > self.prev_packets {
            self.tick(out, s, drops);
        }
    }

    /// One tick: the view of now, and what changed since the previous one (`s`, from the
    /// session), with libpcap's drop counters.
    pub fn tick(&mut self, out: &mut dyn Write, s: &Tick, drops: Drops) {
        let now = Instant::now();
        let period = now.duration_since(self.prev_at).as_secs_f64().max(1e-9);
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let header = TickHeader {
            time: fmt_rfc3339((wall * 1e9) as i64),
            elapsed_s: now.duration_since(self.started).as_secs_f64(),
            period_s: period,
            packets_per_s: s.capture.packets.saturating_sub(self.prev_packets) as f64 / period,
            frames_per_s: s.frames.saturating_sub(self.prev_frames) as f64 / period,
            calls_per_s: s.last.calls as f64 / period,
        };
        match self.format {
            TickFormat::None => {}
            TickFormat::Jsonl => {
                let t = &s.total;
                let tick = TickLine {
                    anomalies: &t.anomalies,
                    calls: t.calls,
                    capture: &s.capture,
                    connections: t.connections,
                    drops,
                    last: &s.last,
                    live: &header,
                    per_connection: &t.per_connection,
                    per_connection_omitted: t.per_connection_omitted,
                    record: "tick",
                    sides: &t.sides,
                    tcp: s.tcp,
                    kind: "tick",
                    upgraded_calls: t.upgraded_calls,
                    warnings: &t.warnings,
                };
                let _ = crate::json::write_line(out, &tick);
            }
            TickFormat::Table => {
                let _ = if self.redraw {
                    let text = self.table(&header, wall, s, drops);
                    // Method names and statuses come from the capture (crate::tty).
                    let text = tty::escape(&text);
                    // One write per view: the terminal never shows half of one.
                    let mut buf = Vec::new();
                    let _ = redraw(&mut buf, &text, self.ticks == 0);
                    out.write_all(&buf)
                } else {
                    // Appended (a pipe, a file): a row per tick under one heading, a time
                    // series, never an escape sequence.
                    let mut t = String::new();
                    if self.ticks == 0 {
                        t.push_str(&format!(
                            "h2ledger sniff on {}: a row per tick, the period since the previous one (Ctrl-C to stop)\n{}\n",
                            self.device,
                            crate::table::live_heading()
                        ));
                    }
                    let dropped =
                        (drops.kernel + drops.interface).saturating_sub(self.prev_dropped);
                    self.prev_dropped = drops.kernel + drops.interface;
                    t.push_str(&crate::table::live_row(
                        &clock(wall).replace(" UTC", ""),
                        &s.last,
                        header.frames_per_s,
                        dropped,
                    ));
                    t.push('\n');
                    out.write_all(tty::escape(&t).as_bytes())
                };
            }
        }
        let _ = out.flush();
        self.prev_at = now;
        self.prev_packets = s.capture.packets;
        self.prev_frames = s.frames;
        self.ticks += 1;
    }

    fn table(&self, h: &TickHeader, wall: f64, s: &Tick, drops: Drops) -> String {
        let mut t = format!(
            "h2ledger sniff on {}  {}  elapsed {}  (Ctrl-C to stop)\n",
            self.device,
            clock(wall),
            elapsed(h.elapsed_s)
        );
        let period = format!("last {}", period(h.period_s));
        t.push_str(&format!(
            "{period}: {} packets/s, {} frames/s, {} calls/s;  drops: kernel {}, interface {}\n",
            rate(h.packets_per_s),
            rate(h.frames_per_s),
            rate(h.calls_per_s),
            drops.kernel,
            drops.interface
        ));
        let total = &s.total;
        if total.connections == 0 {
            t.push_str("no HTTP/2 seen yet (if this stays, check --port and the filter)\n");
        } else {
            let plural = if total.connections == 1 { "" } else { "s" };
            t.push_str(&format!(
                "so far: {} HTTP/2 connection{plural}, {}\n",
                total.connections,
                crate::table::calls_phrase(total)
            ));
        }
        t.push_str(&ledger_table_live(
            &[("total", total), ("last", &s.last)],
            self.style,
        ));
        t.push('\n');
        // The drops are in the header.
        t.push_str(&crate::table::wrap(
            &footer(&s.capture, &s.tcp, None),
            crate::TABLE_WIDTH,
        ));
        t.push('\n');
        t
    }
}

/// Whether a view can be redrawn in place: it goes to a terminal (`is_terminal`), and `term`
/// (the `TERM` variable) names one that takes cursor movement.
pub fn can_redraw(is_terminal: bool, term: Option<&str>) -> bool {
    is_terminal && term.is_some_and(|t| !t.is_empty() && t != "dumb")
}

/// Redraws `text` from the top left corner, clearing what the previous view left (the first
/// time, the whole screen), cut to the terminal's height so that nothing scrolls.
fn redraw(out: &mut impl Write, text: &str, first: bool) -> std::io::Result<()> {
    use crossterm::{cursor, queue, terminal};
    // A terminal of 0 rows (a pty nobody sized) is one of unknown height.
    let rows = match terminal::size() {
        Ok((_, r)) if r > 0 => usize::from(r).max(2),
        _ => usize::MAX,
    };
    let lines: Vec<&str> = text.lines().collect();
    if first {
        queue!(out, terminal::Clear(terminal::ClearType::All))?;
    }
    queue!(out, cursor::MoveTo(0, 0))?;
    let shown = if lines.len() < rows {
        lines.len()
    } else {
        rows - 1
    };
    for l in &lines[..shown] {
        write!(out, "{l}")?;
        queue!(out, terminal::Clear(terminal::ClearType::UntilNewLine))?;
        write!(out, "\r\n")?;
    }
    if shown < lines.len() {
        write!(
            out,
            "({} more lines: a taller terminal shows them)",
            lines.len() - shown
        )?;
    }
    queue!(out, terminal::Clear(terminal::ClearType::FromCursorDown))?;
    out.flush()
}

/// `12:41:07 UTC`.
fn clock(unix_s: f64) -> String {
    let s = (unix_s as i64).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02} UTC", s / 3600, s / 60 % 60, s % 60)
}

/// `0:01:23`, `27:00:05`.
fn elapsed(s: f64) -> String {
    let s = s as u64;
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// `1.0 s`, `250 ms` (a 1 s tick that came 1 ms early is `1.0 s`, not `999 ms`).
fn period(s: f64) -> String {
    if s < 0.95 {
        format!("{:.0} ms", s * 1e3)
    } else {
        format!("{s:.1} s")
    }
}

/// A rate: whole numbers from 10 on, one decimal below.
fn rate(r: f64) -> String {
    if r >= 10.0 || r == 0.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

/// `sniff --every` with `--workers N`: the workers' ticks gathered into one live view
/// (decision 400). Each worker ticks on its own clock and posts its session's tick
/// ([`TickParts::post`]); once every worker still running has posted one, the oldest tick
/// of each is merged (`h2ledger_run::merge::ticks`: what one session reading every packet
/// would show) and the view prints it, with the workers' drop counters added. At most
/// [`MAX_PENDING`] ticks wait per worker (a worker far ahead drops its oldest: the running
/// ledger is whole in each, and the period's ledger then covers less).
pub struct TickParts {
    state: std::sync::Mutex<PartsState>,
}

/// Ticks kept per worker while another worker has not posted its own.
pub const MAX_PENDING: usize = 8;

struct PartsState {
    view: LiveView,
    pending: Vec<std::collections::VecDeque<(Tick, Drops)>>,
    ended: Vec<bool>,
    /// The last drop counters of each worker.
    drops: Vec<Drops>,
}

impl TickParts {
    /// `n` workers' ticks printed by `view`.
    pub fn new(view: LiveView, n: usize) -> TickParts {
        TickParts {
            state: std::sync::Mutex::new(PartsState {
                view,
                pending: (0..n).map(|_| Default::default()).collect(),
                ended: vec![false; n],
                drops: vec![Drops::default(); n],
            }),
        }
    }

    /// Worker `k`'s tick, with its capture's drop counters; prints the merged tick when
    /// every running worker has posted.
    pub fn post(&self, k: usize, tick: Tick, drops: Drops, out: &mut dyn Write) {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let q = &mut g.pending[k];
        if q.len() >= MAX_PENDING {
            q.pop_front();
        }
        q.push_back((tick, drops));
        g.print_ready(out);
    }

    /// Worker `k` ended: the others' ticks no longer wait for it.
    pub fn ended(&self, k: usize, out: &mut dyn Write) {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        g.ended[k] = true;
        g.print_ready(out);
    }

    /// At the end: the workers' last ticks (each session's tick after its drain) as one
    /// ([`LiveView::last_tick`]), with their final drop counters.
    pub fn last(&self, ticks: Vec<(Tick, Drops)>, out: &mut dyn Write) {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (tick, drops) = merged(ticks);
        g.view.last_tick(out, &tick, drops);
    }
}

impl PartsState {
    fn print_ready(&mut self, out: &mut dyn Write) {
        loop {
            let waiting = self
                .pending
                .iter()
                .zip(&self.ended)
                .any(|(q, e)| q.is_empty() && !e);
            if waiting || self.pending.iter().all(|q| q.is_empty()) {
                return;
            }
            let mut parts = Vec::with_capacity(self.pending.len());
            for (k, q) in self.pending.iter_mut().enumerate() {
                if let Some((t, d)) = q.pop_front() {
                    self.drops[k] = d;
                    parts.push((t, d));
                }
            }
            let (tick, _) = merged(parts);
            let drops = self.drops.iter().fold(Drops::default(), |a, d| add(a, *d));
            self.view.tick(out, &tick, drops);
        }
    }
}

fn add(a: Drops, d: Drops) -> Drops {
    Drops {
        received: a.received + d.received,
        kernel: a.kernel + d.kernel,
        interface: a.interface + d.interface,
    }
}

fn merged(parts: Vec<(Tick, Drops)>) -> (Tick, Drops) {
    let drops = parts.iter().fold(Drops::default(), |a, (_, d)| add(a, *d));
    let tick = h2ledger_run::merge::ticks(parts.into_iter().map(|(t, _)| t).collect());
    (tick, drops)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_fields() {
        assert_eq!(clock(1_796_035_824.66), "10:50:24 UTC");
        assert_eq!(elapsed(83.9), "0:01:23");
        assert_eq!(elapsed(97_205.0), "27:00:05");
        assert_eq!(period(1.0004), "1.0 s");
        assert_eq!(period(0.25), "250 ms");
        assert_eq!(period(0.999), "1.0 s");
        assert_eq!(
            (rate(0.0), rate(2.5), rate(1234.4)),
            ("0".into(), "2.5".into(), "1234".into())
        );
    }
}
