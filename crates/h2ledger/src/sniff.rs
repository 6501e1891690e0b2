//! `h2ledger sniff`: the replay pipeline on live packets.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use h2ledger_core::LedgerReport;

use crate::keys::WithKeys as _;
use crate::phases::{self, Obs};
use crate::pipeline::Pipeline;
use crate::source::{self, CaptureArgs};
use crate::{
    ledger_report, note_empty, open_plot, print_full, write_plot, AnalysisArgs, FilterArgs, Format,
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
    max_frames: Option<u64>,
    /// The running ledger at the previous tick.
    prev: LedgerReport,
    ticker: Option<h2ledger_output::live::LiveView>,
}

impl source::Hooks for Sniffer<'_> {
    fn packet(&mut self, linktype: i32, ts: h2ledger_tcp::Nanos, data: &[u8]) -> bool {
        self.p.ledger.observer.set_origin(ts);
        self.p.packet(linktype, ts, data);
        crate::progress::frames(self.p.ledger.observer.frames());
        self.max_frames
            .is_none_or(|n| self.p.ledger.observer.frames() < n)
    }

    fn tick(&mut self, _at: h2ledger_tcp::Nanos, drops: Option<&mut h2ledger_run::Drops>) {
        if let (Some(d), Some(t)) = (drops, self.ticker.as_mut()) {
            let p = &*self.p;
            let o = &p.ledger.observer;
            let total = ledger_report(p, &o.tally);
            let last = total.since(&self.prev);
            t.tick(
                &mut crate::report_out(),
                &h2ledger_output::live::Snapshot {
                    total: &total,
                    last: &last,
                    capture: &p.stats,
                    tcp: (&p.reasm.stats()).into(),
                    drops: *d,
                    frames: o.frames(),
                },
            );
            self.prev = total;
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
        max_frames: a.max_frames,
        prev: LedgerReport::default(),
        ticker: a.every.map(|_| {
            let format = match a.format {
                Format::Table => h2ledger_output::live::TickFormat::Table,
                Format::Jsonl => h2ledger_output::live::TickFormat::Jsonl,
                Format::Json => h2ledger_output::live::TickFormat::None,
            };
            let redraw = h2ledger_output::live::can_redraw(
                crate::report_is_terminal(),
                std::env::var("TERM").ok().as_deref(),
            );
            h2ledger_output::live::LiveView::new(&device, format, redraw, crate::style())
        }),
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
    whole.drops = out.drops;
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
