//! Phases: a capture cut at given times, or every D.
//!
//! Phase `i` runs from cut `i-1` (inclusive) to cut `i` (exclusive); the first phase starts
//! at the capture's first packet, the last ends at its last packet. A frame or write belongs
//! to the phase that contains its time; a call to the phase of its request HEADERS.

use h2ledger_tcp::Nanos;

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

    pub fn origin(&self) -> Option<Nanos> {
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
    pub fn phase_of(&self, t: Nanos) -> usize {
        match self.every {
            Some(d) => {
                let o = self.origin.unwrap_or(t);
                if t <= o {
                    0
                } else {
                    ((t - o) / d) as usize
                }
            }
            None => self.resolved.partition_point(|&c| c <= t),
        }
    }

    /// The phases' `[start, end)` bounds given the capture's first and last packet times.
    pub fn bounds(&mut self, first: Nanos, last: Nanos) -> Vec<(Nanos, Nanos)> {
        self.set_origin(first);
        let inner: Vec<Nanos> = match self.every {
            Some(d) => {
                let o = self.origin.unwrap_or(first);
                let n = self.phase_of(last);
                (1..=n as i64).map(|k| o + k * d).collect()
            }
            None => self.resolved.clone(),
        };
        let mut edges = vec![first.min(*inner.first().unwrap_or(&first))];
        edges.extend(inner.iter().copied());
        edges.push(last.max(*inner.last().unwrap_or(&last)));
        edges.windows(2).map(|w| (w[0], w[1])).collect()
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
        assert_eq!(
            s.bounds(100, 2_000),
            vec![(100, 110), (110, 1_000), (1_000, 2_000)]
        );
        let mut e = Splitter::every(10);
        e.set_origin(5);
        assert_eq!(e.phase_of(14), 0);
        assert_eq!(e.phase_of(15), 1);
        assert_eq!(e.bounds(5, 30), vec![(5, 15), (15, 25), (25, 30)]);
    }
}
