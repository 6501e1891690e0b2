//! A small bounded log-bucket histogram for percentiles of non-negative integers (microseconds,
//! bytes).
//!
//! Precision contract: values below 32 are kept exactly; above, each power of two is split into
//! 16 buckets, so a bucket spans at most 1/16 of its lower bound. A percentile is the upper
//! bound of the bucket holding the nearest-rank sample (see [`crate::stats`]),
//! clamped to the exact maximum: never below the true value, at most 6.25 % above it. `count`,
//! `sum` and `max` are exact. Memory: only occupied buckets are stored, at most
//! [`MAX_BUCKETS`] (16 bytes each), whatever the input.

use serde::Serialize;

const EXACT: u64 = 32;
const SUB_BITS: u32 = 4;
/// Buckets a histogram can ever hold (every `u64`).
pub(crate) const MAX_BUCKETS: usize = EXACT as usize + (64 - 5) * (1 << SUB_BITS);

/// See the module docs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogHist {
    /// (bucket index, count), sorted by index.
    buckets: Vec<(u16, u64)>,
    /// Values added.
    pub count: u64,
    /// Their sum (saturating), exact.
    pub sum: u64,
    /// The largest value added, exact (0 when empty).
    pub max: u64,
}

fn bucket(v: u64) -> u16 {
    if v < EXACT {
        return v as u16;
    }
    let e = 63 - v.leading_zeros(); // >= 5
    let sub = (v >> (e - SUB_BITS)) & ((1 << SUB_BITS) - 1);
    (EXACT + u64::from(e - 5) * (1 << SUB_BITS) + sub) as u16
}

/// The largest value in bucket `b`.
fn upper(b: u16) -> u64 {
    let b = u64::from(b);
    if b < EXACT {
        return b;
    }
    let e = (b - EXACT) / (1 << SUB_BITS) + 5;
    let sub = (b - EXACT) % (1 << SUB_BITS);
    let lo = (1u64 << e) + (sub << (e - u64::from(SUB_BITS)));
    lo + ((1u64 << (e - u64::from(SUB_BITS))) - 1)
}

impl LogHist {
    /// Adds one value.
    pub fn add(&mut self, v: u64) {
        self.count += 1;
        self.sum = self.sum.saturating_add(v);
        self.max = self.max.max(v);
        let b = bucket(v);
        match self.buckets.binary_search_by_key(&b, |x| x.0) {
            Ok(i) => self.buckets[i].1 += 1,
            Err(i) => self.buckets.insert(i, (b, 1)),
        }
        debug_assert!(self.buckets.len() <= MAX_BUCKETS);
    }

    /// Adds every value of `o`.
    pub fn merge(&mut self, o: &LogHist) {
        self.count += o.count;
        self.sum = self.sum.saturating_add(o.sum);
        self.max = self.max.max(o.max);
        for &(b, n) in &o.buckets {
            match self.buckets.binary_search_by_key(&b, |x| x.0) {
                Ok(i) => self.buckets[i].1 += n,
                Err(i) => self.buckets.insert(i, (b, n)),
            }
        }
    }

    /// Its occupied buckets, (index, values in it), rising: with `count`, `sum` and `max`,
    /// what a report must carry for histograms of parts to merge (decision 379).
    pub fn buckets(&self) -> &[(u16, u64)] {
        &self.buckets
    }

    /// The histogram of `buckets` (as [`LogHist::buckets`] gave them), `count`, `sum` and
    /// `max`, or why they are not one (read from a report, they may be anything).
    pub fn from_parts(
        buckets: Vec<(u16, u64)>,
        count: u64,
        sum: u64,
        max: u64,
    ) -> Result<LogHist, &'static str> {
        let rising = buckets.windows(2).all(|w| w[0].0 < w[1].0);
        if !rising
            || buckets
                .iter()
                .any(|&(b, n)| n == 0 || usize::from(b) >= MAX_BUCKETS)
        {
            return Err("buckets out of order, empty or beyond the last");
        }
        let total = buckets
            .iter()
            .try_fold(0u64, |t, &(_, n)| t.checked_add(n))
            .ok_or("bucket counts overflow")?;
        if total != count || buckets.last().map(|b| b.0) != (count > 0).then(|| bucket(max)) {
            return Err("bucket counts or the largest value do not match");
        }
        Ok(LogHist {
            buckets,
            count,
            sum,
            max,
        })
    }

    /// The histogram as data, for a report (`merge` of `--analyze`: issue 39).
    pub fn data(&self) -> LogBuckets {
        LogBuckets {
            buckets: self.buckets.clone(),
            count: self.count,
            max: self.max,
            sum: self.sum,
        }
    }

    /// The histogram [`LogHist::data`] gave, checked as [`LogHist::from_parts`] checks.
    pub fn from_data(d: LogBuckets) -> Result<LogHist, &'static str> {
        LogHist::from_parts(d.buckets, d.count, d.sum, d.max)
    }

    /// Nearest-rank percentile `p` (0 < p <= 100), per the module's precision contract.
    pub fn percentile(&self, p: u32) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let rank = (u64::from(p) * self.count)
            .div_ceil(100)
            .clamp(1, self.count);
        let mut seen = 0;
        for &(b, n) in &self.buckets {
            seen += n;
            if seen >= rank {
                return Some(upper(b).min(self.max));
            }
        }
        Some(self.max)
    }

    /// Count, total, p50, p99 and max, as the reports print them.
    pub fn summary(&self) -> HistSummary {
        HistSummary {
            count: self.count,
            total: self.sum,
            p50: self.percentile(50),
            p99: self.percentile(99),
            max: (self.count > 0).then_some(self.max),
        }
    }
}

/// A [`LogHist`] as data (a report's `merge` key): its occupied buckets as `[index, count]`
/// pairs, rising, with the count, largest value and sum (all exact).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LogBuckets {
    /// (bucket, values in it), rising; only the occupied ones.
    pub buckets: Vec<(u16, u64)>,
    /// Values.
    pub count: u64,
    /// The largest (0 when empty).
    pub max: u64,
    /// Their sum (saturating).
    pub sum: u64,
}

/// What the reports print of a [`LogHist`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HistSummary {
    /// Values.
    pub count: u64,
    /// The largest, exact; `None` when empty.
    pub max: Option<u64>,
    /// Median (see the module's precision contract).
    pub p50: Option<u64>,
    /// 99th percentile (see the module's precision contract).
    pub p99: Option<u64>,
    /// Their sum, exact.
    pub total: u64,
}

#[cfg(test)]
mod tests {
    /// Parts carried as data and merged give the whole's percentiles; hostile data is
    /// refused.
    #[test]
    fn parts_as_data_merge_into_the_whole() {
        let (mut whole, mut parts) = (LogHist::default(), [LogHist::default(), LogHist::default()]);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..3_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = x >> (x % 60);
            whole.add(v);
            parts[(x % 2) as usize].add(v);
        }
        let mut merged = LogHist::default();
        for p in &parts {
            merged
                .merge(&LogHist::from_parts(p.buckets().to_vec(), p.count, p.sum, p.max).unwrap());
        }
        assert_eq!(merged, whole);
        assert_eq!(LogHist::from_parts(vec![], 0, 0, 0), Ok(LogHist::default()));
        let b = whole.buckets().to_vec();
        for (bk, count, max) in [
            (b.clone(), whole.count + 1, whole.max),
            (b.clone(), whole.count, 0),
            (b.iter().rev().copied().collect(), whole.count, whole.max),
            (vec![(u16::MAX, whole.count)], whole.count, whole.max),
            (vec![(1, u64::MAX), (2, 2)], 1, 2),
            (vec![(3, 0)], 0, 3),
        ] {
            assert!(LogHist::from_parts(bk, count, 0, max).is_err());
        }
    }

    use super::*;

    #[test]
    fn small_values_exact() {
        let mut h = LogHist::default();
        for v in 1..=10 {
            h.add(v);
        }
        assert_eq!(h.percentile(50), Some(5));
        assert_eq!(h.percentile(99), Some(10));
        assert_eq!(h.summary().total, 55);
    }

    #[test]
    fn bounds_hold_everywhere() {
        for v in [32u64, 33, 47, 63, 64, 100, 1000, 65_535, 1 << 40, u64::MAX] {
            let b = bucket(v);
            assert!(upper(b) >= v, "{v}");
            assert!((upper(b) - v) as f64 <= v as f64 / 16.0, "{v}");
            assert!((b as usize) < MAX_BUCKETS);
            if b > 0 {
                assert!(upper(b - 1) < v, "{v}");
            }
        }
        let mut h = LogHist::default();
        h.add(1000);
        assert_eq!(h.percentile(50), Some(1000)); // clamped to the exact max
        h.add(5000);
        let p = h.percentile(50).unwrap();
        assert!((1000..=1063).contains(&p), "{p}");
    }

    #[test]
    fn merge_is_add() {
        let (mut a, mut b, mut c) = (LogHist::default(), LogHist::default(), LogHist::default());
        for v in 0..500u64 {
            let x = v * v * 37;
            c.add(x);
            if v % 3 == 0 {
                a.add(x)
            } else {
                b.add(x)
            }
        }
        a.merge(&b);
        assert_eq!(a, c);
        assert!(a.buckets.len() <= MAX_BUCKETS);
    }
}
