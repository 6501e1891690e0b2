//! `--every` on `calls` and `frames`: one `tick` record per period with what it saw.

use serde::Serialize;

use super::{secs, Out, Shape};

/// The `--every` ticker of a line view.
pub struct Ticks {
    period: Option<std::time::Duration>,
    packets: u64,
    /// Totals at the previous tick.
    last: (u64, u64),
}

#[derive(Serialize)]
struct Tick {
    /// Calls listed in the period (`calls` only).
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
    /// Ticks every `period` (none: never).
    pub fn new(period: Option<std::time::Duration>) -> Ticks {
        Ticks {
            period,
            packets: 0,
            last: (0, 0),
        }
    }

    /// Counts a packet of the current period.
    pub fn packet(&mut self) {
        self.packets += 1;
    }

    /// The tick at `at`, given the totals of frames and calls (0 when not counted) so far.
    pub fn tick(
        &mut self,
        out: &mut Out,
        at: h2ledger_tcp::Nanos,
        frames: u64,
        calls: u64,
        drops: Option<h2ledger_run::Drops>,
    ) {
        let Some(p) = self.period else { return };
        let t = Tick {
            calls: (out.view == "calls").then(|| calls - self.last.1),
            drops,
            frames: frames - self.last.0,
            packets: std::mem::take(&mut self.packets),
            period_s: p.as_secs_f64(),
            record: "tick",
            time: secs(at),
            kind: "tick",
        };
        self.last = (frames, calls);
        if out.shape == Shape::Table {
            let mut l = format!(
                "-- {} (last {}): {} packets, {} {}",
                crate::time::fmt_rfc3339(at),
                crate::time::show_duration(p),
                t.packets,
                t.frames,
                if out.view == "calls" {
                    "frames"
                } else {
                    "frames printed"
                },
            );
            if let Some(c) = t.calls {
                l.push_str(&format!(", {c} calls"));
            }
            if let Some(d) = drops {
                l.push_str(&format!(", {} dropped", d.kernel + d.interface));
            }
            out.line(&l);
        } else {
            out.record(&t);
        }
    }
}
