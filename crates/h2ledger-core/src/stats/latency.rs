//! A bounded latency histogram: exact while small, log-linear buckets after.
//!
//! The first [`EXACT_SAMPLES`] values are kept as they are, so the percentiles of a small
//! capture are exact nearest-rank values (docs/ledger.md). From the next value on, every value
//! goes to a bucket: values below 128 ns have a bucket each; above, a power of two is split into
//! 64 equal buckets, so a bucket's width is at most 1/64 of its lower edge and the value
//! reported for it (its midpoint, clamped to the smallest and largest value seen) is within
//! 0.8% of every value it holds. Buckets are stored by group of 64 (values below 64, below 128,
//! then one power of two each): memory follows the number of groups used (at most 58, 512 bytes
//! each), never the number of values; a value finds its counter with a search among the few
//! groups and an index (decision 211).

/// Values kept exactly before the histogram switches to buckets.
const EXACT_SAMPLES: usize = 256;
/// Buckets per group (a group is `bucket >> 6`).
const GROUP: usize = 64;
/// Groups a histogram can hold: the last bucket (of `i64::MAX`) is 3,711, in group 57.
const GROUPS: usize = 58;

/// Durations (nanoseconds, negative values count as 0).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LatencyHist {
    exact: Vec<i64>,
    /// (group, counts of its 64 buckets), sorted by group (`bucket >> 6`): a group's buckets
    /// are counted in place, and the groups iterate in bucket order for the percentiles.
    groups: Vec<(u16, Box<[u64; GROUP]>)>,
    /// Where each group is in `groups`, plus one (0: not there); empty until the first group
    /// (decision 230).
    at: Vec<u8>,
    count: u64,
    min: i64,
    max: i64,
}

fn bucket(v: i64) -> u16 {
    let v = v.max(0) as u64;
    if v < 128 {
        return v as u16;
    }
    let e = 63 - v.leading_zeros(); // 7..=62
    let m = (v >> (e - 6)) & 63;
    (128 + (e - 7) * 64 + m as u32) as u16
}

/// The midpoint of bucket `b`.
fn value(b: u16) -> i64 {
    let b = u32::from(b);
    if b < 128 {
        return i64::from(b);
    }
    let e = (b - 128) / 64 + 7;
    let m = u64::from((b - 128) % 64);
    let lo = (64 + m) << (e - 6);
    let width = 1u64 << (e - 6);
    (lo + width / 2) as i64
}

impl LatencyHist {
    /// An empty histogram.
    pub fn new() -> Self {
        Self::default()
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Whether the percentiles are exact (every value kept).
    fn is_exact(&self) -> bool {
        self.groups.is_empty()
    }

    /// Records one duration, nanoseconds (negative counts as 0).
    #[inline]
    pub fn record(&mut self, v: i64) {
        let v = v.max(0);
        if self.count == 0 {
            self.min = v;
            self.max = v;
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        self.count += 1;
        // Once in buckets (the common case of a long run): the value's counter, found through
        // `at` when its group exists.
        if !self.groups.is_empty() {
            let b = bucket(v);
            if let Some(&i) = self.at.get(usize::from(b >> 6)) {
                if let Some((_, g)) = self.groups.get_mut(usize::from(i).wrapping_sub(1)) {
                    g[usize::from(b) % GROUP] += 1;
                    return;
                }
            }
            self.add(b, 1);
            return;
        }
        self.record_exact(v);
    }

    /// [`LatencyHist::record`] while the values are still kept exactly (the first
    /// [`EXACT_SAMPLES`]), and the switch to buckets after them.
    fn record_exact(&mut self, v: i64) {
        if self.exact.len() < EXACT_SAMPLES {
            self.exact.push(v);
            return;
        }
        for x in std::mem::take(&mut self.exact) {
            self.add(bucket(x), 1);
        }
        self.add(bucket(v), 1);
    }

    fn add(&mut self, b: u16, n: u64) {
        self.group(b >> 6)[usize::from(b) % GROUP] += n;
    }

    /// The counters of group `g`, made when new: found through `at` in one step; a new group
    /// is inserted in order (a linear search, at most 58 times per histogram) and the places
    /// after it renumbered.
    #[inline]
    fn group(&mut self, g: u16) -> &mut [u64; GROUP] {
        let k = usize::from(g);
        if let Some(&i) = self.at.get(k) {
            if i != 0 {
                return &mut self.groups[usize::from(i - 1)].1;
            }
        }
        self.new_group(g)
    }

    #[cold]
    fn new_group(&mut self, g: u16) -> &mut [u64; GROUP] {
        if self.at.is_empty() {
            self.at = vec![0; GROUPS];
        }
        let i = self
            .groups
            .iter()
            .position(|(k, _)| *k >= g)
            .unwrap_or(self.groups.len());
        self.groups.insert(i, (g, Box::new([0; GROUP])));
        for (j, (k, _)) in self.groups.iter().enumerate().skip(i) {
            self.at[usize::from(*k)] = (j + 1) as u8;
        }
        &mut self.groups[i].1
    }

    /// Adds every value of `o`.
    pub fn merge(&mut self, o: &LatencyHist) {
        if o.count == 0 {
            return;
        }
        if o.is_exact() {
            for &v in &o.exact {
                self.record(v);
            }
            return;
        }
        if self.count == 0 {
            *self = o.clone();
            return;
        }
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.count += o.count;
        for x in std::mem::take(&mut self.exact) {
            self.add(bucket(x), 1);
        }
        for (g, counts) in &o.groups {
            for (x, y) in self.group(*g).iter_mut().zip(counts.iter()) {
                *x += y;
            }
        }
    }

    /// The nearest-rank percentile `p` (0 < p <= 100): the value of rank `ceil(p * n / 100)`.
    pub fn percentile(&self, p: u32) -> Option<i64> {
        if self.count == 0 {
            return None;
        }
        let rank = (u64::from(p) * self.count)
            .div_ceil(100)
            .clamp(1, self.count);
        if self.is_exact() {
            let mut v = self.exact.clone();
            v.sort_unstable();
            return Some(v[rank as usize - 1]);
        }
        let mut seen = 0;
        for (g, counts) in &self.groups {
            for (k, &n) in counts.iter().enumerate() {
                seen += n;
                if n > 0 && seen >= rank {
                    let b = g * GROUP as u16 + k as u16;
                    return Some(value(b).clamp(self.min, self.max));
                }
            }
        }
        Some(self.max)
    }

    /// The largest value recorded (exact); `None` when empty.
    pub fn max(&self) -> Option<i64> {
        (self.count > 0).then_some(self.max)
    }

    /// The histogram as data (issue 39: what a report must carry so that the histograms of
    /// parts merge into the whole's, percentile for percentile).
    pub fn buckets(&self) -> HistBuckets {
        let mut exact = self.exact.clone();
        exact.sort_unstable();
        let buckets = self
            .groups
            .iter()
            .flat_map(|(g, counts)| {
                counts
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| **n > 0)
                    .map(move |(k, n)| (g * GROUP as u16 + k as u16, *n))
            })
            .collect();
        HistBuckets {
            count: self.count,
            exact,
            buckets,
            min: self.min,
            max: self.max,
        }
    }

    /// The histogram [`LatencyHist::buckets`] gave, or why `b` is not one (read from a report,
    /// it may be anything): the counts must add up, buckets rise and exist, the smallest and
    /// largest values hold the others.
    pub fn from_buckets(b: &HistBuckets) -> Result<LatencyHist, &'static str> {
        let mut h = LatencyHist::new();
        if b.count == 0 {
            return match (b.exact.is_empty(), b.buckets.is_empty()) {
                (true, true) => Ok(h),
                _ => Err("values in an empty histogram"),
            };
        }
        if b.min < 0 || b.min > b.max {
            return Err("smallest value above the largest");
        }
        if b.buckets.is_empty() {
            if b.exact.len() as u64 != b.count || b.exact.len() > EXACT_SAMPLES {
                return Err("exact values do not match the count");
            }
            if b.exact.iter().any(|v| *v < b.min || *v > b.max) {
                return Err("an exact value outside the smallest and largest");
            }
            for v in &b.exact {
                h.record(*v);
            }
            return Ok(h);
        }
        if !b.exact.is_empty() {
            return Err("exact values beside buckets");
        }
        let (lo, hi) = (bucket(b.min), bucket(b.max));
        let mut sum = 0u64;
        let mut last = None;
        for &(k, n) in &b.buckets {
            if n == 0 || last.is_some_and(|l| k <= l) || k < lo || k > hi {
                return Err("buckets out of order, empty or outside the smallest and largest");
            }
            last = Some(k);
            sum = sum.checked_add(n).ok_or("bucket counts overflow")?;
            h.add(k, n);
        }
        if sum != b.count || sum <= EXACT_SAMPLES as u64 {
            return Err("bucket counts do not match the count");
        }
        h.count = b.count;
        h.min = b.min;
        h.max = b.max;
        Ok(h)
    }
}

/// A [`LatencyHist`] as data: its count, smallest and largest values, and either every value
/// (nanoseconds, sorted; while there are at most 256) or every non-empty bucket with its
/// count, in bucket order.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct HistBuckets {
    /// (bucket, values in it), rising, once in buckets; empty while exact (and then not
    /// written).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub buckets: Vec<(u16, u64)>,
    /// Values recorded.
    pub count: u64,
    /// Every value, sorted, while the histogram is exact; empty otherwise (and then not
    /// written).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exact: Vec<i64>,
    /// The largest value (0 when empty).
    pub max: i64,
    /// The smallest value (0 when empty).
    pub min: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_while_small() {
        let mut h = LatencyHist::new();
        for v in (1..=144).rev() {
            h.record(v);
        }
        assert!(h.is_exact());
        assert_eq!(h.percentile(50), Some(72));
        assert_eq!(h.percentile(99), Some(143));
        assert_eq!(h.percentile(1), Some(2));
        assert_eq!(LatencyHist::new().percentile(50), None);
    }

    #[test]
    fn buckets_are_within_one_percent() {
        let mut h = LatencyHist::new();
        let mut v: Vec<i64> = (0..100_000i64)
            .map(|i| 1_000 + i * 37 + (i % 7) * 1_000_003)
            .collect();
        for x in &v {
            h.record(*x);
        }
        assert!(!h.is_exact());
        v.sort_unstable();
        for p in [1, 25, 50, 75, 90, 95, 99, 100] {
            let want = crate::stats::nearest_rank(&v, p).unwrap() as f64;
            let got = h.percentile(p).unwrap() as f64;
            assert!((got - want).abs() / want < 0.008, "p{p}: {got} vs {want}");
        }
        assert!(h.groups.len() <= GROUPS);
        for (j, (g, _)) in h.groups.iter().enumerate() {
            assert_eq!(usize::from(h.at[usize::from(*g)]), j + 1);
        }
        assert_eq!(h.at.iter().filter(|&&i| i != 0).count(), h.groups.len());
    }

    #[test]
    fn every_bucket_holds_its_values() {
        for v in [0i64, 1, 127, 128, 129, 1_000, 65_535, 1 << 40, i64::MAX] {
            let mid = value(bucket(v)) as f64;
            let v = v as f64;
            assert!(
                v == 0.0 || (mid - v).abs() / v <= 1.0 / 64.0,
                "{v} -> {mid}"
            );
        }
        let mut h = LatencyHist::new();
        h.record(-5);
        assert_eq!(h.percentile(50), Some(0));
    }

    /// Every percentile is the one of the sorted (bucket, count) pairs the groups replaced:
    /// the rank's bucket midpoint, clamped to the smallest and largest value.
    #[test]
    fn groups_give_the_sparse_buckets_percentiles() {
        let mut h = LatencyHist::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut all = Vec::new();
        for i in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = (x >> (x % 50)) as i64 - if i % 97 == 0 { 1 << 20 } else { 0 };
            h.record(v);
            all.push(v.max(0));
        }
        let mut pairs: std::collections::BTreeMap<u16, u64> = Default::default();
        for v in &all {
            *pairs.entry(bucket(*v)).or_default() += 1;
        }
        let (lo, hi) = (*all.iter().min().unwrap(), *all.iter().max().unwrap());
        for p in 1..=100 {
            let rank = (u64::from(p) * all.len() as u64).div_ceil(100);
            let mut seen = 0;
            let want = pairs
                .iter()
                .find(|(_, n)| {
                    seen += **n;
                    seen >= rank
                })
                .map(|(b, _)| value(*b).clamp(lo, hi));
            assert_eq!(h.percentile(p), want, "p{p}");
        }
    }

    /// Parts' histograms carried as data and merged give the whole's percentiles exactly,
    /// below and above the exact limit; hostile data is refused, never a panic.
    #[test]
    fn buckets_of_parts_merge_into_the_whole() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for n in [0usize, 3, 200, 300, 5_000] {
            let (mut whole, mut parts) = (
                LatencyHist::new(),
                [LatencyHist::new(), LatencyHist::new(), LatencyHist::new()],
            );
            for _ in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let v = (x >> (x % 40)) as i64;
                whole.record(v);
                parts[(x % 3) as usize].record(v);
            }
            let mut merged = LatencyHist::new();
            for p in &parts {
                let b = p.buckets();
                let back = LatencyHist::from_buckets(&b).unwrap();
                assert_eq!(back.buckets(), b);
                merged.merge(&back);
            }
            assert_eq!(merged.count(), whole.count());
            assert_eq!(merged.max(), whole.max());
            for p in 1..=100 {
                assert_eq!(merged.percentile(p), whole.percentile(p), "n {n} p{p}");
            }
        }
        let mut big = LatencyHist::new();
        for v in 0..1_000 {
            big.record(v * 1_000);
        }
        let good = big.buckets();
        let bad = [
            HistBuckets {
                count: 1,
                ..HistBuckets::default()
            },
            HistBuckets {
                count: 2,
                exact: vec![5, 1],
                min: 5,
                max: 1,
                ..HistBuckets::default()
            },
            HistBuckets {
                count: 1,
                exact: vec![9],
                min: 1,
                max: 2,
                ..HistBuckets::default()
            },
            HistBuckets {
                count: good.count + 1,
                ..good.clone()
            },
            HistBuckets {
                buckets: vec![(u16::MAX, 1_000)],
                ..good.clone()
            },
            HistBuckets {
                buckets: good.buckets.iter().rev().copied().collect(),
                ..good.clone()
            },
            HistBuckets {
                buckets: vec![(200, u64::MAX), (300, 2)],
                ..good.clone()
            },
            HistBuckets {
                exact: vec![1],
                ..good.clone()
            },
        ];
        for b in &bad {
            assert!(LatencyHist::from_buckets(b).is_err(), "{b:?}");
        }
    }

    #[test]
    fn merge_equals_recording_both() {
        let (mut a, mut b, mut both) = (LatencyHist::new(), LatencyHist::new(), LatencyHist::new());
        for i in 0..1_000 {
            a.record(i * 13);
            both.record(i * 13);
        }
        for i in 0..100 {
            b.record(i * 1_000);
            both.record(i * 1_000);
        }
        a.merge(&b);
        for p in [1, 50, 99] {
            assert_eq!(a.percentile(p), both.percentile(p));
        }
        assert_eq!(a.count(), 1_100);
    }
}
