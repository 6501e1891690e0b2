//! Frames per time bucket, by class and side: the data behind `--plot`.

use std::collections::BTreeMap;

use h2ledger_tcp::Nanos;

use crate::ledger::{FrameEvent, Observer};
use crate::model::{FrameClass, Side};

/// Buckets kept (112 bytes each); frames of further buckets are counted in
/// [`Timeline::refused`].
pub use crate::phase::MAX_BUCKETS;

/// Frame counts in fixed buckets from the first frame on, kept only for buckets that hold a
/// frame: a capture whose clock jumps a day costs two buckets, not a day of them.
#[derive(Debug)]
pub struct Timeline {
    /// Bucket width, nanoseconds (at least 1).
    pub bucket: Nanos,
    /// Start of bucket 0: the first packet when set, else the first frame.
    pub origin: Option<Nanos>,
    /// `counts[b][side][class]`; side 0 = client, 1 = server (as known when the frame was seen).
    pub counts: BTreeMap<u64, [[u32; FrameClass::COUNT]; 2]>,
    /// Frames whose bucket had no room (beyond [`MAX_BUCKETS`]).
    pub refused: u64,
}

impl Timeline {
    /// An empty timeline of buckets `bucket` nanoseconds wide.
    pub fn new(bucket: Nanos) -> Self {
        Timeline {
            bucket: bucket.max(1),
            origin: None,
            counts: BTreeMap::new(),
            refused: 0,
        }
    }

    /// Sets the time of bucket 0 (the first packet); only before any frame.
    pub fn set_origin(&mut self, t: Nanos) {
        if self.origin.is_none() {
            self.origin = Some(t);
        }
    }
}

impl Observer for Timeline {
    fn header_need(&self) -> crate::ledger::HeaderNeed {
        crate::ledger::HeaderNeed::None
    }

    fn frame(&mut self, ev: &FrameEvent<'_>) {
        let o = *self.origin.get_or_insert(ev.ts);
        let b = crate::phase::bucket(ev.ts, o, self.bucket);
        if !self.counts.contains_key(&b) && self.counts.len() >= MAX_BUCKETS {
            self.refused += 1;
            return;
        }
        let s = match ev.side {
            Side::Client => 0,
            Side::Server => 1,
        };
        let c =
            &mut self.counts.entry(b).or_insert([[0; FrameClass::COUNT]; 2])[s][ev.class.index()];
        *c = c.saturating_add(1);
    }
}
