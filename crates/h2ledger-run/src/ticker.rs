//! The one `--every` ticker, live (wall clock) and replayed (capture time): a tick is due at
//! the end of each period from the start, and periods in which nothing happened are skipped
//! (a clock jump of a day costs one tick, not 86,400).

use h2ledger_tcp::Nanos;

/// See the module docs.
#[derive(Clone, Copy, Debug)]
pub struct Ticker {
    period: Nanos,
    next: Option<Nanos>,
}

impl Ticker {
    /// A tick every `period` nanoseconds (at least 1).
    pub fn new(period: Nanos) -> Ticker {
        Ticker {
            period: period.max(1),
            next: None,
        }
    }

    /// The first tick is due one period after `t0` (only the first call counts).
    pub fn start(&mut self, t0: Nanos) {
        self.next.get_or_insert(t0.saturating_add(self.period));
    }

    /// When the next tick is due (`None` before [`Ticker::start`]).
    pub fn next(&self) -> Option<Nanos> {
        self.next
    }

    /// The tick due at `now`, if one is: its time (the end of the period it closes). The next
    /// one is then due at the first period end after `now`.
    pub fn due(&mut self, now: Nanos) -> Option<Nanos> {
        let due = self.next?;
        if now < due {
            return None;
        }
        let behind = (now - due) / self.period;
        self.next = Some(due.saturating_add(self.period.saturating_mul(behind.saturating_add(1))));
        Some(due)
    }

    /// The period, nanoseconds.
    pub fn period(&self) -> Nanos {
        self.period
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_at_period_ends_and_skips_empty_periods() {
        let mut t = Ticker::new(10);
        assert_eq!(t.due(5), None);
        t.start(100);
        assert_eq!(t.next(), Some(110));
        assert_eq!(t.due(109), None);
        assert_eq!(t.due(110), Some(110));
        assert_eq!(t.due(115), None);
        // A jump: one tick for the period that ended, the next one after now.
        assert_eq!(t.due(1_000_005), Some(120));
        assert_eq!(t.next(), Some(1_000_010));
        assert_eq!(Ticker::new(i64::MAX).due(0), None);
        let mut far = Ticker::new(i64::MAX);
        far.start(i64::MAX - 1);
        assert_eq!(far.due(i64::MAX), Some(i64::MAX));
    }
}
