//! Phases and time buckets: a capture cut at given times or every D, and the one arithmetic
//! that puts a time into a fixed-width bucket from an origin (phases of `--every`, the plot's
//! timeline, the flow-control window series).
//!
//! Phase `i` runs from cut `i-1` (inclusive) to cut `i` (exclusive); the first phase starts
//! at the capture's first packet, the last ends at its last packet. A frame or write belongs
//! to the phase that contains its time; a call to the phase of its request HEADERS.

use std::collections::BTreeMap;

use h2ledger_tcp::Nanos;

/// Buckets kept by a time series (the plot's timeline, the window series): 100,000 buckets
/// (2.8 hours of 100 ms buckets that all hold a frame).
pub const MAX_BUCKETS: usize = 100_000;

/// The bucket of time `t` in buckets of `width` nanoseconds from `origin` (times before the
/// origin are in bucket 0).
#[inline]
pub(crate) fn bucket(t: Nanos, origin: Nanos, width: Nanos) -> u64 {
    (t.saturating_sub(origin).max(0) / width.max(1)) as u64
}

/// One `--split-at` point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// An absolute time (nanoseconds since the epoch).
    At(Nanos),
    /// An offset from the first packet.
    Offset(Nanos),
}

/// Maps times to phase indexes.
#[derive(Clone, Debug, Default)]
pub struct Splitter {
    cuts: Vec<Cut>,
    every: Option<Nanos>,
    origin: Option<Nanos>,
    resolved: Vec<Nanos>,
}

impl Splitter {
    /// Cuts at the given points (any order).
    pub fn at(cuts: Vec<Cut>) -> Splitter {
        let mut s = Splitter {
            cuts,
            ..Splitter::default()
        };
        s.resolve();
        s
    }

    /// A new phase every `d` nanoseconds from the first packet.
    pub fn every(d: Nanos) -> Splitter {
        Splitter {
            every: Some(d.max(1)),
            ..Splitter::default()
        }
    }

    /// The first packet's time (offsets count from it). Only the first call counts.
    pub fn set_origin(&mut self, t: Nanos) {
        if self.origin.is_none() {
            self.origin = Some(t);
            self.resolve();
        }
    }

    pub(crate) fn origin(&self) -> Option<Nanos> {
        self.origin
    }

    fn resolve(&mut self) {
        let o = self.origin;
        self.resolved = self
            .cuts
            .iter()
            .filter_map(|c| match *c {
                Cut::At(t) => Some(t),
                Cut::Offset(d) => o.map(|o| o + d),
            })
            .collect();
        self.resolved.sort_unstable();
        self.resolved.dedup();
    }

    /// The phase of time `t` (offsets and `every` count from the origin: set it first).
    pub fn phase_of(&self, t: Nanos) -> u64 {
        match self.every {
            Some(d) => bucket(t, self.origin.unwrap_or(t), d),
            None => self.resolved.partition_point(|&c| c <= t) as u64,
        }
    }

    /// How many phases the cuts make (`None` with `--every`).
    pub fn cut_phases(&self) -> Option<u64> {
        self.every
            .is_none()
            .then_some(self.resolved.len() as u64 + 1)
    }

    /// Phase `i`'s `[start, end)` given the capture's first and last packet times: the first
    /// phase starts at the first packet (or the first cut, if earlier), the last ends at the
    /// last packet (or the last cut, if later). Offsets count from the origin: set it first.
    pub fn bounds_of(&self, i: u64, first: Nanos, last: Nanos) -> (Nanos, Nanos) {
        match self.every {
            Some(d) => {
                let o = self.origin.unwrap_or(first);
                let edge = |k: u64| o.saturating_add((k as i64).saturating_mul(d));
                let n = self.phase_of(last);
                let start = if i == 0 { first } else { edge(i) };
                let end = if i >= n {
                    last.max(edge(n))
                } else {
                    edge(i + 1)
                };
                (start, end)
            }
            None => {
                let c = &self.resolved;
                let i = (i as usize).min(c.len());
                let start = if i == 0 {
                    first.min(c.first().copied().unwrap_or(first))
                } else {
                    c[i - 1]
                };
                let end = if i == c.len() {
                    last.max(c.last().copied().unwrap_or(last))
                } else {
                    c[i]
                };
                (start, end)
            }
        }
    }
}

/// Phases kept per run. A phase exists only once something falls in it, so a capture whose
/// packets are hours apart (a clock jump) costs two phases, not the hours between.
pub const MAX_PHASES: usize = 1000;

/// Values per phase index, for the phases that saw something, at most [`MAX_PHASES`] of them.
/// Events of a further phase are refused (and counted in `refused`), never silently dropped.
#[derive(Clone, Debug)]
pub struct Phased<T> {
    map: BTreeMap<u64, T>,
    /// Events refused because [`MAX_PHASES`] phases already held something.
    pub refused: u64,
}

impl<T> Default for Phased<T> {
    fn default() -> Self {
        Phased {
            map: BTreeMap::new(),
            refused: 0,
        }
    }
}

impl<T: Default> Phased<T> {
    /// Phase `i`'s value, created if there is room.
    pub(crate) fn get_mut(&mut self, i: u64) -> Option<&mut T> {
        self.get_or_make(i, T::default)
    }
}

impl<T> Phased<T> {
    /// Phase `i`'s value, made by `make` if there is room.
    pub fn get_or_make(&mut self, i: u64, make: impl FnOnce() -> T) -> Option<&mut T> {
        if !self.map.contains_key(&i) && self.map.len() >= MAX_PHASES {
            self.refused += 1;
            return None;
        }
        Some(self.map.entry(i).or_insert_with(make))
    }
}

impl<T> Phased<T> {
    /// Phase `i`'s value if it exists.
    pub fn get(&self, i: u64) -> Option<&T> {
        self.map.get(&i)
    }

    /// Phase `i`'s value if it exists (never creates one).
    pub fn existing_mut(&mut self, i: u64) -> Option<&mut T> {
        self.map.get_mut(&i)
    }

    /// The phases that saw something, in time order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, &T)> {
        self.map.iter().map(|(i, t)| (*i, t))
    }

    /// The phases that saw something, in time order, mutable.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (u64, &mut T)> {
        self.map.iter_mut().map(|(i, t)| (*i, t))
    }

    /// The indexes of the phases that saw something, in time order.
    pub fn indexes(&self) -> impl Iterator<Item = u64> + '_ {
        self.map.keys().copied()
    }

    /// Phases that saw something.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no phase saw anything.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_and_every() {
        let mut s = Splitter::at(vec![Cut::Offset(10), Cut::At(1_000)]);
        s.set_origin(100);
        assert_eq!(s.phase_of(100), 0);
        assert_eq!(s.phase_of(109), 0);
        assert_eq!(s.phase_of(110), 1);
        assert_eq!(s.phase_of(999), 1);
        assert_eq!(s.phase_of(1_000), 2);
        let b: Vec<_> = (0..3).map(|i| s.bounds_of(i, 100, 2_000)).collect();
        assert_eq!(b, vec![(100, 110), (110, 1_000), (1_000, 2_000)]);
        assert_eq!(s.cut_phases(), Some(3));
        let mut e = Splitter::every(10);
        e.set_origin(5);
        assert_eq!(e.phase_of(14), 0);
        assert_eq!(e.phase_of(15), 1);
        let b: Vec<_> = (0..3).map(|i| e.bounds_of(i, 5, 30)).collect();
        assert_eq!(b, vec![(5, 15), (15, 25), (25, 30)]);
        // A packet a day later: two phases exist, each bound is computed alone.
        let mut e = Splitter::every(1);
        e.set_origin(0);
        assert_eq!(e.phase_of(86_400_000_000_000), 86_400_000_000_000);
        assert_eq!(
            e.bounds_of(86_400_000_000_000, 0, 86_400_000_000_000),
            (86_400_000_000_000, 86_400_000_000_000)
        );
        let mut p: Phased<u8> = Phased::default();
        for i in 0..MAX_PHASES as u64 + 5 {
            if let Some(v) = p.get_mut(i * 1_000_000) {
                *v += 1;
            }
        }
        assert_eq!(p.len(), MAX_PHASES);
        assert_eq!(p.refused, 5);
        assert!(p.get_mut(0).is_some(), "an existing phase still counts");
    }
}
