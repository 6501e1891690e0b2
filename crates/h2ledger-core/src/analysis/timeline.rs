//! Frames per time bucket, by class and side: the data behind `--plot`.
//!
//! The buckets start fine ([`FINEST`], or the bin `--bin` asks for) and are kept only where a
//! frame fell. When a frame would need a bucket beyond [`MAX_BUCKETS`], every bucket is merged
//! with its neighbours ten at a time (the width grows tenfold) until there is room: a capture of
//! any length costs at most [`MAX_BUCKETS`] buckets, and a frame is never dropped. Widths stay
//! the first width times a power of ten, so every 1-2-5 bin at least as wide as a bucket is a
//! whole number of buckets.

use std::collections::BTreeMap;

use h2ledger_tcp::Nanos;

use crate::ledger::{FrameEvent, Observer};
use crate::model::{FrameClass, Side};

/// Buckets kept (112 bytes each, about 1.3 MB with the map's own cost): enough for a plot of
/// 1,000 bins whatever the capture's length, since a merge leaves at least 1,000 buckets'
/// worth of span.
pub const MAX_BUCKETS: usize = 10_000;

/// The first bucket width without `--bin`: one microsecond, a pcap timestamp's resolution.
pub const FINEST: Nanos = 1_000;

/// One bucket's counts: `[side][class]`.
pub type Counts = [[u32; FrameClass::COUNT]; 2];

/// Frame counts in fixed buckets from the first packet on, kept only for buckets that hold a
/// frame: a capture whose clock jumps a day costs two buckets, not a day of them.
#[derive(Debug)]
pub struct Timeline {
    /// Bucket width, nanoseconds (at least 1): the first width times 10 per merge.
    pub bucket: Nanos,
    /// The width the timeline started with ([`Timeline::new`]).
    pub first_bucket: Nanos,
    /// Start of bucket 0: the first packet when set, else the first frame.
    pub origin: Option<Nanos>,
    /// `counts[b][side][class]`; side 0 = client, 1 = server (as known when the frame was seen).
    pub counts: BTreeMap<u64, Counts>,
    /// Times the buckets were merged (each time ten into one).
    pub merges: u32,
}

impl Timeline {
    /// An empty timeline whose buckets start `bucket` nanoseconds wide.
    pub fn new(bucket: Nanos) -> Self {
        let bucket = bucket.max(1);
        Timeline {
            bucket,
            first_bucket: bucket,
            origin: None,
            counts: BTreeMap::new(),
            merges: 0,
        }
    }

    /// Sets the time of bucket 0 (the first packet); only before any frame.
    pub fn set_origin(&mut self, t: Nanos) {
        if self.origin.is_none() {
            self.origin = Some(t);
        }
    }

    /// Merges every ten buckets into one (a bucket ten times as wide). A width that would
    /// overflow takes everything into bucket 0.
    fn merge(&mut self) {
        let (width, div) = match self.bucket.checked_mul(10) {
            Some(w) => (w, 10),
            None => (Nanos::MAX, u64::MAX),
        };
        let old = std::mem::take(&mut self.counts);
        for (b, c) in old {
            let into = self
                .counts
                .entry(b / div)
                .or_insert([[0; FrameClass::COUNT]; 2]);
            for (i, side) in into.iter_mut().enumerate() {
                for (k, n) in side.iter_mut().enumerate() {
                    *n = n.saturating_add(c[i][k]);
                }
            }
        }
        self.bucket = width;
        self.merges += 1;
    }
}

impl Timeline {
    /// The timelines of the parts of one run (`replay -j N`, `replay A B`, `sniff --workers
    /// N`), each counted from the run's origin with the same first width, added bucket by
    /// bucket into what one timeline of all their frames holds (decision 429): one part at a
    /// time, the sum and the part merged to the wider of their widths, then the sum merged
    /// while it holds more than [`MAX_BUCKETS`] (so it never holds more than twice that).
    /// One timeline ends at the narrowest width (first width times a power of ten) whose
    /// buckets number at most [`MAX_BUCKETS`]; no part, and no sum of some of the parts,
    /// needs a wider one, so the sum ends at the same width with the same counts. `None`: no
    /// part.
    pub fn sum(parts: impl IntoIterator<Item = Timeline>) -> Option<Timeline> {
        let mut out: Option<Timeline> = None;
        for mut t in parts {
            let Some(o) = out.as_mut() else {
                out = Some(t);
                continue;
            };
            o.origin = [o.origin, t.origin].into_iter().flatten().min();
            while o.merges < t.merges {
                o.merge();
            }
            while t.merges < o.merges {
                t.merge();
            }
            for (b, c) in std::mem::take(&mut t.counts) {
                let into = o.counts.entry(b).or_insert([[0; FrameClass::COUNT]; 2]);
                for (i, side) in into.iter_mut().enumerate() {
                    for (k, n) in side.iter_mut().enumerate() {
                        *n = n.saturating_add(c[i][k]);
                    }
                }
            }
            while o.counts.len() > MAX_BUCKETS {
                o.merge();
            }
        }
        out
    }
}

impl Observer for Timeline {
    fn header_need(&self) -> crate::ledger::HeaderNeed {
        crate::ledger::HeaderNeed::None
    }

    fn frame(&mut self, ev: &FrameEvent<'_>) {
        self.count(ev.ts, ev.side, ev.class);
    }
}

impl Timeline {
    /// Counts one frame of `class` sent by `side` at `ts`.
    fn count(&mut self, ts: Nanos, side: Side, class: FrameClass) {
        let o = *self.origin.get_or_insert(ts);
        let mut b = crate::phase::bucket(ts, o, self.bucket);
        // Each merge divides the bucket numbers by ten: this ends.
        while !self.counts.contains_key(&b) && self.counts.len() >= MAX_BUCKETS {
            self.merge();
            b = crate::phase::bucket(ts, o, self.bucket);
        }
        let s = match side {
            Side::Client => 0,
            Side::Server => 1,
        };
        let c = &mut self.counts.entry(b).or_insert([[0; FrameClass::COUNT]; 2])[s][class.index()];
        *c = c.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn total(t: &Timeline) -> u64 {
        t.counts
            .values()
            .flat_map(|c| c.iter().flatten())
            .map(|n| u64::from(*n))
            .sum()
    }

    #[test]
    fn buckets_merge_tenfold_and_keep_every_frame() {
        let mut t = Timeline::new(FINEST);
        t.set_origin(0);
        // A frame every 100 µs for 2 s: 20,000 buckets of 1 µs would be needed.
        for i in 0..20_000i64 {
            t.count(i * 100_000, Side::Client, FrameClass::Data);
        }
        assert!(t.counts.len() <= MAX_BUCKETS);
        assert_eq!(total(&t), 20_000);
        // 1 µs -> 10 -> 100 -> 1 ms: 2,000 buckets of 10 frames.
        assert_eq!((t.bucket, t.merges, t.first_bucket), (1_000_000, 3, FINEST));
        assert_eq!(t.counts.len(), 2_000);
        assert!(t
            .counts
            .values()
            .all(|c| c[0][FrameClass::Data.index()] == 10));
    }

    #[test]
    fn parts_sum_to_what_one_timeline_counts() {
        // Frames every 100 µs for 2 s, dealt in turn to three parts: the whole merges to 1 ms
        // buckets (three times), each part (about 6,667 frames in 1 µs buckets) never.
        let frame = |i: i64| {
            (
                i * 100_000,
                if i % 3 == 0 {
                    Side::Server
                } else {
                    Side::Client
                },
            )
        };
        let mut whole = Timeline::new(FINEST);
        let mut parts = [(); 3].map(|_| Timeline::new(FINEST));
        whole.set_origin(0);
        parts.iter_mut().for_each(|p| p.set_origin(0));
        for i in 0..20_000i64 {
            let (ts, side) = frame(i);
            whole.count(ts, side, FrameClass::Data);
            parts[(i % 3) as usize].count(ts, side, FrameClass::Data);
        }
        assert!(parts.iter().all(|p| p.merges < whole.merges));
        let sum = Timeline::sum(parts).unwrap();
        assert_eq!(
            (sum.bucket, sum.merges, sum.origin, &sum.counts),
            (whole.bucket, whole.merges, whole.origin, &whole.counts)
        );
        assert!(Timeline::sum(Vec::new()).is_none());
    }

    #[test]
    fn a_clock_jump_costs_one_bucket_and_far_ones_end_in_bucket_zero() {
        let mut t = Timeline::new(FINEST);
        t.set_origin(0);
        t.count(5_000, Side::Server, FrameClass::Headers);
        t.count(86_400_000_000_000, Side::Server, FrameClass::Headers);
        assert_eq!((t.counts.len(), t.merges), (2, 0));
        // Bucket numbers spread over the whole clock still fit, by merging.
        let mut t = Timeline::new(Nanos::MAX / 4);
        t.set_origin(0);
        t.merge();
        t.merge();
        assert_eq!(t.bucket, Nanos::MAX);
        t.count(Nanos::MAX - 1, Side::Client, FrameClass::Ping);
        assert_eq!(t.counts.keys().copied().collect::<Vec<_>>(), [0]);
    }
}
