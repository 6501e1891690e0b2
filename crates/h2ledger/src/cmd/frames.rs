//! `h2ledger frames`: every frame as it is seen, one line each (like `nghttp -v`), as a table
//! or JSON.

use std::ops::ControlFlow;
use std::process::ExitCode;

use anyhow::Result;
use h2ledger_core::Side;
use h2ledger_output::lines::{FrameFilter, FramePrinter, Ticks};
use h2ledger_run::{Drops, Session, Stop};
use h2ledger_tcp::{LinkType, Nanos};

use crate::cli::{FramesArgs, SideArg};
use crate::source::{Hooks, Plan};
use crate::Ctx;

struct Frames {
    session: Session<FramePrinter>,
    ticks: Ticks,
}

impl Hooks for Frames {
    fn packet(&mut self, linktype: LinkType, ts: Nanos, data: &[u8]) -> ControlFlow<Stop> {
        self.session.view_mut().set_origin(ts);
        self.ticks.packet();
        self.session.feed(linktype, ts, data)
    }

    fn secrets(&mut self, text: &str) {
        self.session.add_keys(text);
    }

    fn frames(&self) -> u64 {
        self.session.frames()
    }

    fn idle(&mut self, now: Nanos) {
        self.session.idle(now);
        self.session.view_mut().out.flush();
    }

    fn tick(&mut self, at: Nanos, drops: Option<Drops>) {
        let o = self.session.view_mut();
        let printed = o.out.records;
        let stamp = o.tick_stamp(at);
        self.ticks
            .tick_stamped(&mut o.out, at, Some(stamp), printed, drops);
    }
}

pub fn frames(mut a: FramesArgs, ctx: Ctx) -> Result<ExitCode> {
    // Schemas first: an error in one is said before anything is opened.
    let messages = a.messages.decoder()?;
    let display =
        crate::cli::display_filter(a.display_filter.as_deref(), h2ledger_filter::View::Frames)?;
    if a.format == crate::cli::LineFormat::Csv && a.every.is_some() {
        anyhow::bail!(
            "--every's tick records do not fit the CSV's columns: use -T jsonl (or the table) \
             with --every"
        );
    }
    // `-T parquet -w FILE`: the file is the records', not a packet save.
    let parquet = super::columnar::take(a.format, a.every, &mut a.capture)?;
    let mut filter = a.filter.clone();
    let input = a.capture.input(a.file.as_deref(), &mut filter, None)?;
    let (opts, drive) = Plan::new(&a.capture, input, &filter, None, a.every, ctx.progress)?.split();
    let ff = FrameFilter {
        conns: a.conns,
        streams: a.streams,
        types: a.types,
        side: a.side.map(|s| match s {
            SideArg::Client => Side::Client,
            SideArg::Server => Side::Server,
        }),
    };
    let out = super::columnar::out(parquet, a.format, ctx, "frames")?;
    let mut printer = FramePrinter::new(out, ff, ctx.out_is_terminal())
        .with_clock(a.time_format.clock())
        .with_display_filter(display);
    if let Some(m) = messages {
        printer = printer.with_messages(m, a.wide, ctx.style);
    }
    printer.max = a.max_frames;
    let mut h = Frames {
        session: Session::new(printer, opts),
        ticks: Ticks::new(a.every),
    };
    let ended = drive.run(&mut h)?;
    let s = &mut h.session;
    s.end();
    let (capture, tcp) = (s.capture().clone(), s.tcp());
    let o = s.view_mut();
    let printed = o.out.records;
    let stamp = capture.last.map(|t| o.tick_stamp(t));
    h.ticks
        .finish_stamped(&mut o.out, capture.last, stamp, printed);
    o.out.flush();
    if let Some(l) = o.closing_line(capture.packets) {
        eprintln!("{l}");
    }
    let mut warnings = s.warnings().to_vec();
    warnings.extend(s.view().message_warnings());
    let listing = super::listing::Listing {
        view: "frames",
        calls: None,
        frames: s.frames(),
        capture: &capture,
        tcp,
        warnings: &warnings,
    };
    super::listing::done(&mut s.view_mut().out, listing, ended, ctx)
}
