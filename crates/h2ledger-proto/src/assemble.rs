//! gRPC's length-prefixed messages (PROTOCOL-HTTP2.md: `Length-Prefixed-Message →
//! Compressed-Flag Message-Length Message`) cut out of one direction's DATA payloads, with
//! their bytes.

/// One gRPC message as it came off the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope<'a> {
    /// The Compressed-Flag byte: 0 or 1 (other values are a protocol error, kept as seen).
    pub flag: u8,
    /// The message's bytes: all of them, or the first `max_message_bytes` when `cut`.
    pub bytes: &'a [u8],
    /// The Message-Length field: the length on the wire.
    pub wire_len: u32,
    /// The message was longer than the assembler keeps.
    pub cut: bool,
}

impl<'a> Envelope<'a> {
    /// A whole message with its flag (its length is `bytes.len()`, saturated to `u32::MAX`).
    pub fn whole(flag: u8, bytes: &'a [u8]) -> Self {
        Envelope {
            flag,
            bytes,
            wire_len: u32::try_from(bytes.len()).unwrap_or(u32::MAX),
            cut: false,
        }
    }

    /// The Compressed-Flag is set.
    pub fn compressed(&self) -> bool {
        self.flag != 0
    }
}

/// A message the direction ended in the middle of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partial {
    /// Its Message-Length, when the 5-byte prefix was complete.
    pub wire_len: Option<u32>,
    /// Bytes of it received (prefix included).
    pub received: u64,
}

/// Cuts one direction of one stream into messages, keeping each message's first
/// `max_message_bytes` bytes (the rest is counted, not kept).
///
/// Memory: at most `max_message_bytes` held, plus 5 bytes of prefix. A message that lies
/// whole inside one fed slice is handed out without a copy.
#[derive(Debug, Clone)]
pub struct Assembler {
    max: usize,
    hdr: [u8; 5],
    have: u8,
    in_payload: bool,
    flag: u8,
    len: u32,
    /// Payload bytes still to come.
    remaining: u64,
    buf: Vec<u8>,
    lost: bool,
}

impl Assembler {
    /// An assembler keeping at most `max_message_bytes` of each message.
    pub fn new(max_message_bytes: usize) -> Self {
        Assembler {
            max: max_message_bytes,
            hdr: [0; 5],
            have: 0,
            in_payload: false,
            flag: 0,
            len: 0,
            remaining: 0,
            buf: Vec::new(),
            lost: false,
        }
    }

    /// Feeds DATA payload bytes (padding removed), in order; `done` gets each message they
    /// complete. Nothing happens after [`lose`](Self::lose) or [`end`](Self::end).
    pub fn feed(&mut self, mut b: &[u8], mut done: impl FnMut(Envelope<'_>)) {
        if self.lost {
            return;
        }
        while !b.is_empty() {
            if self.in_payload {
                let n = self.remaining.min(b.len() as u64) as usize;
                let fresh = self.remaining == u64::from(self.len);
                if fresh && n as u64 == self.remaining && self.len as usize <= self.max {
                    // The whole message is in this slice: no copy.
                    self.in_payload = false;
                    self.remaining = 0;
                    done(Envelope {
                        flag: self.flag,
                        bytes: &b[..n],
                        wire_len: self.len,
                        cut: false,
                    });
                    b = &b[n..];
                    continue;
                }
                let room = self.max.saturating_sub(self.buf.len()).min(n);
                self.buf.extend_from_slice(&b[..room]);
                self.remaining -= n as u64;
                b = &b[n..];
                if self.remaining == 0 {
                    self.in_payload = false;
                    done(Envelope {
                        flag: self.flag,
                        bytes: &self.buf,
                        wire_len: self.len,
                        cut: self.len as usize > self.max,
                    });
                    self.buf.clear();
                    if self.buf.capacity() > 64 << 10 {
                        // A big message's buffer is not kept for the next small one.
                        self.buf = Vec::new();
                    }
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
                        done(Envelope {
                            flag: self.flag,
                            bytes: &[],
                            wire_len: 0,
                            cut: false,
                        });
                    } else {
                        self.in_payload = true;
                        self.remaining = u64::from(self.len);
                        self.buf.clear();
                        // Reserve what the message needs, up to the cap, but no more than
                        // 64 KiB ahead of the bytes actually received.
                        self.buf
                            .reserve((self.len as usize).min(self.max).min(64 << 10));
                    }
                }
            }
        }
    }

    /// The capture lacks bytes of this direction: framing is lost, the message in progress is
    /// dropped. True the first time (when it counts).
    pub fn lose(&mut self) -> bool {
        let first = !self.lost;
        self.lost = true;
        self.in_payload = false;
        self.have = 0;
        self.buf = Vec::new();
        first
    }

    /// The direction ended: the message in progress, if any.
    pub fn end(&mut self) -> Option<Partial> {
        let p = if self.lost {
            None
        } else if self.in_payload {
            Some(Partial {
                wire_len: Some(self.len),
                received: 5 + u64::from(self.len) - self.remaining,
            })
        } else if self.have > 0 {
            Some(Partial {
                wire_len: None,
                received: u64::from(self.have),
            })
        } else {
            None
        };
        self.lost = true;
        self.in_payload = false;
        self.have = 0;
        self.buf = Vec::new();
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(max: usize, pieces: &[&[u8]]) -> Vec<(u8, Vec<u8>, u32, bool)> {
        let mut a = Assembler::new(max);
        let mut v = Vec::new();
        for p in pieces {
            a.feed(p, |e| v.push((e.flag, e.bytes.to_vec(), e.wire_len, e.cut)));
        }
        v
    }

    #[test]
    fn whole_split_and_empty() {
        let wire = [
            0, 0, 0, 0, 3, b'a', b'b', b'c', 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, b'x', b'y',
        ];
        let want = vec![
            (0, b"abc".to_vec(), 3, false),
            (1, vec![], 0, false),
            (0, b"xy".to_vec(), 2, false),
        ];
        assert_eq!(msgs(100, &[&wire]), want);
        // every split point, and byte by byte
        for i in 0..wire.len() {
            assert_eq!(msgs(100, &[&wire[..i], &wire[i..]]), want, "split at {i}");
        }
        let bytes: Vec<&[u8]> = wire.chunks(1).collect();
        assert_eq!(msgs(100, &bytes), want);
    }

    #[test]
    fn cut_keeps_the_first_bytes() {
        let wire = [0, 0, 0, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 1, 9];
        assert_eq!(
            msgs(4, &[&wire]),
            vec![(0, vec![1, 2, 3, 4], 6, true), (0, vec![9], 1, false)]
        );
        assert_eq!(
            msgs(4, &[&wire[..7], &wire[7..]]),
            vec![(0, vec![1, 2, 3, 4], 6, true), (0, vec![9], 1, false)]
        );
    }

    #[test]
    fn end_reports_the_partial_message() {
        let mut a = Assembler::new(10);
        a.feed(&[0, 0, 0, 0, 9, 1, 2], |_| panic!("no message"));
        assert_eq!(
            a.end(),
            Some(Partial {
                wire_len: Some(9),
                received: 7
            })
        );
        let mut a = Assembler::new(10);
        a.feed(&[0, 0], |_| panic!("no message"));
        assert!(a.lose());
        assert!(!a.lose());
        a.feed(&[0, 0, 0, 0, 0], |_| panic!("lost"));
        assert_eq!(a.end(), None);
    }
}
