//! IP fragment reassembly (RFC 791 for IPv4, RFC 8200 §4.5 for IPv6), bounded.
//!
//! A datagram is keyed by source, destination, identification and protocol. Its fragments
//! are kept until they cover it from byte 0 to the end the last fragment (More Fragments
//! clear) gives; then the whole payload is handed back and the datagram forgotten. Where
//! fragments overlap, the first copy of a byte wins (as in the TCP reassembly). tshark
//! reassembles fragments by default (`ip.defragment`, `ipv6.defragment`), so a TCP segment
//! sent in fragments counts there (decision 470).
//!
//! Bounds, one place: [`MAX_DATAGRAMS`] datagrams in progress and [`MAX_BYTES`] of their
//! fragments' bytes (64 more per fragment), at most [`MAX_PIECES`] fragments each; at a bound
//! the oldest datagram is given up ([`Defrag::given_up`]), in O(1). A datagram whose first fragment is older than
//! [`TIMEOUT_NS`] (Linux's `ipfrag_time`, 30 s) when another one comes is given up too: its
//! receiver dropped it. A fragment cut by the snapshot length can never complete its datagram,
//! which is given up at once. Each fragment costs one hash lookup; completing a datagram costs
//! a sort of its fragments.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

use crate::link::Fragment;
use crate::Nanos;

/// Datagrams in progress at once.
pub const MAX_DATAGRAMS: usize = 1024;
/// Bytes of fragments held, all datagrams together.
pub const MAX_BYTES: usize = 4 << 20;
/// Fragments of one datagram.
pub const MAX_PIECES: usize = 256;
/// What a fragment costs beyond its bytes, in the [`MAX_BYTES`] accounting: a flood of empty
/// fragments is bounded too.
const PIECE_OVERHEAD: usize = 64;
/// A datagram not completed this long after its first fragment is given up.
pub const TIMEOUT_NS: Nanos = 30_000_000_000;
/// The largest datagram payload: an IP length is 16 bits (no jumbograms).
const MAX_LEN: u32 = 65_535;

type Key = (IpAddr, IpAddr, u32, u8);

struct Datagram {
    /// Its place in [`Defrag::order`].
    serial: u64,
    first_ts: Nanos,
    /// The payload's length, once the last fragment came.
    total: Option<u32>,
    pieces: Vec<(u32, Box<[u8]>)>,
    bytes: usize,
}

/// Reassembles IP datagrams from their fragments. See the module docs.
#[derive(Default)]
pub struct Defrag {
    pending: HashMap<Key, Datagram>,
    /// Datagrams in the order they began (with their serial: an entry whose datagram is gone,
    /// or began again, is stale and skipped): the oldest is given up first, in O(1).
    order: VecDeque<(Key, u64)>,
    serial: u64,
    bytes: usize,
    /// Datagrams completed.
    pub reassembled: u64,
    /// Datagrams given up: a bound, the timeout, a fragment cut by the snapshot length or
    /// beyond 65,535 bytes.
    pub given_up: u64,
}

impl Defrag {
    /// A fragment seen at `ts`: the datagram's whole payload when this fragment completes it.
    pub fn push(&mut self, ts: Nanos, f: &Fragment<'_>) -> Option<Vec<u8>> {
        let key = (f.src, f.dst, f.id, f.proto);
        let len = u32::try_from(f.payload.len()).unwrap_or(u32::MAX);
        let end = f.offset.saturating_add(len);
        if let Some(d) = self.pending.get(&key) {
            if ts.saturating_sub(d.first_ts) > TIMEOUT_NS {
                self.give_up(&key);
            }
        }
        if f.cut || end > MAX_LEN {
            if self.pending.contains_key(&key) {
                self.give_up(&key);
            } else {
                self.given_up += 1;
            }
            return None;
        }
        let cost = f.payload.len() + PIECE_OVERHEAD;
        while !self.pending.contains_key(&key)
            && (self.pending.len() >= MAX_DATAGRAMS || self.bytes + cost > MAX_BYTES)
        {
            let Some((oldest, serial)) = self.order.pop_front() else {
                break;
            };
            if self
                .pending
                .get(&oldest)
                .is_some_and(|d| d.serial == serial)
            {
                self.give_up(&oldest);
            }
        }
        if !self.pending.contains_key(&key) {
            if self.order.len() >= 2 * MAX_DATAGRAMS {
                // Drop the stale entries (amortised: at most once per MAX_DATAGRAMS new ones).
                let pending = &self.pending;
                self.order
                    .retain(|(k, n)| pending.get(k).is_some_and(|d| d.serial == *n));
            }
            self.serial += 1;
            self.order.push_back((key, self.serial));
        }
        let serial = self.serial;
        let d = self.pending.entry(key).or_insert_with(|| Datagram {
            serial,
            first_ts: ts,
            total: None,
            pieces: Vec::new(),
            bytes: 0,
        });
        if !f.more && d.total.is_none() {
            d.total = Some(end);
        }
        d.pieces.push((f.offset, f.payload.into()));
        d.bytes += cost;
        self.bytes += cost;
        if d.pieces.len() > MAX_PIECES || self.bytes > MAX_BYTES {
            self.give_up(&key);
            return None;
        }
        let total = d.total?;
        // Covered from 0 to `total`?
        let mut spans: Vec<(u32, u32)> = d
            .pieces
            .iter()
            .map(|(o, b)| (*o, o + b.len() as u32))
            .collect();
        spans.sort_unstable();
        let mut reach = 0;
        for (a, b) in spans {
            if a > reach {
                return None;
            }
            reach = reach.max(b);
        }
        if reach < total {
            return None;
        }
        let d = self.pending.remove(&key)?;
        self.bytes -= d.bytes;
        self.reassembled += 1;
        // The first copy of each byte wins: later pieces fill only what is still empty.
        let mut out = vec![0u8; total as usize];
        let mut have = vec![false; total as usize];
        for (o, b) in &d.pieces {
            for (i, &x) in b.iter().enumerate() {
                let at = *o as usize + i;
                if at < out.len() && !have[at] {
                    out[at] = x;
                    have[at] = true;
                }
            }
        }
        Some(out)
    }

    fn give_up(&mut self, key: &Key) {
        if let Some(d) = self.pending.remove(key) {
            self.bytes -= d.bytes;
            self.given_up += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frag(id: u32, offset: u32, more: bool, payload: &[u8]) -> Fragment<'_> {
        Fragment {
            src: "10.0.0.1".parse().unwrap(),
            dst: "10.0.0.2".parse().unwrap(),
            id,
            proto: 6,
            offset,
            more,
            payload,
            cut: false,
        }
    }

    #[test]
    fn in_order_out_of_order_and_overlapping() {
        let mut d = Defrag::default();
        assert_eq!(d.push(0, &frag(1, 0, true, b"abcdefgh")), None);
        assert_eq!(d.push(1, &frag(1, 8, false, b"ij")).unwrap(), b"abcdefghij");
        // Last first, and an overlap whose first copy wins.
        assert_eq!(d.push(2, &frag(2, 8, false, b"IJ")), None);
        assert_eq!(d.push(3, &frag(2, 4, true, b"EFGH")), None);
        assert_eq!(
            d.push(4, &frag(2, 0, true, b"abcdxxxx")).unwrap(),
            b"abcdEFGHIJ"
        );
        assert_eq!((d.reassembled, d.given_up, d.bytes), (2, 0, 0));
    }

    #[test]
    fn bounded_and_timed_out() {
        let mut d = Defrag::default();
        for id in 0..(MAX_DATAGRAMS as u32 + 10) {
            assert_eq!(d.push(i64::from(id), &frag(id, 0, true, b"x")), None);
        }
        assert_eq!(d.pending.len(), MAX_DATAGRAMS);
        assert_eq!(d.given_up, 10);
        // The oldest went first: datagram 0 starts again and never completes with id 0's tail.
        let late = TIMEOUT_NS + 2_000;
        assert_eq!(d.push(late, &frag(2000, 1, false, b"y")), None);
        assert_eq!(
            d.push(late, &frag(20, 1, false, b"y")),
            None,
            "timed out: given up"
        );
        let a = vec![0u8; 60_000];
        let mut d = Defrag::default();
        for id in 0..200 {
            d.push(0, &frag(id, 0, true, &a));
        }
        assert!(d.bytes <= MAX_BYTES, "{}", d.bytes);
        // A flood of single fragments, each of a new datagram: the oldest go first, the rest
        // stay within the bounds (an O(1) eviction each).
        let mut d = Defrag::default();
        let n = 100_000u32;
        for id in 0..n {
            d.push(i64::from(id), &frag(id, 8, true, b""));
        }
        assert_eq!(d.pending.len(), MAX_DATAGRAMS);
        assert_eq!(d.given_up, u64::from(n) - MAX_DATAGRAMS as u64);
        assert!(d.order.len() <= 2 * MAX_DATAGRAMS);
        let f = frag(n - 1, 0, true, b"");
        assert!(
            d.pending.contains_key(&(f.src, f.dst, n - 1, 6)),
            "the newest is kept"
        );
        assert_eq!(
            d.push(0, &frag(9, 65_000, false, &a)),
            None,
            "past 65,535 bytes"
        );
    }
}
