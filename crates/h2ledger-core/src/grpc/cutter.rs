//! gRPC message framing (a 1-byte flag, a 4-byte length, the message), found incrementally.

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

/// Incremental gRPC message framing of one direction.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Cutter {
    hdr: [u8; 5],
    have: u8,
    in_payload: bool,
    remaining: u64,
    len: u32,
    flag: u8,
    lost: bool,
}

impl Cutter {
    /// Feeds payload bytes; `done(length, compressed)` for each message completed.
    pub(crate) fn feed(&mut self, mut b: &[u8], mut done: impl FnMut(u32, bool)) {
        if self.lost {
            return;
        }
        while !b.is_empty() {
            if self.in_payload {
                let n = (self.remaining.min(b.len() as u64)) as usize;
                self.remaining -= n as u64;
                b = &b[n..];
                if self.remaining == 0 {
                    self.in_payload = false;
                    done(self.len, self.flag != 0);
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
                    if self.len == 0 {
                        done(0, self.flag != 0);
                    } else {
                        self.in_payload = true;
                        self.remaining = u64::from(self.len);
                    }
                }
            }
        }
    }

    /// Bytes the capture lacks: true when this counts an incomplete message (the first loss).
    pub(crate) fn lose(&mut self) -> bool {
        let first = !self.lost;
        self.lost = true;
        first
    }

    /// The direction ended: true when a message was in progress (incomplete).
    pub(crate) fn end(&mut self) -> bool {
        let partial = !self.lost && (self.in_payload || self.have > 0);
        self.in_payload = false;
        self.have = 0;
        self.lost = true;
        partial
    }

    pub(super) fn is_lost(&self) -> bool {
        self.lost
    }
}
