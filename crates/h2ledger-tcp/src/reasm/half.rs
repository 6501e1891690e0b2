//! One direction of a connection: the ordered byte stream one side sends.
//!
//! Positions inside a direction are kept as 64-bit stream offsets (`abs`, 0 = the first
//! byte expected) so that the buffer never sees the 32-bit wrap; sequence numbers are
//! converted once, through [`SeqNumber`], relative to the next expected byte.
//!
//! Buffered data is a map of non-overlapping *pieces* keyed by stream offset, each
//! tagged with the [`Write`] that carried it. A piece is either bytes or a *missing* run
//! (bytes a snaplen-cut segment says were sent but the capture does not hold).
//! Invariant: every piece starts after `next_abs` (a piece at `next_abs` is delivered
//! at once), and `holes` is the number of uncovered runs between `next_abs` and the end
//! of the last piece.

use std::collections::BTreeMap;

use super::{ConnId, Dir, Sink, Stats, Write};
use crate::seq::SeqNumber;
use crate::Nanos;

/// Accounting cost of one buffered piece beyond its bytes: keeps a flood of tiny
/// out-of-order segments inside `max_buffered_per_dir` too.
pub(crate) const PIECE_OVERHEAD: usize = 64;

/// An ACK further ahead than this of the next expected byte is not believed as proof
/// of loss (bigger than any TCP window: 2^30 is the RFC 7323 maximum).
const MAX_ACK_AHEAD: u64 = 1 << 30;

struct Piece {
    end: u64,
    write: Write,
    /// `None`: a missing run (snaplen cut).
    bytes: Option<Box<[u8]>>,
}

impl Piece {
    fn cost(&self) -> usize {
        PIECE_OVERHEAD + self.bytes.as_ref().map_or(0, |b| b.len())
    }
}

/// Where a direction's reports go.
pub(crate) struct Out<'a, S> {
    pub sink: &'a mut S,
    pub stats: &'a mut Stats,
    pub conn: ConnId,
    pub dir: Dir,
}

impl<S: Sink> Out<'_, S> {
    fn gap(&mut self, ts: Nanos, len: u64) {
        self.stats.gaps += 1;
        self.stats.gap_bytes += len;
        self.sink.gap(self.conn, self.dir, ts, len);
    }
}

/// Bounds for one direction (from `Config`).
#[derive(Clone, Copy)]
pub(crate) struct Bounds {
    pub max_buffered: usize,
    pub max_holes: usize,
}

/// Where an evicted direction stood ([`Half::resume_point`]), in 16 bytes: one is kept for
/// each direction of up to [`super::Config::max_evicted`] connections. The write index is
/// kept in 32 bits; a direction with more than 2^32 writes goes on from 2^32 - 1.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ResumePoint {
    next_seq: u32,
    /// The ISN, when `has_isn`.
    isn: u32,
    next_index: u32,
    has_isn: bool,
}

impl ResumePoint {
    /// Its three words (next sequence number, ISN or 0, next write index), and whether the
    /// ISN is known: kept packed by the reassembler.
    pub(crate) fn to_words(self) -> ([u32; 3], bool) {
        ([self.next_seq, self.isn, self.next_index], self.has_isn)
    }

    /// The point [`ResumePoint::to_words`] gave.
    pub(crate) fn from_words(w: [u32; 3], has_isn: bool) -> ResumePoint {
        ResumePoint {
            next_seq: w[0],
            isn: w[1],
            next_index: w[2],
            has_isn,
        }
    }
}

#[derive(Default)]
pub(crate) struct Half {
    started: bool,
    /// Sequence number of the SYN, when seen.
    isn: Option<SeqNumber>,
    /// Sequence number of the byte at `next_abs`.
    next_seq: SeqNumber,
    /// Stream offset of the next byte to deliver (bytes delivered + gap bytes).
    next_abs: u64,
    next_index: u64,
    pieces: BTreeMap<u64, Piece>,
    buffered: usize,
    holes: usize,
    /// Stream offset of the FIN, when seen.
    fin: Option<u64>,
    /// Highest stream offset the peer acknowledged, when believable.
    acked: Option<u64>,
}

impl Half {
    pub fn started(&self) -> bool {
        self.started
    }

    pub fn isn(&self) -> Option<SeqNumber> {
        self.isn
    }

    pub fn fin_seen(&self) -> bool {
        self.fin.is_some()
    }

    /// First segment seen in this direction: from a SYN the stream starts at ISN+1,
    /// otherwise at this segment's sequence number.
    pub fn start(&mut self, seq: SeqNumber, syn: bool) {
        self.started = true;
        if syn {
            self.isn = Some(seq);
            self.next_seq = seq + 1;
        } else {
            self.next_seq = seq;
        }
    }

    /// Where this direction stands, to continue it after an eviction: the next sequence
    /// number expected, the ISN when seen, and the next write's index. `None` before its
    /// first segment.
    pub fn resume_point(&self) -> Option<ResumePoint> {
        self.started.then_some(ResumePoint {
            next_seq: self.next_seq.0,
            isn: self.isn.map_or(0, |s| s.0),
            next_index: u32::try_from(self.next_index).unwrap_or(u32::MAX),
            has_isn: self.isn.is_some(),
        })
    }

    /// A direction that continues one evicted at `p`: the bytes from `p.next_seq` on are
    /// delivered in order, those after it wait for it (or become a gap), those before are
    /// retransmissions; write indices go on from the evicted one's.
    pub fn resume(&mut self, p: ResumePoint) {
        self.started = true;
        self.isn = p.has_isn.then_some(SeqNumber(p.isn));
        self.next_seq = SeqNumber(p.next_seq);
        self.next_index = u64::from(p.next_index);
    }

    /// Stream offset of `seq` (negative: before the start of the stream).
    fn abs(&self, seq: SeqNumber) -> i64 {
        self.next_abs as i64 + i64::from(seq - self.next_seq)
    }

    fn advance_to(&mut self, abs: u64) {
        debug_assert!(abs >= self.next_abs);
        // Truncation to u32 is the sequence-space wrap.
        self.next_seq = self.next_seq + (abs - self.next_abs) as u32;
        self.next_abs = abs;
    }

    /// The peer acknowledged everything before `ack`: a hole before buffered data that
    /// the ACK covers was received by the peer but not by us, so it is lost. (Without
    /// buffered data the ACK is remembered; see [`Half::flush`].)
    pub fn on_ack<S: Sink>(&mut self, out: &mut Out<'_, S>, ts: Nanos, ack: SeqNumber) {
        if !self.started {
            return;
        }
        let a = self.abs(ack);
        if a <= self.next_abs as i64 || a as u64 - self.next_abs > MAX_ACK_AHEAD {
            return;
        }
        self.acked = Some(self.acked.map_or(a as u64, |old| old.max(a as u64)));
        if let Some(a) = self.effective_ack() {
            if a > self.next_abs && !self.pieces.is_empty() {
                self.release_until(out, ts, a);
            }
        }
    }

    /// The acknowledged offset, not counting the FIN's own sequence number.
    fn effective_ack(&self) -> Option<u64> {
        let a = self.acked?;
        Some(self.fin.map_or(a, |f| a.min(f)))
    }

    pub fn on_fin(&mut self, seq: SeqNumber) {
        if self.fin.is_none() {
            self.fin = Some(self.abs(seq).max(self.next_abs as i64) as u64);
        }
    }

    /// A segment's payload: `payload` present, `wire_len` sent, first byte at `seq`.
    pub fn segment<S: Sink>(
        &mut self,
        out: &mut Out<'_, S>,
        ts: Nanos,
        seq: SeqNumber,
        payload: &[u8],
        wire_len: u32,
        bounds: Bounds,
    ) {
        let start = self.abs(seq);
        let mut end = start + i64::from(wire_len);
        if let Some(f) = self.fin {
            // Bytes at or after the FIN are not part of the stream.
            end = end.min(f as i64);
        }
        if wire_len == 1 && self.fin.is_none() && start >= 0 && start + 1 == self.highest() as i64 {
            // A keep-alive: one old byte, the one before the highest sequence number seen (a
            // Windows stack's keep-alive, a zero-window probe sent again). Not a retransmission
            // to tshark (`tcp.analysis.keep_alive`), so a write of that byte as the reference
            // ledgers count it; its byte is not delivered again (decision 467).
            let write = Write {
                index: self.next_index,
                ts,
                len: 1,
            };
            self.next_index += 1;
            out.sink.write(out.conn, out.dir, &write);
            return;
        }
        if end <= self.next_abs as i64 {
            out.stats.retransmissions += 1;
            return;
        }
        // `end > next_abs >= 0` from here, so `end` fits a u64.
        let end = end as u64;

        // Bytes the peer acknowledged before this segment that we never saw are lost:
        // declaring them first lets this segment pass through in order, unbuffered.
        if let Some(a) = self.effective_ack() {
            let upto = a.min(start.max(0) as u64);
            if upto > self.next_abs {
                self.release_until(out, ts, upto);
            }
        }

        let lo = start.max(self.next_abs as i64) as u64;
        let new_bytes = self.uncovered(lo, end).map(|(a, b)| b - a).sum::<u64>();
        if new_bytes == 0 {
            out.stats.retransmissions += 1;
            return;
        }
        if (new_bytes as i64) < end as i64 - start {
            out.stats.overlaps += 1;
        }
        let write = Write {
            index: self.next_index,
            ts,
            len: new_bytes as u32,
        };
        self.next_index += 1;
        out.sink.write(out.conn, out.dir, &write);

        // Present bytes end here; the rest of the segment is a missing run.
        let present_end = start + payload.len() as i64;
        let mut buffered_any = false;
        let mut cursor = lo;
        loop {
            let run = self.uncovered(cursor, end).next();
            let Some((a, b)) = run else { break };
            cursor = b;
            let split = (present_end.max(a as i64) as u64).min(b);
            let data = if split > a {
                &payload[(a as i64 - start) as usize..(split as i64 - start) as usize]
            } else {
                &[]
            };
            if a == self.next_abs {
                // In order: straight through, borrowed.
                if !data.is_empty() {
                    out.sink.data(out.conn, out.dir, &write, data);
                }
                if split < b {
                    out.gap(write.ts, b - split);
                }
                if let Some((&first, _)) = self.pieces.first_key_value() {
                    if first == b {
                        self.holes -= 1;
                    }
                }
                self.advance_to(b);
                self.drain(out);
            } else {
                buffered_any = true;
                if !data.is_empty() {
                    self.insert(a, split, write, Some(data.into()));
                }
                if split < b {
                    self.insert(split, b, write, None);
                }
            }
        }
        if buffered_any {
            out.stats.out_of_order += 1;
        }

        if let Some(a) = self.effective_ack() {
            if a > self.next_abs && !self.pieces.is_empty() {
                self.release_until(out, ts, a);
            }
        }
        while !self.pieces.is_empty()
            && (self.buffered > bounds.max_buffered || self.holes > bounds.max_holes)
        {
            out.stats.bound_hits += 1;
            let first = *self.pieces.keys().next().expect("non-empty");
            self.release_until(out, ts, first);
        }
    }

    /// The payload of a RST (`wire` bytes from `seq`): diagnostic text, never stream data, but
    /// a write when its bytes are not old ones, as the reference ledgers count it (tshark does
    /// not call it a retransmission; decision 468).
    pub fn rst_payload<S: Sink>(
        &mut self,
        out: &mut Out<'_, S>,
        ts: Nanos,
        seq: SeqNumber,
        wire: u32,
    ) {
        if self.started && self.abs(seq) < self.highest() as i64 {
            return;
        }
        let write = Write {
            index: self.next_index,
            ts,
            len: wire,
        };
        self.next_index += 1;
        out.sink.write(out.conn, out.dir, &write);
    }

    /// The stream offset after the highest byte seen: delivered or buffered.
    fn highest(&self) -> u64 {
        self.pieces
            .last_key_value()
            .map_or(self.next_abs, |(_, p)| p.end.max(self.next_abs))
    }

    /// Uncovered runs of `[from, to)`: not yet delivered and not buffered, ascending.
    fn uncovered(&self, from: u64, to: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        let mut cursor = from.max(self.next_abs);
        core::iter::from_fn(move || {
            while cursor < to {
                // A piece covering `cursor`?
                if let Some((_, p)) = self.pieces.range(..=cursor).next_back() {
                    if p.end > cursor {
                        cursor = p.end;
                        continue;
                    }
                }
                let stop = self.pieces.range(cursor..to).next().map_or(to, |(&s, _)| s);
                let run = (cursor, stop);
                cursor = stop;
                return Some(run);
            }
            None
        })
    }

    /// Buffers `[a, b)`, which must be uncovered and after `next_abs`.
    fn insert(&mut self, a: u64, b: u64, write: Write, bytes: Option<Box<[u8]>>) {
        let prev_end = self
            .pieces
            .range(..a)
            .next_back()
            .map_or(self.next_abs, |(_, p)| p.end);
        let next_start = self.pieces.range(b..).next().map(|(&s, _)| s);
        // The run this piece lands in was one hole if a piece follows it; now there is
        // a hole before the piece if it does not touch its predecessor, and one after
        // it if it does not touch its successor.
        let before = usize::from(a > prev_end);
        let (after, was) = match next_start {
            Some(s) => (usize::from(s > b), 1),
            None => (0, 0),
        };
        self.holes = self.holes + before + after - was;
        let piece = Piece {
            end: b,
            write,
            bytes,
        };
        self.buffered += piece.cost();
        self.pieces.insert(a, piece);
    }

    /// Delivers pieces that start at `next_abs`.
    fn drain<S: Sink>(&mut self, out: &mut Out<'_, S>) {
        while let Some(entry) = self.pieces.first_entry() {
            if *entry.key() != self.next_abs {
                break;
            }
            let (start, piece) = entry.remove_entry();
            self.buffered -= piece.cost();
            match &piece.bytes {
                Some(b) => out.sink.data(out.conn, out.dir, &piece.write, b),
                None => out.gap(piece.write.ts, piece.end - start),
            }
            self.advance_to(piece.end);
        }
    }

    /// Declares everything missing before `target` lost and delivers what is buffered
    /// up to there, then anything contiguous after it.
    fn release_until<S: Sink>(&mut self, out: &mut Out<'_, S>, ts: Nanos, target: u64) {
        loop {
            self.drain(out);
            match self.pieces.first_key_value().map(|(&s, _)| s) {
                Some(s) if s <= target => {
                    out.gap(ts, s - self.next_abs);
                    self.holes -= 1;
                    self.advance_to(s);
                }
                _ if self.next_abs < target => {
                    out.gap(ts, target - self.next_abs);
                    self.advance_to(target);
                }
                _ => break,
            }
        }
    }

    /// End of this direction (close, eviction, end of capture): deliver everything
    /// buffered, declaring every hole lost, and the missing tail before the FIN (or
    /// before what the peer acknowledged).
    pub fn flush<S: Sink>(&mut self, out: &mut Out<'_, S>, ts: Nanos) {
        let mut target = self
            .pieces
            .last_key_value()
            .map_or(self.next_abs, |(_, p)| p.end);
        if let Some(f) = self.fin {
            // Bytes buffered at or after the FIN (sent out of window before it, never
            // acknowledged) are not part of the stream: dropped, not delivered after a gap
            // (as tshark never reaches them; decision 468).
            let beyond = self.pieces.split_off(&f);
            let mut dropped = beyond.values().map(Piece::cost).sum::<usize>();
            if let Some(p) = self.pieces.values_mut().next_back().filter(|p| p.end > f) {
                let was = p.cost();
                if let Some(b) = p.bytes.as_mut() {
                    let keep = b.len() - (p.end - f) as usize;
                    *b = b[..keep].into();
                }
                p.end = f;
                dropped += was - p.cost();
            }
            self.buffered -= dropped;
            let mut at = self.next_abs;
            self.holes = 0;
            for (&s, p) in &self.pieces {
                self.holes += usize::from(s > at);
                at = p.end;
            }
            target = self
                .pieces
                .last_key_value()
                .map_or(self.next_abs, |(_, p)| p.end)
                .max(f);
        } else if let Some(a) = self.acked {
            // Without a FIN seen, an ACK exactly one past the data is most likely the
            // ACK of a FIN the capture missed: not a lost byte.
            if a > target + 1 {
                target = a;
            }
        }
        self.release_until(out, ts, target);
        debug_assert!(self.pieces.is_empty() && self.holes == 0 && self.buffered == 0);
    }
}
