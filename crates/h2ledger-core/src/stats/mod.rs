//! Counting durations and sizes in bounded memory: nearest-rank percentiles, the latency
//! histogram (exact while small, log-linear after) and the log-bucket histogram of sizes.
//!
//! Nearest-rank percentiles.
//!
//! The p-th percentile of `n` sorted samples is the sample of rank `ceil(p * n / 100)`
//! (1-based, at least 1): always one of the samples, never interpolated. With 144 samples,
//! p50 is the 72nd smallest and p99 the 143rd.

mod latency;
mod log;

use serde::Serialize;

pub use latency::{HistBuckets, LatencyHist};
pub use log::{HistSummary, LogBuckets, LogHist};

/// The percentiles printed everywhere (gogrpcping's lines).
pub const PERCENTILES: [u32; 7] = [1, 25, 50, 75, 90, 95, 99];

/// The nearest-rank percentile `p` (0 < p <= 100) of `sorted` (ascending).
pub fn nearest_rank<T: Copy>(sorted: &[T], p: u32) -> Option<T> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let rank = (p as usize * n).div_ceil(100).clamp(1, n);
    Some(sorted[rank - 1])
}

/// Count and nearest-rank percentiles of durations, in microseconds. Values are `null` when
/// there is no sample.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// Samples.
    pub count: u64,
    /// The largest value (exact, also beyond the histogram's exact range).
    pub max: Option<f64>,
    /// 1st percentile.
    pub p1: Option<f64>,
    /// 25th percentile.
    pub p25: Option<f64>,
    /// Median.
    pub p50: Option<f64>,
    /// 75th percentile.
    pub p75: Option<f64>,
    /// 90th percentile.
    pub p90: Option<f64>,
    /// 95th percentile.
    pub p95: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
}

impl Percentiles {
    /// From durations in nanoseconds (sorted in place).
    pub fn of_nanos(samples: &mut [i64]) -> Percentiles {
        samples.sort_unstable();
        let max = samples.last().copied();
        Self::from_ranks(samples.len() as u64, max, |p| nearest_rank(samples, p))
    }

    /// From a bounded histogram (exact while it holds few values; see [`LatencyHist`]).
    pub fn of_hist(h: &LatencyHist) -> Percentiles {
        Self::from_ranks(h.count(), h.max(), |p| h.percentile(p))
    }

    /// `count` samples whose nearest-rank percentile `p` (nanoseconds) is `rank(p)`.
    fn from_ranks(count: u64, max: Option<i64>, rank: impl Fn(u32) -> Option<i64>) -> Percentiles {
        let us = |p| rank(p).map(|ns| ns as f64 / 1000.0);
        Percentiles {
            count,
            max: max.map(|ns| ns as f64 / 1000.0),
            p1: us(1),
            p25: us(25),
            p50: us(50),
            p75: us(75),
            p90: us(90),
            p95: us(95),
            p99: us(99),
        }
    }

    /// The values in [`PERCENTILES`] order.
    pub fn values(&self) -> [Option<f64>; 7] {
        [
            self.p1, self.p25, self.p50, self.p75, self.p90, self.p95, self.p99,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_definition() {
        let v: Vec<i64> = (1..=144).collect();
        assert_eq!(nearest_rank(&v, 50), Some(72));
        assert_eq!(nearest_rank(&v, 99), Some(143));
        assert_eq!(nearest_rank(&v, 1), Some(2));
        assert_eq!(nearest_rank(&v, 100), Some(144));
        assert_eq!(nearest_rank(&[7i64], 1), Some(7));
        assert_eq!(nearest_rank::<i64>(&[], 50), None);
        let v: Vec<i64> = (1..=10).collect();
        assert_eq!(nearest_rank(&v, 25), Some(3));
        assert_eq!(nearest_rank(&v, 1), Some(1));
    }

    #[test]
    fn micros() {
        let mut v = vec![3000, 1000, 2000];
        let p = Percentiles::of_nanos(&mut v);
        assert_eq!(p.count, 3);
        assert_eq!(p.p50, Some(2.0));
        assert_eq!(p.p1, Some(1.0));
        assert_eq!(p.p99, Some(3.0));
    }
}
