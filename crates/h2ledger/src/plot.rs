//! `--plot FILE.svg`: frames per second by kind, per side, over time; phase cuts as dashed
//! lines. Hand-written SVG, no dependency.

use std::fmt::Write as _;

use h2ledger_core::flow::WindowSeries;
use h2ledger_core::{FrameClass, Timeline};

/// The classes drawn, with their colours.
const SERIES: [(FrameClass, &str); 6] = [
    (FrameClass::Headers, "#1f77b4"),
    (FrameClass::Trailers, "#9467bd"),
    (FrameClass::Data, "#2ca02c"),
    (FrameClass::WindowUpdate, "#ff7f0e"),
    (FrameClass::Ping, "#d62728"),
    (FrameClass::PingAck, "#8c564b"),
];

/// At least this wide a bin, and at most this many bins.
const MIN_BIN_NS: i64 = 250_000_000;
const MAX_BINS: usize = 200;

/// Renders the timeline. `cuts`: phase boundaries in seconds from the timeline's origin.
/// `windows`: also draw the flow-control panels (issue 11).
pub fn svg(t: &Timeline, cuts: &[f64], title: &str, windows: Option<&WindowSeries>) -> String {
    let n = t.counts.keys().next_back().map_or(1, |b| *b as usize + 1);
    let factor = (n.div_ceil(MAX_BINS)).max((MIN_BIN_NS as usize).div_ceil(t.bucket as usize));
    let bins = n.div_ceil(factor);
    let bin_s = (t.bucket as f64 * factor as f64) / 1e9;
    // rates[side][series][bin]
    let mut rates = vec![vec![vec![0f64; bins]; SERIES.len()]; 2];
    for (&b, c) in &t.counts {
        let b = b as usize;
        for side in 0..2 {
            for (k, (class, _)) in SERIES.iter().enumerate() {
                rates[side][k][b / factor] += f64::from(c[side][class.index()]) / bin_s;
            }
        }
    }
    let span = bins as f64 * bin_s;
    let ymax = rates
        .iter()
        .flatten()
        .flatten()
        .fold(1.0f64, |a, &b| a.max(b));
    let ymax = nice(ymax);
    let (w, ph, left, top, gap) = (900.0, 220.0, 60.0, 40.0, 50.0);
    let pw = w - left - 160.0;
    let extra = if windows.is_some_and(|w| w.conn.is_some()) {
        2.0 * (ph + gap)
    } else {
        0.0
    };
    let h = top + 2.0 * ph + gap + 50.0 + extra + if extra > 0.0 { 20.0 } else { 0.0 };
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="20" font-size="14">{}</text>"#,
        xml(title)
    );
    for (side, name) in ["client", "server"].iter().enumerate() {
        let y0 = top + side as f64 * (ph + gap);
        let _ = writeln!(
            s,
            r##"<rect x="{left}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>"##
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" font-weight="bold">{name} sends (frames/s, {bin_s:.2} s bins)</text>"#,
            left + 5.0,
            y0 - 6.0
        );
        for i in 0..=4 {
            let v = ymax * f64::from(i) / 4.0;
            let y = y0 + ph - ph * f64::from(i) / 4.0;
            let _ = writeln!(
                s,
                r##"<line x1="{left}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" text-anchor="end">{v:.0}</text>"##,
                left + pw,
                left - 4.0,
                y + 4.0
            );
        }
        for c in cuts {
            let x = left + pw * c / span;
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{:.1}" stroke="#000" stroke-dasharray="5,4"/>"##,
                y0 + ph
            );
        }
        for (k, (class, colour)) in SERIES.iter().enumerate() {
            let pts: Vec<String> = rates[side][k]
                .iter()
                .enumerate()
                .map(|(b, r)| {
                    let x = left + pw * (b as f64 + 0.5) * bin_s / span;
                    let y = y0 + ph - ph * r / ymax;
                    format!("{x:.1},{y:.1}")
                })
                .collect();
            let _ = writeln!(
                s,
                r#"<polyline fill="none" stroke="{colour}" stroke-width="1.8" points="{}"><title>{name} {}</title></polyline>"#,
                pts.join(" "),
                class.name()
            );
        }
    }
    // x axis
    let yb = top + 2.0 * ph + gap;
    let step = nice(span / 8.0);
    let mut x = 0.0;
    while x <= span + 1e-9 {
        let px = left + pw * x / span;
        let _ = writeln!(
            s,
            r#"<text x="{px:.1}" y="{:.1}" text-anchor="middle">{x:.1}</text>"#,
            yb + 15.0
        );
        x += step;
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">seconds since the first packet (dashed: phase boundaries)</text>"#,
        left + pw / 2.0,
        yb + 32.0
    );
    for (k, (class, colour)) in SERIES.iter().enumerate() {
        let y = top + 20.0 * k as f64;
        let _ = writeln!(
            s,
            r#"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{colour}" stroke-width="3"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            left + pw + 15.0,
            left + pw + 40.0,
            left + pw + 45.0,
            y + 4.0,
            class.name()
        );
    }
    if let Some(w) = windows.filter(|w| w.conn.is_some()) {
        window_panels(&mut s, w, span, (left, yb + 50.0 + gap, pw, ph, gap));
    }
    s.push_str("</svg>\n");
    s
}

/// Each side's connection window and the available window of its last-used stream over time
/// (one connection), stall starts as red ticks.
fn window_panels(
    s: &mut String,
    w: &WindowSeries,
    span: f64,
    (left, top, pw, ph, gap): (f64, f64, f64, f64, f64),
) {
    let bin_s = w.bucket as f64 / 1e9;
    let span = span.max(w.points.len() as f64 * bin_s).max(1e-9);
    // Carry each value forward to the buckets that did not change it.
    let mut lines = [[Vec::new(), Vec::new()], [Vec::new(), Vec::new()]];
    let mut stalls = [Vec::new(), Vec::new()];
    let mut cur = [(None, None); 2];
    for (b, p) in w.points.iter().enumerate() {
        for side in 0..2 {
            let (c, st, n) = p[side];
            cur[side].0 = c.or(cur[side].0);
            cur[side].1 = st.or(cur[side].1);
            let t = (b as f64 + 0.5) * bin_s;
            if let Some(v) = cur[side].0 {
                lines[side][0].push((t, v));
            }
            if let Some(v) = cur[side].1 {
                lines[side][1].push((t, v));
            }
            if n > 0 {
                stalls[side].push((t, n));
            }
        }
    }
    for (side, name) in ["client", "server"].iter().enumerate() {
        let y0 = top + side as f64 * (ph + gap);
        let ymax = nice(
            lines[side]
                .iter()
                .flatten()
                .fold(1.0f64, |a, &(_, v)| a.max(v as f64)),
        );
        let ymin = lines[side]
            .iter()
            .flatten()
            .fold(0.0f64, |a, &(_, v)| a.min(v as f64));
        let range = (ymax - ymin).max(1.0);
        let y = |v: f64| y0 + ph - ph * (v - ymin) / range;
        let _ = writeln!(
            s,
            r##"<rect x="{left}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>"##
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" font-weight="bold">{name}'s send windows, bytes (connection {}; red ticks: stalls)</text>"#,
            left + 5.0,
            y0 - 6.0,
            w.conn.unwrap_or(0)
        );
        for i in 0..=4 {
            let v = ymin + range * f64::from(i) / 4.0;
            let _ = writeln!(
                s,
                r##"<line x1="{left}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" text-anchor="end">{v:.0}</text>"##,
                y(v),
                left + pw,
                y(v),
                left - 4.0,
                y(v) + 4.0
            );
        }
        for (k, (colour, what)) in [
            ("#ff7f0e", "connection window"),
            ("#2ca02c", "stream window (available)"),
        ]
        .iter()
        .enumerate()
        {
            let pts: Vec<String> = lines[side][k]
                .iter()
                .map(|&(t, v)| format!("{:.1},{:.1}", left + pw * t / span, y(v as f64)))
                .collect();
            let _ = writeln!(
                s,
                r#"<polyline fill="none" stroke="{colour}" stroke-width="1.8" points="{}"><title>{name} {what}</title></polyline>"#,
                pts.join(" ")
            );
            let ly = y0 + 20.0 * k as f64;
            let _ = writeln!(
                s,
                r#"<line x1="{:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{colour}" stroke-width="3"/><text x="{:.1}" y="{:.1}">{what}</text>"#,
                left + pw + 15.0,
                left + pw + 40.0,
                left + pw + 45.0,
                ly + 4.0
            );
        }
        for &(t, n) in &stalls[side] {
            let x = left + pw * t / span;
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#d62728" stroke-width="2"><title>{n} stall(s)</title></line>"##,
                y0 + ph - 12.0,
                y0 + ph
            );
        }
    }
}

/// A round number at or above `v` (1, 2, 5 times a power of ten).
fn nice(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= v {
            return m * p;
        }
    }
    10.0 * p
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
