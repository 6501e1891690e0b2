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
use h2ledger_tcp::Nanos;

use super::{first_of, merge_numbered, Numbering};
use crate::obs::Obs;
use crate::report::Report;
use crate::session::{warn_cuts_outside_of, Finished, Session, CUT_OUTSIDE};

/// A finished part that has phases: its session's observers (they are built from them) and
/// its end.
pub struct Part {
    obs: Obs,
    done: Finished,
}

impl Part {
    /// `session`, finished as `done` (its `report` taken out to merge).
    pub fn new(session: &mut Session, done: Finished) -> Part {
        Part {
            obs: session.take_observers(),
            done,
        }
    }
}

/// Parts merged: the whole report now, the phases one at a time ([`Merged::phases`]).
pub struct Merged {
    /// The whole run's report.
    pub report: Report,
    /// The parts with phases (those with packets), in the order the whole merged them.
    parts: Vec<Part>,
    /// Their connections' numbers in the whole (those without packets list none).
    num: Numbering,
    /// The splitter's index of each phase of the whole, in time order.
    indexes: Vec<u64>,
}

/// Merges the whole `reports` of parts whose connections are disjoint, and the phases of
/// those that have some (`parts`, each beside its whole report, which is taken out of it).
pub fn merge_parts(parts: Vec<(Report, Option<Part>)>) -> Merged {
    let mut parts = parts;
    parts.sort_by_key(|(r, _)| first_of(r));
    let phased = parts.iter().any(|(_, p)| p.is_some());
    let cuts = parts
        .iter()
        .filter_map(|(_, p)| p.as_ref())
        .any(|p| p.done.phase_list().by_cuts());
    let (mut reports, kept): (Vec<Report>, Vec<Option<Part>>) = parts.into_iter().unzip();
    if phased {
        // Each part warned of the cuts outside its own packets: the whole says it of its own.
        for r in &mut reports {
            r.ledger.warnings.retain(|w| !w.starts_with(CUT_OUTSIDE));
        }
    }
    let num = Numbering::new(&reports);
    let mut report = merge_numbered(&reports, &num);
    let at: Vec<usize> = (0..kept.len()).filter(|&k| kept[k].is_some()).collect();
    let num = num.subset(&at);
    let parts: Vec<Part> = kept.into_iter().flatten().collect();
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
        indexes,
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
        let mut r = merge_numbered(&reports, &self.num);
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

    /// Every phase's report, one at a time.
    pub fn phases(&self) -> impl Iterator<Item = Report> + '_ {
        (0..self.phase_count()).map(|k| self.phase(k))
    }
}
