//! `h2ledger calls`: every call (HTTP/2 stream) of a capture or a live device, printed as it
//! is folded, as a table or JSON.

use std::ops::ControlFlow;
use std::process::ExitCode;

use anyhow::Result;
use h2ledger_output::lines::{CallPrinter, Out, Ticks};
use h2ledger_run::{Drops, Obs, Session, Stop, Wanted};
use h2ledger_tcp::{LinkType, Nanos};

use crate::cli::CallsArgs;
use crate::source::{self, Hooks, Reading};
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
        let flow = self.session.feed(linktype, ts, data);
        let printer = &mut self.printer;
        self.session.drain_calls(|c| printer.call(&c));
        if self.printer.broken() {
            return ControlFlow::Break(Stop::OutputClosed);
        }
        flow
    }

    fn frames(&self) -> u64 {
        self.session.frames()
    }

    fn idle(&mut self, now: Nanos) {
        // Nothing arrives: calls that ended a second ago are due (live, packets carry the
        // wall clock), not held until the next frame.
        self.session.idle(now);
        let printer = &mut self.printer;
        self.session.drain_calls(|c| printer.call(&c));
        self.printer.flush();
    }

    fn tick(&mut self, at: Nanos, drops: Option<Drops>) {
        let (f, c) = (self.session.frames(), self.printer.calls);
        self.ticks.tick(self.printer.out(), at, f, c, drops);
    }
}

pub fn calls(a: CallsArgs, ctx: Ctx) -> Result<ExitCode> {
    // Schemas first: an error in one is said before anything is opened.
    let messages = a.messages.decoder()?;
    let mut filter = a.filter.clone();
    let input = a.capture.input(a.file.as_deref(), &mut filter, None)?;
    // Attached before the capture opens and gives up privileges.
    let keys = source::keys::attach(&a.capture, &input)?;
    let opts = source::keys::options(&input, &filter, None, keys.as_ref())?;
    let obs = Obs::new(&Wanted {
        analysis: true,
        calls_only: true,
        messages: messages.is_some().then(|| a.messages.keep()),
        ..Wanted::default()
    });
    let out = Out::new(ctx.out(), a.format.shape(), "calls");
    let mut printer = CallPrinter::new(out, a.wide, ctx.style);
    if let Some(m) = messages {
        printer = printer.with_messages(m);
    }
    let mut h = Calls {
        session: Session::new(obs, opts),
        printer,
        ticks: Ticks::new(a.every),
    };
    let bpf = filter.bpf();
    let reading = Reading {
        input: &input,
        cap: &a.capture,
        bpf: bpf.as_deref(),
        every: a.every,
        progress: ctx.progress,
        keys,
    };
    let ended = source::run(&reading, &mut h)?;
    let s = &mut h.session;
    s.end();
    let printer = &mut h.printer;
    s.drain_calls(|c| printer.call(&c));
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
