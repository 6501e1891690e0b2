//! Calls and PING round trips counted by the session's thread between two hand-overs
//! ([`Batch`]), and the histogram type they are handed over into ([`Buckets`]).
//!
//! Feeding prometheus-client's families call by call costs a lock, a label lookup and two
//! atomic updates per call on the thread that reads the packets (issue 23's 5% bound;
//! decision 206). A [`Batch`] counts the same things in plain integers, with no lock, and
//! [`super::Metrics::flush`] adds them to the families at once: at each scrape (the capture
//! loop syncs before the page is made), at the end of the run, and every [`FLUSH_CALLS`]
//! calls so that a batch stays small when nobody scrapes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use h2ledger_core::analysis::CallView;
use h2ledger_core::{Side, Sides};
use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};

use super::{StatusKey, CALL_BUCKETS, RTT_BUCKETS};

/// A batch is handed over after this many calls even without a scrape: its entries (at most
/// one per call) stay bounded.
pub const FLUSH_CALLS: usize = 1024;

/// Buckets of a histogram: 17 bounds and `+Inf`.
const SLOTS: usize = CALL_BUCKETS.len() + 1;
const _: () = assert!(CALL_BUCKETS.len() == RTT_BUCKETS.len());

/// A histogram's counts kept by one thread: non-cumulative bucket counts (the last is
/// `+Inf`), the count, and the sum in nanoseconds (exact; seconds at the hand-over).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Local {
    pub(super) counts: [u64; SLOTS],
    pub(super) count: u64,
    pub(super) sum_ns: i128,
}

impl Local {
    /// One value of `ns` nanoseconds, in the first bucket whose bound (seconds) is at least
    /// it: the bucket prometheus-client's `Histogram::observe` picks for `ns / 1e9`.
    #[inline]
    pub(super) fn observe(&mut self, bounds: &[f64; SLOTS - 1], ns: i64) {
        let v = ns as f64 / 1e9;
        let i = bounds.iter().position(|b| *b >= v).unwrap_or(SLOTS - 1);
        self.counts[i] += 1;
        self.count += 1;
        self.sum_ns += i128::from(ns);
    }
}

/// A histogram metric fed in batches ([`Buckets::merge`]); it is encoded as
/// prometheus-client's `Histogram` is (`_bucket{le}` cumulative, `_sum`, `_count`).
#[derive(Clone, Debug)]
pub(super) struct Buckets(Arc<Mutex<Inner>>);

#[derive(Debug)]
struct Inner {
    /// The sum in nanoseconds, exact: batches and workers added in any order give the same
    /// `_sum` (a sum of seconds in `f64` differed in its last digits, decision 432).
    sum_ns: i128,
    count: u64,
    /// (upper bound, count in that bucket alone), the last bound `+Inf`.
    buckets: Vec<(f64, u64)>,
}

impl Buckets {
    pub(super) fn new(bounds: &[f64]) -> Buckets {
        Buckets(Arc::new(Mutex::new(Inner {
            sum_ns: 0,
            count: 0,
            buckets: bounds
                .iter()
                .copied()
                .chain(std::iter::once(f64::INFINITY))
                .map(|b| (b, 0))
                .collect(),
        })))
    }

    /// Adds a batch's counts.
    pub(super) fn merge(&self, l: &Local) {
        if l.count == 0 {
            return;
        }
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for ((_, n), add) in g.buckets.iter_mut().zip(l.counts) {
            *n += add;
        }
        g.count += l.count;
        g.sum_ns += l.sum_ns.max(0);
    }
}

impl TypedMetric for Buckets {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Buckets {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let sum = g.sum_ns as f64 / 1e9;
        encoder.encode_histogram::<NoLabelSet>(sum, g.count, &g.buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

/// Calls of one (method, status) in a batch.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) method: u32,
    pub(super) status: StatusKey,
    /// The method's name, as the analysis gives it (the label is made from it once).
    pub(super) name: String,
    pub(super) calls: u64,
    /// The durations of those that ended (END_STREAM, not reset).
    pub(super) durations: Local,
}

/// Calls and round trips not yet in the metrics. See the module docs.
#[derive(Debug, Default)]
pub struct Batch {
    /// In the order of their first call: labels are handed out in the order calls came.
    pub(super) entries: Vec<Entry>,
    index: HashMap<(u32, StatusKey), usize>,
    /// The entry of the last call (most calls repeat the last method and status).
    last: Option<usize>,
    pub(super) calls: usize,
    pub(super) rtt: Sides<Local>,
}

impl Batch {
    /// One call, as the analysis folds it (what [`super::Metrics::call`] counts).
    pub fn call(&mut self, c: &CallView<'_>) {
        let ended = c.rec.end >= 0 && !c.rec.reset();
        self.add(
            c.rec.method,
            c.method,
            StatusKey::of(c),
            ended.then_some(c.rec.end),
        );
    }

    pub(super) fn add(&mut self, method: u32, name: &str, status: StatusKey, end: Option<i64>) {
        let i = match self.last {
            Some(i) if self.entries[i].method == method && self.entries[i].status == status => i,
            _ => *self.index.entry((method, status)).or_insert_with(|| {
                self.entries.push(Entry {
                    method,
                    status,
                    name: name.to_string(),
                    calls: 0,
                    durations: Local::default(),
                });
                self.entries.len() - 1
            }),
        };
        self.last = Some(i);
        let e = &mut self.entries[i];
        e.calls += 1;
        if let Some(ns) = end {
            e.durations.observe(&CALL_BUCKETS, ns);
        }
        self.calls += 1;
    }

    /// One PING round trip (nanoseconds), by the side that sent the PING.
    pub fn ping_rtt(&mut self, s: Side, rtt_ns: i64) {
        self.rtt[s].observe(&RTT_BUCKETS, rtt_ns.max(0));
    }

    /// Enough calls counted that the batch should be handed over ([`FLUSH_CALLS`]).
    pub fn full(&self) -> bool {
        self.calls >= FLUSH_CALLS
    }

    /// Empty again (after a hand-over).
    pub(super) fn clear(&mut self) {
        self.entries.clear();
        self.index.clear();
        self.last = None;
        self.calls = 0;
        self.rtt = Default::default();
    }
}
