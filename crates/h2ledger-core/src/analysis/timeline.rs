//! Frames per time bucket, by class and side: the data behind `--plot`.

use h2ledger_tcp::Nanos;

use crate::ledger::{FrameEvent, Observer};
use crate::model::{FrameClass, Side};

/// Frame counts in fixed buckets from the first frame on (4 bytes per class, side and bucket:
/// 100 ms buckets cost 4 MB per hour of capture).
#[derive(Debug)]
pub struct Timeline {
    pub bucket: Nanos,
    pub origin: Option<Nanos>,
    /// `counts[b][side][class]`; side 0 = client, 1 = server (as known when the frame was seen).
    pub counts: Vec<[[u32; FrameClass::COUNT]; 2]>,
}

impl Timeline {
    pub fn new(bucket: Nanos) -> Self {
        Timeline {
            bucket: bucket.max(1),
            origin: None,
            counts: Vec::new(),
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
    fn wants_headers(&self) -> bool {
        false
    }

    fn frame(&mut self, ev: &FrameEvent<'_>) {
        let o = *self.origin.get_or_insert(ev.ts);
        let b = ((ev.ts - o).max(0) / self.bucket) as usize;
        if self.counts.len() <= b {
            self.counts.resize(b + 1, [[0; FrameClass::COUNT]; 2]);
        }
        let s = match ev.side {
            Side::Client => 0,
            Side::Server => 1,
        };
        self.counts[b][s][ev.class.index()] += 1;
    }
}
