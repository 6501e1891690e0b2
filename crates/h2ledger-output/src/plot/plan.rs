//! What the plot draws, decided as data before drawing: rows, bins, ticks, legend.

use h2ledger_core::flow::WindowSeries;
use h2ledger_core::FrameClass;
use h2ledger_run::PlotInput;
use h2ledger_tcp::Nanos;
use plotters::style::RGBColor;

/// A colour per frame kind (the tab10 palette for the ones the article reads).
pub(super) fn colour(c: FrameClass) -> RGBColor {
    match c {
        FrameClass::Headers => RGBColor(0x1f, 0x77, 0xb4),
        FrameClass::Trailers => RGBColor(0x94, 0x67, 0xbd),
        FrameClass::Data => RGBColor(0x2c, 0xa0, 0x2c),
        FrameClass::WindowUpdate => RGBColor(0xff, 0x7f, 0x0e),
        FrameClass::Ping => RGBColor(0xd6, 0x27, 0x28),
        FrameClass::PingAck => RGBColor(0x8c, 0x56, 0x4b),
        FrameClass::RstStream => RGBColor(0xe3, 0x77, 0xc2),
        FrameClass::GoAway => RGBColor(0x17, 0xbe, 0xcf),
        FrameClass::SettingsAck => RGBColor(0xbc, 0xbd, 0x22),
        _ => RGBColor(0x7f, 0x7f, 0x7f),
    }
}

/// The kinds the article reads (the ledger's first six rows): when one of them has no frame
/// at all, the plot says so.
pub(super) fn expected() -> &'static [FrameClass] {
    &FrameClass::ALL[..6]
}

/// Without `--bin`: the smallest 1-2-5 bin that makes at most this many bins.
pub(super) const TARGET_BINS: u64 = 100;
/// Without `--bin`, no bin is shorter than this (a capture shorter than a millisecond).
const MIN_AUTO_BIN: Nanos = 10_000;
/// `--bin D` that would make more bins than this is widened (a panel is under 400 pixels wide).
pub const MAX_BINS: u64 = 1_000;

/// More phase boundaries than this are not drawn (a line every few pixels hides the bars);
/// the plot says how many there are.
pub(super) const MAX_CUTS_DRAWN: usize = 40;

/// The connection window row's name (also the panel captions' first words).
pub const CONN_WINDOW: &str = "connection window";
/// The stream window row's name.
pub const STREAM_WINDOW: &str = "stream window";
/// The legend's entry of the stall marks.
pub const STALL: &str = "stall begins";
/// The legend's entry of the dashed phase lines.
pub const PHASE_BOUNDARY: &str = "phase boundary";

pub(super) const STALL_COLOUR: RGBColor = RGBColor(0xd6, 0x27, 0x28);

/// One row of count panels: a frame kind, both sides on one y scale.
#[derive(Debug)]
pub struct Row {
    pub class: FrameClass,
    /// `counts[side][bin]`: frames in the bin.
    pub counts: [Vec<u64>; 2],
    pub frames: [u64; 2],
    /// Whole numbers from 0 to at least the largest count (one frame: an axis of 1).
    pub y: Axis,
}

/// One row of window panels: a window's value over time per side, carried forward between
/// changes, as (seconds, bytes).
#[derive(Debug)]
pub struct WindowRow {
    pub name: &'static str,
    pub colour: RGBColor,
    pub lines: [Vec<(f64, f64)>; 2],
    /// One scale per side: the two sides' windows can differ ten thousand times (h2load's
    /// 1 GiB against nghttpd's 64 KiB), and a shared scale would flatten one to its axis.
    pub y: [Axis; 2],
}

/// The flow-control rows of one connection, and the times stalls began per side.
#[derive(Debug)]
pub struct Windows {
    pub conn: u32,
    /// The rows that have a value on either side (connection window, stream window).
    pub rows: Vec<WindowRow>,
    pub stalls: [Vec<(f64, u32)>; 2],
}

/// An axis range and its ticks: round values (1, 2 or 5 times a power of ten apart).
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub ticks: Vec<f64>,
    pub step: f64,
}

/// What the plot is asked for, beside the run's data.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The line at the top.
    pub title: String,
    /// `--bin`: the bin asked for, nanoseconds.
    pub bin: Option<Nanos>,
    /// What to say when there is no frame to draw: [`super::why_empty`].
    pub why_empty: String,
}

/// The unit of the x axis: seconds, or milliseconds or microseconds for short spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Seconds,
    Millis,
    Micros,
}

impl TimeUnit {
    /// The unit of a span of `s` seconds: its numbers stay under 2,000.
    fn of(s: f64) -> TimeUnit {
        if s < 0.002 {
            TimeUnit::Micros
        } else if s < 2.0 {
            TimeUnit::Millis
        } else {
            TimeUnit::Seconds
        }
    }

    /// Units per second.
    pub(super) fn scale(self) -> f64 {
        match self {
            TimeUnit::Seconds => 1.0,
            TimeUnit::Millis => 1e3,
            TimeUnit::Micros => 1e6,
        }
    }

    pub(super) fn symbol(self) -> &'static str {
        match self {
            TimeUnit::Seconds => "s",
            TimeUnit::Millis => "ms",
            TimeUnit::Micros => "µs",
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            TimeUnit::Seconds => "seconds",
            TimeUnit::Millis => "milliseconds",
            TimeUnit::Micros => "microseconds",
        }
    }
}

/// Everything drawn, decided before drawing.
#[derive(Debug)]
pub struct Plan {
    pub title: String,
    /// Bin length, nanoseconds.
    pub bin: Nanos,
    /// The same, in seconds.
    pub bin_s: f64,
    pub bins: usize,
    /// Why the bin is not the `--bin` asked for.
    pub bin_note: Option<String>,
    pub x: Axis,
    /// The unit of the x axis.
    pub unit: TimeUnit,
    pub rows: Vec<Row>,
    /// Kinds of [`expected`] with no frame on either side.
    pub absent: Vec<FrameClass>,
    /// The phase boundaries drawn (dashed), in seconds from the first packet.
    pub cuts: Vec<f64>,
    /// Boundaries within the span not drawn: more than [`MAX_CUTS_DRAWN`].
    pub cuts_hidden: usize,
    /// The flow-control rows, with `--analyze`.
    pub windows: Option<Windows>,
    /// No frame to draw: why.
    pub empty: Option<String>,
}

impl Plan {
    /// The plan of a run's plot (`p`) with the options `o`.
    pub fn new(p: &PlotInput<'_>, o: &Options) -> Plan {
        let t = p.timeline;
        let last = t.counts.keys().next_back().copied();
        // From the first packet to the last one, or to the last frame's bucket.
        let frames_end = last.map_or(0, |b| i128::from(b) * i128::from(t.bucket));
        let span = i128::from(p.end.unwrap_or(0).max(0)).max(frames_end);
        let (bin, bin_note) = choose_bin(span, t.bucket, o.bin);
        let bins = bin_count(
            span,
            bin,
            last.map(|b| i128::from(b) * i128::from(t.bucket)),
        );
        let bin_s = bin as f64 / 1e9;
        // Buckets per bin: a bin is a whole number of buckets (choose_bin).
        let per = (bin / t.bucket).max(1) as u64;
        let mut rows = Vec::new();
        for class in FrameClass::ALL {
            let mut counts = [vec![0u64; bins], vec![0u64; bins]];
            let mut frames = [0u64; 2];
            for (&b, c) in &t.counts {
                let i = ((b / per) as usize).min(bins - 1);
                for side in 0..2 {
                    let k = u64::from(c[side][class.index()]);
                    counts[side][i] += k;
                    frames[side] += k;
                }
            }
            if frames != [0, 0] {
                let max = counts.iter().flatten().copied().max().unwrap_or(0);
                rows.push(Row {
                    class,
                    counts,
                    frames,
                    y: Axis::whole(0.0, max as f64, 3),
                });
            }
        }
        let absent = expected()
            .iter()
            .filter(|c| !rows.iter().any(|r| r.class == **c))
            .copied()
            .collect();
        let span = bins as f64 * bin_s;
        let end_s = p.end.map(|e| e as f64 / 1e9);
        let windows = p
            .windows
            .filter(|w| w.conn.is_some())
            .map(|w| Windows::new(w, t.origin, end_s));
        let mut cuts: Vec<f64> = p
            .cuts
            .iter()
            .map(|c| *c as f64 / 1e9)
            .filter(|c| *c > 0.0 && *c < span)
            .collect();
        let cuts_hidden = if cuts.len() > MAX_CUTS_DRAWN {
            std::mem::take(&mut cuts).len()
        } else {
            0
        };
        let mut x = Axis::new(0.0, span, 8);
        // The x axis ends with the last bin, not at the next round value.
        x.hi = span;
        x.ticks.retain(|v| *v <= span * (1.0 + 1e-9));
        Plan {
            title: o.title.clone(),
            bin,
            bin_s,
            bins,
            bin_note,
            x,
            unit: TimeUnit::of(span),
            empty: rows.is_empty().then(|| o.why_empty.clone()),
            rows,
            absent,
            cuts,
            cuts_hidden,
            windows,
        }
    }

    /// The legend: one entry per kind of mark drawn that no row label names, and nothing else.
    pub fn legend(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if let Some(w) = &self.windows {
            if w.stalls.iter().any(|s| !s.is_empty()) {
                v.push(STALL);
            }
        }
        if !self.cuts.is_empty() {
            v.push(PHASE_BOUNDARY);
        }
        v
    }

    /// A time on the x axis, in the axis' unit, at tick precision.
    pub(super) fn time(&self, s: f64) -> String {
        let k = self.unit.scale();
        fmt_fixed(s * k, self.x.step * k)
    }

    /// A time to the millisecond (the microsecond under 2 s), with its unit.
    pub(super) fn time_exact(&self, s: f64) -> String {
        let k = self.unit.scale();
        let step = match self.unit {
            TimeUnit::Seconds => 0.001,
            _ => 0.1,
        };
        format!("{} {}", fmt_fixed(s * k, step), self.unit.symbol())
    }

    /// Bin `i`'s span in the x axis' unit, as exact as the bin (`1.2–1.4 ms`, `0.333–0.666
    /// s`): the tooltip of a bar.
    pub(super) fn bin_span(&self, i: usize) -> String {
        let k = self.unit.scale();
        let step = self.bin_s * k;
        // The decimals that write the bin exactly (at most 9: nanoseconds in seconds).
        let d = (0..9)
            .find(|d| {
                let v = step * 10f64.powi(*d);
                (v - v.round()).abs() < 1e-6 * v.max(1.0)
            })
            .unwrap_or(9);
        let unit = 10f64.powi(-d);
        let a = fmt_fixed(i as f64 * step, unit);
        let b = fmt_fixed((i + 1) as f64 * step, unit);
        format!("{a}–{b} {}", self.unit.symbol())
    }

    /// The bin's length with its unit (`100 ms`, `200 µs`, `2 s`).
    pub(super) fn bin(&self) -> String {
        fmt_duration(self.bin)
    }
}

/// A duration in the largest unit in which it is at least 1 (`333 ms`, `1.5 s`, `200 µs`).
pub fn fmt_duration(ns: Nanos) -> String {
    let (k, unit) = if ns >= 1_000_000_000 {
        (1e9, "s")
    } else if ns >= 1_000_000 {
        (1e6, "ms")
    } else if ns >= 1_000 {
        (1e3, "µs")
    } else {
        (1.0, "ns")
    };
    format!("{} {unit}", fmt_fixed(ns as f64 / k, 0.001))
}

/// The `k`th value of the ladder 1, 2, 5, 10, 20, 50, ... (`None` past `i64`).
fn ladder(k: u32) -> Option<i64> {
    [1i64, 2, 5][(k % 3) as usize].checked_mul(10i64.checked_pow(k / 3)?)
}

/// Bins from 0 to `span` (a bin that holds `span`'s end), and at least to the bin of
/// `last` (the last frame's bucket).
fn bin_count(span: i128, bin: Nanos, last: Option<i128>) -> usize {
    let b = i128::from(bin.max(1));
    let n = (span + b - 1) / b;
    let n = n.max(last.map_or(0, |l| l / b + 1)).max(1);
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// The bin, and why it is not the one `--bin` asked for. Without `forced`: the smallest bin
/// among 1, 2 and 5 times a power of ten that is a whole number of the timeline's buckets
/// (`bucket`), at least [`MIN_AUTO_BIN`] and makes at most [`TARGET_BINS`] bins over `span`.
/// With `forced`: that bin, unless the timeline had to merge its buckets past it or it makes
/// more than [`MAX_BINS`] bins; then the smallest of 1, 2, 5, 10, ... buckets that makes at
/// most [`MAX_BINS`].
pub(super) fn choose_bin(
    span: i128,
    bucket: Nanos,
    forced: Option<Nanos>,
) -> (Nanos, Option<String>) {
    let bucket = bucket.max(1);
    let bins = |b: Nanos| bin_count(span, b, None) as u64;
    if let Some(d) = forced {
        if d == bucket && bins(d) <= MAX_BINS {
            return (d, None);
        }
        let wider = (0..)
            .map_while(ladder)
            .filter_map(|k| bucket.checked_mul(k))
            .find(|b| bins(*b) <= MAX_BINS)
            .unwrap_or(Nanos::MAX);
        let note = if bins(d) > MAX_BINS {
            format!(
                "--bin {} would make {} bins, more than {}: drawn in {} bins",
                fmt_duration(d),
                fmt_count(bins(d).into()),
                fmt_count(MAX_BINS.into()),
                fmt_duration(wider)
            )
        } else {
            // Within 100 columns after "warning: ".
            format!(
                "--bin {} is finer than the timeline's merged {} buckets: drawn in {} bins",
                fmt_duration(d),
                fmt_duration(bucket),
                fmt_duration(wider)
            )
        };
        return (wider, Some(note));
    }
    let bin = (0..)
        .map_while(ladder)
        .filter(|b| *b >= bucket.max(MIN_AUTO_BIN) && b % bucket == 0)
        .find(|b| bins(*b) <= TARGET_BINS)
        .unwrap_or(Nanos::MAX);
    (bin, None)
}

/// `6,100`.
fn fmt_count(n: i128) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A window's samples as a step line: a value holds until the next sample changes it (no
/// slope between two frames); samples before the first value are left out.
fn steps(samples: impl Iterator<Item = (f64, Option<i64>)>) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (t, v) in samples {
        let Some(v) = v else {
            continue;
        };
        let v = v as f64;
        match out.last() {
            Some(&(_, prev)) if prev == v => continue,
            Some(&(_, prev)) => out.push((t, prev)),
            None => {}
        }
        out.push((t, v));
    }
    out
}

impl Windows {
    /// `end`: the last packet, seconds from the origin: a value is drawn at its bucket's
    /// middle, or at the last packet when that comes first.
    fn new(w: &WindowSeries, origin: Option<i64>, end: Option<f64>) -> Windows {
        let bin_s = w.bucket as f64 / 1e9;
        // The series counts from its own origin; the plot from the timeline's.
        let shift = match (w.origin, origin) {
            (Some(a), Some(b)) => (a - b) as f64 / 1e9,
            _ => 0.0,
        };
        let mut lines = [[Vec::new(), Vec::new()], [Vec::new(), Vec::new()]];
        let mut stalls = [Vec::new(), Vec::new()];
        let mut cur = [(None, None); 2];
        for (b, p) in w.points.iter().enumerate() {
            let mid = shift + (b as f64 + 0.5) * bin_s;
            let t = end.map_or(mid, |e| mid.min(e));
            for side in 0..2 {
                let (c, st, n) = p[side];
                // Carry each value forward to the buckets that did not change it.
                cur[side].0 = c.or(cur[side].0);
                cur[side].1 = st.or(cur[side].1);
                if let Some(v) = cur[side].0 {
                    lines[0][side].push((t, v as f64));
                }
                if let Some(v) = cur[side].1 {
                    lines[1][side].push((t, v as f64));
                }
                // Each stall is drawn at its own time below; the buckets' counts only
                // for those beyond the marks kept (MAX_STALL_MARKS).
                let marked_until = w.stalls[side].last().map_or(f64::MIN, |&ts| {
                    shift + (ts - w.origin.unwrap_or(0)) as f64 / 1e9
                });
                if n > 0 && w.stalls_unmarked[side] > 0 && mid > marked_until {
                    stalls[side].push((t, n));
                }
            }
        }
        let first = w.origin.unwrap_or(0);
        let at = |ts: Nanos| shift + (ts - first) as f64 / 1e9;
        for side in 0..2 {
            // Frame by frame while every sample is kept (decision 364).
            if w.samples_dropped[side] == 0 && !w.samples[side].is_empty() {
                let s = &w.samples[side];
                lines[0][side] = steps(s.iter().map(|&(ts, c, _)| (at(ts), Some(c))));
                let mut cur = None;
                lines[1][side] = steps(s.iter().map(|&(ts, _, st)| {
                    cur = st.or(cur);
                    (at(ts), cur)
                }));
            }
            // Where the stall began, not its 100 ms bucket's middle (decision 364).
            stalls[side].extend(w.stalls[side].iter().map(|&ts| (at(ts), 1)));
        }
        let [conn, stream] = lines;
        let rows = [
            (CONN_WINDOW, RGBColor(0xff, 0x7f, 0x0e), conn),
            (STREAM_WINDOW, RGBColor(0x2c, 0xa0, 0x2c), stream),
        ]
        .into_iter()
        .filter(|(_, _, l)| l.iter().any(|s| !s.is_empty()))
        .map(|(name, colour, lines)| {
            let axis = |side: &Vec<(f64, f64)>| {
                let lo = side.iter().map(|p| p.1).fold(0f64, f64::min);
                let hi = side.iter().map(|p| p.1).fold(0f64, f64::max);
                Axis::whole(lo, hi, 3)
            };
            WindowRow {
                name,
                colour,
                y: [axis(&lines[0]), axis(&lines[1])],
                lines,
            }
        })
        .collect();
        Windows {
            conn: w.conn.unwrap_or(0),
            rows,
            stalls,
        }
    }
}

impl Axis {
    /// A range from at most `lo` to at least `hi` (never empty) with about `n` round ticks.
    pub fn new(lo: f64, hi: f64, n: usize) -> Axis {
        Axis::stepped(lo, hi, n, 0.0)
    }

    /// [`Axis::new`] with a step of at least 1 (bytes: no tick at half a byte).
    pub fn whole(lo: f64, hi: f64, n: usize) -> Axis {
        Axis::stepped(lo, hi, n, 1.0)
    }

    fn stepped(lo: f64, hi: f64, n: usize, min_step: f64) -> Axis {
        let (lo, hi) = if hi > lo { (lo, hi) } else { (lo, lo + 1.0) };
        let step = nice((hi - lo) / n.max(1) as f64).max(min_step);
        let a = (lo / step).floor();
        let b = (hi / step).ceil();
        let ticks = (0..=(b - a) as i64)
            .map(|i| (a + i as f64) * step)
            .map(|v| if v.abs() < step * 1e-9 { 0.0 } else { v })
            .collect();
        Axis {
            lo: a * step,
            hi: b * step,
            ticks,
            step,
        }
    }
}

/// The smallest of 1, 2, 5 times a power of ten at or above `v`.
fn nice(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= v * (1.0 - 1e-12) {
            return m * p;
        }
    }
    10.0 * p
}

/// A tick label: thousands as k, millions as M and billions as G, as many decimals as the step needs, no
/// trailing zeros (`375k`, `1.5M`, `0.25`, `0`).
pub fn fmt_tick(v: f64, step: f64) -> String {
    let (scale, suffix) = if v.abs() >= 1e9 - 0.5 {
        (1e9, "G")
    } else if v.abs() >= 1e6 - 0.5 {
        (1e6, "M")
    } else if v.abs() >= 1e3 - 0.5 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    format!("{}{suffix}", fmt_fixed(v / scale, step / scale))
}

/// A number with as many decimals as `step` needs, no trailing zeros (times: `1000`, `2.5`).
pub fn fmt_fixed(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10() - 1e-9).ceil().max(0.0) as usize
    };
    let mut s = format!("{v:.decimals$}");
    if s.contains('.') {
        s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    if s == "-0" {
        s = "0".to_string();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::render;
    use h2ledger_core::analysis::timeline::FINEST;
    use h2ledger_core::Timeline;

    #[test]
    fn ticks_are_round() {
        let a = Axis::new(0.0, 24.0, 3);
        assert_eq!(a.ticks, vec![0.0, 10.0, 20.0, 30.0]);
        let a = Axis::new(0.0, 26.7, 3);
        assert_eq!(a.ticks, vec![0.0, 10.0, 20.0, 30.0]);
        let a = Axis::new(0.0, 1_500_000.0, 4);
        assert_eq!(a.step, 500_000.0);
        let labels: Vec<String> = a.ticks.iter().map(|v| fmt_tick(*v, a.step)).collect();
        assert_eq!(labels, ["0", "500k", "1M", "1.5M"]);
        let a = Axis::new(-20_000.0, 65_535.0, 4);
        let labels: Vec<String> = a.ticks.iter().map(|v| fmt_tick(*v, a.step)).collect();
        assert_eq!(labels, ["-50k", "0", "50k", "100k"]);
        let a = Axis::new(0.0, 0.1, 8);
        let labels: Vec<String> = a
            .ticks
            .iter()
            .map(|v| fmt_tick(*v * 1e3, a.step * 1e3))
            .collect();
        assert_eq!(labels, ["0", "20", "40", "60", "80", "100"]);
        assert_eq!(fmt_tick(0.25, 0.05), "0.25");
        assert_eq!(fmt_tick(0.0, 1000.0), "0");
        assert_eq!(fmt_fixed(3.002, 0.001), "3.002");
        assert_eq!(fmt_fixed(1000.0, 200.0), "1000");
        assert_eq!(fmt_tick(375_000.0, 25_000.0), "375k");
        assert_eq!(fmt_tick(1.5e9, 5e8), "1.5G");
        assert_eq!(Axis::whole(0.0, 1.0, 3).ticks, [0.0, 1.0]);
        assert_eq!(Axis::new(0.0, 2240.0, 3).ticks, [0.0, 1e3, 2e3, 3e3]);
    }

    const MS: Nanos = 1_000_000;

    #[test]
    fn bins_come_from_the_span() {
        let us = FINEST;
        // The smallest 1-2-5 bin that makes at most 100 bins.
        assert_eq!(choose_bin(34 * i128::from(MS), us, None), (500_000, None));
        assert_eq!(choose_bin(20 * i128::from(MS), us, None), (200_000, None));
        assert_eq!(
            choose_bin(6_100 * i128::from(MS), us, None),
            (100 * MS, None)
        );
        assert_eq!(
            choose_bin(3_600_000 * i128::from(MS), us, None).0,
            50_000 * MS
        );
        // Never finer than the timeline's buckets, nor than 10 µs.
        assert_eq!(choose_bin(20 * i128::from(MS), 10 * MS, None).0, 10 * MS);
        assert_eq!(choose_bin(0, us, None), (10_000, None));
        // A day's clock jump: whole bins still.
        let (b, _) = choose_bin(86_400_000 * i128::from(MS), 100 * MS, None);
        assert!(
            bin_count(86_400_000 * i128::from(MS), b, None) <= 100,
            "{b}"
        );
        // The whole clock: still at most 100 bins.
        let all = i128::from(Nanos::MAX);
        assert!(bin_count(all, choose_bin(all, 1, None).0, None) <= 100);
    }

    #[test]
    fn a_forced_bin_is_kept_or_widened_with_a_note() {
        let span = 6_100 * i128::from(MS);
        assert_eq!(choose_bin(span, 333 * MS, Some(333 * MS)), (333 * MS, None));
        let (b, note) = choose_bin(span, MS, Some(MS));
        assert_eq!(b, 10 * MS);
        assert_eq!(
            note.as_deref(),
            Some("--bin 1 ms would make 6,100 bins, more than 1,000: drawn in 10 ms bins")
        );
        // Merged past it: drawn in the buckets, whole ones.
        let (b, note) = choose_bin(span * 10_000, 10 * MS, Some(MS));
        assert_eq!(b % (10 * MS), 0);
        assert!(bin_count(span * 10_000, b, None) <= MAX_BINS as usize);
        assert!(note
            .unwrap()
            .starts_with("--bin 1 ms would make 61,000,000 bins"));
        // Finer than the timeline kept (its buckets merged): its buckets, said in a line
        // within 100 columns.
        let (b, note) = choose_bin(500 * i128::from(MS), 10 * MS, Some(MS));
        assert_eq!(b, 10 * MS);
        let note = note.unwrap();
        assert_eq!(
            note,
            "--bin 1 ms is finer than the timeline's merged 10 ms buckets: drawn in 10 ms bins"
        );
        assert!(note.len() + "warning: ".len() <= 100);
    }

    fn timeline(bucket: Nanos, frames: &[(u64, usize, FrameClass, u32)]) -> Timeline {
        let mut t = Timeline::new(bucket);
        t.origin = Some(0);
        for &(b, side, class, n) in frames {
            t.counts.entry(b).or_insert([[0; FrameClass::COUNT]; 2])[side][class.index()] += n;
        }
        t
    }

    fn input(t: &Timeline, cuts: Vec<Nanos>, end: Option<Nanos>) -> PlotInput<'_> {
        PlotInput {
            timeline: t,
            cuts,
            end,
            windows: None,
        }
    }

    fn plan(p: &PlotInput<'_>) -> Plan {
        Plan::new(
            p,
            &Options {
                title: "x".into(),
                why_empty: "the capture holds no packets".into(),
                ..Options::default()
            },
        )
    }

    #[test]
    fn a_30_ms_capture_has_bins_and_counts_on_whole_axes() {
        // HEADERS at 1 ms and 29 ms, DATA on both sides at 1 ms, one SETTINGS at 0.
        let t = timeline(
            FINEST,
            &[
                (0, 0, FrameClass::Settings, 1),
                (1_000, 0, FrameClass::Headers, 2),
                (1_000, 0, FrameClass::Data, 3),
                (1_000, 1, FrameClass::Data, 3),
                (29_000, 0, FrameClass::Headers, 1),
            ],
        );
        let p = plan(&input(&t, vec![], Some(30 * MS)));
        // 30 ms: 100 bins of 300 µs is not round, 500 µs makes 60.
        assert_eq!((p.bin, p.bins), (500_000, 60));
        let kinds: Vec<FrameClass> = p.rows.iter().map(|r| r.class).collect();
        assert_eq!(
            kinds,
            [FrameClass::Headers, FrameClass::Data, FrameClass::Settings]
        );
        let h = &p.rows[0];
        assert_eq!((h.counts[0][2], h.counts[0][58]), (2, 1));
        assert_eq!(h.counts[0].iter().sum::<u64>(), 3);
        assert_eq!(p.rows[1].counts[1][2], 3);
        // One SETTINGS: an axis from 0 to 1, not 2.
        assert_eq!(p.rows[2].y.ticks, [0.0, 1.0]);
        assert_eq!(p.rows[0].y.ticks, [0.0, 1.0, 2.0]);
        assert_eq!(p.unit, TimeUnit::Millis);
        assert!(p.legend().is_empty(), "{:?}", p.legend());
        assert!(p.absent.contains(&FrameClass::Ping));
        assert!(p.empty.is_none());
        let s = render(&p).unwrap();
        // A bar per bin with frames, each with its count.
        assert_eq!(s.matches(r##"fill="#1F77B4""##).count(), 2, "{s}");
        assert_eq!(s.matches(r##"fill="#2CA02C""##).count(), 2, "{s}");
        assert!(
            s.contains("<title>HEADERS, client: 2 frames in 1–1.5 ms (4000/s)</title>"),
            "{s}"
        );
        assert!(!s.contains(PHASE_BOUNDARY));
        assert!(s.contains("frames per 500 µs bin"), "{s}");
    }

    #[test]
    fn cuts_outside_the_span_are_not_drawn() {
        let t = timeline(
            100 * MS,
            &[
                (0, 0, FrameClass::Headers, 1),
                (29, 0, FrameClass::Headers, 1),
            ],
        );
        let p = plan(&input(&t, vec![1_500 * MS, 99_000 * MS], None));
        assert_eq!(p.cuts, [1.5]);
        assert_eq!(p.legend(), [PHASE_BOUNDARY]);
        let s = render(&p).unwrap();
        assert!(s.contains("phase boundary at 1.5 s"), "{s}");
        assert!(s.contains("stroke-dasharray"), "{s}");
        let many: Vec<Nanos> = (1..=100).map(|i| i * 20 * MS).collect();
        let p = plan(&input(&t, many, None));
        assert!(p.cuts.is_empty() && p.legend().is_empty());
        assert_eq!(p.cuts_hidden, 100);
        let s = render(&p).unwrap();
        assert!(s.contains("100 phase boundaries, not drawn"), "{s}");
        assert!(!s.contains("stroke-dasharray") && !s.contains("phase boundary"));
    }

    #[test]
    fn no_frames_is_said_with_the_reason() {
        let t = timeline(FINEST, &[]);
        let p = plan(&input(&t, vec![], None));
        assert!(p.rows.is_empty());
        assert_eq!(p.empty.as_deref(), Some("the capture holds no packets"));
        let s = render(&p).unwrap();
        assert!(s.contains("no HTTP/2 frames to draw"), "{s}");
        assert!(s.contains("the capture holds no packets"), "{s}");
        assert!(s.trim_end().ends_with("</svg>"));
    }
}
