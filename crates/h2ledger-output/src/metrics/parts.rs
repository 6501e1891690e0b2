//! `sniff --workers N --metrics`: one exporter for N sessions, each on its own thread
//! (decision 399). The page is what one session reading every packet would serve: the
//! same names and labels, every figure the sum of the workers'.
//!
//! * Calls and PING round trips: each worker hands its [`Batch`] over itself
//!   ([`Part::flush`]); the histograms and call counters add, and paths are labelled by
//!   name across the workers ([`Metrics::flush_part`]).
//! * The running figures and the findings: each worker publishes a snapshot of its own
//!   ([`Part::publish`]) into its slot when a scrape asks (the scrape wakes every worker)
//!   and at its end; the slots are summed ([`Figures::add`]; the findings by id) and the
//!   counters raised to the sum, the rule `h2ledger_run::merge` adds reports by; a
//!   capture-wide finding (`tls-no-keys`, `mid-stream`, ...: [`FindingId::capture_wide`])
//!   filed by several workers counts once, as the merged report folds it. The scrape
//!   is answered once every worker still running has published since it asked, or after
//!   [`super::SYNC_WAIT`] with what the slots hold.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use h2ledger_core::findings::{FindingId, Severities};

use super::{Batch, Exporter, Figures, Metrics};

/// See the module docs.
pub struct Parts {
    exporter: Exporter,
    severities: Severities,
    /// Per part: the last scrape it answered ([`Exporter::asked`]).
    answered: Vec<AtomicU64>,
    slots: Mutex<Vec<Slot>>,
}

#[derive(Default)]
struct Slot {
    figures: Figures,
    findings: BTreeMap<FindingId, u64>,
    /// Its session ended: its last figures are in, it answers no more scrapes.
    ended: bool,
}

/// One worker's handle on [`Parts`].
pub struct Part<'a> {
    parts: &'a Parts,
    k: usize,
}

impl Parts {
    /// `n` parts served by `exporter`; `severities` label the findings.
    pub fn new(exporter: Exporter, n: usize, severities: Severities) -> Parts {
        Parts {
            exporter,
            severities,
            answered: (0..n).map(|_| AtomicU64::new(0)).collect(),
            slots: Mutex::new((0..n).map(|_| Slot::default()).collect()),
        }
    }

    /// Worker `k`'s handle.
    pub fn part(&self, k: usize) -> Part<'_> {
        Part { parts: self, k }
    }

    /// The exporter (its address, and the end: [`Exporter::synced`] with `true`).
    pub fn exporter(&self) -> &Exporter {
        &self.exporter
    }

    /// The metrics, to feed what is not per worker (the processes).
    pub fn metrics(&self) -> &Metrics {
        self.exporter.metrics()
    }

    fn publish(
        &self,
        k: usize,
        asked: u64,
        figures: Figures,
        findings: BTreeMap<FindingId, u64>,
        last: bool,
    ) {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots[k] = Slot {
            figures,
            findings,
            ended: last,
        };
        self.answered[k].fetch_max(asked, Ordering::Relaxed);
        let mut sum = Figures::default();
        let mut found: BTreeMap<FindingId, u64> = BTreeMap::new();
        for s in slots.iter() {
            sum.add(&s.figures);
            for (id, n) in &s.findings {
                let f = found.entry(*id).or_default();
                // A capture-wide finding is one however many workers filed it, as in the
                // merged report (`h2ledger_run::merge` folds them; decision 418).
                if id.capture_wide() {
                    *f = (*f).max(*n);
                } else {
                    *f += n;
                }
            }
        }
        let m = self.exporter.metrics();
        m.set(&sum);
        m.findings(found, &self.severities);
        let now = self.exporter.asked();
        let all = slots
            .iter()
            .zip(&self.answered)
            .all(|(s, a)| s.ended || a.load(Ordering::Relaxed) >= now);
        drop(slots);
        if all {
            self.exporter.synced(false);
        }
    }
}

impl Part<'_> {
    /// A scrape waits for this worker's figures (checked after each packet: two loads).
    pub fn wants_sync(&self) -> bool {
        self.parts.exporter.asked() > self.parts.answered[self.k].load(Ordering::Relaxed)
    }

    /// The scrape this worker answers now: read before its figures are made.
    pub fn asked(&self) -> u64 {
        self.parts.exporter.asked()
    }

    /// Hands this worker's calls and round trips over (when its batch is full, and before
    /// each [`Part::publish`]).
    pub fn flush(&self, b: &mut Batch) {
        self.parts.exporter.metrics().flush_part(self.k, b);
    }

    /// This worker's figures and findings filed so far (its session's, whole), made when
    /// scrape `asked` came ([`Part::asked`]); `last`: its final ones (its report's).
    pub fn publish(
        &self,
        asked: u64,
        figures: Figures,
        findings: BTreeMap<FindingId, u64>,
        last: bool,
    ) {
        self.parts.publish(self.k, asked, figures, findings, last);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Exposition;

    /// Two parts' figures are summed; a part's calls are labelled by path name whatever
    /// its method index.
    #[test]
    fn parts_add_up_to_one_page() {
        let e = Exporter::offline(200);
        let parts = Parts::new(e, 2, Severities::default());
        let mut f = Figures::default();
        f.sides.client.writes = 3;
        f.packets = 10;
        let mut g = Figures::default();
        g.sides.client.writes = 4;
        g.packets = 5;
        g.open = 2;
        let (a, b) = (parts.part(0), parts.part(1));
        a.publish(0, f.clone(), BTreeMap::new(), false);
        b.publish(0, g, BTreeMap::new(), false);
        // A later, larger snapshot of part 0 replaces its earlier one.
        f.packets = 11;
        a.publish(0, f, BTreeMap::new(), true);
        let mut x = Batch::default();
        x.add(0, "/a", super::super::StatusKey::Grpc(0), Some(1_000));
        a.flush(&mut x);
        let mut y = Batch::default();
        y.add(0, "/b", super::super::StatusKey::Grpc(0), Some(1_000));
        y.add(1, "/a", super::super::StatusKey::Grpc(0), Some(1_000));
        b.flush(&mut y);
        let page = parts.metrics().encode(Exposition::Prometheus);
        for want in [
            "h2ledger_writes_total{side=\"client\"} 7\n",
            "h2ledger_packets_total 16\n",
            "h2ledger_connections_open 2\n",
            "h2ledger_calls_total{path=\"/a\",status=\"OK\"} 2\n",
            "h2ledger_calls_total{path=\"/b\",status=\"OK\"} 1\n",
        ] {
            assert!(page.contains(want), "{want} in\n{page}");
        }
    }

    /// A capture-wide finding filed by both workers counts once (the merged report folds
    /// it into one); a finding about a connection counts once per worker that filed it.
    #[test]
    fn a_capture_wide_finding_counts_once() {
        let parts = Parts::new(Exporter::offline(200), 2, Severities::default());
        let filed = BTreeMap::from([
            (FindingId::TlsNoKeys, 1),
            (FindingId::MidStream, 1),
            (FindingId::FlowStall, 3),
        ]);
        parts
            .part(0)
            .publish(0, Figures::default(), filed.clone(), true);
        parts.part(1).publish(
            0,
            Figures::default(),
            BTreeMap::from([(FindingId::TlsNoKeys, 1), (FindingId::FlowStall, 2)]),
            true,
        );
        let page = parts.metrics().encode(Exposition::Prometheus);
        for want in [
            "h2ledger_findings_total{id=\"tls-no-keys\",severity=\"warning\"} 1\n",
            "h2ledger_findings_total{id=\"mid-stream\",severity=\"info\"} 1\n",
            "h2ledger_findings_total{id=\"flow-stall\",severity=\"info\"} 5\n",
        ] {
            assert!(page.contains(want), "{want} in\n{page}");
        }
    }
}
