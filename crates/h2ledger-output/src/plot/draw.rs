//! Drawing a [`Plan`] with plotters' SVG backend.

use h2ledger_core::flow::WindowSeries;
use h2ledger_core::Timeline;
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
/// Renders the timeline as SVG: frames per second by kind and side, the phase boundaries
/// `cuts` and, with `windows`, the flow-control rows.
pub fn svg(
    t: &Timeline,
    cuts: &[f64],
    end: Option<f64>,
    title: &str,
    windows: Option<&WindowSeries>,
) -> Result<String, Error> {
    render(&Plan::new(t, cuts, end, title, windows))
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
    let rates_h = rates_rows_h(p);
    let win_h = p
        .windows
        .as_ref()
        .map_or(0, |w| 40 + w.rows.len() as i32 * WIN_ROW_H + X_LABELS + 20);
    let h = HEAD + rates_h + 50 + win_h;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (W, h as u32)).into_drawing_area();
        draw(&root, p).map_err(|e| Error(e.to_string()))?;
        root.present().map_err(|e| Error(e.to_string()))?;
    }
    Ok(out)
}

fn draw(root: &Area<'_>, p: &Plan) -> DrawResult {
    root.fill(&WHITE)?;
    text(root, &p.title, (12, 10), 18, INK)?;
    let what = if p.bins == 1 {
        format!("frames per second over the whole {} (one bin)", p.bin())
    } else {
        format!("frames per second in {} bins", p.bin())
    };
    text(
        root,
        &format!("{what}, one row per frame kind seen, one y scale per row"),
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
    if p.rows.is_empty() {
        text(
            root,
            "no HTTP/2 frames to draw",
            (LEFT + Y_LABELS, HEAD + 20),
            14,
            INK,
        )?;
    }
    for (i, row) in p.rows.iter().enumerate() {
        let y = HEAD + i as i32 * ROW_H;
        text(root, row.class.name(), (12, y + ROW_H / 2 - 14), 13, INK)?;
        let sent = format!("{} / {}", row.frames[0], row.frames[1]);
        text(root, &sent, (12, y + ROW_H / 2 + 2), 11, FAINT)?;
        let last = i + 1 == p.rows.len();
        let c = colour(row.class);
        for side in 0..2 {
            let mut chart = panel(root, p, &row.y, (column(side), y), ROW_H, last)?;
            // Bars, with a gap between them while they are wide enough to show one.
            let inset = if p.bins <= 60 { p.bin_s * 0.12 } else { 0.0 };
            let bars = row.rates[side]
                .iter()
                .enumerate()
                .filter(|(_, r)| **r > 0.0);
            chart.draw_series(bars.map(|(b, r)| {
                let x0 = b as f64 * p.bin_s;
                Rectangle::new([(x0 + inset, 0.0), (x0 + p.bin_s - inset, *r)], c.filled())
            }))?;
            cut_lines(&mut chart, &p.cuts, &row.y)?;
        }
    }
    let y = HEAD + rates_rows_h(p) + 4;
    let unit = if p.millis { "milliseconds" } else { "seconds" };
    text(
        root,
        &format!("{unit} since the first packet"),
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
                let tick = (ya.hi - ya.lo) * 0.1;
                chart.draw_series(w.stalls[side].iter().map(|&(t, _)| {
                    PathElement::new(
                        vec![(t, ya.lo), (t, ya.lo + tick)],
                        STALL_COLOUR.stroke_width(2),
                    )
                }))?;
                cut_lines(&mut chart, &p.cuts, ya)?;
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

fn cut_lines(chart: &mut Chart<'_, '_>, cuts: &[f64], y: &Axis) -> DrawResult {
    for &c in cuts {
        let line = [(c, y.lo), (c, y.hi)];
        chart.draw_series(DashedLineSeries::new(line, 5, 4, BLACK.stroke_width(1)))?;
    }
    Ok(())
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
