//! `h2ledger calls`: every call (HTTP/2 stream) of a capture or a live device, printed as it
//! is folded, as a table or JSON.

use std::ops::ControlFlow;
use std::process::ExitCode;

use anyhow::Result;
use h2ledger_output::lines::{CallPrinter, Ticks};
use h2ledger_run::{Drops, Obs, Session, Stop, Wanted};
use h2ledger_tcp::{LinkType, Nanos};

use crate::cli::CallsArgs;
use crate::source::{Hooks, Plan};
use crate::Ctx;

struct Calls {
    session: Session,
    printer: CallPrinter,
    ticks: Ticks,
}

impl Hooks for Calls {
    fn packet(&mut self, linktype: LinkType, ts: Nanos, data: &[u8]) -> ControlFlow<Stop> {
        self.printer.set_origin(ts);
        self.ticks.packet();
        self.ticks_due(ts);
        let flow = self.session.feed(linktype, ts, data);
        self.drain();
        if self.printer.broken() {
            return ControlFlow::Break(Stop::OutputClosed);
        }
        flow
    }

    fn secrets(&mut self, text: &str) {
        self.session.add_keys(text);
    }

    fn frames(&self) -> u64 {
        self.session.frames()
    }

    fn idle(&mut self, now: Nanos) {
        // Nothing arrives: calls that ended a second ago are due (live, packets carry the
        // wall clock), not held until the next frame.
        self.ticks_due(now);
        self.session.idle(now);
        self.drain();
        self.printer.flush();
    }

    fn tick(&mut self, at: Nanos, drops: Option<Drops>) {
        let f = self.session.frames();
        self.ticks.tick(self.printer.out(), at, f, drops);
    }
}

impl Calls {
    /// Time is `now`: each period whose calls are all folded by now is printed after them,
    /// and before any call that ended after it.
    fn ticks_due(&mut self, now: Nanos) {
        while let Some(at) = self.ticks.next_due(now) {
            self.session.idle(self.ticks.fold_time(at));
            self.drain();
            self.ticks.print_next(self.printer.out());
        }
    }

    /// Prints the calls folded so far, each counted in the `--every` period it ended in.
    fn drain(&mut self) {
        let (printer, ticks) = (&mut self.printer, &mut self.ticks);
        self.session.drain_calls(|c| {
            printer.call(&c);
            let r = c.rec;
            ticks.call(r.start.saturating_add(r.end.max(r.first_byte).max(0)));
        });
    }
}

pub fn calls(mut a: CallsArgs, ctx: Ctx) -> Result<ExitCode> {
    // Schemas first: an error in one is said before anything is opened.
    let messages = a.messages.decoder()?;
    let display =
        crate::cli::display_filter(a.display_filter.as_deref(), h2ledger_filter::View::Calls)?;
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
    let obs = Obs::new(&Wanted {
        analysis: true,
        calls_only: true,
        messages: messages.is_some().then(|| a.messages.keep()),
        // `calls` prints no report: no findings engine (it ran here for nothing).
        findings: None,
        ..Wanted::default()
    });
    let out = super::columnar::out(parquet, a.format, ctx, "calls")?;
    let mut printer = CallPrinter::new(out, a.wide, ctx.style).with_display_filter(display);
    if let Some(m) = messages {
        printer = printer.with_messages(m);
    }
    let mut h = Calls {
        session: Session::new(obs, opts),
        printer,
        ticks: Ticks::for_calls(a.every, h2ledger_core::analysis::RECENT_NS),
    };
    let ended = drive.run(&mut h)?;
    h.session.end();
    h.drain();
    let s = &mut h.session;
    h.ticks
        .finish(h.printer.out(), s.capture().last, s.frames());
    h.printer.finish();
    let mut warnings = s.warnings().to_vec();
    warnings.extend(h.printer.message_warnings());
    let listing = super::listing::Listing {
        view: "calls",
        calls: Some(h.printer.calls),
        frames: s.frames(),
        capture: s.capture(),
        tcp: s.tcp(),
        warnings: &warnings,
    };
    super::listing::done(h.printer.out(), listing, ended, ctx)
}
