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

use h2ledger_core::grpc::{CutEvents, Cutter};

/// A message the direction ended in the middle of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partial {
    /// Its Message-Length, when the 5-byte prefix was complete.
    pub wire_len: Option<u32>,
    /// Bytes of it received (prefix included).
    pub received: u64,
}

/// Cuts one direction of one stream into messages, keeping each message's first
/// `max_message_bytes` bytes (the rest is counted, not kept). The framing is core's one
/// [`Cutter`]; this keeps the bytes it hands out.
///
/// Memory: at most `max_message_bytes` held, plus 5 bytes of prefix. A message that lies
/// whole inside one fed slice is handed out without a copy.
#[derive(Debug, Clone)]
pub struct Assembler {
    max: usize,
    cut: Cutter,
    buf: Vec<u8>,
}

/// The [`CutEvents`] of one [`Assembler::feed`]: a message's bytes kept in `buf` (up to
/// `max`), or borrowed when its one piece is the whole message.
struct Keep<'s, 'b, F> {
    max: usize,
    buf: &'s mut Vec<u8>,
    /// The Message-Length of the message begun.
    len: u32,
    /// The message begun came in one piece, borrowed.
    whole: Option<&'b [u8]>,
    done: F,
}

impl<'b, F: FnMut(Envelope<'_>)> CutEvents<'b> for Keep<'_, 'b, F> {
    fn head(&mut self, _flag: u8, len: u32) {
        self.len = len;
        self.whole = None;
        self.buf.clear();
    }

    fn body(&mut self, b: &'b [u8]) {
        if self.buf.is_empty() && self.whole.is_none() && b.len() == self.len as usize {
            if b.len() <= self.max {
                // The whole message is in this slice: no copy.
                self.whole = Some(b);
                return;
            }
        } else if self.buf.is_empty() {
            // Reserve what the message needs, up to the cap, but no more than 64 KiB ahead
            // of the bytes actually received.
            self.buf
                .reserve((self.len as usize).min(self.max).min(64 << 10));
        }
        let room = self.max.saturating_sub(self.buf.len()).min(b.len());
        self.buf.extend_from_slice(&b[..room]);
    }

    fn done(&mut self, len: u32, flag: u8) {
        let bytes = match self.whole.take() {
            Some(b) => b,
            None => &self.buf[..],
        };
        (self.done)(Envelope {
            flag,
            bytes,
            wire_len: len,
            cut: len as usize > self.max,
        });
        self.buf.clear();
        if self.buf.capacity() > 64 << 10 {
            // A big message's buffer is not kept for the next small one.
            *self.buf = Vec::new();
        }
    }
}

impl Assembler {
    /// An assembler keeping at most `max_message_bytes` of each message.
    pub fn new(max_message_bytes: usize) -> Self {
        Assembler {
            max: max_message_bytes,
            cut: Cutter::default(),
            buf: Vec::new(),
        }
    }

    /// Feeds DATA payload bytes (padding removed), in order; `done` gets each message they
    /// complete. Nothing happens after [`lose`](Self::lose) or [`end`](Self::end).
    pub fn feed(&mut self, b: &[u8], done: impl FnMut(Envelope<'_>)) {
        let mut ev = Keep {
            max: self.max,
            buf: &mut self.buf,
            len: 0,
            whole: None,
            done,
        };
        // A message begun in an earlier slice is in `buf` (or, when empty, had no bytes yet):
        // `len` is only read with `buf` empty at the first piece, which follows `head`.
        if let Some(p) = self.cut.pending() {
            ev.len = p.wire_len.unwrap_or(0);
            if !ev.buf.is_empty() || p.received > 5 {
                // Not the first piece: never borrowed.
                ev.len = u32::MAX;
            }
        }
        self.cut.feed_with(b, &mut ev);
    }

    /// The capture lacks bytes of this direction: framing is lost, the message in progress is
    /// dropped. True the first time (when it counts).
    pub fn lose(&mut self) -> bool {
        self.buf = Vec::new();
        self.cut.lose()
    }

    /// The direction ended: the message in progress, if any.
    pub fn end(&mut self) -> Option<Partial> {
        let p = self.cut.pending().map(|p| Partial {
            wire_len: p.wire_len,
            received: p.received,
        });
        self.cut.end();
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
    fn a_message_whole_in_one_slice_is_borrowed() {
        let body = [7u8, 8, 9];
        let mut seen = Vec::new();
        let mut a = Assembler::new(100);
        // The prefix alone, then the whole body: borrowed from the second slice.
        a.feed(&[0, 0, 0, 0, 3], |_| panic!("no message yet"));
        a.feed(&body, |e| seen.push(e.bytes.as_ptr()));
        assert_eq!(seen, vec![body.as_ptr()]);
        // The body in two pieces: copied, and whole.
        let mut got = Vec::new();
        a.feed(&[0, 0, 0, 0, 3, 7], |_| panic!("no message yet"));
        a.feed(&body[1..], |e| got.push(e.bytes.to_vec()));
        assert_eq!(got, vec![body.to_vec()]);
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
