//! Parts of one run merged with their phases (`replay -j N`, `replay A B C`, `sniff
//! --workers N` with `--split-at` or `--every`: decision 413).
//!
//! Every part cuts at the same instants (its caller gives each session the run's origin with
//! [`crate::Session::set_origin`] before its first packet), so phase `i` of the whole is the
//! union of the parts' phases `i`: it merges like a whole report ([`super::merge`]: counts
//! add, the analysis through each phase's `merge` key), its connections numbered as the whole
//! numbers them; its first and last instants are the earliest and the latest of the parts';
//! its findings are the merged run's that held during it, as one run lists them. A phase's
//! report is built from the parts' sessions when it is asked for, as one run builds it, so
//! a run of 1,000 phases never holds 1,000 reports.

use h2ledger_core::analysis::MAX_PHASES;
use h2ledger_core::tally::{MAX_CONN_DETAIL, PHASE_CONN_DETAIL};
use h2ledger_tcp::Nanos;

use super::{first_of, merge_numbered, Numbering};
use crate::obs::{Obs, Wanted};
use crate::report::Report;
use crate::session::{
    warn_cuts_outside_of, Finished, Fired, PlotInput, PlotPart, Session, CUT_OUTSIDE,
};
use h2ledger_core::flow::WindowSeries;
use h2ledger_core::Timeline;

/// A finished part that has phases or a `--plot`: its session's observers (the phases are
/// built from them), its end, and what its plot gives the merged one.
pub struct Part {
    obs: Obs,
    done: Finished,
    plot: Option<PlotPart>,
    /// The findings it fired, when its lines are merged ([`Session::keep_fired`]).
    fired: Option<Vec<Fired>>,
}

impl Part {
    /// `session`, finished as `done` (its `report` taken out to merge).
    pub fn new(session: &mut Session, done: Finished) -> Part {
        // The findings the end fired are drained from the observers: before they are taken.
        let fired = session.take_fired();
        Part {
            plot: session.take_plot(),
            obs: session.take_observers(),
            fired,
            done,
        }
    }

    /// `session`, finished as `done`, kept when the whole needs it: when it has phases or
    /// draws a `--plot`, or its finding lines are merged (then only those are kept).
    pub fn of(session: &mut Session, done: Finished) -> Option<Part> {
        if done.phase_count() > 0 || session.plots() {
            return Some(Part::new(session, done));
        }
        let fired = session.take_fired()?;
        Some(Part {
            obs: Obs::new(&Wanted::default()),
            done,
            plot: None,
            fired: Some(fired),
        })
    }

    fn phased(&self) -> bool {
        self.done.phase_count() > 0
    }
}

/// The merged `--plot`'s own parts (decision 429).
struct Plot {
    /// The parts' timelines added ([`Timeline::sum`]).
    timeline: Timeline,
    /// The window series of the part whose drawn connection began first, that connection
    /// numbered as the whole numbers it.
    windows: Option<WindowSeries>,
    /// The latest last packet of the parts.
    last: Option<Nanos>,
}

/// The parts' plots merged (`plots[p]`: part `p`'s, numbered by `num`). One run draws the
/// windows of the first connection that sent a stream frame: here the part's whose series
/// began earliest (equal times: the part merged first).
fn merge_plots(plots: Vec<(usize, PlotPart)>, num: &Numbering) -> Option<Plot> {
    let began = |w: &WindowSeries| {
        w.samples
            .iter()
            .filter_map(|s| s.first())
            .map(|s| s.0)
            .min()
    };
    let mut windows: Option<(Nanos, WindowSeries)> = None;
    let mut last: Option<Nanos> = None;
    let mut timelines = Vec::with_capacity(plots.len());
    for (p, part) in plots {
        last = last.max(part.last);
        timelines.push(part.timeline);
        let Some(mut w) = part.windows else {
            continue;
        };
        let (Some(conn), Some(t)) = (w.conn, began(&w)) else {
            continue;
        };
        if windows.as_ref().is_none_or(|(at, _)| t < *at) {
            w.conn = Some(num.number_of(p, conn));
            windows = Some((t, w));
        }
    }
    Some(Plot {
        timeline: Timeline::sum(timelines)?,
        windows: windows.map(|(_, w)| w),
        last,
    })
}

/// Parts merged: the whole report now, the phases one at a time ([`Merged::phases`]).
pub struct Merged {
    /// The whole run's report.
    pub report: Report,
    /// The parts with phases (those with packets), in the order the whole merged them.
    parts: Vec<Part>,
    /// Their connections' numbers in the whole (those without packets list none).
    num: Numbering,
    /// The merged `--plot`, when the parts draw one.
    plot: Option<Plot>,
    /// The splitter's index of each phase of the whole, in time order.
    indexes: Vec<u64>,
    /// The parts' fired findings (`-T jsonl`), each with the part's index in the order the
    /// parts were given and in the order the whole merged them ([`Merged::finding_lines`]).
    fired: Vec<(usize, usize, Vec<Fired>)>,
    /// The numbering of every part (`num` has only those with phases).
    all: Numbering,
}

/// Merges the whole `reports` of parts whose connections are disjoint, and the phases of
/// those that have some (`parts`, each beside its whole report, which is taken out of it).
pub fn merge_parts(parts: Vec<(Report, Option<Part>)>) -> Merged {
    let mut parts: Vec<(usize, (Report, Option<Part>))> = parts.into_iter().enumerate().collect();
    parts.sort_by_key(|(_, (r, _))| first_of(r));
    let mut fired = Vec::new();
    for (p, (given, (_, part))) in parts.iter_mut().enumerate() {
        if let Some(f) = part.as_mut().and_then(|x| x.fired.take()) {
            fired.push((*given, p, f));
        }
    }
    let parts: Vec<(Report, Option<Part>)> = parts.into_iter().map(|(_, x)| x).collect();
    let phased = parts.iter().flat_map(|(_, p)| p).any(Part::phased);
    let cuts = parts
        .iter()
        .filter_map(|(_, p)| p.as_ref())
        .any(|p| p.phased() && p.done.phase_list().by_cuts());
    let (mut reports, mut kept): (Vec<Report>, Vec<Option<Part>>) = parts.into_iter().unzip();
    if phased {
        // Each part warned of the cuts outside its own packets: the whole says it of its own.
        for r in &mut reports {
            r.ledger.warnings.retain(|w| !w.starts_with(CUT_OUTSIDE));
        }
    }
    let num = Numbering::new(&reports);
    let mut report = merge_numbered(&reports, &num, MAX_CONN_DETAIL);
    report.ledger.unlisted_first = num.unlisted(&reports, &report.ledger.per_connection);
    let plots: Vec<(usize, PlotPart)> = (kept.iter_mut().enumerate())
        .filter_map(|(p, k)| Some((p, k.as_mut()?.plot.take()?)))
        .collect();
    let plot = merge_plots(plots, &num);
    let all = num.subset(&(0..kept.len()).collect::<Vec<_>>());
    let at: Vec<usize> = (0..kept.len())
        .filter(|&k| kept[k].as_ref().is_some_and(Part::phased))
        .collect();
    let num = num.subset(&at);
    let parts: Vec<Part> = kept.into_iter().flatten().filter(Part::phased).collect();
    let mut indexes: Vec<u64> = parts
        .iter()
        .flat_map(|p| p.done.phase_list().indexes().iter().copied())
        .collect();
    indexes.sort_unstable();
    indexes.dedup();
    indexes.truncate(MAX_PHASES);
    let mut m = Merged {
        report: Report::default(),
        parts,
        num,
        plot,
        indexes,
        fired,
        all,
    };
    if cuts {
        let starts: Vec<Nanos> = (1..m.indexes.len()).map(|k| m.bounds(k).0).collect();
        warn_cuts_outside_of(&mut report, &starts);
    }
    m.report = report;
    m
}

impl Merged {
    /// How many phases the whole has.
    pub fn phase_count(&self) -> usize {
        self.indexes.len()
    }

    /// Phase `k`'s `[start, end)`: the earliest start and the latest end of the parts'.
    fn bounds(&self, k: usize) -> (Nanos, Nanos) {
        let i = self.indexes[k];
        let mut b: Option<(Nanos, Nanos)> = None;
        for p in &self.parts {
            let (s, e) = p.done.phase_list().bounds_at(i);
            b = Some(b.map_or((s, e), |(a, z)| (a.min(s), z.max(e))));
        }
        b.unwrap_or_default()
    }

    /// Phase `k`'s report (`k < phase_count()`), merged from the parts' phase.
    pub fn phase(&self, k: usize) -> Report {
        let i = self.indexes[k];
        let (a, b) = self.bounds(k);
        let reports: Vec<Report> = self
            .parts
            .iter()
            .map(|p| p.done.phase_list().report_at(&p.obs, i))
            .collect();
        let mut r = merge_numbered(&reports, &self.num, PHASE_CONN_DETAIL);
        r.name = format!("phase {}", i + 1);
        r.start = Some(a);
        r.end = Some(b);
        r.findings = self
            .report
            .findings
            .as_ref()
            .map(|f| f.iter().filter(|x| x.overlaps(a, b)).cloned().collect());
        r
    }

    /// What `--plot` draws of the whole, as [`Session::plot`] of one session reading every
    /// part's packets draws it (decision 429); `None` without `--plot`.
    pub fn plot(&self) -> Option<PlotInput<'_>> {
        let p = self.plot.as_ref()?;
        let origin = p.timeline.origin.unwrap_or(0);
        Some(PlotInput {
            timeline: &p.timeline,
            cuts: (1..self.phase_count())
                .map(|k| self.bounds(k).0.saturating_sub(origin))
                .collect(),
            end: p.last.map(|l| l.saturating_sub(origin)),
            windows: p.windows.as_ref(),
        })
    }

    /// The parts' `finding` lines (`-T jsonl`) as one session of every packet writes them,
    /// in the order it fires them (decision 443; `merge::lines`), connections numbered as
    /// the merged report numbers them. Empty unless the parts kept them
    /// ([`Session::keep_fired`]); taken once.
    pub fn finding_lines(&mut self) -> Vec<h2ledger_core::findings::Finding> {
        super::lines::order(std::mem::take(&mut self.fired), &self.all, &self.report)
    }

    /// Every phase's report, one at a time.
    pub fn phases(&self) -> impl Iterator<Item = Report> + '_ {
        (0..self.phase_count()).map(|k| self.phase(k))
    }
}

/// Why published reports' phases cannot merge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseError(pub String);

impl std::fmt::Display for PhaseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PhaseError {}

/// What to do when phases do not line up, said after every such error.
const LINE_UP: &str = "replay each capture with --split-at at absolute times (RFC 3339 or \
                       @EPOCH), which cut every capture at the same instants, or merge reports \
                       without phases";

/// Published reports (`replay -T json`, read by [`super::read::reports_with_phases`]),
/// each with its phases, merged: the whole as [`super::merge`], and phase by phase when
/// their boundaries line up (decision 416). The inner edges of the whole are every part's
/// inner edges; each part's must be a run of them with nothing of the part across another,
/// so that each of its phases lies in one phase of the whole (`--split-at` at the same
/// absolute times always lines up; `--every` lines up only from a common origin). Phase `j`
/// of the whole merges the parts' phases that lie in it (connections numbered as the whole
/// numbers them); its start is the earliest of theirs, its end the latest; its findings are
/// the whole's that held during it. Reports all without phases merge as [`super::merge`].
pub fn merge_published(
    parts: Vec<(Report, Vec<Report>)>,
) -> Result<(Report, Vec<Report>), PhaseError> {
    let with = parts.iter().filter(|(_, p)| !p.is_empty()).count();
    if with == 0 {
        let whole = super::merge(parts.into_iter().map(|(r, _)| r).collect());
        return Ok((whole, Vec::new()));
    }
    if with < parts.len() {
        return Err(PhaseError(format!(
            "{} of the {} reports have no phases: merge reports all cut into phases or all without ({LINE_UP})",
            parts.len() - with,
            parts.len()
        )));
    }
    let mut parts = parts;
    parts.sort_by_key(|(r, _)| first_of(r));
    let inner =
        |ph: &[Report]| -> Vec<Nanos> { ph.iter().skip(1).map(|r| r.start.unwrap_or(0)).collect() };
    let mut edges: Vec<Nanos> = parts.iter().flat_map(|(_, ph)| inner(ph)).collect();
    edges.sort_unstable();
    edges.dedup();
    if edges.len() >= MAX_PHASES {
        return Err(PhaseError(format!(
            "the reports' phases make {} phases, above {MAX_PHASES} ({LINE_UP})",
            edges.len() + 1
        )));
    }
    // Where each part's first phase falls among the whole's.
    let mut at = Vec::with_capacity(parts.len());
    for (p, (_, ph)) in parts.iter().enumerate() {
        let own = inner(ph);
        let first = ph.first().and_then(|r| r.start).unwrap_or(0);
        let last = ph.last().and_then(|r| r.end).unwrap_or(0);
        // The phase of the whole that ends at the part's first inner edge; without one, the
        // phase the part's packets lie in.
        let j0 = match own.first() {
            Some(&e) => edges.partition_point(|&x| x < e),
            None => edges.partition_point(|&x| x <= first),
        };
        let fits = edges.get(j0..j0 + own.len()) == Some(&own[..])
            && (j0 == 0 || edges[j0 - 1] <= first)
            && edges.get(j0 + own.len()).is_none_or(|&e| last <= e);
        if !fits {
            return Err(PhaseError(format!(
                "the phases do not line up: report {} (in the order of their first packet) has phase edges the others do not share ({LINE_UP})",
                p + 1
            )));
        }
        at.push(j0);
    }
    let (mut reports, phases): (Vec<Report>, Vec<Vec<Report>>) = parts.into_iter().unzip();
    let cut_warned = reports
        .iter()
        .any(|r| r.ledger.warnings.iter().any(|w| w.starts_with(CUT_OUTSIDE)));
    if cut_warned {
        for r in &mut reports {
            r.ledger.warnings.retain(|w| !w.starts_with(CUT_OUTSIDE));
        }
    }
    let num = Numbering::new(&reports);
    let mut whole = merge_numbered(&reports, &num, MAX_CONN_DETAIL);
    whole.ledger.unlisted_first = num.unlisted(&reports, &whole.ledger.per_connection);
    let mut out = Vec::with_capacity(edges.len() + 1);
    for j in 0..=edges.len() {
        let mut slots = vec![Report::default(); reports.len()];
        let mut bounds: Option<(Nanos, Nanos)> = None;
        let mut any = false;
        for (p, ph) in phases.iter().enumerate() {
            let Some(k) = j.checked_sub(at[p]) else {
                continue;
            };
            let Some(r) = ph.get(k) else { continue };
            let (s, e) = (r.start.unwrap_or(0), r.end.unwrap_or(0));
            bounds = Some(bounds.map_or((s, e), |(a, z)| (a.min(s), z.max(e))));
            slots[p] = r.clone();
            any = true;
        }
        if !any {
            continue;
        }
        if slots.iter().any(|r| r.analysis.is_some()) {
            // A part with nothing in this phase adds an empty analysis.
            for r in &mut slots {
                if r.analysis.is_none() {
                    r.analysis = Some(h2ledger_core::analysis::AnalysisReport {
                        merge: Some(Default::default()),
                        ..Default::default()
                    });
                }
            }
        }
        let (a, b) = bounds.unwrap_or_default();
        let mut r = merge_numbered(&slots, &num, PHASE_CONN_DETAIL);
        r.name = format!("phase {}", out.len() + 1);
        r.start = Some(a);
        r.end = Some(b);
        r.findings = whole
            .findings
            .as_ref()
            .map(|f| f.iter().filter(|x| x.overlaps(a, b)).cloned().collect());
        out.push(r);
    }
    if cut_warned {
        let starts: Vec<Nanos> = out.iter().skip(1).map(|r| r.start.unwrap_or(0)).collect();
        warn_cuts_outside_of(&mut whole, &starts);
    }
    Ok((whole, out))
}
