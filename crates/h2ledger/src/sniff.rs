//! `h2ledger sniff`: the replay pipeline on live packets.

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use h2ledger_core::{LedgerReport, Tally};

use crate::keys::WithKeys as _;
use crate::phases::{self, Obs};
use crate::pipeline::Pipeline;
use crate::source::{self, CaptureArgs};
use crate::{
    ledger_report, note_empty, print_full, render, write_plot, AnalysisArgs, FilterArgs, Format,
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
}

impl source::Hooks for Sniffer<'_> {
    fn packet(&mut self, linktype: i32, ts: h2ledger_tcp::Nanos, data: &[u8]) -> bool {
        self.p.ledger.observer.set_origin(ts);
        self.p.packet(linktype, ts, data);
        !self
            .max_frames
            .is_some_and(|n| self.p.ledger.observer.frames() >= n)
    }

    fn tick(&mut self, _at: h2ledger_tcp::Nanos, drops: Option<&mut crate::live::Drops>) {
        if let Some(d) = drops {
            running(self.p, self.format, d);
        }
    }
}

pub fn sniff(a: SniffArgs) -> Result<ExitCode> {
    let mut filter = a.filter.clone();
    let input = a.capture.input(None, &mut filter, Some("lo"))?;
    let bpf = source::bpf(&filter);
    // Before the capture opens and gives up privileges: the key log stays open.
    let keys = source::keys(&input, &filter)?;
    let mut p = Pipeline::with_max_connections(
        Obs::new(&a.analysis.wanted(a.every)),
        filter.max_connections,
    )
    .with_keys(keys);
    let mut hooks = Sniffer {
        p: &mut p,
        format: a.format,
        max_frames: a.max_frames,
    };
    let out = source::run(&input, &a.capture, bpf.as_deref(), a.every, &mut hooks)?;
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
    let (whole, phases) = phases::build(&mut p, report);
    if let Some(path) = &a.analysis.plot {
        write_plot(path, &p, &phases, &out.source)?;
    }
    print_full(
        a.format,
        &out.source,
        &whole,
        &phases,
        &p,
        out.drops.as_ref(),
    );
    let failed = out.error.is_some();
    out.saved()?;
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The running ledger for --every: the total so far, and the last complete period.
fn running(p: &Pipeline<Obs>, format: Format, drops: &mut crate::live::Drops) {
    let o = &p.ledger.observer;
    let report = ledger_report(p, &o.tally);
    let conns = p.ledger.connections();
    // The last complete period: the one before the period the clock is in now. It is shown
    // also when nothing happened in it (an empty column, not the last busy period).
    let last = o.splitter.as_ref().and_then(|s| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64);
        let current = s.phase_of(now);
        let empty = Tally::new();
        current
            .checked_sub(1)
            .map(|i| LedgerReport::build(&conns, o.phases.get(i).unwrap_or(&empty)))
    });
    let mut out = crate::report_out();
    match format {
        Format::Json => {
            let mut v = render::ledger_json(&report, Some(&p.stats), Some(&p.reasm.stats()));
            if let serde_json::Value::Object(m) = &mut v {
                m.insert("drops".into(), serde_json::to_value(*drops).expect("json"));
                if let Some(l) = &last {
                    m.insert("last".into(), render::ledger_json(l, None, None));
                }
            }
            let _ = writeln!(out, "{v}");
        }
        Format::Table => {
            if crate::report_is_terminal() {
                // Redraw in place: clear the screen, cursor home.
                let _ = write!(out, "\x1b[2J\x1b[H");
            } else {
                let _ = writeln!(out, "---");
            }
            let _ = writeln!(out, "{}", render::headline("running", &report));
            let mut cols = vec![("total", &report)];
            if let Some(l) = &last {
                cols.push(("last period", l));
            }
            let _ = writeln!(out, "{}", render::ledger_table(&cols));
            let _ = writeln!(
                out,
                "{}",
                render::footer(&p.stats, &p.reasm.stats(), Some(drops))
            );
        }
    }
    let _ = out.flush();
}
