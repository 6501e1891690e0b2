//! The bytes of each gRPC message of a call, kept for `calls --messages` (off unless asked:
//! [`Grpc::keep_messages`](super::Grpc::keep_messages)).
//!
//! Bounds, each one counted where it is hit:
//!
//! * per call and direction at most `max_messages` messages are listed; later complete
//!   messages are counted in [`Kept::omitted`], their bytes never copied;
//! * a message longer on the wire than `max_message_bytes` is listed without its bytes
//!   ([`KeptHow::TooLarge`]);
//! * all kept messages of the run together hold at most `max_total_bytes`, wherever they are
//!   (in the tracker, or handed to the printer and not yet printed): the count is shared with
//!   every [`Kept`] and given back when it is dropped. A message that would pass it is listed
//!   without its bytes ([`KeptHow::OverBudget`]).
//!
//! A message the direction ends inside, or whose bytes the capture lacks, is not listed (it is
//! an incomplete message of the call) and its bytes are given back at once.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::cutter::CutEvents;

/// What [`Grpc::keep_messages`](super::Grpc::keep_messages) keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeepLimits {
    /// Messages listed per call and direction (`--max-messages`).
    pub max_messages: u32,
    /// Bytes of one message kept (`--max-message-bytes`); a longer message is listed without
    /// its bytes.
    pub max_message_bytes: u32,
    /// Bytes held at once by every kept message of the run.
    pub max_total_bytes: usize,
}

/// The default of [`KeepLimits::max_total_bytes`]: 256 MiB.
pub const MAX_KEPT_BYTES: usize = 256 << 20;

impl Default for KeepLimits {
    /// 100 messages per direction, 4 MiB each (gRPC's default receive limit), 256 MiB in all.
    fn default() -> Self {
        KeepLimits {
            max_messages: 100,
            max_message_bytes: 4 << 20,
            max_total_bytes: MAX_KEPT_BYTES,
        }
    }
}

/// The bytes held by every [`Kept`] of a run, against [`KeepLimits::max_total_bytes`], and
/// the records of printed calls, kept for the next calls ([`Kept::recycle`]: a call's record is
/// usually freed on the printer's thread, and memory freed by another thread makes the
/// tracker's allocations slow).
#[derive(Clone, Debug, Default)]
pub struct Budget(Arc<Shared>);

#[derive(Debug, Default)]
struct Shared {
    held: AtomicUsize,
    max: usize,
    /// Messages listed without their bytes because the budget was spent.
    refused: AtomicUsize,
    /// Records given back by [`Kept::recycle`], empty, for reuse.
    pool: Mutex<Pool>,
}

/// The records kept for reuse. A pooled record holds its [`Budget`], which holds the pool: the
/// tracker closes the pool when it goes ([`Budget::close`]), which frees them and refuses later
/// ones, so that the cycle never outlives the run.
#[derive(Debug, Default)]
struct Pool {
    records: Vec<Arc<Kept>>,
    closed: bool,
}

/// Records kept for reuse, and the most memory one may hold to be kept: reuse matters for
/// calls of small messages, where an allocation costs as much as the message; a larger
/// record is freed. At most 2 x 2,048 x 4 KiB (the pool and the tracker's stash).
const POOL: usize = 2048;
const POOL_MAX_CAPACITY: usize = 4 << 10;

impl Budget {
    /// A budget of `max` bytes.
    pub fn new(max: usize) -> Self {
        Budget(Arc::new(Shared {
            max,
            ..Shared::default()
        }))
    }

    /// Takes `n` bytes; false (nothing taken) when that would pass the limit.
    pub(crate) fn take(&self, n: usize) -> bool {
        let before = self.0.held.fetch_add(n, Ordering::Relaxed);
        if before.saturating_add(n) > self.0.max {
            self.0.held.fetch_sub(n, Ordering::Relaxed);
            return false;
        }
        true
    }

    pub(crate) fn give(&self, n: usize) {
        if n > 0 {
            self.0.held.fetch_sub(n, Ordering::Relaxed);
        }
    }

    /// Bytes held now, with those the tracker took ahead (256 KiB at a time).
    pub fn held(&self) -> usize {
        self.0.held.load(Ordering::Relaxed)
    }

    /// Messages listed without their bytes so far because the budget was spent.
    pub fn refused(&self) -> u64 {
        self.0.refused.load(Ordering::Relaxed) as u64
    }

    fn pool(&self) -> std::sync::MutexGuard<'_, Pool> {
        self.0.pool.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Holders of this budget (the records and the tracker).
    #[cfg(test)]
    pub(crate) fn holders(&self) -> usize {
        Arc::strong_count(&self.0)
    }

    /// No more reuse: the pooled records are freed, and records given back later are freed
    /// by whoever gives them back.
    pub(crate) fn close(&self) {
        let records = {
            let mut p = self.pool();
            p.closed = true;
            std::mem::take(&mut p.records)
        };
        drop(records);
    }
}

/// Bytes of the [`Budget`] the tracker took ahead, [`Credit::CHUNK`] at a time: the shared
/// counter is touched once per chunk, not for every piece of every message (the printer's
/// thread gives bytes back to it, and a counter written by two cores is slow for both).
#[derive(Debug, Default)]
pub(crate) struct Credit(usize);

impl Credit {
    const CHUNK: usize = 256 << 10;

    /// Takes `n` bytes from the credit, refilled from `budget` when short; false when the
    /// budget has not `n` bytes left.
    fn take(&mut self, n: usize, budget: &Budget) -> bool {
        if self.0 < n {
            let want = n.max(Self::CHUNK);
            if budget.take(want) {
                self.0 += want;
            } else if budget.take(n) {
                self.0 += n;
            } else {
                return false;
            }
        }
        self.0 -= n;
        true
    }

    /// The bytes taken ahead and not used.
    pub(crate) fn unused(&self) -> usize {
        self.0
    }
}

/// Whether a listed message's bytes were kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeptHow {
    /// Every byte of it.
    Whole,
    /// Longer than `max_message_bytes`: not kept.
    TooLarge,
    /// Kept messages held `max_total_bytes` already: not kept.
    OverBudget,
}

/// One listed message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeptMsg {
    /// The Compressed-Flag byte.
    pub flag: u8,
    /// The Message-Length field.
    pub wire_len: u32,
    /// Whether its bytes are there.
    pub how: KeptHow,
    /// Where its bytes start in the direction's buffer.
    start: usize,
}

/// The message in progress on a direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cur {
    /// Between messages.
    Idle,
    /// Its bytes go to the buffer from `start`.
    Keeping { start: usize },
    /// Listed without bytes.
    Listed(KeptHow),
    /// Beyond `max_messages`: counted only.
    Omitted,
}

/// One direction's messages.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Dir {
    data: Vec<u8>,
    msgs: Vec<KeptMsg>,
    omitted: u32,
    cur: Cur,
}

impl Default for Dir {
    fn default() -> Self {
        Dir {
            data: Vec::new(),
            msgs: Vec::new(),
            omitted: 0,
            cur: Cur::Idle,
        }
    }
}

/// What a [`Kept`] holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Bufs {
    path: String,
    dirs: [Dir; 2],
}

impl Bufs {
    fn held(&self) -> usize {
        self.dirs[0].data.len() + self.dirs[1].data.len()
    }

    /// Small enough to be kept for reuse.
    fn reusable(&self) -> bool {
        let held: usize = self
            .dirs
            .iter()
            .map(|d| d.data.capacity() + d.msgs.capacity() * std::mem::size_of::<KeptMsg>())
            .sum();
        self.path.capacity() + held <= POOL_MAX_CAPACITY
    }

    fn clear(&mut self) {
        self.path.clear();
        for d in &mut self.dirs {
            d.data.clear();
            d.msgs.clear();
            d.omitted = 0;
            d.cur = Cur::Idle;
        }
    }
}

/// The messages of one call, both directions, with the `:path` they were sent to.
pub struct Kept {
    b: Bufs,
    limits: KeepLimits,
    budget: Budget,
}

impl fmt::Debug for Kept {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = &self.b.dirs;
        f.debug_struct("Kept")
            .field("path", &self.b.path)
            .field("messages", &[d[0].msgs.len(), d[1].msgs.len()])
            .field("omitted", &[d[0].omitted, d[1].omitted])
            .finish()
    }
}

impl PartialEq for Kept {
    fn eq(&self, other: &Self) -> bool {
        self.b == other.b
    }
}

impl Eq for Kept {}

impl Drop for Kept {
    fn drop(&mut self) {
        self.budget.give(self.b.held());
    }
}

impl Kept {
    /// A record for a call to `path`: a recycled one when there is one. `stash` holds the
    /// tracker's share of the pool, refilled all at once (one lock per many calls: the pool's
    /// lock is shared with the printer's thread).
    pub(crate) fn make(
        path: &[u8],
        limits: KeepLimits,
        budget: &Budget,
        stash: &mut Vec<Arc<Kept>>,
    ) -> Arc<Kept> {
        let path = String::from_utf8_lossy(path);
        if stash.is_empty() {
            stash.append(&mut budget.pool().records);
            // The oldest first: the printer's thread wrote them longest ago.
            stash.reverse();
        }
        if let Some(mut a) = stash.pop() {
            // A pooled record is empty and holds this budget already (one pool per budget).
            if let Some(k) = Arc::get_mut(&mut a) {
                k.b.path.push_str(&path);
                k.limits = limits;
                return a;
            }
        }
        Arc::new(Kept {
            b: Bufs {
                path: path.into_owned(),
                dirs: Default::default(),
            },
            limits,
            budget: budget.clone(),
        })
    }

    /// A printed call's record given back: its bytes count as freed now, and the record
    /// (its allocation and buffers) is reused by a later call. Nothing happens while another
    /// holder still has it (the last one frees it as usual).
    pub fn recycle(mut k: Arc<Kept>) {
        let Some(inner) = Arc::get_mut(&mut k) else {
            return;
        };
        if !inner.b.reusable() {
            return;
        }
        inner.budget.give(inner.b.held());
        inner.b.clear();
        let budget = inner.budget.clone();
        let mut p = budget.pool();
        if !p.closed && p.records.len() < POOL {
            p.records.push(k);
            return;
        }
        drop(p);
        // Freed here, outside the lock.
    }

    /// The call's `:path`, as sent (bytes that are not UTF-8 replaced).
    pub fn path(&self) -> &str {
        &self.b.path
    }

    /// Direction `rel`'s listed messages (0: the request, 1: the response), in wire order,
    /// each with its bytes (empty unless [`KeptHow::Whole`]).
    pub fn messages(&self, rel: usize) -> impl Iterator<Item = (KeptMsg, &[u8])> + '_ {
        let d = &self.b.dirs[rel];
        d.msgs.iter().map(move |m| {
            let b = match m.how {
                KeptHow::Whole => d
                    .data
                    .get(m.start..m.start + m.wire_len as usize)
                    .unwrap_or_default(),
                _ => &[][..],
            };
            (*m, b)
        })
    }

    /// Direction `rel`'s messages listed.
    pub fn len(&self, rel: usize) -> usize {
        self.b.dirs[rel].msgs.len()
    }

    /// No message listed either way.
    pub fn is_empty(&self) -> bool {
        self.b.dirs.iter().all(|d| d.msgs.is_empty())
    }

    /// Direction `rel`'s complete messages beyond `max_messages`, not listed.
    pub fn omitted(&self, rel: usize) -> u32 {
        self.b.dirs[rel].omitted
    }

    /// Direction `rel` lost the message in progress (a gap, or the direction ended inside
    /// it): its bytes are given back.
    pub(crate) fn abandon(&mut self, rel: usize) {
        let d = &mut self.b.dirs[rel];
        if let Cur::Keeping { start } = d.cur {
            self.budget.give(d.data.len() - start);
            d.data.truncate(start);
        }
        d.cur = Cur::Idle;
    }

    /// The [`CutEvents`] of direction `rel` that keep its messages, and hand every complete one
    /// on to `inner` (the counts).
    pub(crate) fn events<'a, 'b, E: CutEvents<'b>>(
        &'a mut self,
        rel: usize,
        credit: &'a mut Credit,
        inner: &'a mut E,
    ) -> KeepEvents<'a, E> {
        KeepEvents {
            kept: self,
            rel,
            credit,
            inner,
        }
    }
}

/// See [`Kept::events`].
pub(crate) struct KeepEvents<'a, E> {
    kept: &'a mut Kept,
    rel: usize,
    credit: &'a mut Credit,
    inner: &'a mut E,
}

impl<'b, E: CutEvents<'b>> CutEvents<'b> for KeepEvents<'_, E> {
    fn head(&mut self, _flag: u8, len: u32) {
        let k = &mut *self.kept;
        let lim = k.limits;
        let d = &mut k.b.dirs[self.rel];
        d.cur = if d.msgs.len() >= lim.max_messages as usize {
            Cur::Omitted
        } else if len > lim.max_message_bytes {
            Cur::Listed(KeptHow::TooLarge)
        } else {
            // What the message needs, but no more than 64 KiB ahead of the bytes received.
            d.data.reserve((len as usize).min(64 << 10));
            Cur::Keeping {
                start: d.data.len(),
            }
        };
    }

    fn body(&mut self, b: &'b [u8]) {
        let k = &mut *self.kept;
        let d = &mut k.b.dirs[self.rel];
        if let Cur::Keeping { start } = d.cur {
            let budget = &k.budget;
            if self.credit.take(b.len(), budget) {
                d.data.extend_from_slice(b);
            } else {
                budget.give(d.data.len() - start);
                d.data.truncate(start);
                d.cur = Cur::Listed(KeptHow::OverBudget);
                budget.0.refused.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn done(&mut self, len: u32, flag: u8) {
        let d = &mut self.kept.b.dirs[self.rel];
        let (how, start) = match std::mem::replace(&mut d.cur, Cur::Idle) {
            Cur::Keeping { start } => (Some(KeptHow::Whole), start),
            Cur::Listed(h) => (Some(h), d.data.len()),
            // Cutter calls `head` first; without it only an empty message can be listed.
            Cur::Idle if len == 0 => (Some(KeptHow::Whole), d.data.len()),
            Cur::Idle => (None, 0),
            Cur::Omitted => (None, 0),
        };
        match how {
            Some(how) => d.msgs.push(KeptMsg {
                flag,
                wire_len: len,
                how,
                start,
            }),
            None => d.omitted = d.omitted.saturating_add(1),
        }
        self.inner.done(len, flag);
    }
}
