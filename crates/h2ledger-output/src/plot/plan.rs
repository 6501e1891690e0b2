//! What the plot draws, decided as data before drawing: rows, bins, ticks, legend.

use h2ledger_core::flow::WindowSeries;
use h2ledger_core::{FrameClass, Timeline};
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

/// Bins are at least this long, unless the whole capture is at most [`FEW_BUCKETS`] buckets.
const MIN_BIN_NS: i64 = 250_000_000;
const FEW_BUCKETS: usize = 15;
/// At most this many bins, whatever the span.
const MAX_BINS: usize = 200;

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

/// One row of rate panels: a frame kind, both sides on one y scale.
#[derive(Debug)]
pub struct Row {
    pub class: FrameClass,
    /// `rates[side][bin]`, frames per second.
    pub rates: [Vec<f64>; 2],
    pub frames: [u64; 2],
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

/// Everything drawn, decided before drawing.
#[derive(Debug)]
pub struct Plan {
    pub title: String,
    /// Bin length in seconds (the whole capture when it is shorter than one bucket).
    pub bin_s: f64,
    pub bins: usize,
    pub x: Axis,
    /// Times in milliseconds when the span is under 2 s.
    pub millis: bool,
    pub rows: Vec<Row>,
    /// Kinds of [`expected`] with no frame on either side.
    pub absent: Vec<FrameClass>,
    /// The phase boundaries drawn (dashed), in seconds from the first packet.
    pub cuts: Vec<f64>,
    /// Boundaries within the span not drawn: more than [`MAX_CUTS_DRAWN`].
    pub cuts_hidden: usize,
    /// The flow-control rows, with `--analyze`.
    pub windows: Option<Windows>,
}

impl Plan {
    /// `cuts`: phase boundaries in seconds from the timeline's origin (the first packet);
    /// `end`: the last packet, in seconds from the origin; `windows`: also the flow-control
    /// rows (issue 11).
    pub fn new(
        t: &Timeline,
        cuts: &[f64],
        end: Option<f64>,
        title: &str,
        windows: Option<&WindowSeries>,
    ) -> Plan {
        let n = t.counts.keys().next_back().map_or(1, |b| *b as usize + 1);
        let factor = bin_factor(n, t.bucket);
        let bins = n.div_ceil(factor);
        let mut bin_s = (t.bucket as f64 * factor as f64) / 1e9;
        // A capture shorter than one bucket: its one bin is the capture itself (the 34 ms of
        // nghttp-nghttpd.pcap at 100 ms would read as a third of its real rate).
        if let Some(e) = end.filter(|e| bins == 1 && *e > 0.0 && *e < bin_s) {
            bin_s = e.max(1e-3);
        }
        let mut rows = Vec::new();
        for class in FrameClass::ALL {
            let mut rates = [vec![0f64; bins], vec![0f64; bins]];
            let mut frames = [0u64; 2];
            for (&b, c) in &t.counts {
                for side in 0..2 {
                    let k = c[side][class.index()];
                    rates[side][b as usize / factor] += f64::from(k) / bin_s;
                    frames[side] += u64::from(k);
                }
            }
            if frames != [0, 0] {
                let max = rates.iter().flatten().fold(0f64, |a, &b| a.max(b));
                rows.push(Row {
                    class,
                    rates,
                    frames,
                    y: Axis::new(0.0, max, 3),
                });
            }
        }
        let absent = expected()
            .iter()
            .filter(|c| !rows.iter().any(|r| r.class == **c))
            .copied()
            .collect();
        let windows = windows
            .filter(|w| w.conn.is_some())
            .map(|w| Windows::new(w, t.origin));
        let mut span = bins as f64 * bin_s;
        if let Some(w) = &windows {
            let last = w.rows.iter().flat_map(|r| r.lines.iter().flatten());
            span = last.map(|p| p.0).fold(span, f64::max);
        }
        let mut cuts: Vec<f64> = cuts
            .iter()
            .copied()
            .filter(|c| *c > 0.0 && *c < span)
            .collect();
        let cuts_hidden = if cuts.len() > MAX_CUTS_DRAWN {
            std::mem::take(&mut cuts).len()
        } else {
            0
        };
        let mut x = Axis::new(0.0, span, 8);
        // The x axis ends with the data, not at the next round value.
        x.hi = span;
        x.ticks.retain(|v| *v <= span * (1.0 + 1e-9));
        Plan {
            title: title.to_string(),
            bin_s,
            bins,
            x,
            millis: span < 2.0,
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
        if self.millis {
            fmt_fixed(s * 1e3, self.x.step * 1e3)
        } else {
            fmt_fixed(s, self.x.step)
        }
    }

    /// A time to the millisecond, with its unit.
    pub(super) fn time_exact(&self, s: f64) -> String {
        if self.millis {
            format!("{} ms", fmt_fixed(s * 1e3, 0.1))
        } else {
            format!("{} s", fmt_fixed(s, 0.001))
        }
    }

    pub(super) fn bin(&self) -> String {
        if self.bin_s < 1.0 {
            format!("{} ms", fmt_fixed(self.bin_s * 1e3, 1.0))
        } else {
            format!("{} s", fmt_fixed(self.bin_s, 0.1))
        }
    }
}

impl Windows {
    fn new(w: &WindowSeries, origin: Option<i64>) -> Windows {
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
            let t = shift + (b as f64 + 0.5) * bin_s;
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
                if n > 0 {
                    stalls[side].push((t, n));
                }
            }
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

/// Buckets per bin: 1, 2 or 5 times a power of ten, so that a bin is a round time (a rate
/// of 24/s reads 24/s in every bin, not 23.3 and 26.7); at least [`MIN_BIN_NS`] unless the
/// capture has few buckets, at most [`MAX_BINS`] bins.
fn bin_factor(n: usize, bucket: i64) -> usize {
    let mut i = 0u32;
    loop {
        let f = [1usize, 2, 5][(i % 3) as usize].saturating_mul(10usize.saturating_pow(i / 3));
        let long = f as i64 * bucket >= MIN_BIN_NS || n <= FEW_BUCKETS;
        if (n.div_ceil(f) <= MAX_BINS && long) || f == usize::MAX {
            return f;
        }
        i += 1;
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

    #[test]
    fn bins_are_round_times() {
        // 100 ms buckets: the article's 6 s make 0.5 s bins (24/s stays 24/s).
        assert_eq!(bin_factor(61, 100_000_000), 5);
        // One bucket (34 ms of nghttp): one 100 ms bin.
        assert_eq!(bin_factor(1, 100_000_000), 1);
        // A day: at most 200 bins.
        let f = bin_factor(864_000, 100_000_000);
        assert!(864_000usize.div_ceil(f) <= MAX_BINS, "{f}");
        assert!(usize::MAX.div_ceil(bin_factor(usize::MAX, 1)) <= MAX_BINS);
    }

    fn timeline(frames: &[(u64, usize, FrameClass, u32)]) -> Timeline {
        let mut t = Timeline::new(100_000_000);
        t.origin = Some(0);
        for &(b, side, class, n) in frames {
            t.counts.entry(b).or_insert([[0; FrameClass::COUNT]; 2])[side][class.index()] += n;
        }
        t
    }

    #[test]
    fn one_bin_is_drawn_and_equal_series_get_their_own_rows() {
        let t = timeline(&[
            (0, 0, FrameClass::Headers, 3),
            (0, 0, FrameClass::Data, 3),
            (0, 1, FrameClass::Data, 3),
        ]);
        let p = Plan::new(&t, &[], Some(0.03), "x", None);
        assert_eq!(p.bins, 1);
        let kinds: Vec<FrameClass> = p.rows.iter().map(|r| r.class).collect();
        assert_eq!(kinds, [FrameClass::Headers, FrameClass::Data]);
        // 3 frames in the 30 ms the capture lasted.
        assert_eq!(p.rows[0].rates[0], [100.0]);
        assert_eq!(p.rows[1].rates, [vec![100.0], vec![100.0]]);
        assert!(p.millis);
        assert!(p.legend().is_empty(), "{:?}", p.legend());
        assert!(p.absent.contains(&FrameClass::Ping));
        let s = render(&p).unwrap();
        // The one bin is a bar in each panel that has frames.
        assert_eq!(s.matches(r##"fill="#1F77B4""##).count(), 1, "{s}");
        assert_eq!(s.matches(r##"fill="#2CA02C""##).count(), 2, "{s}");
        assert!(!s.contains(PHASE_BOUNDARY));
        assert!(s.contains("over the whole 30 ms (one bin)"), "{s}");
    }

    #[test]
    fn cuts_outside_the_span_are_not_drawn() {
        let t = timeline(&[
            (0, 0, FrameClass::Headers, 1),
            (29, 0, FrameClass::Headers, 1),
        ]);
        let p = Plan::new(&t, &[1.5, 99.0], None, "x", None);
        assert_eq!(p.cuts, [1.5]);
        assert_eq!(p.legend(), [PHASE_BOUNDARY]);
        let s = render(&p).unwrap();
        assert!(s.contains("phase boundary at 1.5 s"), "{s}");
        let many: Vec<f64> = (1..=100).map(|i| f64::from(i) * 0.02).collect();
        let p = Plan::new(&t, &many, None, "x", None);
        assert!(p.cuts.is_empty() && p.legend().is_empty());
        assert_eq!(p.cuts_hidden, 100);
        let s = render(&p).unwrap();
        assert!(s.contains("100 phase boundaries, not drawn"), "{s}");
        assert!(!s.contains("stroke-dasharray") && !s.contains("phase boundary"));
    }

    #[test]
    fn no_frames_is_said() {
        let p = Plan::new(&timeline(&[]), &[], None, "x", None);
        assert!(p.rows.is_empty());
        assert!(render(&p).unwrap().contains("no HTTP/2 frames to draw"));
    }
}
