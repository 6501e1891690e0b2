//! `--every` on `calls` and `frames`: one `tick` record per period with what it saw.
//!
//! `frames` prints a frame as it is seen, so its tick is printed when the period ends. `calls`
//! prints a call when it is folded, up to a second after it ended (`RECENT_NS` of the
//! analysis): its tick waits until every call that ended in the period is printed, so the
//! rows above a tick are its calls and the ticks add up to every call listed. Both print a
//! last tick for the part of a period before the input ended.

use std::collections::VecDeque;

use h2ledger_tcp::Nanos;
use serde::Serialize;

use super::{secs, Out, Shape};

/// Periods waiting for their calls: beyond this many, the oldest is printed with what it has
/// (a capture with `--every 1ns` would otherwise hold one per packet).
const MAX_PENDING: usize = 64;

/// The `--every` ticker of a line view.
pub struct Ticks {
    period: Option<std::time::Duration>,
    /// `calls`: how long after a period its calls are all folded (`None`: `frames`, no wait).
    defer: Option<Nanos>,
    packets: u64,
    /// Frames at the previous tick.
    frames: u64,
    /// The end of the previous period.
    last_at: Option<Nanos>,
    /// `calls`: periods ended but not printed yet, oldest first.
    pending: VecDeque<Pending>,
    /// `calls`: calls of the period in progress.
    calls: u64,
}

/// A period that ended, waiting for its calls.
struct Pending {
    at: Nanos,
    frames: u64,
    packets: u64,
    calls: u64,
    drops: Option<h2ledger_run::Drops>,
    period: Nanos,
}

#[derive(Serialize)]
struct Tick {
    /// Calls listed in the period (`calls` only): those that ended in it.
    #[serde(skip_serializing_if = "Option::is_none")]
    calls: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    drops: Option<h2ledger_run::Drops>,
    frames: u64,
    packets: u64,
    period_s: f64,
    record: &'static str,
    /// The end of the period, seconds since the epoch.
    time: f64,
    #[serde(rename = "type")]
    kind: &'static str,
}

impl Ticks {
    /// Ticks every `period` (none: never), each printed when its period ends (`frames`).
    pub fn new(period: Option<std::time::Duration>) -> Ticks {
        Ticks {
            period,
            defer: None,
            packets: 0,
            frames: 0,
            last_at: None,
            pending: VecDeque::new(),
            calls: 0,
        }
    }

    /// Ticks of `calls`: each printed once the calls that ended in its period are listed, which
    /// happens `after` the period's end (the analysis' `RECENT_NS`).
    pub fn for_calls(period: Option<std::time::Duration>, after: Nanos) -> Ticks {
        Ticks {
            defer: Some(after),
            ..Ticks::new(period)
        }
    }

    fn period_ns(&self) -> Nanos {
        self.period
            .map_or(0, |p| p.as_nanos().min(i64::MAX as u128) as Nanos)
    }

    /// Counts a packet of the current period.
    pub fn packet(&mut self) {
        self.packets += 1;
    }

    /// `calls`: a call listed now, that ended (or, without an end, was last seen) at `t`: it
    /// counts in the period it ended in, or the oldest one not printed yet.
    pub fn call(&mut self, t: Nanos) {
        if self.period.is_none() {
            return;
        }
        // The first period waiting that ends after `t` is the one `t` is in, or the oldest
        // still open for a call that ended in a period already printed (one the analysis held
        // longer); none: the period in progress.
        match self.pending.iter_mut().find(|p| t < p.at) {
            Some(p) => p.calls += 1,
            None => self.calls += 1,
        }
    }

    /// The period ending at `at` is over, with `frames` in all so far.
    pub fn tick(
        &mut self,
        out: &mut Out,
        at: Nanos,
        frames: u64,
        drops: Option<h2ledger_run::Drops>,
    ) {
        if self.period.is_none() {
            return;
        }
        let p = Pending {
            at,
            frames: frames - self.frames,
            packets: std::mem::take(&mut self.packets),
            calls: std::mem::take(&mut self.calls),
            drops,
            period: self.period_ns(),
        };
        self.frames = frames;
        self.last_at = Some(at);
        if self.defer.is_none() {
            self.print(out, p);
            return;
        }
        self.pending.push_back(p);
        while self.pending.len() > MAX_PENDING {
            let p = self.pending.pop_front().expect("non-empty");
            self.print(out, p);
        }
    }

    /// The end of the oldest period waiting, if its calls are all folded by `now`: fold the
    /// calls up to `at + after` ([`Ticks::fold_time`]), list them, then
    /// [`Ticks::print_next`].
    pub fn next_due(&self, now: Nanos) -> Option<Nanos> {
        let after = self.defer?;
        let p = self.pending.front()?;
        (p.at.saturating_add(after) < now).then_some(p.at)
    }

    /// The time at which every call that ended by `at` is folded, and no later one.
    pub fn fold_time(&self, at: Nanos) -> Nanos {
        at.saturating_add(self.defer.unwrap_or(0)).saturating_add(1)
    }

    /// Prints the oldest period waiting.
    pub fn print_next(&mut self, out: &mut Out) {
        if let Some(p) = self.pending.pop_front() {
            self.print(out, p);
        }
    }

    /// The input ended at `end` (every call listed, `frames` in all): the periods still
    /// waiting, then the part of a period before `end`, if it saw a packet.
    pub fn finish(&mut self, out: &mut Out, end: Option<Nanos>, frames: u64) {
        if self.period.is_none() {
            return;
        }
        while let Some(p) = self.pending.pop_front() {
            self.print(out, p);
        }
        let Some(end) = end else { return };
        if self.packets == 0 && self.calls == 0 && frames == self.frames {
            return;
        }
        let start = self.last_at.unwrap_or(end);
        let p = Pending {
            at: end,
            frames: frames - self.frames,
            packets: std::mem::take(&mut self.packets),
            calls: std::mem::take(&mut self.calls),
            drops: None,
            period: if self.last_at.is_some() {
                end.saturating_sub(start).max(0)
            } else {
                self.period_ns()
            },
        };
        self.frames = frames;
        self.print(out, p);
    }

    fn print(&self, out: &mut Out, p: Pending) {
        let calls = out.view == "calls";
        let t = Tick {
            calls: calls.then_some(p.calls),
            drops: p.drops,
            frames: p.frames,
            packets: p.packets,
            period_s: p.period as f64 / 1e9,
            record: "tick",
            time: secs(p.at),
            kind: "tick",
        };
        if out.shape == Shape::Table {
            let mut l = format!(
                "-- {} (last {}): {} packet{}, {} {}",
                crate::time::fmt_rfc3339(p.at),
                crate::time::show_duration(std::time::Duration::from_nanos(p.period as u64)),
                t.packets,
                if t.packets == 1 { "" } else { "s" },
                t.frames,
                match (calls, t.frames == 1) {
                    (true, true) => "frame",
                    (true, false) => "frames",
                    (false, true) => "frame printed",
                    (false, false) => "frames printed",
                },
            );
            if let Some(c) = t.calls {
                l.push_str(&format!(", {c} call{}", if c == 1 { "" } else { "s" }));
            }
            if let Some(d) = p.drops {
                l.push_str(&format!(", {} dropped", d.kernel + d.interface));
            }
            out.line(&l);
        } else {
            out.record(&t);
        }
    }
}
