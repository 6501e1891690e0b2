//! gRPC message framing (a 1-byte flag, a 4-byte length, the message), found incrementally.
//! The one cutter of the workspace: the counts, the kept messages (`calls --messages`) and the
//! messages each frame completes (`frames --messages`, [`super::PerFrame`]) here, and
//! `h2ledger_proto::Assembler` (the crate's own cut, for its tests and fuzzing) are each a
//! [`CutEvents`] fed by it.

/// Messages of one direction of one call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Complete messages.
    pub messages: u32,
    /// Sum of their Message-Length fields.
    pub bytes: u64,
    /// Of the complete messages, those with Compressed-Flag set.
    pub compressed: u32,
    /// Messages whose bytes the capture lacks (see the module docs).
    pub incomplete: u32,
}

/// A message begun and not complete (see [`Cutter::pending`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending {
    /// Its Message-Length, when the 5-byte prefix was complete.
    pub wire_len: Option<u32>,
    /// Bytes of it received (prefix included).
    pub received: u64,
}

/// Incremental gRPC message framing of one direction.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cutter {
    hdr: [u8; 5],
    have: u8,
    in_payload: bool,
    remaining: u64,
    len: u32,
    flag: u8,
    lost: bool,
}

/// What [`Cutter::feed_with`] reports as it cuts: each message's prefix, its payload bytes in
/// pieces (borrowed from the slice fed, `'b`), and its end.
pub trait CutEvents<'b> {
    /// A message begins: its Compressed-Flag byte and Message-Length.
    fn head(&mut self, _flag: u8, _len: u32) {}
    /// The next bytes of the message begun (all of them come before its `done`).
    fn body(&mut self, _b: &'b [u8]) {}
    /// The message is complete.
    fn done(&mut self, len: u32, flag: u8);
}

/// [`CutEvents`] that only hear of complete messages.
struct Done<F>(F);

impl<F: FnMut(u32, bool)> CutEvents<'_> for Done<F> {
    #[inline]
    fn done(&mut self, len: u32, flag: u8) {
        (self.0)(len, flag != 0)
    }
}

impl Cutter {
    /// Feeds payload bytes; `done(length, compressed)` for each message completed.
    pub fn feed(&mut self, b: &[u8], done: impl FnMut(u32, bool)) {
        self.feed_with(b, &mut Done(done));
    }

    /// Feeds payload bytes, telling `ev` each message's prefix, payload and end.
    pub fn feed_with<'b>(&mut self, mut b: &'b [u8], ev: &mut impl CutEvents<'b>) {
        if self.lost {
            return;
        }
        while !b.is_empty() {
            if self.in_payload {
                let n = (self.remaining.min(b.len() as u64)) as usize;
                self.remaining -= n as u64;
                ev.body(&b[..n]);
                b = &b[n..];
                if self.remaining == 0 {
                    self.in_payload = false;
                    ev.done(self.len, self.flag);
                }
            } else {
                let have = usize::from(self.have);
                let n = (5 - have).min(b.len());
                self.hdr[have..have + n].copy_from_slice(&b[..n]);
                self.have += n as u8;
                b = &b[n..];
                if self.have == 5 {
                    self.have = 0;
                    self.flag = self.hdr[0];
                    self.len =
                        u32::from_be_bytes([self.hdr[1], self.hdr[2], self.hdr[3], self.hdr[4]]);
                    ev.head(self.flag, self.len);
                    if self.len == 0 {
                        ev.done(0, self.flag);
                    } else {
                        self.in_payload = true;
                        self.remaining = u64::from(self.len);
                    }
                }
            }
        }
    }

    /// Bytes the capture lacks: true when this counts an incomplete message (the first loss).
    pub fn lose(&mut self) -> bool {
        let first = !self.lost;
        self.lost = true;
        first
    }

    /// The direction ended: true when a message was in progress (incomplete).
    pub fn end(&mut self) -> bool {
        let partial = !self.lost && (self.in_payload || self.have > 0);
        self.in_payload = false;
        self.have = 0;
        self.lost = true;
        partial
    }

    /// The message in progress, if any (none once lost or ended).
    pub fn pending(&self) -> Option<Pending> {
        if self.lost {
            None
        } else if self.in_payload {
            Some(Pending {
                wire_len: Some(self.len),
                received: 5 + u64::from(self.len) - self.remaining,
            })
        } else if self.have > 0 {
            Some(Pending {
                wire_len: None,
                received: u64::from(self.have),
            })
        } else {
            None
        }
    }

    pub(super) fn is_lost(&self) -> bool {
        self.lost
    }
}
