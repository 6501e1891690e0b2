//! A table of values by `u32` id (stream ids, connection ids) for the per-frame paths of the
//! ledger, the flow tracker, the findings engine, the gRPC tracker and the analysis' calls in
//! flight: open addressing with linear probing, a multiply-shift hash of the id XORed with a
//! seed drawn per process (decisions 246, 262), at most half full, and deletion by backward
//! shift (no tombstones, so a table whose streams come and go stays as short to search as a
//! fresh one).
//!
//! Against `std`'s map with the same hash it saves most of a lookup: the ids sit in an array of
//! their own (8 bytes a slot), a hit on a sequential id is usually the first slot looked at, and
//! a lookup returns the slot, which the caller reads, changes and removes without hashing again
//! ([`IdTable::find`], [`IdTable::slot_mut`], [`IdTable::remove_at`]). Memory: a slot (the id and
//! the value) per entry, times two to four; the table does not shrink by itself (as `std`'s
//! does not: [`IdTable::shrink`] makes it smaller where its owner asks, at a cost per removal),
//! and is freed with its owner (a connection's at its close).

/// An empty slot.
const EMPTY: u64 = u64::MAX;
/// The smallest table allocated: two slots, which hold one entry (at most half full). Most
/// tables are a connection's streams, and a connection with one stream open paid for eight
/// slots in each of its stream tables (ledger, flow tracker, findings, gRPC tracker): with
/// two, 10,000 open one-call connections take about 2.5 MiB less in `replay -T json` and 6
/// MiB less with `--analyze` (docs/performance.md, "A stream table's first slots"; decision
/// 392). A table that grows pays two resizes more (2 -> 4 -> 8), of one and two entries.
const MIN_SLOTS: usize = 2;
/// A table of up to this many slots is never made smaller ([`IdTable::shrink`]).
const SHRINK_ABOVE: usize = 64;

/// Values by `u32` id. See the module docs.
#[derive(Debug, Clone)]
pub(crate) struct IdTable<V> {
    /// The id in each slot, or [`EMPTY`].
    keys: Vec<u64>,
    vals: Vec<Option<V>>,
    len: usize,
    /// `64 - log2(slots)`: the hash's top bits pick the home slot.
    shift: u32,
    /// The hash's seed: [`crate::id_seed`], random per process (decisions 246, 262).
    seed: u64,
    /// The table is made smaller when fewer entries than this are left ([`IdTable::shrink`]):
    /// an eighth of the slots, or 0 for up to [`SHRINK_ABOVE`] slots.
    shrink_below: usize,
}

impl<V> Default for IdTable<V> {
    fn default() -> Self {
        IdTable {
            keys: Vec::new(),
            vals: Vec::new(),
            len: 0,
            shift: 64,
            seed: crate::id_seed(),
            shrink_below: 0,
        }
    }
}

impl<V> IdTable<V> {
    /// Entries in the table.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// No entry.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The home slot of `k` (the table is not empty).
    #[inline]
    fn home(&self, k: u64) -> usize {
        ((k ^ self.seed).wrapping_mul(crate::GOLDEN) >> self.shift) as usize
    }

    /// The slot holding `k`, if any.
    #[inline(always)]
    pub(crate) fn find(&self, k: u32) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let k = u64::from(k);
        let mask = self.keys.len() - 1;
        let mut i = self.home(k);
        loop {
            let x = *self.keys.get(i)?;
            if x == k {
                return Some(i);
            }
            if x == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// The value in slot `i` (from [`IdTable::find`] or [`IdTable::insert`], with no removal
    /// since).
    #[inline]
    pub(crate) fn slot_mut(&mut self, i: usize) -> Option<&mut V> {
        self.vals.get_mut(i).and_then(Option::as_mut)
    }

    /// The value in slot `i` (see [`IdTable::slot_mut`]).
    #[inline]
    pub(crate) fn slot(&self, i: usize) -> Option<&V> {
        self.vals.get(i).and_then(Option::as_ref)
    }

    /// The value of `k`.
    #[inline]
    pub(crate) fn get(&self, k: u32) -> Option<&V> {
        let i = self.find(k)?;
        self.vals.get(i).and_then(Option::as_ref)
    }

    /// The value of `k`, to change.
    #[inline]
    pub(crate) fn get_mut(&mut self, k: u32) -> Option<&mut V> {
        let i = self.find(k)?;
        self.slot_mut(i)
    }

    /// Whether `k` is in the table.
    #[inline]
    pub(crate) fn contains_key(&self, k: u32) -> bool {
        self.find(k).is_some()
    }

    /// Sets the value of `k` (replacing any); returns its slot. Inlined: a stream's opening
    /// inserts it in three tables (decision 474).
    #[inline]
    pub(crate) fn insert(&mut self, k: u32, v: V) -> usize {
        if (self.len + 1) * 2 > self.keys.len() {
            self.grow();
        }
        let k = u64::from(k);
        let mask = self.keys.len() - 1;
        let mut i = self.home(k);
        loop {
            let x = self.keys[i];
            if x == EMPTY {
                self.keys[i] = k;
                self.vals[i] = Some(v);
                self.len += 1;
                return i;
            }
            if x == k {
                self.vals[i] = Some(v);
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    /// Takes the value out of slot `i` (see [`IdTable::slot_mut`]); the entries after it in its
    /// run move back to where a lookup finds them.
    pub(crate) fn remove_at(&mut self, i: usize) -> Option<V> {
        let v = self.vals.get_mut(i)?.take()?;
        self.close(i);
        Some(v)
    }

    /// Drops the value in slot `i`, as [`IdTable::remove_at`] without moving it out.
    #[inline]
    pub(crate) fn discard_at(&mut self, i: usize) {
        if let Some(v) = self.vals.get_mut(i) {
            if v.is_some() {
                *v = None;
                self.close(i);
            }
        }
    }

    /// Slot `i` was just emptied: the entries after it in its run move back to where a lookup
    /// finds them (backward shift).
    fn close(&mut self, i: usize) {
        self.len -= 1;
        let mask = self.keys.len() - 1;
        let mut hole = i;
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let x = self.keys[j];
            if x == EMPTY {
                break;
            }
            // The entry at j may fill the hole if its home is not after the hole (cyclically,
            // looking back from j).
            let h = self.home(x);
            if j.wrapping_sub(h) & mask >= j.wrapping_sub(hole) & mask {
                self.keys[hole] = x;
                self.vals.swap(hole, j);
                hole = j;
            }
        }
        self.keys[hole] = EMPTY;
    }

    /// Takes the value of `k` out.
    #[inline]
    pub(crate) fn remove(&mut self, k: u32) -> Option<V> {
        let i = self.find(k)?;
        self.remove_at(i)
    }

    /// The ids and values, in slot order (which depends on the process' seed: sort
    /// before anything that reaches the output).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u32, &V)> + '_ {
        self.keys
            .iter()
            .zip(&self.vals)
            .filter_map(|(&k, v)| Some((k as u32, v.as_ref()?)))
    }

    /// The values, taken, in slot order (see [`IdTable::iter`]).
    pub(crate) fn into_values(self) -> impl Iterator<Item = V> {
        self.vals.into_iter().flatten()
    }

    /// The ids, in slot order (see [`IdTable::iter`]).
    pub(crate) fn keys(&self) -> impl Iterator<Item = u32> + '_ {
        self.iter().map(|(k, _)| k)
    }

    /// Fewer slots when under an eighth are used and there are more than [`SHRINK_ABOVE`]:
    /// four per entry (a power of two, at least [`MIN_SLOTS`]), every entry put back. Called by
    /// its owner after each removal, it keeps a table at most eight slots an entry (or
    /// [`SHRINK_ABOVE`]) instead of the size of its most entries; the table grows again at half
    /// full, so a resize is paid for by as many inserts or removals as the entries it moves.
    /// Slots found before it are no longer valid.
    #[inline]
    pub(crate) fn shrink(&mut self) {
        if self.len < self.shrink_below {
            self.resize((self.len * 4).next_power_of_two().max(MIN_SLOTS));
        }
    }

    /// Twice the slots (at least [`MIN_SLOTS`]), every entry put back.
    #[cold]
    fn grow(&mut self) {
        self.resize((self.keys.len() * 2).max(MIN_SLOTS));
    }

    /// `n` slots (a power of two, more than twice the entries), every entry put back.
    #[cold]
    fn resize(&mut self, n: usize) {
        let keys = std::mem::replace(&mut self.keys, vec![EMPTY; n]);
        let mut vals = std::mem::take(&mut self.vals);
        self.vals.resize_with(n, || None);
        self.shift = 64 - n.trailing_zeros();
        self.shrink_below = if n > SHRINK_ABOVE { n / 8 } else { 0 };
        self.len = 0;
        for (k, v) in keys.into_iter().zip(vals.iter_mut()) {
            if let Some(v) = v.take() {
                self.insert(k as u32, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Steps from `k`'s home slot to its slot (0: found at home).
    fn steps(t: &IdTable<u32>, k: u32) -> usize {
        let i = t.find(k).expect("present");
        let home = t.home(u64::from(k));
        (i + t.keys.len() - home) % t.keys.len()
    }

    /// Ids chosen so that the golden ratio's multiply alone (which this table used) puts them
    /// all at one home slot in every table of up to 2^16 slots: XORed with a random seed first
    /// (decisions 246, 262) they spread, and a lookup takes a step or two, not thousands.
    /// Counted in steps, not timed, and over 64 seeds drawn from a fixed sequence, not the
    /// process' own: over 1,000 seeds the total was 1.3 steps an id at the median, 7 at the
    /// 95th percentile and 57 at worst, so one random seed would fail a bound of 10 one run in
    /// twenty (decision 273).
    #[test]
    fn chosen_ids_do_not_collide() {
        const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;
        let ids: Vec<u32> = (1..u32::MAX)
            .step_by(2)
            .filter(|&k| u64::from(k).wrapping_mul(GOLDEN) >> 48 == 0)
            .take(4_000)
            .collect();
        assert_eq!(ids.len(), 4_000);
        let total_with = |seed: u64| {
            let mut t = IdTable::<u32> {
                seed,
                ..IdTable::default()
            };
            for &k in &ids {
                t.insert(k, k);
            }
            ids.iter().map(|&k| steps(&t, k)).sum::<usize>()
        };
        // With no seed every id shares one home: about 4,000^2 / 2 steps.
        let total_fixed = total_with(0);
        assert!(total_fixed > 1_000_000, "{total_fixed}");
        // splitmix64: seeds as a process would draw them, the same at every run.
        let mut x = 0x853c_49e6_748f_ea9bu64;
        let mut totals: Vec<usize> = (0..64)
            .map(|_| {
                x = x.wrapping_add(GOLDEN);
                let mut z = x;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                total_with(z ^ (z >> 31))
            })
            .collect();
        totals.sort_unstable();
        let n = ids.len();
        assert!(
            totals[32] < 10 * n,
            "median {} steps for {n} ids",
            totals[32]
        );
        assert!(
            totals[63] < 100 * n,
            "worst {} steps for {n} ids",
            totals[63]
        );
        // The tables a process makes use its seed.
        assert_eq!(IdTable::<u32>::default().seed, crate::id_seed());
    }

    /// Inserts, lookups and removals in any order agree with `std`'s map; ids sequential,
    /// random, and colliding on their home slot.
    #[test]
    fn agrees_with_a_hash_map() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for kind in 0..3 {
            let mut t: IdTable<u64> = IdTable::default();
            let mut m: HashMap<u32, u64> = HashMap::new();
            let mut next = 1u32;
            for step in 0..100_000u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let id = match kind {
                    0 => next,
                    1 => (x >> 33) as u32,
                    // Multiples of 2^20: few home slots.
                    _ => ((x >> 40) as u32 % 4096) << 20,
                };
                match x % 5 {
                    0 | 1 => {
                        next += 2;
                        assert_eq!(t.insert(id, step), t.find(id).unwrap());
                        m.insert(id, step);
                    }
                    2 => {
                        let keys: Vec<u32> = m.keys().copied().collect();
                        if let Some(&k) = keys.get((x >> 8) as usize % keys.len().max(1)) {
                            assert_eq!(t.remove(k), m.remove(&k));
                        }
                    }
                    3 => assert_eq!(t.remove(id), m.remove(&id)),
                    _ => {
                        if let Some(v) = t.get_mut(id) {
                            *v += 1;
                        }
                        if let Some(v) = m.get_mut(&id) {
                            *v += 1;
                        }
                    }
                }
                assert_eq!(t.len(), m.len());
                if step % 1000 == 0 {
                    for (k, v) in &m {
                        assert_eq!(t.get(*k), Some(v));
                    }
                    assert_eq!(t.iter().count(), m.len());
                }
            }
            assert!(t.len() * 2 <= t.keys.len());
        }
    }

    /// A table that held many entries and keeps few is made smaller by `shrink` (at most eight
    /// slots an entry, or 64), keeps every entry findable, and grows again as entries come.
    #[test]
    fn shrinks_to_what_it_holds() {
        let mut t: IdTable<u32> = IdTable::default();
        for k in (1..20_000).step_by(2) {
            t.insert(k, k);
        }
        let big = t.keys.len();
        assert!(big >= 16_384);
        for k in (1..20_000).step_by(2) {
            if k % 1_000 != 1 {
                assert_eq!(t.remove(k), Some(k));
                t.shrink();
                assert!(t.keys.len() <= SHRINK_ABOVE || t.len() * 8 >= t.keys.len());
            }
        }
        assert_eq!(t.len(), 20);
        assert!(t.keys.len() <= 128, "{} slots for 20 entries", t.keys.len());
        for k in (1..20_000).step_by(1_000) {
            assert_eq!(t.get(k), Some(&k));
        }
        assert_eq!(t.get(3), None);
        for k in 100_000..101_000 {
            t.insert(k, k);
            t.shrink();
        }
        assert_eq!(t.len(), 1_020);
        assert!(t.len() * 2 <= t.keys.len());
        for k in 100_000..101_000 {
            assert_eq!(t.get(k), Some(&k));
        }
        // Not below the floor, however empty.
        let mut small: IdTable<u32> = IdTable::default();
        for k in 0..40 {
            small.insert(k, k);
        }
        assert_eq!(small.keys.len(), 128);
        for k in 0..40 {
            small.remove(k);
            small.shrink();
        }
        assert_eq!(small.keys.len(), SHRINK_ABOVE);
    }
}
