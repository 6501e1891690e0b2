//! `h2ledger sniff`: the replay pipeline on live packets.

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use h2ledger_core::LedgerReport;
use serde::Serialize;

use crate::keys::WithKeys as _;
use crate::phases::{self, Obs};
use crate::pipeline::Pipeline;
use crate::source::{self, CaptureArgs};
use crate::{
    ledger_report, note_empty, open_plot, print_full, render, write_plot, AnalysisArgs, FilterArgs,
    Format,
};

#[derive(Args)]
pub struct SniffArgs {
    #[command(flatten)]
    pub capture: CaptureArgs,
    /// Stop after N HTTP/2 frames (`-c` counts packets, like tcpdump)
    #[arg(long, value_name = "N")]
    pub max_frames: Option<u64>,
    /// Reprint the running ledger every D, the last D beside the total (redrawn in place on a
    /// terminal, appended otherwise; with --format jsonl one `tick` record per line); the final
    /// ledger is then cut into phases of D, like `replay --every`
    #[arg(long, value_parser = crate::durations::parse_period, value_name = "D", conflicts_with = "split_at")]
    pub every: Option<Duration>,
    /// Output format
    #[arg(short = 'T', long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    #[command(flatten)]
    pub filter: FilterArgs,
}

/// The packets of a sniff go through the pipeline; each tick reprints the running ledger.
struct Sniffer<'a> {
    p: &'a mut Pipeline<Obs>,
    format: Format,
    max_frames: Option<u64>,
    ticker: Option<Ticker>,
}

impl source::Hooks for Sniffer<'_> {
    fn packet(&mut self, linktype: i32, ts: h2ledger_tcp::Nanos, data: &[u8]) -> bool {
        self.p.ledger.observer.set_origin(ts);
        self.p.packet(linktype, ts, data);
        crate::progress::frames(self.p.ledger.observer.frames());
        self.max_frames
            .is_none_or(|n| self.p.ledger.observer.frames() < n)
    }

    fn tick(&mut self, _at: h2ledger_tcp::Nanos, drops: Option<&mut crate::live::Drops>) {
        if let (Some(d), Some(t)) = (drops, self.ticker.as_mut()) {
            t.tick(self.p, self.format, d);
        }
    }
}

pub fn sniff(a: SniffArgs) -> Result<ExitCode> {
    let mut filter = a.filter.clone();
    let input = a.capture.input(None, &mut filter, Some("lo"))?;
    let bpf = source::bpf(&filter);
    // Before the capture opens and gives up privileges: the key log stays open.
    let keys = source::keys(&input, &filter)?;
    // Also before: the plot file is created as root, like the -w file.
    let plot = a.analysis.plot.as_deref().map(open_plot).transpose()?;
    let mut p = Pipeline::with_max_connections(
        crate::observers(&a.analysis.wanted(a.every)),
        filter.max_connections,
    )
    .with_keys(keys);
    let device = match &input {
        source::Input::Device(d) => d.clone(),
        source::Input::File(f) => f.clone(),
    };
    let mut hooks = Sniffer {
        p: &mut p,
        format: a.format,
        max_frames: a.max_frames,
        ticker: a.every.map(|_| Ticker::new(&device, a.format)),
    };
    let out =
        source::run(&input, &a.capture, bpf.as_deref(), a.every, &mut hooks).inspect_err(|_| {
            if let Some(path) = &a.analysis.plot {
                let _ = std::fs::remove_file(path);
            }
        })?;
    let stop = if out.stop == "the output ended" {
        "--max-frames reached"
    } else {
        out.stop
    };
    p.finish();
    let mut report = ledger_report(&p, &p.ledger.observer.tally);
    note_empty(&mut report, &p, bpf.as_deref());
    if let Some(e) = &out.error {
        report.warnings.push(format!(
            "{e:#}; the ledger covers the packets before that point"
        ));
    }
    let drops = out.drops.unwrap_or_default();
    if drops.kernel + drops.interface > 0 {
        report.warnings.push(format!(
            "{} packets dropped by the kernel and {} by the interface: counts are low (raise --buffer-size)",
            drops.kernel, drops.interface
        ));
    }
    if a.format == Format::Table {
        eprintln!("h2ledger: stopped ({stop})");
    }
    let (mut whole, phases) = phases::build(&mut p, report);
    if a.analysis.split_at.is_some() {
        crate::warn_cuts_outside(&mut whole, &phases);
    }
    whole.drops = out.drops.map(Into::into);
    if let (Some(path), Some(file)) = (&a.analysis.plot, plot) {
        write_plot(path, file, &p, &phases, &out.source)?;
    }
    print_full(
        a.format,
        &out.source,
        &whole,
        &mut phases.reports(&p.ledger.observer),
    );
    let failed = out.error.is_some();
    out.saved()?;
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The live view of `--every`: at each tick, a header (wall clock, elapsed time, the rates and
/// drops of the period since the previous tick), the running ledger and that period beside it.
/// Redrawn in place through crossterm when the report goes to a terminal that can take it,
/// appended as plain lines otherwise (a pipe, a file, `TERM=dumb`).
pub struct Ticker {
    device: String,
    started: std::time::Instant,
    /// What the previous tick saw (at the start: nothing).
    prev: Seen,
    redraw: bool,
    ticks: u64,
}

/// The counters a tick reads, kept to tell the next tick what changed.
struct Seen {
    at: std::time::Instant,
    packets: u64,
    frames: u64,
    report: LedgerReport,
}

/// The header's numbers (also the `live` object of a JSON tick line).
#[derive(Clone, Debug, Serialize)]
pub struct TickHeader {
    /// Wall clock, RFC 3339 UTC.
    pub time: String,
    pub elapsed_s: f64,
    /// The period the rates and `last` cover: since the previous tick.
    pub period_s: f64,
    pub packets_per_s: f64,
    pub frames_per_s: f64,
    pub calls_per_s: f64,
}

impl Ticker {
    pub fn new(device: &str, format: Format) -> Ticker {
        let started = std::time::Instant::now();
        Ticker {
            device: device.to_string(),
            started,
            prev: Seen {
                at: started,
                packets: 0,
                frames: 0,
                report: LedgerReport::default(),
            },
            redraw: format == Format::Table && can_redraw(),
            ticks: 0,
        }
    }

    /// One tick: the view of now, and what changed since the previous one.
    fn tick(&mut self, p: &Pipeline<Obs>, format: Format, drops: &crate::live::Drops) {
        let o = &p.ledger.observer;
        let now = Seen {
            at: std::time::Instant::now(),
            packets: p.stats.packets,
            frames: o.frames(),
            report: ledger_report(p, &o.tally),
        };
        let last = since(&now.report, &self.prev.report);
        let period = now.at.duration_since(self.prev.at).as_secs_f64().max(1e-9);
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let header = TickHeader {
            time: phases::fmt_rfc3339((wall * 1e9) as i64),
            elapsed_s: now.at.duration_since(self.started).as_secs_f64(),
            period_s: period,
            packets_per_s: now.packets.saturating_sub(self.prev.packets) as f64 / period,
            frames_per_s: now.frames.saturating_sub(self.prev.frames) as f64 / period,
            calls_per_s: last.calls as f64 / period,
        };
        let mut out = crate::report_out();
        match format {
            // One document at the end: no tick lines in it.
            Format::Json => {}
            Format::Jsonl => {
                let tick = h2ledger_run::Tick {
                    ledger: &now.report,
                    capture: &p.stats,
                    tcp: (&p.reasm.stats()).into(),
                    drops: (*drops).into(),
                    last: Some(&last),
                };
                let mut v = render::json_value(&tick);
                if let serde_json::Value::Object(m) = &mut v {
                    m.insert("live".into(), render::json_value(&header));
                }
                let _ = writeln!(out, "{}", render::record_line(v, "tick"));
            }
            Format::Table => {
                let text = self.table(&header, wall, &now.report, &last, p, drops);
                // Method names and statuses come from the capture (crate::tty).
                let text = crate::tty::escape(&text);
                let _ = if self.redraw {
                    // One write per view: the terminal never shows half of one.
                    let mut buf = Vec::new();
                    let _ = redraw(&mut buf, &text, self.ticks == 0);
                    out.write_all(&buf)
                } else {
                    // Appended: a blank line between two views, never an escape sequence.
                    let sep = if self.ticks == 0 { "" } else { "\n" };
                    write!(out, "{sep}{text}")
                };
            }
        }
        let _ = out.flush();
        self.prev = now;
        self.ticks += 1;
    }

    fn table(
        &self,
        h: &TickHeader,
        wall: f64,
        total: &LedgerReport,
        last: &LedgerReport,
        p: &Pipeline<Obs>,
        drops: &crate::live::Drops,
    ) -> String {
        let mut s = format!(
            "h2ledger sniff on {}  {}  elapsed {}  (Ctrl-C to stop)\n",
            self.device,
            clock(wall),
            elapsed(h.elapsed_s)
        );
        let period = format!("last {}", period(h.period_s));
        s.push_str(&format!(
            "{period}: {} packets/s, {} frames/s, {} calls/s;  drops: kernel {}, interface {}\n",
            rate(h.packets_per_s),
            rate(h.frames_per_s),
            rate(h.calls_per_s),
            drops.kernel,
            drops.interface
        ));
        if total.connections == 0 {
            s.push_str("no HTTP/2 seen yet (if this stays, check --port and the filter)\n");
        } else {
            let plural = if total.connections == 1 { "" } else { "s" };
            s.push_str(&format!(
                "so far: {} HTTP/2 connection{plural}, {} calls\n",
                total.connections, total.calls
            ));
        }
        s.push_str(&render::ledger_table(&[("total", total), ("last", last)]));
        s.push('\n');
        // The drops are in the header.
        s.push_str(&render::footer(&p.stats, &(&p.reasm.stats()).into(), None));
        s.push('\n');
        s
    }
}

/// Whether the report can be redrawn in place: it goes to a terminal, and `TERM` names one
/// that takes cursor movement.
fn can_redraw() -> bool {
    crate::report_is_terminal() && std::env::var("TERM").is_ok_and(|t| !t.is_empty() && t != "dumb")
}

/// Redraws `text` from the top left corner, clearing what the previous view left (the first
/// time, the whole screen), cut to the terminal's height so that nothing scrolls.
fn redraw(out: &mut impl std::io::Write, text: &str, first: bool) -> std::io::Result<()> {
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

/// The counts of `now` beyond `before`, an earlier report of the same run.
fn since(now: &LedgerReport, before: &LedgerReport) -> LedgerReport {
    LedgerReport {
        connections: now.connections,
        calls: now.calls.saturating_sub(before.calls),
        upgraded_calls: now.upgraded_calls.saturating_sub(before.upgraded_calls),
        sides: h2ledger_core::Sides {
            client: now.sides.client.since(&before.sides.client),
            server: now.sides.server.since(&before.sides.server),
        },
        ..LedgerReport::default()
    }
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

impl From<crate::live::Drops> for h2ledger_run::Drops {
    fn from(d: crate::live::Drops) -> Self {
        h2ledger_run::Drops {
            received: d.received,
            kernel: d.kernel,
            interface: d.interface,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_period_is_what_came_since_the_previous_tick() {
        let mut before = LedgerReport {
            calls: 10,
            connections: 1,
            ..LedgerReport::default()
        };
        before
            .sides
            .client
            .frames
            .add(h2ledger_core::FrameClass::Headers, 10);
        before.sides.client.ping_labels.insert("grpc-go-bdp", 4);
        let mut now = before.clone();
        // Nothing happened: the last period is empty, not the last busy one.
        let l = since(&now, &before);
        assert_eq!((l.calls, l.sides.client.frames.total()), (0, 0));
        assert!(l.sides.client.ping_labels.is_empty());
        now.calls = 13;
        now.sides
            .client
            .frames
            .add(h2ledger_core::FrameClass::Headers, 3);
        now.sides.client.writes = 3;
        let l = since(&now, &before);
        assert_eq!(l.calls, 3);
        assert_eq!(l.sides.client.frames.total(), 3);
        assert_eq!(l.sides.client.writes, 3);
    }

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
