//! TCP sequence numbers: 32-bit values compared with serial number arithmetic
//! (RFC 1982), so that comparisons stay correct across the wrap at 2^32.
//!
//! Every sequence comparison in this crate goes through [`SeqNumber`]; no other
//! module does its own `u32` arithmetic on sequence or acknowledgment numbers.

use core::cmp::Ordering;
use core::ops::{Add, Sub};

/// A TCP sequence (or acknowledgment) number.
///
/// RFC 1982 §3.2: `s1 < s2` iff `(i1 < i2 and i2 - i1 < 2^(SERIAL_BITS - 1))` or
/// `(i1 > i2 and i1 - i2 > 2^(SERIAL_BITS - 1))`. Two numbers exactly 2^31 apart are
/// not comparable: `partial_cmp` returns `None` for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SeqNumber(pub u32);

impl SeqNumber {
    /// Signed distance `self - other`, in `[-2^31, 2^31)`.
    ///
    /// Positive when `self` is after `other`.
    #[inline]
    pub fn distance(self, other: SeqNumber) -> i32 {
        self.0.wrapping_sub(other.0) as i32
    }

    /// The later of two numbers (by serial comparison); `self` when not comparable.
    #[inline]
    pub fn later(self, other: SeqNumber) -> SeqNumber {
        if other.distance(self) > 0 {
            other
        } else {
            self
        }
    }
}

impl PartialOrd for SeqNumber {
    fn partial_cmp(&self, other: &SeqNumber) -> Option<Ordering> {
        match self.distance(*other) {
            0 => Some(Ordering::Equal),
            i32::MIN => None,
            d if d > 0 => Some(Ordering::Greater),
            _ => Some(Ordering::Less),
        }
    }
}

impl Add<u32> for SeqNumber {
    type Output = SeqNumber;
    #[inline]
    fn add(self, rhs: u32) -> SeqNumber {
        SeqNumber(self.0.wrapping_add(rhs))
    }
}

impl Sub<SeqNumber> for SeqNumber {
    type Output = i32;
    /// Same as [`SeqNumber::distance`].
    #[inline]
    fn sub(self, rhs: SeqNumber) -> i32 {
        self.distance(rhs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compares_across_the_wrap() {
        let before = SeqNumber(u32::MAX - 10);
        let after = before + 20;
        assert_eq!(after, SeqNumber(9));
        assert!(before < after);
        assert!(after > before);
        assert_eq!(after - before, 20);
        assert_eq!(before - after, -20);
        assert_eq!(before.later(after), after);
        assert_eq!(after.later(before), after);
    }

    #[test]
    fn half_space_apart_is_not_comparable() {
        let a = SeqNumber(0);
        let b = SeqNumber(1 << 31);
        assert_eq!(a.partial_cmp(&b), None);
        assert_eq!(b.partial_cmp(&a), None);
        assert!(a.partial_cmp(&b).is_none() && a != b);
        assert_eq!(
            SeqNumber(5).partial_cmp(&SeqNumber(5)),
            Some(Ordering::Equal)
        );
    }
}
