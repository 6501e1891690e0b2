//! Drawing a [`Plan`]: text, axes, grids and window lines with plotters' SVG backend; the bars
//! (each with a `<title>`: its kind, side, count, time and rate, a browser's tooltip) and the
//! phase boundaries as SVG elements of our own, laid over them.

use std::fmt::Write as _;

use h2ledger_run::PlotInput;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::plan::*;
use super::Error;

impl Axis {
    fn coord(&self) -> Ticked {
        Ticked(self.clone())
    }
}
/// Renders a run's plot as SVG: frames per bin by kind and side, the phase boundaries and,
/// with `--analyze`, the flow-control rows.
pub fn svg(p: &PlotInput<'_>, o: &Options) -> Result<String, Error> {
    render(&Plan::new(p, o))
}

// Layout, in pixels.
const W: u32 = 1000;
const LEFT: i32 = 130;
const COL_GAP: i32 = 14;
const RIGHT: i32 = 14;
const HEAD: i32 = 96;
const ROW_H: i32 = 84;
const WIN_ROW_H: i32 = 130;
const X_LABELS: i32 = 22;
const Y_LABELS: i32 = 50;
const COL_W: i32 = (W as i32 - LEFT - RIGHT - COL_GAP) / 2;

const GRID: RGBColor = RGBColor(0xe6, 0xe6, 0xe6);
const AXIS: RGBColor = RGBColor(0x99, 0x99, 0x99);
const INK: RGBColor = RGBColor(0x22, 0x22, 0x22);
const FAINT: RGBColor = RGBColor(0x55, 0x55, 0x55);

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Ticked, Ticked>>;
type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// Draws a plan.
pub(crate) fn render(p: &Plan) -> Result<String, Error> {
    let h = match &p.empty {
        Some(why) => HEAD + 30 + 18 * wrap(why, EMPTY_WRAP).len() as i32,
        None => {
            let win_h = p
                .windows
                .as_ref()
                .map_or(0, |w| 40 + w.rows.len() as i32 * WIN_ROW_H + X_LABELS + 20);
            HEAD + rates_rows_h(p) + 50 + win_h
        }
    };
    let mut out = String::new();
    let mut over = Overlay::default();
    {
        let root = SVGBackend::with_string(&mut out, (W, h as u32)).into_drawing_area();
        draw(&root, p, &mut over).map_err(|e| Error(e.to_string()))?;
        root.present().map_err(|e| Error(e.to_string()))?;
    }
    let at = out
        .rfind("</svg>")
        .ok_or_else(|| Error("no </svg> in plotters' output".into()))?;
    out.insert_str(at, &over.bars);
    out.insert_str(at + over.bars.len(), &over.lines);
    Ok(out)
}

/// The elements drawn over plotters' output: bars first, then the dashed lines over them.
#[derive(Default)]
struct Overlay {
    bars: String,
    lines: String,
}

/// Characters per line of the reason an empty plot gives.
const EMPTY_WRAP: usize = 100;

fn draw(root: &Area<'_>, p: &Plan, over: &mut Overlay) -> DrawResult {
    root.fill(&WHITE)?;
    text(root, &p.title, (12, 10), 18, INK)?;
    if let Some(why) = &p.empty {
        text(root, "no HTTP/2 frames to draw", (12, 40), 16, INK)?;
        for (i, line) in wrap(why, EMPTY_WRAP).iter().enumerate() {
            text(root, line, (12, 68 + 18 * i as i32), 13, FAINT)?;
        }
        return Ok(());
    }
    let mut what = if p.bins == 1 {
        format!("frames in one {} bin", p.bin())
    } else {
        format!("frames per {} bin", p.bin())
    };
    if let Some(n) = &p.bin_note {
        what.push_str(&format!(" ({n})"));
    }
    text(
        root,
        &format!("{what}; one row per frame kind seen, one y scale per row"),
        (12, 36),
        13,
        FAINT,
    )?;
    legend(root, p, (12, 58))?;
    for (side, name) in ["client sends", "server sends"].iter().enumerate() {
        let x = column(side) + Y_LABELS + (COL_W - Y_LABELS) / 2;
        root.draw(&Text::new(
            name.to_string(),
            (x, HEAD - 16),
            ("sans-serif", 14)
                .into_font()
                .style(FontStyle::Bold)
                .color(&INK)
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }
    for (i, row) in p.rows.iter().enumerate() {
        let y = HEAD + i as i32 * ROW_H;
        text(root, row.class.name(), (12, y + ROW_H / 2 - 14), 13, INK)?;
        let sent = format!("{} / {}", row.frames[0], row.frames[1]);
        text(root, &sent, (12, y + ROW_H / 2 + 2), 11, FAINT)?;
        let last = i + 1 == p.rows.len();
        let c = colour(row.class);
        for side in 0..2 {
            let chart = panel(root, p, &row.y, (column(side), y), ROW_H, last)?;
            for (b, n) in row.counts[side].iter().enumerate().filter(|(_, n)| **n > 0) {
                let x0 = b as f64 * p.bin_s;
                let (l, bottom) = chart.backend_coord(&(x0, 0.0));
                let (r, top) = chart.backend_coord(&(x0 + p.bin_s, *n as f64));
                // A gap between bars while they are wide enough to show one: neighbours stay
                // two bars, not one twice as wide.
                let gap = if r - l >= 4 {
                    ((f64::from(r - l) * 0.24).round() as i32).max(1)
                } else {
                    0
                };
                let (l, r) = (l + gap / 2, r - (gap - gap / 2));
                let who = ["client", "server"][side];
                let plural = if *n == 1 { "" } else { "s" };
                let _ = writeln!(
                    over.bars,
                    r##"<rect x="{l}" y="{top}" width="{}" height="{}" fill="#{:02X}{:02X}{:02X}"><title>{}, {who}: {n} frame{plural} in {} ({}/s)</title></rect>"##,
                    (r - l).max(1),
                    (bottom - top).max(1),
                    c.0,
                    c.1,
                    c.2,
                    row.class.name(),
                    p.bin_span(b),
                    fmt_rate(*n as f64 / p.bin_s),
                );
            }
            cut_lines(over, &chart, &p.cuts, &row.y);
        }
    }
    let y = HEAD + rates_rows_h(p) + 4;
    text(
        root,
        &format!("{} since the first packet", p.unit.name()),
        (LEFT + Y_LABELS, y),
        12,
        FAINT,
    )?;
    let mut note = String::from("under each kind: frames the client / the server sent");
    if p.cuts_hidden > 0 {
        note.push_str(&format!(
            "; {} phase boundaries, not drawn (more than {MAX_CUTS_DRAWN})",
            p.cuts_hidden
        ));
    }
    if !p.absent.is_empty() {
        let names: Vec<&str> = p.absent.iter().map(|c| c.name()).collect();
        note.push_str(&format!("; no {} frames at all", names.join(", ")));
    }
    text(root, &note, (12, y + 20), 12, FAINT)?;
    if let Some(w) = &p.windows {
        let top = y + 52;
        text(
            root,
            &format!(
                "send windows in bytes, connection {}: what each side may still send (the stream: its busiest)",
                w.conn
            ),
            (12, top),
            14,
            INK,
        )?;
        for (i, row) in w.rows.iter().enumerate() {
            let y = top + 30 + i as i32 * WIN_ROW_H;
            text(root, row.name, (12, y + WIN_ROW_H / 2 - 8), 13, INK)?;
            let last = i + 1 == w.rows.len();
            for side in 0..2 {
                let origin = (column(side), y);
                let ya = &row.y[side];
                let mut chart = panel(root, p, ya, origin, WIN_ROW_H, last)?;
                let pts = &row.lines[side];
                if pts.is_empty() {
                    let (x, y) = (origin.0 + Y_LABELS + 12, origin.1 + WIN_ROW_H / 2 - 8);
                    text(root, "no value recorded for this side", (x, y), 12, FAINT)?;
                }
                let style = row.colour.stroke_width(2);
                chart.draw_series(LineSeries::new(pts.iter().copied(), style))?;
                // A line of one point draws nothing: a few points get a mark each.
                if pts.len() <= 30 {
                    let marks = pts
                        .iter()
                        .map(|&pt| Circle::new(pt, 3, row.colour.filled()));
                    chart.draw_series(marks)?;
                }
                stall_marks(over, &chart, &w.stalls[side], ya, side);
                cut_lines(over, &chart, &p.cuts, ya);
            }
        }
    }
    Ok(())
}

fn rates_rows_h(p: &Plan) -> i32 {
    p.rows.len().max(1) as i32 * ROW_H + X_LABELS
}

fn column(side: usize) -> i32 {
    LEFT + side as i32 * (COL_W + COL_GAP)
}

fn text(root: &Area<'_>, s: &str, at: (i32, i32), size: u32, c: RGBColor) -> DrawResult {
    root.draw(&Text::new(
        s.to_string(),
        at,
        ("sans-serif", size).into_font().color(&c),
    ))
}

/// One panel at `at` (top left), `h` high (plus the x labels when `labels`), its grid at the
/// plan's x ticks and `y`'s ticks.
fn panel<'a, 'b>(
    root: &'a Area<'b>,
    p: &Plan,
    y: &Axis,
    at: (i32, i32),
    h: i32,
    labels: bool,
) -> Result<Chart<'a, 'b>, DrawingAreaErrorKind<std::io::Error>> {
    let h = h + if labels { X_LABELS } else { 0 };
    let area = root.clone().shrink(at, (COL_W, h));
    let mut chart = ChartBuilder::on(&area)
        .margin_top(8)
        .margin_bottom(4)
        .x_label_area_size(if labels { X_LABELS } else { 0 })
        .y_label_area_size(Y_LABELS)
        .build_cartesian_2d(p.x.coord(), y.coord())?;
    let xf = |v: &f64| p.time(*v);
    let yf = |v: &f64| fmt_tick(*v, y.step);
    chart
        .configure_mesh()
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .axis_style(AXIS)
        .label_style(("sans-serif", 12).into_font().color(&FAINT))
        .x_label_formatter(&xf)
        .y_label_formatter(&yf)
        .draw()?;
    Ok(chart)
}

/// A linear f64 axis whose grid lines and labels are exactly [`Axis::ticks`].
#[derive(Debug)]
struct Ticked(Axis);

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = (v - self.0.lo) / (self.0.hi - self.0.lo);
        let f = if f.is_finite() {
            f.clamp(-1.0, 2.0)
        } else {
            0.0
        };
        limit.0 + (f64::from(limit.1 - limit.0) * f).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.0.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.0.lo..self.0.hi
    }
}

/// The stall ticks of one window panel, each at the time its stall began, with that time in
/// its `<title>` (a tooltip; seconds since the first packet, to the nanosecond): drawn over
/// the chart as the phase boundaries are.
fn stall_marks(
    over: &mut Overlay,
    chart: &Chart<'_, '_>,
    stalls: &[(f64, u32)],
    y: &Axis,
    side: usize,
) {
    let tick = (y.hi - y.lo) * 0.1;
    let who = if side == 0 { "client" } else { "server" };
    let (r, g, b) = (STALL_COLOUR.0, STALL_COLOUR.1, STALL_COLOUR.2);
    for &(t, n) in stalls {
        let (x, y0) = chart.backend_coord(&(t, y.lo));
        let (_, y1) = chart.backend_coord(&(t, y.lo + tick));
        let what = if n == 1 {
            format!("{who} stall began at {t:.9} s")
        } else {
            format!("{n} {who} stalls began near {t:.3} s (beyond the stall times kept)")
        };
        let _ = writeln!(
            over.lines,
            r##"<line x1="{x}" y1="{y0}" x2="{x}" y2="{y1}" stroke="#{r:02X}{g:02X}{b:02X}" stroke-width="2"><title>{what}</title></line>"##
        );
    }
}

/// The dashed phase boundaries of one panel.
fn cut_lines(over: &mut Overlay, chart: &Chart<'_, '_>, cuts: &[f64], y: &Axis) {
    for &c in cuts {
        let (x, y0) = chart.backend_coord(&(c, y.lo));
        let (_, y1) = chart.backend_coord(&(c, y.hi));
        let _ = writeln!(
            over.lines,
            r##"<line x1="{x}" y1="{y0}" x2="{x}" y2="{y1}" stroke="#000000" stroke-width="1" stroke-dasharray="5,4"/>"##
        );
    }
}

/// Frames per second: whole numbers from 10 on, one decimal below.
fn fmt_rate(r: f64) -> String {
    if r >= 10.0 {
        format!("{r:.0}")
    } else {
        fmt_fixed(r, 0.1)
    }
}

/// `s` cut at spaces into lines of at most `n` characters (a longer word is a line).
fn wrap(s: &str, n: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for w in s.split(' ') {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + w.chars().count() <= n => {
                l.push(' ');
                l.push_str(w);
            }
            _ => lines.push(w.to_string()),
        }
    }
    lines
}

/// The legend line: a sample and a name for each entry of [`Plan::legend`].
fn legend(root: &Area<'_>, p: &Plan, (mut x, y): (i32, i32)) -> DrawResult {
    for e in p.legend() {
        let label = if e == PHASE_BOUNDARY {
            let at: Vec<String> = p.cuts.iter().map(|c| p.time_exact(*c)).collect();
            match at.len() {
                1 => format!("{e} at {}", at[0]),
                2..=6 => format!("phase boundaries at {}", at.join(", ")),
                n => format!("{n} phase boundaries, the first at {}", at[0]),
            }
        } else {
            format!("{e} (a DATA frame left the available window at 0 or below)")
        };
        if e == STALL {
            let tick = vec![(x + 12, y), (x + 12, y + 12)];
            root.draw(&PathElement::new(tick, STALL_COLOUR.stroke_width(2)))?;
        } else {
            for (a, b) in [(0, 9), (14, 24)] {
                let dash = vec![(x + a, y + 7), (x + b, y + 7)];
                root.draw(&PathElement::new(dash, BLACK.stroke_width(1)))?;
            }
        }
        text(root, &label, (x + 30, y), 12, INK)?;
        // About 0.56 em a character in a sans-serif font.
        x += 30 + (label.len() as f64 * 12.0 * 0.56) as i32 + 24;
    }
    Ok(())
}
